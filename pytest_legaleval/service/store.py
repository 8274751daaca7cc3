"""The service's run table: one SQLite file in the data directory, shared by its processes.

The HTTP process creates runs and notes cancellation requests; the worker processes write
the states, the progress and the final figures. Every process opens its own connections
(one per thread), in WAL mode, so readers never wait for a writer. A row holds only what
the API answers with; the artifacts stay in the run directory.

Every write is one transaction that waits out a lock (``service.storage.with_retries``):
a worker as long as the lock lasts, the HTTP process up to its bound. A full disk raises
:class:`~pytest_legaleval.service.storage.StorageFull` at once, the transaction rolled back.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pytest_legaleval.run.directory import finite_dump
from pytest_legaleval.run.manifest import TERMINAL_STATES, utc_now
from pytest_legaleval.service.storage import WORKER_PATIENCE, Patience, connect, with_retries

__all__ = [
    "ACTIVE_STATES",
    "COLUMNS",
    "RunRow",
    "RunStore",
    "connect",
    "dump_json",
    "row_of",
    "transaction",
]

T = TypeVar("T")

ACTIVE_STATES = ("validating", "running", "retrying", "finalizing")
"""States of a run that a worker has started and not finished."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    status TEXT NOT NULL,
    models TEXT NOT NULL,
    request_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    completed_at TEXT,
    transitions TEXT NOT NULL,
    validation TEXT NOT NULL,
    dataset TEXT NOT NULL,
    done INTEGER NOT NULL DEFAULT 0,
    total INTEGER NOT NULL DEFAULT 0,
    cancel_requested_at TEXT,
    resumes INTEGER NOT NULL DEFAULT 0,
    denominators TEXT,
    metrics TEXT,
    error TEXT,
    raw_deleted_at TEXT,
    summary_deleted_at TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_owner ON runs (owner, seq);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status);
CREATE TABLE IF NOT EXISTS health (id INTEGER PRIMARY KEY CHECK (id = 1), at TEXT NOT NULL);
"""


def transaction(conn: sqlite3.Connection, action: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``action`` in one write transaction, its lock taken at once (``BEGIN IMMEDIATE``).

    What ``action`` reads stays true until it commits; it is rolled back if it (or the
    commit: a full disk shows there) fails.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = action(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # the connection is unusable: the next attempt's error says why
        raise
    return result


@dataclass(frozen=True, slots=True)
class RunRow:
    """One run as the table holds it."""

    seq: int
    run_id: str
    owner: str
    """The token's id (``tok_…``, a digest prefix, never the token) or ``local``."""
    status: str
    models: tuple[str, ...]
    request_id: str
    """The request id of the upload that created the run."""
    created_at: str
    updated_at: str
    completed_at: str | None
    transitions: tuple[Mapping[str, str], ...]
    validation: Mapping[str, Any]
    """``status`` (accepted …), ``summary`` and the number of ``record_errors``."""
    dataset: Mapping[str, Any]
    """``dataset_id``, ``dataset_version``, ``schema_version``, ``sha256``, ``bytes``."""
    done: int
    total: int
    cancel_requested_at: str | None
    resumes: int
    """How often a worker took the run up again after the one running it stopped."""
    denominators: Mapping[str, Any] | None
    metrics: Mapping[str, Any] | None
    error: str | None
    raw_deleted_at: str | None
    summary_deleted_at: str | None

    @property
    def terminal(self) -> bool:
        """Whether the run has ended (§3.1)."""
        return self.status in TERMINAL_STATES


_COLUMNS = (
    "seq, run_id, owner, status, models, request_id, created_at, updated_at, completed_at, "
    "transitions, validation, dataset, done, total, cancel_requested_at, resumes, "
    "denominators, metrics, error, raw_deleted_at, summary_deleted_at"
)


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _row(values: Sequence[Any]) -> RunRow:
    (seq, run_id, owner, status, models, request_id, created_at, updated_at, completed_at,
     transitions, validation, dataset, done, total, cancel_requested_at, resumes,
     denominators, metrics, error, raw_deleted_at, summary_deleted_at) = values  # fmt: skip
    return RunRow(
        seq, run_id, owner, status, tuple(json.loads(models)), request_id, created_at,
        updated_at, completed_at, tuple(json.loads(transitions)), json.loads(validation),
        json.loads(dataset), done, total, cancel_requested_at, resumes, _loads(denominators),
        _loads(metrics), error, raw_deleted_at, summary_deleted_at,
    )  # fmt: skip


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _dumps(value: Any) -> str:
    # Standard JSON only: a NaN stored here would make every answer about the run a 500
    # (the JSON responses refuse it); it is stored as null, with a warning, instead.
    return finite_dump("the run table", value, _compact)[0]


COLUMNS = _COLUMNS
"""The columns of a :class:`RunRow`, in :func:`row_of`'s order (every backend selects them)."""
row_of = _row
"""A :class:`RunRow` from the values of :data:`COLUMNS`."""
dump_json = _dumps
"""How a JSON column is written (standard JSON: a NaN becomes null, with a warning)."""


class RunStore:
    """The run table of one data directory; thread-safe (a connection per thread).

    ``patience`` says how long a write waits for another process's lock.
    """

    def __init__(self, path: Path, patience: Patience = WORKER_PATIENCE) -> None:
        self.path = path
        self.patience = patience
        if not path.exists():  # the run table names every upload: the owner's eyes only
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        with_retries(lambda: self._conn().executescript(_SCHEMA), patience)

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path, self.patience)
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def _write(self, action: Callable[[sqlite3.Connection], T]) -> T:
        """``action`` in one write transaction, tried again while the table is locked."""
        return with_retries(lambda: transaction(self._conn(), action), self.patience)

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        return with_retries(lambda: self._conn().execute(sql, args).fetchall(), self.patience)

    @staticmethod
    def _transitions(conn: sqlite3.Connection, run_id: str) -> list[dict[str, str]] | None:
        """The run's state transitions, or ``None`` when there is no such run."""
        found = conn.execute("SELECT transitions FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return None if found is None else list(json.loads(found[0]))

    def close(self) -> None:
        """Close every connection this store opened."""
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()

    # -- the HTTP process -------------------------------------------------------------------

    def create(
        self,
        *,
        run_id: str,
        owner: str,
        models: Sequence[str],
        request_id: str,
        validation: Mapping[str, Any],
        dataset: Mapping[str, Any],
        total: int,
        max_queued: int,
        max_per_owner: int,
    ) -> str | None:
        """Insert a ``queued`` run unless a limit is reached; return the limit's name if so.

        The counts and the insert are one transaction, so concurrent uploads never pass a
        limit together.
        """

        def insert(conn: sqlite3.Connection) -> str | None:
            # Stamped under the write lock, so created_at follows seq (the list's order).
            now = utc_now()
            queued = conn.execute("SELECT COUNT(*) FROM runs WHERE status = 'queued'").fetchone()
            if queued[0] >= max_queued:
                return "queue"
            marks = ",".join("?" * len(TERMINAL_STATES))
            mine = conn.execute(
                f"SELECT COUNT(*) FROM runs WHERE owner = ? AND status NOT IN ({marks})",
                (owner, *TERMINAL_STATES),
            ).fetchone()
            if mine[0] >= max_per_owner:
                return "owner"
            conn.execute(
                "INSERT INTO runs (run_id, owner, status, models, request_id, created_at, "
                "updated_at, transitions, validation, dataset, total) "
                "VALUES (?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id, owner, _dumps(list(models)), request_id, now, now,
                    _dumps([{"state": "queued", "at": now}]), _dumps(validation),
                    _dumps(dataset), total,
                ),
            )  # fmt: skip
            return None

        return self._write(insert)

    def get(self, run_id: str) -> RunRow | None:
        """The run, or ``None``."""
        found = self._read(f"SELECT {_COLUMNS} FROM runs WHERE run_id = ?", (run_id,))
        return _row(found[0]) if found else None

    def page(self, owner: str | None, *, limit: int, before: int | None) -> list[RunRow]:
        """Runs newest first (``owner`` ``None``: everyone's), at most ``limit``.

        ``before`` is the ``seq`` of the last run of the previous page.
        """
        where: list[str] = []
        args: list[str | int] = []
        if owner is not None:
            where.append("owner = ?")
            args.append(owner)
        if before is not None:
            where.append("seq < ?")
            args.append(before)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = self._read(
            f"SELECT {_COLUMNS} FROM runs {clause} ORDER BY seq DESC LIMIT ?", (*args, limit)
        )
        return [_row(values) for values in rows]

    def request_cancel(self, run_id: str) -> RunRow | None:
        """Note a cancellation request (kept if one was made); the run as it is now."""
        now = utc_now()
        marks = ",".join("?" * len(TERMINAL_STATES))
        self._write(
            lambda conn: conn.execute(
                "UPDATE runs SET cancel_requested_at = COALESCE(cancel_requested_at, ?), "
                f"updated_at = ? WHERE run_id = ? AND status NOT IN ({marks})",
                (now, now, run_id, *TERMINAL_STATES),
            )
        )
        return self.get(run_id)

    def count(self, status: str) -> int:
        """Runs in ``status``."""
        return int(self._read("SELECT COUNT(*) FROM runs WHERE status = ?", (status,))[0][0])

    def probe(self) -> None:
        """One small write (the health row): raises what a write of the table would raise."""
        self._write(
            lambda conn: conn.execute(
                "INSERT OR REPLACE INTO health (id, at) VALUES (1, ?)", (utc_now(),)
            )
        )

    # -- the workers ------------------------------------------------------------------------

    def cancel_requested(self, run_id: str) -> bool:
        """Whether someone asked to cancel the run."""
        found = self._read("SELECT cancel_requested_at FROM runs WHERE run_id = ?", (run_id,))
        return bool(found and found[0][0])

    def taken_up(self, run_id: str) -> None:
        """A worker takes up a run another one had started (count it)."""
        self._write(
            lambda conn: conn.execute(
                "UPDATE runs SET resumes = resumes + 1, updated_at = ? WHERE run_id = ?",
                (utc_now(), run_id),
            )
        )

    def set_state(self, run_id: str, state: str, at: str) -> None:
        """Append a state transition; the status follows it unless it is terminal.

        The terminal status is written by :meth:`finish`, together with the figures, once
        the run directory is sealed: a client that sees it can fetch everything.
        """

        def append(conn: sqlite3.Connection) -> None:
            transitions = self._transitions(conn, run_id)
            if transitions is None:
                return
            transitions.append({"state": state, "at": at})
            status_sql = "" if state in TERMINAL_STATES else ", status = ?"
            params: tuple[Any, ...] = (_dumps(transitions), at)
            params += () if state in TERMINAL_STATES else (state,)
            conn.execute(
                f"UPDATE runs SET transitions = ?, updated_at = ?{status_sql} WHERE run_id = ?",
                (*params, run_id),
            )

        self._write(append)

    def progress(self, run_id: str, done: int, total: int) -> None:
        """Items recorded so far, of ``total``."""
        self._write(
            lambda conn: conn.execute(
                "UPDATE runs SET done = ?, total = ?, updated_at = ? WHERE run_id = ?",
                (done, total, utc_now(), run_id),
            )
        )

    def finish(
        self,
        run_id: str,
        status: str,
        *,
        denominators: Mapping[str, Any] | None = None,
        metrics: Mapping[str, Any] | None = None,
        error: str | None = None,
        at: str | None = None,
        transitions: Sequence[Mapping[str, str]] | None = None,
    ) -> None:
        """Write the terminal status (and the transition to it, if not noted yet).

        ``transitions``, when given, replace the noted ones (a sealed run directory's
        manifest has them all, some of which the table may have missed).
        """
        now = at or utc_now()

        def end(conn: sqlite3.Connection) -> None:
            noted = self._transitions(conn, run_id)
            if noted is None:
                return
            steps = [dict(t) for t in transitions] if transitions else noted
            if not steps or steps[-1]["state"] != status:
                steps.append({"state": status, "at": now})
            conn.execute(
                "UPDATE runs SET status = ?, transitions = ?, completed_at = ?, updated_at = ?, "
                "denominators = ?, metrics = ?, error = ? WHERE run_id = ?",
                (
                    status, _dumps(steps), steps[-1]["at"], now,
                    None if denominators is None else _dumps(denominators),
                    None if metrics is None else _dumps(metrics), error, run_id,
                ),
            )  # fmt: skip

        self._write(end)

    # -- retention --------------------------------------------------------------------------

    def completed_before(self, cutoff: str, column: str) -> Iterator[RunRow]:
        """Terminal runs completed before ``cutoff`` whose ``column`` deletion is pending."""
        if column not in ("raw_deleted_at", "summary_deleted_at"):
            raise ValueError(column)
        rows = self._read(
            f"SELECT {_COLUMNS} FROM runs WHERE completed_at IS NOT NULL AND completed_at < ? "
            f"AND {column} IS NULL ORDER BY seq",
            (cutoff,),
        )
        for values in rows:
            yield _row(values)

    def mark_deleted(self, run_id: str, column: str) -> None:
        """Note that the run's raw artifacts (or its summaries) were deleted."""
        if column not in ("raw_deleted_at", "summary_deleted_at"):
            raise ValueError(column)
        self._write(
            lambda conn: conn.execute(
                f"UPDATE runs SET {column} = ? WHERE run_id = ?", (utc_now(), run_id)
            )
        )

    def unfinished(self) -> list[str]:
        """Runs that have not ended (each must be in the queue until it does)."""
        marks = ",".join("?" * len(TERMINAL_STATES))
        rows = self._read(
            f"SELECT run_id FROM runs WHERE status NOT IN ({marks}) ORDER BY seq", TERMINAL_STATES
        )
        return [str(row[0]) for row in rows]

    def known(self, run_ids: Sequence[str]) -> set[str]:
        """Which of ``run_ids`` have a row."""
        found: set[str] = set()
        for start in range(0, len(run_ids), 500):
            chunk = list(run_ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self._read(f"SELECT run_id FROM runs WHERE run_id IN ({marks})", chunk)
            found.update(str(row[0]) for row in rows)
        return found
