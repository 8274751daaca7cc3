"""One worker process: takes a run from the queue, evaluates it, takes the next.

A worker never dies of its storage. A run table that is locked is waited out (the store
does that); a full disk, met while claiming or mid-run, is reported to the supervisor
(``/healthz`` shows it), waited out with back-off — the data directory is probed until it
takes writes again — and the run it held is then continued where it was, with nothing
recorded lost (``service.execution``). Only a run whose storage keeps failing although the
probe passes is given up, ``failed`` with the cause.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from pytest_legaleval.pipeline.settings import Settings
from pytest_legaleval.service.config import DataDir
from pytest_legaleval.service.database import Database, RunTable, SqliteDatabase
from pytest_legaleval.service.queue import RunQueue
from pytest_legaleval.service.storage import StorageError, storage_problem

__all__ = [
    "MAX_STORAGE_ATTEMPTS",
    "Reporter",
    "WorkerConfig",
    "WorkerLoop",
    "start_heartbeat",
    "worker_main",
]

_log = logging.getLogger(__name__)

MAX_STORAGE_ATTEMPTS = 8
"""Attempts at a run whose storage keeps failing although the probe passes; then it fails."""


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """What a worker process needs (it crosses the process boundary, pickled)."""

    settings: Settings
    root: Path
    poll_interval_s: float = 0.1
    share: int = 1
    """Workers sharing the run options' totals (``--concurrency``, ``--rpm``, ``--tpm``)."""
    log_level: int = logging.INFO
    storage_retry_first_s: float = 0.5
    """First pause while storage fails; it doubles up to :attr:`storage_retry_max_s`."""
    storage_retry_max_s: float = 30.0
    database: Database | None = None
    """Where the run table and the queue are (``None``: the data directory's SQLite file)."""


class Reporter:
    """Tells the supervisor (over a pipe) what keeps this worker from working, on change."""

    def __init__(self, conn: Connection | None) -> None:
        self.conn = conn
        self.last: str | None = None
        self._lock = threading.Lock()  # the loop and the lease heartbeat both report

    def __call__(self, problem: str | None) -> None:
        """Report ``problem`` (``None``: working again); never raises."""
        with self._lock:
            if problem == self.last:
                return
            self.last = problem
            if self.conn is None:
                return
            with contextlib.suppress(OSError, ValueError):
                self.conn.send(problem)


class WorkerLoop:
    """The loop of one worker, on a run table, a queue and a data directory.

    Args:
        config: the worker's configuration.
        worker_id: the name its claims go by (``worker-<slot>.<generation>``).
        slot: its place among the workers (shares the rate limits).
        store: the run table.
        queue: the run queue.
        report: told what keeps the worker from working (see :class:`Reporter`).
        sleep: waits (a test passes one that does not).

    """

    def __init__(
        self,
        config: WorkerConfig,
        worker_id: str,
        slot: int,
        *,
        store: RunTable,
        queue: RunQueue,
        report: Callable[[str | None], None],
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        self.worker_id = worker_id
        self.slot = slot
        self.data = DataDir(config.root)
        self.store = store
        self.queue = queue
        self.report = report
        self.sleep = sleep

    def run_forever(self) -> None:
        """Take and evaluate runs until the process ends."""
        while True:
            if self.step() is None:
                self.sleep(self.config.poll_interval_s)

    def step(self) -> str | None:
        """Claim one run and see it to its end; the run's id, or ``None`` if none waited."""
        try:
            run_id = self.queue.claim(self.worker_id)
        except StorageError as exc:
            self.report(str(exc))
            self.wait_for_storage()
            return None
        if run_id is None:
            return None
        _log.info("run %s: started", run_id)
        status = self._see_through(run_id)
        self._until_written(lambda: self.queue.done(run_id))
        self.report(None)
        _log.info("run %s: %s", run_id, status)
        return run_id

    def _see_through(self, run_id: str) -> str:
        from pytest_legaleval.service.execution import execute

        for attempt in range(1, MAX_STORAGE_ATTEMPTS + 1):
            try:
                return execute(
                    run_id,
                    base=self.config.settings,
                    data=self.data,
                    store=self.store,
                    share=self.config.share,
                    position=self.slot % self.config.share,
                    on_problem=self.report,
                )
            except StorageError as exc:
                # Not the run's end: wait until storage works, then continue the run.
                _log.warning("run %s: storage failed (%s); waiting to continue it", run_id, exc)
                self.report(f"a run waits for storage: {exc}")
                if attempt == MAX_STORAGE_ATTEMPTS:
                    self._give_up(run_id, f"storage failed {attempt} times during the run: {exc}")
                    return "failed"
                self.wait_for_storage()
            except Exception:
                # A defect, not a run's failure: mark it failed rather than retry it forever.
                _log.exception("run %s: the worker failed", run_id)
                with contextlib.suppress(Exception):
                    self.store.finish(run_id, "failed", error="internal error in the worker")
                return "failed"
        raise AssertionError("unreachable")  # pragma: no cover

    def _give_up(self, run_id: str, why: str) -> None:
        self._until_written(lambda: self.store.finish(run_id, "failed", error=why))

    def storage_problem(self) -> str | None:
        """Why storage cannot take writes now (the disk, then the run table), or ``None``."""
        problem = storage_problem(self.data.root)
        if problem is not None:
            return problem
        try:
            self.store.probe()
        except StorageError as exc:
            return str(exc)
        return None

    def wait_for_storage(self) -> None:
        """Back off until the data directory and the run table take writes again."""
        delay = self.config.storage_retry_first_s
        while (problem := self.storage_problem()) is not None:
            self.report(problem)
            self.sleep(delay)
            delay = min(delay * 2, self.config.storage_retry_max_s)
        self.report(None)

    def _until_written(self, write: Callable[[], object]) -> None:
        """``write`` (to the table), waiting out storage failures as long as they last."""
        while True:
            try:
                write()
                return
            except StorageError as exc:
                self.report(str(exc))
                self.wait_for_storage()


def worker_main(
    config: WorkerConfig, worker_id: str, parent: int, slot: int, reports: Connection | None
) -> None:
    """The target of a worker process (see :class:`WorkerLoop`)."""
    from pytest_legaleval.service.workers import die_with_parent

    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The SDK logs every request at INFO: only the service's own news is worth a line.
    logging.basicConfig(level=logging.WARNING, format=f"legaleval {worker_id}: %(message)s")
    logging.getLogger("pytest_legaleval").setLevel(config.log_level)
    report = Reporter(reports)
    data = DataDir(config.root)
    database = config.database or SqliteDatabase(data.state)
    while True:  # the table may be unwritable at the start too
        try:
            store = database.store()
            queue = database.queue()
            break
        except StorageError as exc:
            report(str(exc))
            time.sleep(config.storage_retry_first_s)
    renew = getattr(queue, "renew", None)
    if renew is not None:  # claims on leases (PostgreSQL): keep them while this process lives
        lease_s = float(getattr(queue, "lease_s", 30.0))
        start_heartbeat(renew, worker_id, lease_s / 3, report)
    loop = WorkerLoop(config, worker_id, slot, store=store, queue=queue, report=report)
    loop.run_forever()


def start_heartbeat(
    renew: Callable[[str], object],
    worker_id: str,
    every_s: float,
    report: Callable[[str | None], None],
    stop: threading.Event | None = None,
) -> threading.Thread:
    """Renew ``worker_id``'s leases every ``every_s`` seconds in a daemon thread.

    The heartbeat runs beside the evaluation, so a long run keeps its lease; it dies with
    the process, and then the lease runs out and another replica continues the run. A
    failed renewal (the database away) is reported and tried again at the next beat;
    ``stop``, when set, ends it.
    """
    halt = stop if stop is not None else threading.Event()

    def beat() -> None:
        failing = False
        while not halt.wait(every_s):
            try:
                renew(worker_id)
            except Exception as exc:
                _log.warning("lease renewal failed: %s", exc)
                report(f"cannot renew its leases: {exc}")
                failing = True
                continue
            if failing:  # renewing again: what this thread reported is over
                failing = False
                report(None)

    thread = threading.Thread(target=beat, name="legaleval-heartbeat", daemon=True)
    thread.start()
    return thread
