"""What ``/healthz`` answers from: storage probed in the background, workers, retention.

The health check must answer at once, whatever the disk or the run table are doing (a
36 s lock, a full disk): it reads the last :class:`HealthReport`, which a thread of the
HTTP process refreshes every few seconds by writing a small file in the data directory
and a row of the run table, each with a short wait. The same thread puts back into the
queue any unfinished run missing from it (an upload whose queue entry could not be
written), so no accepted run is ever orphaned.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_legaleval.service.config import DataDir
from pytest_legaleval.service.database import Database, RunTable, SqliteDatabase
from pytest_legaleval.service.queue import RunQueue
from pytest_legaleval.service.storage import (
    DatabaseUnavailable,
    Patience,
    StorageBusy,
    StorageError,
    storage_problem,
)

__all__ = ["HealthMonitor", "HealthReport"]

_log = logging.getLogger(__name__)
_PROBE_PATIENCE = Patience(busy_timeout_s=0.5, give_up_s=1.0)
REQUEUE_EVERY = 15
"""Checks between two looks for unfinished runs missing from the queue (the first is one)."""


@dataclass(frozen=True, slots=True)
class HealthReport:
    """The service's health as last checked."""

    problems: Mapping[str, str] = field(default_factory=dict)
    """What does not work, by component (``storage``, ``worker-<n>``, ``retention``)."""
    queued: int | None = None
    """Runs waiting for a worker (``None`` until counted)."""
    database: Mapping[str, Any] | None = None
    """``kind``, ``name`` (never the credentials) and ``reachable`` (``None`` until checked)."""


class HealthMonitor:
    """Checks storage every ``interval_s`` seconds in a thread; :meth:`report` reads the result.

    Args:
        data: the data directory.
        store: its run table (the monitor opens its own connection to probe it).
        queue: the run queue (unfinished runs missing from it are put back).
        pool: the workers (``problems()``), if any.
        sweeper: the retention sweeper (``problem()``), if any.
        interval_s: seconds between two checks.

    """

    def __init__(
        self,
        data: DataDir,
        store: RunTable,
        queue: RunQueue,
        *,
        pool: Any = None,
        sweeper: Any = None,
        interval_s: float = 2.0,
        database: Database | None = None,
    ) -> None:
        self.data = data
        self.database = database if database is not None else SqliteDatabase(data.state)
        self._reachable: bool | None = None
        self.store = store
        self.queue = queue
        self.pool = pool
        self.sweeper = sweeper
        self.interval_s = interval_s
        self._storage: str | None = None
        self._queued: int | None = None
        self._probe: RunTable | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="legaleval-health", daemon=True)
        self.checks = 0

    def _probe_store(self) -> str | None:
        try:
            if self._probe is None:
                self._probe = self.database.store(_PROBE_PATIENCE)
            self._probe.probe()
        except DatabaseUnavailable as exc:
            self._reachable = False
            return f"{exc}; uploads are refused (503) and runs wait until it is back"
        except StorageBusy:
            self._reachable = True
            return "the run table is locked by another process; writes wait for it"
        except StorageError as exc:
            self._reachable = self.database.kind == "sqlite"
            return str(exc)
        self._reachable = True
        return None

    def check(self) -> None:
        """One round: probe the disk and the table, count the queue, requeue lost runs."""
        problem = storage_problem(self.data.root) or self._probe_store()
        self._storage = problem
        try:
            self._queued = self.store.count("queued")
            if problem is None and self.checks % REQUEUE_EVERY == 0:
                for run_id in self.store.unfinished():
                    self.queue.put(run_id)  # idempotent: only a missing one is added
        except StorageError as exc:
            self._storage = self._storage or str(exc)
        self.checks += 1

    def report(self) -> HealthReport:
        """The last check's findings, with the workers' and the sweeper's as they are now."""
        problems: dict[str, str] = {}
        if self._storage is not None:
            problems["storage"] = self._storage
        if self.pool is not None:
            problems.update(self.pool.problems())
        if self.sweeper is not None and (retention := self.sweeper.problem()) is not None:
            problems["retention"] = retention
        started = self._thread.ident is not None
        if started and not self._thread.is_alive() and not self._stop.is_set():
            problems["health"] = "the health monitor stopped"
        database = {
            "kind": self.database.kind,
            "name": self.database.name,
            "reachable": self._reachable,
        }
        return HealthReport(problems, self._queued, database)

    def start(self) -> None:
        """Check now, then every ``interval_s`` seconds."""
        self._thread.start()

    def _loop(self) -> None:
        while True:
            try:
                self.check()
            except Exception as exc:  # a probe must never end the monitor
                _log.warning("health check failed: %s", exc)
                self._storage = f"the health check failed: {exc}"
            if self._stop.wait(self.interval_s):
                return

    def stop(self) -> None:
        """Stop checking."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
