"""The result cache in PostgreSQL: one cache for every replica of a service.

Same contract as :class:`~pytest_legaleval.engine.cache.ResultCache` (the SQLite file): reads
on the caller's thread, writes on a private writer thread that commits each batch *before*
the caller's future is resolved, so a result a caller has seen survives the death of its
process — and here of its host too, which is what lets another replica continue a run
without paying for a finished call again. A batch that fails is retried row by row; a row
that still fails (PostgreSQL refuses NUL in text, say) is counted in ``write_errors`` and
left uncached; every row's callback runs whatever happened. A lost connection is opened
again on the next read or write.

``cache_path`` selects it: a ``postgresql://`` URL instead of a file (``legaleval serve
--database`` passes its own). Needs the ``[postgres]`` extra (psycopg 3).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pytest_legaleval.engine.cache import CachedRow, next_writes, release_writes
from pytest_legaleval.errors import ConfigError

__all__ = ["PgResultCache", "is_database_url"]

_log = logging.getLogger(__name__)
_LOCK_SCHEMA = 0x6C65_6761_0010
"""The advisory lock under which concurrent engines create the table once."""
_SCHEMA = """
CREATE TABLE IF NOT EXISTS legaleval_results (
    cache_key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    finish_reason TEXT,
    input_tokens BIGINT,
    output_tokens BIGINT,
    latency_ms DOUBLE PRECISION,
    model TEXT NOT NULL,
    created_at TEXT NOT NULL
)
"""
_COLUMNS = (
    "cache_key, text, finish_reason, input_tokens, output_tokens, latency_ms, model, created_at"
)
_INSERT = (
    f"INSERT INTO legaleval_results ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (cache_key) DO UPDATE SET text = EXCLUDED.text, "
    "finish_reason = EXCLUDED.finish_reason, input_tokens = EXCLUDED.input_tokens, "
    "output_tokens = EXCLUDED.output_tokens, latency_ms = EXCLUDED.latency_ms, "
    "model = EXCLUDED.model, created_at = EXCLUDED.created_at"
)
_Item = tuple[CachedRow, Callable[[], None]] | None


def is_database_url(path: str | None) -> bool:
    """Whether a cache path names a PostgreSQL database rather than a file."""
    return path is not None and path.startswith(("postgresql://", "postgres://"))


class PgResultCache:
    """:class:`~pytest_legaleval.engine.cache.ResultCache`'s interface on PostgreSQL.

    Args:
        url: the database (``postgresql://USER:PASSWORD@HOST:PORT/NAME``).
        scrub: applied to each row's text on the writer thread before it is stored.

    Raises:
        ConfigError: psycopg is not installed, or the database cannot be used (the message
            names its host and name, never the password).

    """

    def __init__(self, url: str, *, scrub: Callable[[str], str] | None = None) -> None:
        try:
            import psycopg
        except ImportError:
            raise ConfigError(
                "a postgresql:// result cache needs the [postgres] extra (psycopg 3): "
                "pip install 'pytest-legaleval[postgres]'"
            ) from None
        self._psycopg = psycopg
        self.url = url
        self._scrub = scrub
        self._read_lock = threading.Lock()
        self._reader: Any = None
        try:
            self._reader = self._connect()
            with self._reader.transaction():
                self._reader.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_SCHEMA,))
                self._reader.execute(_SCHEMA)
        except psycopg.Error as exc:
            raise ConfigError(f"Cannot use the result cache {self.shown()}: {_line(exc)}") from None
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._closed = False
        self.write_errors = 0
        self._writer = threading.Thread(
            target=self._write_loop, name="legaleval-cache-writer", daemon=True
        )
        self._writer.start()

    def shown(self) -> str:
        """The database as it may be shown: ``host:port/name``."""
        from urllib.parse import urlsplit

        parts = urlsplit(self.url)
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.hostname or 'local socket'}{port}{parts.path}"

    def _connect(self) -> Any:
        return self._psycopg.connect(self.url, autocommit=True, connect_timeout=10)

    def get_many(self, keys: Iterable[str]) -> dict[str, CachedRow]:
        """Return the stored rows among ``keys`` (missing keys are absent).

        A database that cannot be read answers nothing (every call is then made); the
        connection is opened again next time.
        """
        unique = list(dict.fromkeys(keys))
        found: dict[str, CachedRow] = {}
        with self._read_lock:
            if self._closed or not unique:
                return found
            try:
                if self._reader is None or self._reader.closed:
                    self._reader = self._connect()
                rows = self._reader.execute(
                    f"SELECT {_COLUMNS} FROM legaleval_results WHERE cache_key = ANY(%s)",
                    (unique,),
                ).fetchall()
            except self._psycopg.Error as exc:
                _log.warning("legaleval cache: cannot read %s: %s", self.shown(), _line(exc))
                self._reader = None
                return found
        for row in rows:
            found[row[0]] = CachedRow(*row)
        return found

    def get(self, key: str) -> CachedRow | None:
        """Return the stored row for ``key``, if any."""
        return self.get_many([key]).get(key)

    def put(self, row: CachedRow, on_durable: Callable[[], None]) -> None:
        """Queue ``row``; ``on_durable`` runs on the writer thread after the commit.

        It also runs if the write failed (the result is then just not cached).
        """
        if self._closed or not self._writer.is_alive():
            on_durable()
            return
        self._queue.put((row, on_durable))

    def _write_loop(self) -> None:
        conn: Any = None
        try:
            while True:
                batch, stop = next_writes(self._queue)
                if batch:
                    try:
                        conn = self._commit(conn, batch)
                    finally:
                        release_writes(batch)
                if stop:
                    return
        finally:
            if conn is not None:
                conn.close()

    def _values(self, row: CachedRow) -> tuple[Any, ...]:
        text = row.text if self._scrub is None else self._scrub(row.text)
        return (row.cache_key, text, row.finish_reason, row.input_tokens, row.output_tokens,
                row.latency_ms, row.model, row.created_at)  # fmt: skip

    def _insert(self, conn: Any, rows: list[tuple[Any, ...]]) -> None:
        with conn.transaction(), conn.cursor() as cursor:
            cursor.executemany(_INSERT, rows)

    def _commit(self, conn: Any, batch: Sequence[tuple[CachedRow, Callable[[], None]]]) -> Any:
        """Store the batch in one transaction, else row by row; return the connection."""
        try:
            if conn is None or conn.closed:
                conn = self._connect()
            self._insert(conn, [self._values(row) for row, _ in batch])
            return conn
        except Exception as exc:
            if isinstance(exc, self._psycopg.OperationalError):
                conn = None  # the connection is gone: one more try on a new one, row by row
            if len(batch) == 1 and conn is not None:
                self._failed(1, exc)
                return conn
        for row, _ in batch:
            try:
                if conn is None or conn.closed:
                    conn = self._connect()
                self._insert(conn, [self._values(row)])
            except Exception as exc:
                self._failed(1, exc)
        return conn

    def _failed(self, count: int, exc: BaseException) -> None:
        self.write_errors += count
        # The type only: the message of a failed bind may quote the reply.
        _log.warning("legaleval cache: could not store %d result(s): %s", count, type(exc).__name__)

    def close(self, timeout_s: float = 10.0) -> None:
        """Flush queued writes, stop the writer and close the connections; idempotent."""
        with self._read_lock:
            if self._closed:
                return
            self._closed = True
            if self._reader is not None:
                self._reader.close()
        self._queue.put(None)
        self._writer.join(timeout_s)
        while True:  # a put racing with close may land behind the stop marker
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                item[1]()


def _line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
