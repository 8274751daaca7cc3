"""Collection: record tests parametrized over the run's items, the built-in suite, no empty run.

- Every collected test that asks for ``record`` gets one item per selected record × model
  (:func:`parametrize_record_test`), marked with its task type and tags; an ``async def``
  test is marked for pytest-asyncio, which then runs it (the extra ``[async]``).
- A run with ``--dataset`` that collected no such test gets the built-in suite,
  ``default_suite.py``, collected from the installed package (:func:`add_default_suite`):
  ``pytest --dataset DATA --responses FILE`` works in an empty directory.
- A run left without a record item to run (an empty selection, ``-k``/``-m`` deselected them
  all) is a usage error (:func:`require_record_items`), never a completed empty run.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pytest_legaleval
from pytest_legaleval.errors import ConfigError, DatasetRejected
from pytest_legaleval.pipeline.plan import ItemSpec
from pytest_legaleval.pytest import tricks
from pytest_legaleval.pytest.state import STATE_KEY, marker_name
from pytest_legaleval.records import Record

__all__ = [
    "ASYNC_HINT",
    "DEFAULT_SUITE",
    "add_default_suite",
    "count_record_items",
    "is_evaluation",
    "is_record_item",
    "no_record_items",
    "no_record_items_message",
    "nothing_to_run",
    "parametrize_record_test",
    "require_record_items",
]

DEFAULT_SUITE = Path(__file__).with_name("default_suite.py")
"""The built-in record suite's module."""
ASYNC_HINT = "pip install 'pytest-legaleval[async]'"
"""How to get pytest-asyncio, which runs ``async def`` record tests."""

_NOTHING_TO_RUN = pytest.StashKey[bool]()
"""The run stopped with :func:`no_record_items`: no run directory is written for it."""
_RECORD_TEST_SEEN = pytest.StashKey[bool]()
"""A test asking for ``record`` was collected (its parametrization may have failed)."""
_RECORD_ITEMS = pytest.StashKey[int]()
"""Record items collected, before any deselection."""


def _param(config: pytest.Config, spec: ItemSpec, cache: dict[str, Any], extra: list[Any]) -> Any:
    entry = spec.entry
    names = (
        [entry.task_type, *(marker_name("tag_", t) for t in entry.tags)]
        if isinstance(entry, Record)
        else ["invalid_record"]
    )
    marks = list(extra)
    for name in names:
        mark = cache.get(name)
        if mark is None:
            if name.startswith("tag_"):
                config.addinivalue_line("markers", f"{name}: records tagged {name[4:]}")
            mark = cache[name] = getattr(pytest.mark, name)
        marks.append(mark)
    return pytest.param(spec, marks=marks, id=spec.item_id)


def _async_marks(metafunc: pytest.Metafunc) -> list[Any]:
    """``pytest.mark.asyncio`` for an ``async def`` record test (pytest-asyncio runs it).

    Marked here because pytest-asyncio's default (strict) mode runs only marked coroutine
    tests, and a record test is async for no other reason than to be run by it.
    """
    if not inspect.iscoroutinefunction(metafunc.function):
        return []
    if not metafunc.config.pluginmanager.hasplugin("asyncio"):
        pytest.fail(
            f"{metafunc.definition.nodeid} is an async def test: it needs pytest-asyncio; "
            f"run: {ASYNC_HINT}",
            pytrace=False,
        )
    return [pytest.mark.asyncio]


def parametrize_record_test(metafunc: pytest.Metafunc) -> None:
    """One item per selected record × model for a test that asks for ``record``."""
    if "record" not in metafunc.fixturenames:
        return
    config = metafunc.config
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return
    config.stash[_RECORD_TEST_SEEN] = True
    extra = _async_marks(metafunc)
    fresh = state.dataset.loaded is None
    failure = None
    try:
        # A load builds millions of long-lived objects and no garbage: no collections.
        with tricks.collector_paused():
            items = state.items
            if fresh:
                # The records live for the whole session: frozen before the collector is
                # back, so neither its first pass nor the run's later ones scan them.
                tricks.freeze()
    except DatasetRejected as exc:
        failure = f"dataset rejected (HTTP {exc.status}):\n{exc.envelope_json(state.request_id)}"
    except ConfigError as exc:
        failure = str(exc)
    if failure is not None:
        # Failing outside the except block: inside it pytest prints the caught error first,
        # with "During handling of the above exception", before the user's message.
        pytest.fail(failure, pytrace=False)
    cache: dict[str, Any] = {}
    metafunc.parametrize(
        "record", [_param(config, spec, cache, extra) for spec in items], indirect=True
    )


def is_evaluation(config: pytest.Config) -> bool:
    """Whether this session evaluates a dataset (``--dataset``, the ini file or the YAML).

    For a project's ``conftest.py`` that collects its evaluation suites only then.
    """
    return config.stash.get(STATE_KEY, None) is not None


def is_record_item(item: pytest.Item) -> bool:
    """Whether ``item`` is one record × model of the run."""
    callspec = getattr(item, "callspec", None)
    return callspec is not None and isinstance(callspec.params.get("record"), ItemSpec)


# -- the built-in suite ---------------------------------------------------------------------


def _suite_nodeid() -> str:
    """The built-in suite's node id: its path in the installed package.

    The same wherever the package is installed (a path relative to the rootdir would climb
    out of a project into site-packages), and what pytest itself gives a checkout's copy.
    """
    root = Path(pytest_legaleval.__file__).resolve().parent.parent
    return DEFAULT_SUITE.resolve().relative_to(root).as_posix()


def _collect(node: pytest.Item | pytest.Collector) -> Iterator[pytest.Item]:
    """The items under ``node``, through pytest's collection hooks (reports, errors)."""
    if isinstance(node, pytest.Item):
        node.ihook.pytest_itemcollected(item=node)
        yield node
        return
    node.ihook.pytest_collectstart(collector=node)
    report = node.ihook.pytest_make_collect_report(collector=node)
    report.__dict__.pop("call", None)  # as pytest does: a collect report carries no CallInfo
    if report.passed:
        for child in report.result:
            yield from _collect(child)
    node.ihook.pytest_collectreport(report=report)


def add_default_suite(session: pytest.Session, items: list[pytest.Item]) -> None:
    """Collect the built-in suite into ``items`` when the run collected no record test.

    Not after a collection error: the file that failed may be the user's suite, which the
    built-in one must not silently replace (``--continue-on-collection-errors``).
    """
    config = session.config
    if config.stash.get(STATE_KEY, None) is None or config.stash.get(_RECORD_TEST_SEEN, False):
        return
    if session.testsfailed:
        return
    module = pytest.Module.from_parent(session, path=DEFAULT_SUITE, nodeid=_suite_nodeid())
    items.extend(_collect(module))


# -- no empty run ----------------------------------------------------------------------------


def count_record_items(session: pytest.Session, items: list[pytest.Item]) -> None:
    """Remember how many record items were collected, before any deselection."""
    session.config.stash[_RECORD_ITEMS] = sum(map(is_record_item, items))


def no_record_items_message(config: pytest.Config, collected: int | None) -> str:
    """Why a legaleval run has no record item to run, and what to do.

    ``collected`` is the count of record items before deselection (``None``: unknown, on
    an xdist controller).
    """
    state = config.stash[STATE_KEY]
    s = state.settings
    selection = [
        flag
        for flag, value in (("--shard", s.shard), ("--sample", s.sample), ("--limit", s.limit))
        if value is not None
    ]
    deselecting = [flag for flag in ("-k", "-m") if getattr(config.option, _OPTION[flag], "")]
    deselecting += ["--deselect"] if getattr(config.option, "deselect", None) else []
    if collected:
        why = f"{', '.join(deselecting) or 'deselection'} deselected all {collected} of them"
    elif selection and collected == 0:
        why = f"the selection ({', '.join(selection)}) keeps no record of the dataset"
    else:
        causes = [f"the selection ({', '.join(selection)}) keeps no record"] if selection else []
        causes += [f"{', '.join(deselecting)} deselected them all"] if deselecting else []
        why = " or ".join(causes) or "none was collected"
    return (
        f"no record item to run: {why}. A legaleval run (--dataset) evaluates at least one "
        "record; widen the selection, or run without --dataset"
    )


_OPTION = {"-k": "keyword", "-m": "markexpr"}


def no_record_items(config: pytest.Config, collected: int | None) -> pytest.UsageError:
    """The usage error of a run without a record item (see :func:`nothing_to_run`)."""
    config.stash[_NOTHING_TO_RUN] = True
    return pytest.UsageError(no_record_items_message(config, collected))


def nothing_to_run(config: pytest.Config) -> bool:
    """Whether the run stopped for want of a record item (the recorder writes nothing)."""
    return config.stash.get(_NOTHING_TO_RUN, False)


def require_record_items(session: pytest.Session) -> None:
    """Make a run without a record item a usage error (a single process; see below).

    An xdist worker cannot stop the run itself (the controller would report it as crashed):
    it empties its collection instead, and the controller, receiving no item from a worker,
    raises the usage error (``plugin._XdistHooks``). Collection errors and
    ``--collect-only`` keep pytest's own outcome.
    """
    config = session.config
    if config.stash.get(STATE_KEY, None) is None or config.option.collectonly:
        return
    if session.testsfailed or any(map(is_record_item, session.items)):
        return
    if hasattr(config, "workerinput"):
        session.items[:] = []
        return
    raise no_record_items(config, config.stash.get(_RECORD_ITEMS, 0))
