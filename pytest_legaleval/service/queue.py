"""The run queue: which run a free worker evaluates next.

:class:`RunQueue` is the whole interface the service needs, so another backend (a broker,
a database server) can replace :class:`SqliteRunQueue`, the embedded default. A run stays
in the queue from its upload until a worker has finished it: a worker that dies leaves its
claim behind, and :meth:`RunQueue.release` puts the run back for another worker, which
then continues it (``pytest_legaleval.service.execution``).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pytest_legaleval.run.manifest import utc_now
from pytest_legaleval.service.storage import WORKER_PATIENCE, Patience, connect, with_retries
from pytest_legaleval.service.store import transaction

__all__ = ["RunQueue", "SqliteRunQueue"]

T = TypeVar("T")


class RunQueue(Protocol):
    """Where runs wait for a worker; safe to use from several processes."""

    def put(self, run_id: str) -> None:
        """Add a run at the back."""

    def prioritize(self, run_id: str) -> None:
        """Move a waiting run to the front (a cancelled run finishes at once)."""

    def claim(self, worker: str) -> str | None:
        """The next run for ``worker`` (front first, then oldest), or ``None``."""

    def done(self, run_id: str) -> None:
        """The run has ended: it leaves the queue."""

    def release(self, worker: str | None = None) -> list[str]:
        """Put back the runs ``worker`` claimed (``None``: every claim); return them."""

    def claimed_by(self, worker: str) -> list[str]:
        """The runs ``worker`` holds."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS queue (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL UNIQUE,
    priority INTEGER NOT NULL DEFAULT 0,
    claimed_by TEXT,
    claimed_at TEXT
);
CREATE INDEX IF NOT EXISTS queue_waiting ON queue (claimed_by, priority, seq);
"""


class SqliteRunQueue:
    """:class:`RunQueue` in a table of an SQLite file (a connection per thread).

    Every call waits out another process's lock as ``patience`` says (see ``service.store``).
    """

    def __init__(self, path: Path, patience: Patience = WORKER_PATIENCE) -> None:
        self.path = path
        self.patience = patience
        self._local = threading.local()
        with_retries(lambda: self._conn().executescript(_SCHEMA), patience)

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = connect(self.path, self.patience)
        return conn

    def _write(self, action: Callable[[sqlite3.Connection], T]) -> T:
        return with_retries(lambda: transaction(self._conn(), action), self.patience)

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        return with_retries(lambda: self._conn().execute(sql, args).fetchall(), self.patience)

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def put(self, run_id: str) -> None:
        """See :meth:`RunQueue.put`."""
        self._write(
            lambda conn: conn.execute("INSERT OR IGNORE INTO queue (run_id) VALUES (?)", (run_id,))
        )

    def prioritize(self, run_id: str) -> None:
        """See :meth:`RunQueue.prioritize`."""
        self._write(
            lambda conn: conn.execute("UPDATE queue SET priority = 1 WHERE run_id = ?", (run_id,))
        )

    def claim(self, worker: str) -> str | None:
        """See :meth:`RunQueue.claim`."""

        def take(conn: sqlite3.Connection) -> str | None:
            found = conn.execute(
                "SELECT run_id FROM queue WHERE claimed_by IS NULL "
                "ORDER BY priority DESC, seq LIMIT 1"
            ).fetchone()
            if found is None:
                return None
            conn.execute(
                "UPDATE queue SET claimed_by = ?, claimed_at = ? WHERE run_id = ?",
                (worker, utc_now(), found[0]),
            )
            return str(found[0])

        return self._write(take)

    def done(self, run_id: str) -> None:
        """See :meth:`RunQueue.done`."""
        self._write(lambda conn: conn.execute("DELETE FROM queue WHERE run_id = ?", (run_id,)))

    def release(self, worker: str | None = None) -> list[str]:
        """See :meth:`RunQueue.release`; a released run goes to the front."""
        where, args = (
            ("claimed_by IS NOT NULL", ()) if worker is None else ("claimed_by = ?", (worker,))
        )

        def give_back(conn: sqlite3.Connection) -> list[str]:
            runs = [
                str(row[0]) for row in conn.execute(f"SELECT run_id FROM queue WHERE {where}", args)
            ]
            conn.execute(
                "UPDATE queue SET claimed_by = NULL, claimed_at = NULL, priority = 1 "
                f"WHERE {where}",
                args,
            )
            return runs

        return self._write(give_back)

    def claimed_by(self, worker: str) -> list[str]:
        """See :meth:`RunQueue.claimed_by`."""
        return [
            str(row[0])
            for row in self._read("SELECT run_id FROM queue WHERE claimed_by = ?", (worker,))
        ]
