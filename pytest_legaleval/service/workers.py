"""Worker processes and their supervisor: each worker evaluates one run at a time.

The HTTP process starts ``--workers N`` of them (``spawn``: a fresh interpreter, nothing of
the HTTP process inherited) and replaces one that dies, after a back-off that grows while
replacements keep dying quickly (:func:`restart_delay`); the runs a dead worker held go
back to the front of the queue, and the next worker continues them. The supervising thread
survives anything a worker or the store does: an error in one of its rounds is logged and
the next round tries again. A worker dies with the service: on Linux the kernel kills it
when its parent goes (``PR_SET_PDEATHSIG``), and a watchdog thread does the same elsewhere,
so a run is never worked on by an orphan while a restarted service continues it. Workers
ignore Ctrl-C (the terminal sends it to the whole process group): stopping the service
stops them where they are, and the next start continues their runs.

Each worker reports over a pipe what keeps it from working (a full disk, say); with the
supervisor's own view (a worker waiting to be replaced) that is :meth:`WorkerPool.problems`,
which ``/healthz`` shows.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from pytest_legaleval.service.queue import RunQueue
from pytest_legaleval.service.worker import WorkerConfig, worker_main

__all__ = ["WorkerConfig", "WorkerPool", "die_with_parent", "restart_delay", "worker_main"]

_log = logging.getLogger(__name__)
_PR_SET_PDEATHSIG = 1
RESTART_FIRST_S = 0.5
RESTART_MAX_S = 60.0
STABLE_AFTER_S = 60.0
"""A worker that lived this long was healthy: its replacement starts without delay."""


def restart_delay(quick_deaths: int) -> float:
    """Seconds before replacing a worker after ``quick_deaths`` deaths in a row.

    The first replacement is immediate; then 0.5 s, 1 s, 2 s … up to a minute, so a worker
    that cannot start (a broken environment) does not spin.
    """
    if quick_deaths <= 1:
        return 0.0
    return min(RESTART_MAX_S, RESTART_FIRST_S * 2.0 ** (quick_deaths - 2))


def die_with_parent(parent: int) -> None:
    """End this process as soon as ``parent`` is gone."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the line above took effect
        os._exit(70)

    def watchdog() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(70)

    threading.Thread(target=watchdog, name="legaleval-parent-watch", daemon=True).start()


@dataclass(slots=True)
class _Slot:
    """One worker's place: its process, its report pipe and its restart history."""

    index: int
    worker_id: str = ""
    process: BaseProcess | None = None
    reports: Connection | None = None
    started: float = 0.0
    quick_deaths: int = 0
    next_start: float = 0.0
    last_exit: int | None = None
    problem: str | None = None
    to_release: list[str] = field(default_factory=list)
    """Dead workers whose claims are still to give back (the table refused once)."""


class WorkerPool:
    """``count`` worker processes, kept alive by a supervising thread of the HTTP process."""

    def __init__(
        self,
        config: WorkerConfig,
        count: int,
        queue: RunQueue,
        *,
        clock: Callable[[], float] = time.monotonic,
        prefix: str = "",
    ) -> None:
        self.config = config
        self.prefix = prefix
        """Put before every worker id: the replica's name when replicas share the queue."""
        self.clock = clock
        self.count = count
        self.queue = queue
        self._context = multiprocessing.get_context("spawn")
        self._stopping = threading.Event()
        self._started = threading.Event()
        self._lock = threading.Lock()
        self._slots = [_Slot(index) for index in range(count)]
        self._generation = 0
        self._thread: threading.Thread | None = None
        self.rounds_failed = 0
        """Supervising rounds that raised (and were survived)."""

    def start(self, timeout_s: float = 60.0) -> None:
        """Start the workers (from the supervising thread: it outlives them)."""
        self._thread = threading.Thread(
            target=self._supervise, name="legaleval-workers", daemon=True
        )
        self._thread.start()
        self._started.wait(timeout_s)

    def pids(self) -> list[int]:
        """The worker processes' ids."""
        with self._lock:
            return [s.process.pid for s in self._slots if s.process is not None and s.process.pid]

    def problems(self) -> dict[str, str]:
        """What keeps workers from working, by worker (``worker-<slot>``); empty when none."""
        now = self.clock()
        found: dict[str, str] = {}
        with self._lock:
            for slot in self._slots:
                name = f"worker-{slot.index}"
                alive = slot.process is not None and slot.process.is_alive()
                if not alive:
                    wait = max(0.0, slot.next_start - now)
                    found[name] = (
                        f"stopped (exit {slot.last_exit}); restarting in {wait:.0f} s"
                        f" after {slot.quick_deaths} quick exit(s)"
                    )
                elif slot.problem is not None:
                    found[name] = slot.problem
        return found

    def _spawn(self, slot: _Slot) -> None:
        self._generation += 1
        worker_id = f"{self.prefix}worker-{slot.index}.{self._generation}"
        reader, writer = self._context.Pipe(duplex=False)
        process = self._context.Process(
            target=worker_main,
            args=(self.config, worker_id, os.getpid(), slot.index, writer),
            name=f"legaleval-{worker_id}",
            daemon=True,
        )
        try:
            process.start()
        finally:
            writer.close()  # the child has its copy; EOF on the reader means it is gone
        with self._lock:
            if slot.reports is not None:
                slot.reports.close()
            slot.worker_id, slot.process, slot.reports = worker_id, process, reader
            slot.started, slot.problem = self.clock(), None

    def _read_reports(self, slot: _Slot) -> None:
        reports = slot.reports
        if reports is None:
            return
        with contextlib.suppress(EOFError, OSError):
            while reports.poll(0):
                problem = reports.recv()
                slot.problem = problem if isinstance(problem, str) else None

    def _tend(self, slot: _Slot, now: float) -> None:
        """One look at a slot: read its reports, give back a dead worker's runs, replace it."""
        self._read_reports(slot)
        process = slot.process
        if process is not None and not process.is_alive():
            process.join(0)
            slot.last_exit = process.exitcode
            slot.to_release.append(slot.worker_id)
            lived = now - slot.started
            slot.quick_deaths = 0 if lived >= STABLE_AFTER_S else slot.quick_deaths
            slot.quick_deaths += 1
            slot.next_start = now + restart_delay(slot.quick_deaths)
            with self._lock:
                slot.process = None
            _log.warning(
                "legaleval: %s ended (exit %s); replacing it in %.1f s",
                slot.worker_id, slot.last_exit, slot.next_start - now,
            )  # fmt: skip
        while slot.to_release:
            released = self.queue.release(slot.to_release[0])  # may raise: next round
            if released:
                _log.warning("legaleval: runs given back to the queue: %s", ", ".join(released))
            slot.to_release.pop(0)
        if slot.process is None and now >= slot.next_start:
            try:
                self._spawn(slot)
            except Exception:  # cannot start a process now (resources): back off
                slot.quick_deaths += 1
                slot.next_start = now + restart_delay(slot.quick_deaths)
                raise

    def supervise_once(self) -> None:
        """One round over every slot; an error in one slot does not skip the others."""
        now = self.clock()
        failed: BaseException | None = None
        for slot in self._slots:
            try:
                self._tend(slot, now)
            except Exception as exc:
                failed = exc
        if failed is not None:
            self.rounds_failed += 1
            if self.rounds_failed == 1 or self.rounds_failed % 50 == 0:
                _log.warning("legaleval: the worker supervisor met %r; it goes on", failed)

    def _supervise(self) -> None:
        # Spawned from this thread: PR_SET_PDEATHSIG fires when the *thread* that started a
        # worker ends, and this one lives as long as the workers should.
        self.supervise_once()
        self._started.set()
        while not self._stopping.wait(0.2):
            try:
                self.supervise_once()
            except Exception:  # never let the supervisor die while the service runs
                _log.exception("legaleval: the worker supervisor failed a round")
        with self._lock:
            processes = [s.process for s in self._slots if s.process is not None]
        for process in processes:
            process.kill()
        for process in processes:
            process.join(10)

    def stop(self) -> None:
        """Stop every worker now; their runs continue at the next start."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(30)
