"""SQLite result cache shared by processes (xdist workers) and by reruns.

Durability: WAL mode with ``synchronous=NORMAL``; each batch of results is committed by a
dedicated writer thread *before* the caller's future is resolved, so anything a caller has
seen survives a SIGKILL of the process and a rerun pays for nothing twice. The writer
drains whatever is queued into one transaction, so batches grow by themselves under load.
Only successful results are stored; a row is written in one statement, so there are no
partial rows.

The writer thread never dies and never leaves a waiter waiting: a batch that fails (a
database error, a value SQLite refuses, a failing ``scrub``) is retried row by row, a row
that still fails is counted in ``write_errors`` and left uncached, and every row's
callback runs whatever happened. The file is local working state that may hold replies:
it is created with mode 0600 (its WAL and shared-memory files inherit that), and ``scrub``
lets the owner store replies with secrets removed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_legaleval.engine.types import GenerationRequest, utc_timestamp
from pytest_legaleval.errors import ConfigError

__all__ = [
    "CACHE_KEY_VERSION",
    "WRITE_BATCH",
    "CachedRow",
    "ResultCache",
    "cache_key",
    "next_writes",
    "release_writes",
]

CACHE_KEY_VERSION = "legaleval-cache-v1"
"""Mixed into every key; bump it when the key's meaning changes."""

_log = logging.getLogger(__name__)
_SELECT_CHUNK = 500  # stays below SQLite's bound-parameter limit on old builds
_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    cache_key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    finish_reason TEXT,
    input_tokens INTEGER,
    output_tokens INTEGER,
    latency_ms REAL,
    model TEXT NOT NULL,
    created_at TEXT NOT NULL
) WITHOUT ROWID
"""
_COLUMNS = (
    "cache_key, text, finish_reason, input_tokens, output_tokens, latency_ms, model, created_at, "
    "cached_input_tokens, batch"
)
_ADDED_COLUMNS = (("cached_input_tokens", "INTEGER"), ("batch", "INTEGER NOT NULL DEFAULT 0"))
"""Columns added after the first release: an older cache file gets them on open."""


def cache_key(request: GenerationRequest, endpoint: str) -> str:
    """Hex SHA-256 of the canonical JSON of everything that determines a response.

    Args:
        request: the request (model, messages, params and template version are used;
            ``purpose`` and ``max_latency_ms`` are not, as they do not change the response).
        endpoint: the endpoint identity, e.g. ``openai:https://api.openai.com/v1``; never
            contains the API key.

    """
    payload: list[Any] = [
        CACHE_KEY_VERSION,
        endpoint,
        request.model,
        [dict(m) for m in request.messages],
        request.params.as_dict(),
        request.template_version,
    ]
    if request.sample:  # sample 0 keeps the key every run before epochs had
        payload.append(["sample", request.sample])
    # allow_nan=False: a NaN parameter is refused (options and YAML are checked before),
    # never hashed as the token "NaN".
    text = json.dumps(
        payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class CachedRow:
    """One stored successful result."""

    cache_key: str
    """The request's cache key."""
    text: str
    """The response text."""
    finish_reason: str | None
    """Finish reason of the original call."""
    input_tokens: int | None
    """Prompt tokens of the original call."""
    output_tokens: int | None
    """Completion tokens of the original call."""
    latency_ms: float | None
    """Latency of the original call."""
    model: str
    """``PROVIDER/NAME`` of the original call."""
    created_at: str
    """When the row was written (ISO-8601 UTC)."""
    cached_input_tokens: int | None = None
    """Prompt tokens of the original call served from the provider's prompt cache."""
    batch: bool = False
    """The original call went through a provider Batch API (billed at the batch price)."""


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30.0, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 30000")
    # Per connection: in WAL mode NORMAL skips the fsync per commit yet a committed row
    # survives a process crash (only an OS crash can lose the last commits).
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _initialise(conn: sqlite3.Connection) -> None:
    # Switching to WAL needs a brief exclusive lock; two workers opening a fresh file at the
    # same moment can see "database is locked" before the busy handler applies, so retry.
    for attempt in range(50):
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(_SCHEMA)
            _add_columns(conn)
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == 49:
                raise
            time.sleep(0.02 + 0.01 * attempt)


def _add_columns(conn: sqlite3.Connection) -> None:
    """Give a cache file written by an older version the columns added since."""
    present = {row[1] for row in conn.execute("PRAGMA table_info(results)")}
    for name, kind in _ADDED_COLUMNS:
        if name not in present:
            try:
                conn.execute(f"ALTER TABLE results ADD COLUMN {name} {kind}")
            except sqlite3.OperationalError as exc:
                # Another process added it between our look and our change.
                if "duplicate column" not in str(exc):
                    raise


_Item = tuple[CachedRow, Callable[[], None]] | None


def _create_private(path: str) -> None:
    """Create ``path`` (and its folder) readable by the owner only, if it does not exist."""
    folder = Path(path).parent
    if not folder.exists():
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return  # an existing cache keeps the mode its owner gave it
    os.close(fd)


class ResultCache:
    """Reads on the caller's thread, writes on a private writer thread.

    Args:
        path: the SQLite file; parent directories are created (mode 0700), the file with
            mode 0600.
        scrub: applied to each row's text on the writer thread before it is stored (e.g.
            removes secrets); a row whose scrub raises is not stored.

    Raises:
        ConfigError: the file cannot be created or is not a usable SQLite database.

    """

    def __init__(self, path: str, *, scrub: Callable[[str], str] | None = None) -> None:
        self.path = path
        self._scrub = scrub
        self._read_lock = threading.Lock()
        try:
            _create_private(path)
            self._reader = _connect(path)
            _initialise(self._reader)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(
                f"Cannot use {path!r} as the result cache ({exc}); pick another cache path "
                "or disable the cache"
            ) from exc
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._closed = False
        self.write_errors = 0
        self._writer = threading.Thread(
            target=self._write_loop, name="legaleval-cache-writer", daemon=True
        )
        self._writer.start()

    def get_many(self, keys: Iterable[str]) -> dict[str, CachedRow]:
        """Return the stored rows among ``keys`` (missing keys are absent)."""
        unique = list(dict.fromkeys(keys))
        found: dict[str, CachedRow] = {}
        with self._read_lock:
            if self._closed:
                return found
            for start in range(0, len(unique), _SELECT_CHUNK):
                chunk = unique[start : start + _SELECT_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._reader.execute(
                    f"SELECT {_COLUMNS} FROM results WHERE cache_key IN ({marks})", chunk
                ).fetchall()
                for row in rows:
                    found[row[0]] = _row(row)
        return found

    def get(self, key: str) -> CachedRow | None:
        """Return the stored row for ``key``, if any."""
        return self.get_many([key]).get(key)

    def put(self, row: CachedRow, on_durable: Callable[[], None]) -> None:
        """Queue ``row``; ``on_durable`` runs on the writer thread after the commit.

        ``on_durable`` also runs if the write failed (the result is then just not cached),
        so a caller never waits forever on a broken disk or a row SQLite refuses.
        """
        if self._closed or not self._writer.is_alive():
            on_durable()
            return
        self._queue.put((row, on_durable))

    def _write_loop(self) -> None:
        try:
            conn: sqlite3.Connection | None = _connect(self.path)
        except Exception as exc:  # no writer connection: every row is released uncached
            _log.warning("legaleval cache: cannot open %s for writing: %s", self.path, exc)
            conn = None
        try:
            while True:
                batch, stop = next_writes(self._queue)
                if batch:
                    try:
                        self._commit(conn, batch)
                    finally:
                        release_writes(batch)
                if stop:
                    return
        finally:
            if conn is not None:
                conn.close()

    def _values(self, row: CachedRow) -> tuple[Any, ...]:
        text = row.text if self._scrub is None else self._scrub(row.text)
        return (
            row.cache_key,
            text,
            row.finish_reason,
            row.input_tokens,
            row.output_tokens,
            row.latency_ms,
            row.model,
            row.created_at,
            row.cached_input_tokens,
            int(row.batch),
        )

    def _commit(
        self,
        conn: sqlite3.Connection | None,
        batch: Sequence[tuple[CachedRow, Callable[[], None]]],
    ) -> None:
        """Store the batch in one transaction, else row by row; never raises."""
        if conn is None:
            self.write_errors += len(batch)
            return
        try:
            _insert(conn, [self._values(row) for row, _ in batch])
            return
        except Exception as exc:
            _rollback(conn)
            if len(batch) == 1:
                self._failed(1, exc)
                return
        # One bad row (text SQLite cannot encode, a count it cannot hold, a scrub that
        # raised) must not cost the others their place in the cache.
        for row, _ in batch:
            try:
                _insert(conn, [self._values(row)])
            except Exception as exc:
                _rollback(conn)
                self._failed(1, exc)

    def _failed(self, count: int, exc: BaseException) -> None:
        self.write_errors += count
        # The type only: the message of a failed bind may quote the reply.
        _log.warning("legaleval cache: could not store %d result(s): %s", count, type(exc).__name__)

    def close(self, timeout_s: float = 10.0) -> None:
        """Flush queued writes, stop the writer and close the file; idempotent."""
        with self._read_lock:
            if self._closed:
                return
            self._closed = True
            self._reader.close()
        self._queue.put(None)
        self._writer.join(timeout_s)
        # A put racing with close may land behind the stop marker: release its waiter.
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                item[1]()


def _row(row: Sequence[Any]) -> CachedRow:
    return CachedRow(
        cache_key=row[0],
        text=row[1],
        finish_reason=row[2],
        input_tokens=row[3],
        output_tokens=row[4],
        latency_ms=row[5],
        model=row[6],
        created_at=row[7],
        cached_input_tokens=row[8],
        batch=bool(row[9]),
    )


def _insert(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(
        f"INSERT OR REPLACE INTO results ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)", rows
    )
    conn.execute("COMMIT")


def _rollback(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass  # no transaction was open


WRITE_BATCH = 256
"""Rows a cache writer commits in one transaction at most."""


def next_writes(
    pending: queue.SimpleQueue[_Item],
) -> tuple[list[tuple[CachedRow, Callable[[], None]]], bool]:
    """The next rows a cache writer commits, and whether it stops after them.

    Waits for the first row, then takes what is already queued, up to
    :data:`WRITE_BATCH`. ``None`` in the queue tells the writer to stop: the rows before it
    are still returned (an empty list when it came first). Shared by the SQLite writer and
    :mod:`.pgcache`'s.
    """
    item = pending.get()
    if item is None:
        return [], True
    batch = [item]
    while len(batch) < WRITE_BATCH:
        try:
            nxt = pending.get_nowait()
        except queue.Empty:
            break
        if nxt is None:
            return batch, True
        batch.append(nxt)
    return batch, False


def release_writes(batch: Sequence[tuple[CachedRow, Callable[[], None]]]) -> None:
    """Run each row's completion callback (after its commit, or its failure)."""
    for _, callback in batch:
        try:
            callback()
        except Exception:  # a callback bug must not kill the writer
            _log.exception("legaleval cache: completion callback failed")


def now_timestamp() -> str:
    """Return the current time in the cache's ``created_at`` format."""
    return utc_timestamp(time.time())
