"""Imports started early on a background thread, or skipped where nobody needs them.

The engine (:mod:`pytest_legaleval.pipeline.evaluator`, the ``openai`` SDK under it) is imported by
every process that calls a model: about 0.5 s of CPU, most of it the SDK's ``types``
package. An xdist worker starts that import on a background thread at configure time,
while its main thread collects the items and waits on the controller's messages, instead
of after collection; the run loop's own import then finds it done (or waits for the rest
of it). Measured at ``-n 2`` on 2,000 live records: median wall 6.33 -> 6.15 s over ten
interleaved pairs (less on a slower machine, where the run is CPU-bound and nothing waits
long enough to overlap). A single process has nothing to wait on there: the thread only
competes with collection for the GIL (median 5.99 -> 6.09 s over eight pairs), so it
imports in its run loop as before.

Hypothesis (a dependency of ours, for :mod:`pytest_legaleval.testing.strategies`) installs a
pytest plugin whose ``pytest_terminal_summary`` imports the whole ``hypothesis`` package
to read one module-level set, even in a session that never used hypothesis: about 0.1 s
of CPU in every process, at the very end of the run. Its summary prints three things:
statistics (with ``--hypothesis-show-statistics``), observation files this process wrote,
and a patch for failing examples found on the reports. In a process that never imported
hypothesis it wrote no observation file, so:

- An xdist worker's summary goes to ``/dev/null``: if the worker never imported
  hypothesis, it unregisters the plugin before its summary and skips the import (failing
  examples travel on the reports to the controller, which writes the patch). A worker
  that did import hypothesis keeps the plugin.
- The controller, or a single process, that never imported hypothesis unregisters the
  plugin before its summary when no statistics were asked for and no report carries
  failing examples: the summary would print nothing. Otherwise it keeps the plugin; with
  ``--hypothesis-show-statistics`` it starts the import on a background thread at its
  first report, while the run waits for model answers.
"""

from __future__ import annotations

import importlib
import sys
import threading

import pytest

from pytest_legaleval.perf import collector_paused

__all__ = [
    "ENGINE_MODULE",
    "ENGINE_THREAD",
    "drop_empty_hypothesis_summary",
    "finish_engine_import",
    "preload_summary_imports",
    "start_engine_import",
]

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
    if not hasattr(config, "workerinput") or ENGINE_MODULE in sys.modules:
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
    if _started or "hypothesis" in sys.modules or not _statistics_asked(config):
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
    if "hypothesis" in sys.modules:
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
