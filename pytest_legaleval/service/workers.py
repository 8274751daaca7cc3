"""Worker processes: each takes a run from the queue, evaluates it, takes the next.

The HTTP process starts ``--workers N`` of them (``spawn``: a fresh interpreter, nothing of
the HTTP process inherited) and replaces one that dies; the runs a dead worker held go
back to the front of the queue, and the next worker continues them. A worker dies with the
service: on Linux the kernel kills it when its parent goes (``PR_SET_PDEATHSIG``), and a
watchdog thread does the same elsewhere, so a run is never worked on by an orphan while a
restarted service continues it. Workers ignore Ctrl-C (the terminal sends it to the whole
process group): stopping the service stops them where they are, and the next start
continues their runs.
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
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from pathlib import Path

from pytest_legaleval.pipeline.settings import Settings
from pytest_legaleval.service.config import DataDir
from pytest_legaleval.service.queue import RunQueue, SqliteRunQueue

__all__ = ["WorkerConfig", "WorkerPool", "die_with_parent", "worker_main"]

_log = logging.getLogger(__name__)
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """What a worker process needs (it crosses the process boundary, pickled)."""

    settings: Settings
    root: Path
    poll_interval_s: float = 0.1
    share: int = 1
    """Workers sharing the run options' totals (``--concurrency``, ``--rpm``, ``--tpm``)."""
    log_level: int = logging.INFO


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


def worker_main(config: WorkerConfig, worker_id: str, parent: int, slot: int) -> None:
    """The loop of one worker process (the target of :class:`WorkerPool`'s processes)."""
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The SDK logs every request at INFO: only the service's own news is worth a line.
    logging.basicConfig(level=logging.WARNING, format=f"legaleval {worker_id}: %(message)s")
    logging.getLogger("pytest_legaleval").setLevel(config.log_level)
    from pytest_legaleval.service.execution import execute
    from pytest_legaleval.service.store import RunStore

    data = DataDir(config.root)
    store = RunStore(data.state)
    queue = SqliteRunQueue(data.state)
    while True:
        run_id = queue.claim(worker_id)
        if run_id is None:
            time.sleep(config.poll_interval_s)
            continue
        _log.info("run %s: started", run_id)
        try:
            status = execute(
                run_id,
                base=config.settings,
                data=data,
                store=store,
                share=config.share,
                position=slot % config.share,
            )
        except Exception:
            # A defect, not a run's failure: mark it failed rather than retry it forever.
            _log.exception("run %s: the worker failed", run_id)
            with contextlib.suppress(Exception):
                store.finish(run_id, "failed", error="internal error in the worker")
            status = "failed"
        queue.done(run_id)
        _log.info("run %s: %s", run_id, status)


class WorkerPool:
    """``count`` worker processes, kept alive by a supervising thread of the HTTP process."""

    def __init__(self, config: WorkerConfig, count: int, queue: RunQueue) -> None:
        self.config = config
        self.count = count
        self.queue = queue
        self._context = multiprocessing.get_context("spawn")
        self._stopping = threading.Event()
        self._started = threading.Event()
        self._lock = threading.Lock()
        self._slots: dict[int, tuple[str, BaseProcess]] = {}
        self._generation = 0
        self._thread: threading.Thread | None = None

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
            return [p.pid for _, p in self._slots.values() if p.pid is not None]

    def _spawn(self, slot: int) -> None:
        self._generation += 1
        worker_id = f"worker-{slot}.{self._generation}"
        process = self._context.Process(
            target=worker_main,
            args=(self.config, worker_id, os.getpid(), slot),
            name=f"legaleval-{worker_id}",
            daemon=True,
        )
        process.start()
        with self._lock:
            self._slots[slot] = (worker_id, process)

    def _supervise(self) -> None:
        # Spawned from this thread: PR_SET_PDEATHSIG fires when the *thread* that started a
        # worker ends, and this one lives as long as the workers should.
        for slot in range(self.count):
            self._spawn(slot)
        self._started.set()
        while not self._stopping.wait(0.2):
            for slot in range(self.count):
                worker_id, process = self._slots[slot]
                if process.is_alive():
                    continue
                process.join(0)
                released = self.queue.release(worker_id)
                _log.warning(
                    "legaleval: %s ended (exit %s); runs given back to the queue: %s",
                    worker_id, process.exitcode, ", ".join(released) or "none",
                )  # fmt: skip
                self._spawn(slot)
        with self._lock:
            processes = [p for _, p in self._slots.values()]
        for process in processes:
            process.kill()
        for process in processes:
            process.join(10)

    def stop(self) -> None:
        """Stop every worker now; their runs continue at the next start."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(30)
