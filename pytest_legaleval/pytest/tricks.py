"""The performance tricks of a pytest process, in one place and behind one switch.

A plugin lives in the user's own test process, so every trick that changes something
process-wide (the garbage collector, background threads, another plugin, how reports
travel) is here, applies only while a legaleval run is active, is undone at
``pytest_unconfigure``, and is off with ``LEGALEVAL_NO_TRICKS=1`` (then the run is
slower, never different). Tricks that lean on another package's behaviour name the
versions they were measured on and step aside on others. Figures: ``benchmarks/RESULTS.md``.

- **Garbage collector.** :func:`collector_paused` turns the cyclic collector off around
  blocks that build many long-lived objects and free none (a dataset load, the SDK
  import, a bulk submit); :func:`freeze` moves what exists into the permanent generation
  once the process's long-lived objects are built (the dataset, the SDK, the controller's
  plugins), so the run's collections do not re-scan them. The pause ends with its block;
  the freeze stays (see :func:`freeze`).
- **Background imports.** An xdist worker that will call a model imports the engine on
  a thread while it collects (:func:`start_engine_import`); a single process does not
  (the thread would only compete with collection for the GIL).
- **Hypothesis' summary.** Hypothesis (our dependency, for ``testing.strategies``)
  registers a pytest plugin whose terminal summary imports the whole package to print,
  in a session that never used it, nothing: :func:`drop_empty_hypothesis_summary`
  unregisters it there, at session finish; :func:`preload_summary_imports` imports it
  on a thread when ``--hypothesis-show-statistics`` will need it.
- **Report packing.** An xdist worker sends a report as one JSON string
  (:func:`pack_report`, :func:`unpack_report`): execnet's pure-Python serializer walks every
  nested value on both sides. Measured on pytest-xdist 3.x.
- **Workers' summaries.** An xdist worker's terminal output goes nowhere: on pytest 9 it
  skips rendering pytest's own summary sections (:func:`quiet_worker_summary`).
"""

from __future__ import annotations

import functools
import gc
import importlib
import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

__all__ = [
    "ENGINE_MODULE",
    "ENGINE_THREAD",
    "SWITCH",
    "collector_paused",
    "drop_empty_hypothesis_summary",
    "enabled",
    "finish_engine_import",
    "freeze",
    "pack_report",
    "preload_summary_imports",
    "quiet_worker_summary",
    "restore",
    "start_engine_import",
    "unpack_report",
]

SWITCH = "LEGALEVAL_NO_TRICKS"
"""Set to ``1`` to turn every trick off."""


def enabled() -> bool:
    """Whether the tricks are on (``LEGALEVAL_NO_TRICKS`` unset, empty or ``0``)."""
    return os.environ.get(SWITCH, "").strip().lower() in ("", "0", "false", "no")


@functools.cache
def _major(distribution: str) -> int | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return int(version(distribution).split(".", 1)[0])
    except (PackageNotFoundError, ValueError):
        return None


def _measured_on(distribution: str, majors: tuple[int, ...]) -> bool:
    return _major(distribution) in majors


# -- the garbage collector ------------------------------------------------------------------

_pause_lock = threading.Lock()
_pauses = 0
_restore_collector = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Disable the cyclic garbage collector for the block (restored as it was).

    Safe only where the block builds no reference cycles that must be freed meanwhile. The
    collector is one per process: blocks on several threads (the engine import on a
    background thread while the main thread loads the dataset) may overlap, so the
    collector comes back when the last of them ends, if it was on when the first began.
    """
    global _pauses, _restore_collector
    if not enabled():
        yield
        return
    with _pause_lock:
        if _pauses == 0:
            _restore_collector = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _restore_collector:
                gc.enable()


def freeze() -> None:
    """Move every object that exists now into the collector's permanent generation.

    Called where a process's long-lived objects are built: after the dataset load, after
    the SDK import, at an xdist controller's first report. It changes no setting of the
    collector (it stays on, its thresholds as they were), and it is the one trick not
    undone at unconfigure: unfreezing then would make the collections pytest runs at its
    end, and the one at interpreter exit, scan everything the run kept (see
    ``benchmarks/RESULTS.md``). Frozen objects that die later stay in memory until the
    process ends; with ``LEGALEVAL_NO_TRICKS=1`` nothing is frozen.
    """
    if enabled():
        gc.freeze()


def restore(config: pytest.Config) -> None:
    """Undo what the tricks changed in this process (call it at unconfigure)."""
    finish_engine_import(config)


# -- background imports ---------------------------------------------------------------------

ENGINE_MODULE = "pytest_legaleval.pipeline.evaluator"
ENGINE_THREAD = "legaleval-engine-import"
_ENGINE_KEY = pytest.StashKey[threading.Thread]()

_HYPOTHESIS_PLUGIN = "hypothesispytest"
_MODULE = "hypothesis.internal.observability"
_STATISTICS_OPTION = "hypothesis_show_statistics"
_FAILING_EXAMPLES = "_hypothesis_failing_examples"
"""The report field hypothesis' summary turns into a patch (``_hypothesis_pytestplugin``)."""
_started = False


def _import() -> None:
    try:
        importlib.import_module(_MODULE)
    except Exception:  # best effort: the summary imports it again, and reports a failure
        pass


def _import_engine() -> None:
    try:
        # As in the run loop: the import creates long-lived objects and no garbage.
        with collector_paused():
            importlib.import_module(ENGINE_MODULE)
            freeze()  # before the collector is back (see live_evaluator)
    except BaseException:  # the run loop imports it again, and reports the failure
        pass


def start_engine_import(config: pytest.Config) -> bool:
    """Start importing the engine on a background thread (call it from configure).

    Only on an xdist worker (see the module's docstring for why not elsewhere; xdist
    starts none for ``--collect-only``), in a session that will call a model, and not when
    the engine is already imported.

    Returns:
        Whether a thread was started.

    """
    if not enabled() or not hasattr(config, "workerinput") or ENGINE_MODULE in sys.modules:
        return False
    thread = threading.Thread(target=_import_engine, name=ENGINE_THREAD, daemon=True)
    config.stash[_ENGINE_KEY] = thread
    thread.start()
    return True


def finish_engine_import(config: pytest.Config) -> None:
    """Wait for the background import (call it at unconfigure).

    A session that ended before its run loop (a usage or collection error) never waited
    for it; no import thread outlives the session into interpreter shutdown.
    """
    thread = config.stash.get(_ENGINE_KEY, None)
    if thread is not None:
        thread.join()


def _statistics_asked(config: pytest.Config) -> bool:
    return bool(config.getoption(_STATISTICS_OPTION, False))


def preload_summary_imports(config: pytest.Config) -> bool:
    """Start importing what the terminal summary will import; once per process.

    Only where the summary will surely import it: ``--hypothesis-show-statistics``. Without
    it, :func:`drop_empty_hypothesis_summary` usually skips the import altogether.

    Returns:
        Whether a background import was started.

    """
    global _started
    if not enabled() or _started or "hypothesis" in sys.modules or not _statistics_asked(config):
        return False
    if not config.pluginmanager.has_plugin(_HYPOTHESIS_PLUGIN):
        return False
    _started = True
    threading.Thread(target=_import, name="legaleval-preload", daemon=True).start()
    return True


def _carry_failing_examples(config: pytest.Config) -> bool:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(reporter, "stats", None) or {}
    return any(
        _FAILING_EXAMPLES in getattr(report, "__dict__", ())
        for reports in stats.values()
        for report in reports
    )


def drop_empty_hypothesis_summary(config: pytest.Config) -> bool:
    """Before the terminal summary: unregister hypothesis' plugin where it has nothing to say.

    Only when this process never imported hypothesis: always on an xdist worker (its
    summary is unread); elsewhere when no statistics were asked for and no report carries
    failing examples. Call it at session finish, after the last item (the plugin also
    annotates reports while tests run).

    Returns:
        Whether the plugin was unregistered.

    """
    if not enabled() or "hypothesis" in sys.modules:
        return False
    plugin = config.pluginmanager.get_plugin(_HYPOTHESIS_PLUGIN)
    if plugin is None:
        return False
    if not hasattr(config, "workerinput") and (
        _statistics_asked(config) or _carry_failing_examples(config)
    ):
        return False
    config.pluginmanager.unregister(plugin)
    return True


# -- report packing -------------------------------------------------------------------------

_PACKED = "legaleval_json"


def pack_report(
    data: dict[str, Any], plain_keys: frozenset[str], payload_fields: tuple[str, ...]
) -> dict[str, Any]:
    """A worker's serialized report with its values in one JSON string (when they are JSON).

    A report made only of ``plain_keys`` (pytest's own fields and ours), with no user
    properties, is sent whole; it comes back equal (tuples restored in
    :func:`unpack_report`). Any other report keeps its other fields for execnet, which
    keeps their types (a user property may be bytes or a dict with int keys, which JSON
    would refuse or change); only ``payload_fields`` are packed then.
    """
    if not enabled() or not _measured_on("pytest-xdist", (3,)):
        return data
    if not data.keys() - plain_keys and not data.get("user_properties"):
        try:
            return {_PACKED: json.dumps(data, ensure_ascii=False)}
        except (TypeError, ValueError):
            pass
    payload = {name: data[name] for name in payload_fields if name in data}
    if payload:
        try:
            packed = json.dumps(payload, ensure_ascii=False)
        except (TypeError, ValueError):  # not plain JSON: execnet sends it as it is
            return data
        for name in payload:
            del data[name]
        data[_PACKED] = packed
    return data


def unpack_report(data: dict[str, Any]) -> None:
    """Undo :func:`pack_report` in place (always: the worker decided whether to pack)."""
    packed = data.pop(_PACKED, None)
    if packed is None:
        return
    data.update(json.loads(packed))
    # JSON has no tuples; pytest's report fields that are tuples get theirs back.
    if isinstance(data.get("location"), list):
        data["location"] = tuple(data["location"])
    if isinstance(data.get("longrepr"), list):  # a skip's (path, line, reason)
        data["longrepr"] = tuple(data["longrepr"])
    if data.get("sections"):
        data["sections"] = [tuple(section) for section in data["sections"]]


# -- the rest -------------------------------------------------------------------------------


def quiet_worker_summary(config: pytest.Config) -> None:
    """On an xdist worker (stdout is /dev/null), skip rendering pytest's summary sections.

    Since pytest 9 other plugins' terminal summaries still run with ``no_summary``.
    """
    if enabled() and hasattr(config, "workerinput") and pytest.version_tuple >= (9,):
        config.option.no_summary = True
