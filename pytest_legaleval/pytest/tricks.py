"""The performance tricks of a pytest process, in one place, on public APIs only.

A plugin lives in the user's own test process, so every trick that changes something
process-wide is here, applies only while a legaleval run is active, and is undone at
``pytest_unconfigure``. Figures: ``benchmarks/RESULTS.md``.

**One switch.** The ini option ``legaleval_process_tweaks`` (default true; on the command
line ``-o legaleval_process_tweaks=false``) turns the garbage-collector tricks off: no
pause, no freeze, the collector as the user left it. :func:`configure` reads it.

- **Garbage collector.** :func:`collector_paused` turns the cyclic collector off around
  blocks that build many long-lived objects and free none (a dataset load, the engine's
  import and start, a bulk submit); :func:`freeze` moves what exists into the permanent
  generation once the process's long-lived objects are built (the dataset, the engine, the
  controller's plugins), so the run's collections do not re-scan them. The pause ends with
  its block; the freeze is undone at unconfigure (:func:`restore`).
- **Background imports.** An xdist worker that will call a model imports the engine on
  a thread while it collects (:func:`start_engine_import`); a single process does not
  (the thread would only compete with collection for the GIL).
- **Workers' summaries.** An xdist worker's terminal output goes nowhere: on pytest 9 it
  skips rendering pytest's own summary sections (:func:`quiet_worker_summary`, the
  public ``no_summary`` option).
"""

from __future__ import annotations

import gc
import importlib
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

__all__ = [
    "ENGINE_MODULE",
    "ENGINE_THREAD",
    "SWITCH",
    "add_switch",
    "collector_paused",
    "configure",
    "finish_engine_import",
    "freeze",
    "quiet_worker_summary",
    "restore",
    "start_engine_import",
]

# -- the garbage collector ------------------------------------------------------------------

SWITCH = "legaleval_process_tweaks"
"""The ini option that turns the process-wide tricks on (the default) or off."""

_pause_lock = threading.Lock()
_pauses = 0
_restore_collector = False
_enabled = True
_frozen = False


def add_switch(parser: pytest.Parser) -> None:
    """Declare the switch (call it from ``pytest_addoption``)."""
    parser.addini(
        SWITCH,
        "Let pytest-legaleval pause and freeze the garbage collector while a run builds its "
        "long-lived objects (undone at the session's end); false leaves it alone.",
        type="bool",
        default=True,
    )


def configure(config: pytest.Config) -> None:
    """Read the switch for this process (call it from ``pytest_configure``)."""
    global _enabled
    _enabled = bool(config.getini(SWITCH))


@contextmanager
def collector_paused() -> Iterator[None]:
    """Disable the cyclic garbage collector for the block (restored as it was).

    Safe only where the block builds no reference cycles that must be freed meanwhile. The
    collector is one per process: blocks on several threads (the engine import on a
    background thread while the main thread loads the dataset) may overlap, so the
    collector comes back when the last of them ends, if it was on when the first began.
    """
    global _pauses, _restore_collector
    if not _enabled:
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
    the engine starts, at an xdist controller's first report. It changes no setting of the
    collector (it stays on, its thresholds as they were). :func:`restore` unfreezes at the
    session's end, so the user's process gets its collector back as it was; the
    collections pytest runs after that scan what the run kept, once. Frozen objects that
    die during the run stay in memory until then.
    """
    global _frozen
    if _enabled:
        gc.freeze()
        _frozen = True


def restore(config: pytest.Config) -> None:
    """Undo what the tricks changed in this process (call it at unconfigure)."""
    global _frozen, _enabled
    finish_engine_import(config)
    if _frozen:
        gc.unfreeze()
        _frozen = False
    _enabled = True  # the next session in this process (pytester) reads its own switch


# -- background imports ---------------------------------------------------------------------

ENGINE_MODULE = "pytest_legaleval.engine.runner"
ENGINE_THREAD = "legaleval-engine-import"
_ENGINE_KEY = pytest.StashKey[threading.Thread]()


def _import_engine() -> None:
    try:
        # As in the run loop: the import creates long-lived objects and no garbage.
        with collector_paused():
            importlib.import_module(ENGINE_MODULE)
            importlib.import_module("pytest_legaleval.engine.wire")
            freeze()  # before the collector is back (see live.evaluating)
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


# -- the rest -------------------------------------------------------------------------------


def quiet_worker_summary(config: pytest.Config) -> None:
    """On an xdist worker (stdout is /dev/null), skip rendering pytest's summary sections.

    Since pytest 9 other plugins' terminal summaries still run with ``no_summary``.
    """
    if hasattr(config, "workerinput") and pytest.version_tuple >= (9,):
        config.option.no_summary = True
