"""End-of-run imports: done early where the summary is seen, not at all where it is not.

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

__all__ = ["drop_unread_worker_summary", "preload_summary_imports"]

_HYPOTHESIS_PLUGIN = "hypothesispytest"
_MODULE = "hypothesis.internal.observability"
_started = False


def _import() -> None:
    try:
        importlib.import_module(_MODULE)
    except Exception:  # best effort: the summary imports it again, and reports a failure
        pass


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
