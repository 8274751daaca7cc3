"""The pytest11 entry point of pytest-legaleval: hook functions that delegate.

The work happens in the pytest layer (``pytest_legaleval.pytest``: session set-up,
collection, the model calls, outcomes, recording, gates, tricks) and, below it, in the
pure packages (formats, validation, pipeline, engine, grading, run, metrics).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from pytest_legaleval.pipeline.plan import ItemSpec
from pytest_legaleval.pytest import collection, outcomes, startup, tricks
from pytest_legaleval.pytest.carrier import Carried, carry
from pytest_legaleval.pytest.fixtures import INVALID_KEY, RESULT_KEY
from pytest_legaleval.pytest.live import evaluating
from pytest_legaleval.pytest.options import add_options
from pytest_legaleval.pytest.preflight import restore_sigterm
from pytest_legaleval.pytest.session import configure

pytest_plugins = ["pytest_legaleval.testing.fixtures", "pytest_legaleval.pytest.fixtures"]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_legaleval.pytest import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)
    tricks.add_switch(parser)


def pytest_configure(config: pytest.Config) -> None:
    tricks.configure(config)
    configure(config)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """``--estimate-only``: the estimate, then exit status 0, before any session starts."""
    return startup.estimate_main(config)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Response rows that match no record: a warning, or a usage error before any worker."""
    startup.before_any_call(session, estimate=False)


@pytest.hookimpl(wrapper=True, specname="pytest_sessionstart")
def pytest_sessionstart_estimate(session: pytest.Session) -> Generator[None, None, None]:
    """The planned calls and their estimated cost, before the first call is paid.

    After every implementation: an xdist controller starts its workers in its own (the
    last one called), and estimates while they start up (a worker's first call comes after
    its interpreter, its imports and its collection).
    """
    yield
    startup.before_any_call(session, checks=False)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    collection.parametrize_record_test(metafunc)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    # First, so that -k, -m and --deselect apply to the built-in suite's items too.
    collection.add_default_suite(session, items)
    collection.count_record_items(session, items)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    # After every deselection; first, so that an xdist worker sends its emptied collection.
    collection.require_record_items(session)


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    with evaluating(session):
        return (yield)


def pytest_unconfigure(config: pytest.Config) -> None:
    tricks.restore(config)
    restore_sigterm(config)


@pytest.hookimpl(tryfirst=True, specname="pytest_runtest_makereport")
def pytest_runtest_makereport_failed_record(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failed record's or an errored item's report: its reason, built without a traceback."""
    return outcomes.fast_report(item, call)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    # What the run recorder writes goes to it with the report (an xdist controller holds
    # no copy of the dataset).
    invalid = item.stash.get(INVALID_KEY, None)
    if report.when == "setup" and invalid is not None:
        carry(item, report, Carried(invalid.rejection()))
    elif report.when == "call" or (report.when == "setup" and report.failed):
        result = item.stash.get(RESULT_KEY, None)
        if result is not None:
            spec: ItemSpec = item.callspec.params["record"]  # type: ignore[attr-defined]
            carry(item, report, Carried(spec.provenance(), result))
    outcomes.item_repr(item.config, report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable(
    config: pytest.Config, data: dict[str, Any]
) -> Generator[None, object, object]:
    report = yield
    if isinstance(report, pytest.TestReport):  # serialization made the reason a plain string
        outcomes.item_repr(config, report)
    return report
