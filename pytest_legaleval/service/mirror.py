"""A run's states, progress and cancellation, mirrored between its worker and the run table.

The run's own thread never waits on the table: :meth:`RunMirror.state` and
:meth:`RunMirror.progress` (the callbacks ``run_evaluation`` calls) only note what to
write, and a writer thread writes it in order, waiting out a lock as long as it lasts and
trying again after a storage failure. A locked or full table therefore never stops or
fails a run — issue 31 saw a 36 s lock end a healthy run ``failed`` through an unprotected
progress callback. :meth:`RunMirror.flush` waits for what is noted to be written before
the run's end goes into the table.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from pytest_legaleval.run.manifest import TERMINAL_STATES
from pytest_legaleval.service.database import RunTable
from pytest_legaleval.service.storage import StorageError

__all__ = ["RunMirror"]

_log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 0.25
CANCEL_POLL_S = 0.2
RETRY_FIRST_S = 0.1
RETRY_MAX_S = 5.0


class RunMirror:
    """Mirrors one run between its worker and the table (see the module's docstring).

    Args:
        store: the run table.
        run_id: the run.
        on_problem: told the storage failure the writer meets (``None`` once it writes
            again), so the worker can report it.

    """

    def __init__(
        self,
        store: RunTable,
        run_id: str,
        on_problem: Callable[[str | None], None] | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.cancel = threading.Event()
        self.ended = threading.Event()
        self.problem: str | None = None
        """The storage failure the writer last met, while it lasts."""
        self._problem_since: float | None = None
        self._abandoned = False
        self.ended_at: str | None = None
        """When the run entered its terminal state (written by ``store.finish``, with the
        figures, once the run's end is certain: a run whose storage failed goes on)."""
        self._on_problem = on_problem
        self._states: list[tuple[str, str]] = []
        self._progress: tuple[int, int] | None = None
        self._last_progress = 0.0
        self._changed = threading.Condition()
        self._writer = threading.Thread(target=self._write, name="legaleval-mirror", daemon=True)
        self._watcher = threading.Thread(target=self._watch, name="legaleval-cancel", daemon=True)

    def start(self) -> RunMirror:
        """Start writing and watching for a cancellation request."""
        self._writer.start()
        self._watcher.start()
        return self

    # -- the run's callbacks: never raise, never wait on the table --------------------------

    def state(self, state: str, at: str) -> None:
        """Note a state transition (``run_evaluation``'s ``on_state``)."""
        if state in TERMINAL_STATES:
            self.ended_at = at
            return
        with self._changed:
            self._states.append((state, at))
            self._changed.notify_all()

    def progress(self, done: int, total: int) -> None:
        """Note the progress (``on_progress``), at most every 0.25 s but always the last."""
        now = time.monotonic()
        if done < total and now - self._last_progress < PROGRESS_EVERY_S:
            return
        self._last_progress = now
        with self._changed:
            self._progress = (done, total)
            self._changed.notify_all()

    # -- the writer -------------------------------------------------------------------------

    def _pending(self) -> bool:
        return bool(self._states) or self._progress is not None

    def _write_one(self) -> bool:
        """Write the oldest noted change; whether there was one."""
        with self._changed:
            state = self._states[0] if self._states else None
            progress = self._progress if state is None else None
        if state is not None:
            self.store.set_state(self.run_id, *state)
            with self._changed:
                if self._states and self._states[0] == state:
                    self._states.pop(0)
        elif progress is not None:
            self.store.progress(self.run_id, *progress)
            with self._changed:
                if self._progress == progress:
                    self._progress = None
        else:
            return False
        return True

    def _set_problem(self, problem: str | None) -> None:
        if problem == self.problem:
            return
        if problem is None:
            self._problem_since = None
        elif self._problem_since is None:
            self._problem_since = time.monotonic()
        self.problem = problem
        if self._on_problem is not None:
            try:
                self._on_problem(problem)
            except Exception:  # a report is news, never a reason to stop writing
                _log.debug("cannot report the storage state", exc_info=True)

    def _write(self) -> None:
        delay = RETRY_FIRST_S
        while True:
            with self._changed:
                while not self._pending() and not self.ended.is_set():
                    self._changed.wait()
                if self._abandoned or (not self._pending() and self.ended.is_set()):
                    return
            try:
                while self._write_one():
                    pass
            except StorageError as exc:
                self._set_problem(str(exc))
                _log.warning("run %s: cannot write its state yet: %s", self.run_id, exc)
            except Exception:
                _log.exception("run %s: cannot write its state yet", self.run_id)
            else:
                self._set_problem(None)
                delay = RETRY_FIRST_S
                continue
            with self._changed:
                self._changed.wait(delay)
            delay = min(delay * 2, RETRY_MAX_S)

    def flush(self, give_up_s: float = 30.0) -> bool:
        """Wait until everything noted is in the table; whether it is.

        A lock is waited out however long it lasts; a storage failure (a full disk) for at
        most ``give_up_s`` from when the writer met it.
        """
        with self._changed:
            while self._pending():
                since = self._problem_since
                if since is not None and time.monotonic() - since > give_up_s:
                    return False
                self._changed.wait(0.05)
        return True

    def close(self) -> None:
        """Stop watching; the writer ends once everything noted is written."""
        self.ended.set()
        with self._changed:
            self._changed.notify_all()

    def abandon(self) -> None:
        """Stop watching and writing: what is not written yet is dropped (the run is retried)."""
        with self._changed:
            self._abandoned = True
            self._states.clear()
            self._progress = None
        self.close()

    # -- cancellation -----------------------------------------------------------------------

    def _watch(self) -> None:
        while not self.ended.wait(CANCEL_POLL_S):
            try:
                if self.store.cancel_requested(self.run_id):
                    self.cancel.set()
                    return
            except Exception:  # the table is busy or gone: try again, never kill the run
                _log.warning("cannot read the cancellation flag of %s", self.run_id)
