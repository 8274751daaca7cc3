"""End-of-run imports done early, while the process waits for model answers.

Hypothesis (a dependency of ours, for :mod:`pytest_legaleval.testing.strategies`) installs a
pytest plugin whose ``pytest_terminal_summary`` imports the whole ``hypothesis`` package
to read one module-level set, even in a session that never used hypothesis: about 0.1 s
of CPU in every process, at the very end of the run, where the last xdist worker and then
the controller each add it to the wall time. Importing it on a background thread while the
run waits for model answers does the same work where it costs no wall time: an xdist worker
starts it after its first item (not while its first answers are coming in), the controller
and a single process at their first report.
"""

from __future__ import annotations

import importlib
import sys
import threading

import pytest

__all__ = ["preload_summary_imports"]

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
