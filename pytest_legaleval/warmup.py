"""Imports started early on a background thread, or skipped where nobody needs them.

The engine (:mod:`pytest_legaleval.live` and the ``openai`` SDK under it) is imported by
every process that calls a model: about 0.5 s of CPU, most of it the SDK's ``types``
package. An xdist worker starts that import on a background thread at configure time,
while its main thread collects the items and waits on the controller's messages, instead
of after collection; the run loop's own import then finds it done (or waits for the rest
of it). Measured at ``-n 2`` on 2,000 live records: median wall 6.33 -> 6.15 s over ten
interleaved pairs. A single process has nothing to wait on there: the thread only
competes with collection for the GIL (median 5.99 -> 6.09 s over eight pairs), so it
imports in its run loop as before.

Hypothesis (a dependency of ours, for :mod:`pytest_legaleval.testing.strategies`) installs a
pytest plugin whose ``pytest_terminal_summary`` imports the whole ``hypothesis`` package
to read one module-level set, even in a session that never used hypothesis: about 0.1 s
of CPU in every process, at the very end of the run.

- The controller and a single process show their summary: they import it on a background
  thread at their first report, while the run waits for model answers.
- An xdist worker's summary goes to ``/dev/null``. If the worker never imported hypothesis
  (no hypothesis test ran there), the plugin's summary has nothing to say: its set of
  observation files is empty, and failing examples travel on the reports to the
  controller, which writes the patch. The worker unregisters the plugin before its
  summary and skips the import (on two workers, about 0.2 s of CPU while every core is
  busy). A worker that did import hypothesis keeps the plugin.
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
    "drop_unread_worker_summary",
    "finish_engine_import",
    "preload_summary_imports",
    "start_engine_import",
]

ENGINE_MODULE = "pytest_legaleval.live"
ENGINE_THREAD = "legaleval-engine-import"
_ENGINE_KEY = pytest.StashKey[threading.Thread]()

_HYPOTHESIS_PLUGIN = "hypothesispytest"
_MODULE = "hypothesis.internal.observability"
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


def preload_summary_imports(config: pytest.Config) -> bool:
    """Start importing what the terminal summary will import; once per process.

    Returns:
        Whether a background import was started.

    """
    global _started
    if _started or "hypothesis" in sys.modules:
        return False
    if not config.pluginmanager.has_plugin(_HYPOTHESIS_PLUGIN):
        return False
    _started = True
    threading.Thread(target=_import, name="legaleval-preload", daemon=True).start()
    return True


def drop_unread_worker_summary(config: pytest.Config) -> bool:
    """On an xdist worker, before its terminal summary: unregister hypothesis' plugin there.

    Only when this process never imported hypothesis; call it at session finish, after the
    last item (the plugin also annotates reports while tests run).

    Returns:
        Whether the plugin was unregistered.

    """
    if not hasattr(config, "workerinput") or "hypothesis" in sys.modules:
        return False
    plugin = config.pluginmanager.get_plugin(_HYPOTHESIS_PLUGIN)
    if plugin is None:
        return False
    config.pluginmanager.unregister(plugin)
    return True
