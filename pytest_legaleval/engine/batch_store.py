"""Where in-flight provider batches are remembered: two tables in the result cache's file.

A batch is paid for when it is created, so its id, and the ``custom_id`` and cache key of
every request in it, are committed *before* the run waits on it. The rows are keyed by the
request's cache key, not by the run: any later process that opens the same cache — another
run id, another day — and asks for the same request finds the batch that already carries
it and polls that batch instead of paying again.

``batches`` holds one row per provider batch (status, request count, when it was created
and last seen); ``batch_requests`` one row per request still owed by a batch. A request's
row goes when its answer is in the result cache, when it failed for good, or when it moves
to a new batch or to a live call; a batch's row is marked ``collected`` once its files were
read. What is left is what a killed run left in flight (:func:`pending_batches`).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pytest_legaleval.engine.cache import ResultCache
from pytest_legaleval.engine.types import utc_timestamp
from pytest_legaleval.errors import ConfigError

__all__ = [
    "BatchRow",
    "BatchState",
    "BatchStore",
    "PendingRequest",
    "format_age",
    "pending_batches",
]

_SELECT_CHUNK = 500
_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    endpoint TEXT NOT NULL,
    model TEXT NOT NULL,
    input_file_id TEXT,
    status TEXT NOT NULL,
    requests INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    created_epoch REAL NOT NULL,
    updated_at TEXT NOT NULL,
    collected INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID
""",
    """
CREATE TABLE IF NOT EXISTS batch_requests (
    cache_key TEXT PRIMARY KEY,
    batch_id TEXT NOT NULL,
    custom_id TEXT NOT NULL,
    model TEXT NOT NULL,
    line INTEGER NOT NULL
) WITHOUT ROWID
""",
    "CREATE INDEX IF NOT EXISTS batch_requests_by_batch ON batch_requests (batch_id)",
)


@dataclass(frozen=True, slots=True)
class BatchRow:
    """One provider batch as stored."""

    batch_id: str
    """The provider's batch id."""
    endpoint: str
    """The endpoint identity (``openai:https://…/v1``; never a key)."""
    model: str
    """``PROVIDER/NAME`` of its requests."""
    status: str
    """The last status seen (``validating`` … ``completed``)."""
    requests: int
    """Requests in its input file."""
    attempt: int
    """Which batch attempt of its requests it is (1 for the first)."""
    created_at: str
    """When it was created (ISO-8601 UTC)."""
    created_epoch: float
    """The same, in seconds since the epoch (for ages)."""
    updated_at: str
    """When its status was last stored."""
    owed: int = 0
    """Requests of it still waiting for their answer."""


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """A request that a stored batch carries."""

    cache_key: str
    batch_id: str
    custom_id: str
    model: str
    line: int
    """1-based line of the request in the batch's input file."""


class BatchState(Protocol):
    """Where an engine keeps its batches (thread-safe).

    :class:`BatchStore` keeps them in the cache file; a caller may pass its own (the
    service's database, shared by its replicas) to ``Engine(batch_state=...)``.

    Every method commits before it returns; ``record_batch`` commits the batch and its
    requests together.
    """

    def record_batch(
        self, row: BatchRow, input_file_id: str, requests: Sequence[tuple[str, str, int]]
    ) -> None:
        """Store a new batch and its ``(cache_key, custom_id, line)`` requests at once."""
        ...

    def pending_for(self, keys: Iterable[str]) -> dict[str, PendingRequest]:
        """The stored requests among ``keys`` whose batch is not collected."""
        ...

    def requests_of(self, batch_id: str) -> list[PendingRequest]:
        """Every request still owed by ``batch_id``."""
        ...

    def batch(self, batch_id: str) -> BatchRow | None:
        """The stored row of ``batch_id``."""
        ...

    def set_status(self, batch_id: str, status: str) -> None:
        """Store the status last seen."""
        ...

    def forget(self, batch_id: str, keys: Iterable[str]) -> None:
        """Drop the rows of ``keys`` that still point at ``batch_id``."""
        ...

    def collected(self, batch_id: str) -> None:
        """Mark the batch's files read."""
        ...

    def close(self) -> None:
        """Release the store (the engine calls it when it closes)."""
        ...


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30.0, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 30000")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


class BatchStore:
    """The batch tables of one cache file; thread-safe (one connection behind a lock).

    Args:
        path: the cache's SQLite file (created by :class:`ResultCache` beforehand, so it
            has its private mode and WAL journal).

    Raises:
        ConfigError: the file cannot hold the tables.

    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:
            self._conn = _connect(path)
            for statement in _SCHEMA:
                self._conn.execute(statement)
        except sqlite3.Error as exc:
            raise ConfigError(
                f"Cannot keep batch state in {path!r} ({exc}); pick another --cache"
            ) from exc

    @classmethod
    def beside(cls, cache: ResultCache) -> BatchStore:
        """The store in ``cache``'s file."""
        return cls(cache.path)

    def record_batch(
        self,
        row: BatchRow,
        input_file_id: str,
        requests: Sequence[tuple[str, str, int]],
    ) -> None:
        """Commit a new batch and its ``(cache_key, custom_id, line)`` requests at once."""
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    "INSERT OR REPLACE INTO batches (batch_id, endpoint, model, input_file_id, "
                    "status, requests, attempt, created_at, created_epoch, updated_at, "
                    "collected) VALUES (?,?,?,?,?,?,?,?,?,?,0)",
                    (
                        row.batch_id,
                        row.endpoint,
                        row.model,
                        input_file_id,
                        row.status,
                        row.requests,
                        row.attempt,
                        row.created_at,
                        row.created_epoch,
                        row.updated_at,
                    ),
                )
                conn.executemany(
                    "INSERT OR REPLACE INTO batch_requests (cache_key, batch_id, custom_id, "
                    "model, line) VALUES (?,?,?,?,?)",
                    [(key, row.batch_id, cid, row.model, line) for key, cid, line in requests],
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def pending_for(self, keys: Iterable[str]) -> dict[str, PendingRequest]:
        """The stored requests among ``keys`` whose batch is not collected yet."""
        unique = list(dict.fromkeys(keys))
        found: dict[str, PendingRequest] = {}
        with self._lock:
            for start in range(0, len(unique), _SELECT_CHUNK):
                chunk = unique[start : start + _SELECT_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    "SELECT r.cache_key, r.batch_id, r.custom_id, r.model, r.line "
                    "FROM batch_requests r JOIN batches b ON b.batch_id = r.batch_id "
                    f"WHERE b.collected = 0 AND r.cache_key IN ({marks})",
                    chunk,
                ).fetchall()
                for row in rows:
                    found[row[0]] = PendingRequest(*row)
        return found

    def requests_of(self, batch_id: str) -> list[PendingRequest]:
        """Every request still owed by ``batch_id``, by line."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT cache_key, batch_id, custom_id, model, line FROM batch_requests "
                "WHERE batch_id = ? ORDER BY line",
                (batch_id,),
            ).fetchall()
        return [PendingRequest(*row) for row in rows]

    def batch(self, batch_id: str) -> BatchRow | None:
        """The stored row of ``batch_id``, if any."""
        rows = self._select("WHERE b.batch_id = ?", (batch_id,))
        return rows[0] if rows else None

    def set_status(self, batch_id: str, status: str) -> None:
        """Store the status last seen."""
        with self._lock:
            self._conn.execute(
                "UPDATE batches SET status = ?, updated_at = ? WHERE batch_id = ?",
                (status, utc_timestamp(time.time()), batch_id),
            )

    def forget(self, batch_id: str, keys: Iterable[str]) -> None:
        """Drop the rows of ``keys`` that still point at ``batch_id``.

        They were answered, failed for good or went live; a row that a newer batch took
        over is left alone.
        """
        rows = [(key, batch_id) for key in keys]
        if not rows:
            return
        with self._lock:
            self._conn.executemany(
                "DELETE FROM batch_requests WHERE cache_key = ? AND batch_id = ?", rows
            )

    def collected(self, batch_id: str) -> None:
        """Mark ``batch_id``'s files as read: it is no longer pending."""
        with self._lock:
            self._conn.execute(
                "UPDATE batches SET collected = 1, updated_at = ? WHERE batch_id = ?",
                (utc_timestamp(time.time()), batch_id),
            )

    def pending(self) -> list[BatchRow]:
        """The batches not collected yet, oldest first."""
        return self._select("WHERE b.collected = 0", ())

    def _select(self, where: str, args: tuple[object, ...]) -> list[BatchRow]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT b.batch_id, b.endpoint, b.model, b.status, b.requests, b.attempt, "
                "b.created_at, b.created_epoch, b.updated_at, "
                "(SELECT COUNT(*) FROM batch_requests r WHERE r.batch_id = b.batch_id) "
                f"FROM batches b {where} ORDER BY b.created_epoch",
                args,
            ).fetchall()
        return [BatchRow(*row) for row in rows]

    def close(self) -> None:
        """Close the connection; idempotent."""
        with self._lock:
            self._conn.close()


def pending_batches(path: str) -> list[BatchRow]:
    """The pending batches of the cache file at ``path`` (read only; none if it has none).

    Raises:
        ConfigError: ``path`` is not a readable SQLite file.

    """
    if not Path(path).is_file():
        raise ConfigError(f"No cache at {path!r}: pass the --cache file of the run")
    try:
        conn = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True, timeout=30.0)
    except sqlite3.Error as exc:
        raise ConfigError(f"Cannot open the cache {path!r}: {exc}") from exc
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "batches" not in tables:
            return []
        rows = conn.execute(
            "SELECT b.batch_id, b.endpoint, b.model, b.status, b.requests, b.attempt, "
            "b.created_at, b.created_epoch, b.updated_at, "
            "(SELECT COUNT(*) FROM batch_requests r WHERE r.batch_id = b.batch_id) "
            "FROM batches b WHERE b.collected = 0 ORDER BY b.created_epoch"
        ).fetchall()
    except sqlite3.Error as exc:
        raise ConfigError(f"{path!r} is not a legaleval cache ({exc})") from exc
    finally:
        conn.close()
    return [BatchRow(*row) for row in rows]


def format_age(seconds: float) -> str:
    """How long a batch has waited: ``3h 12m``, ``4m 05s`` or ``12s``."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"
