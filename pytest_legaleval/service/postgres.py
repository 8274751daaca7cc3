"""PostgreSQL for the service: the URL shown safely, connections, the schema and its locks.

Several replicas of ``legaleval serve --database postgresql://…`` share one database. The
schema is versioned (table ``legaleval_schema``); :func:`migrate` brings it forward under a
session advisory lock, so replicas that start together on an empty database create it
once. A connection that fails (the server restarted, the network dropped) is closed and
opened again on the next attempt; while the database cannot be reached a caller waits as
its :class:`~pytest_legaleval.service.storage.Patience` says — a worker as long as it
takes, an HTTP request up to its bound, then :class:`DatabaseUnavailable` (503 with
``Retry-After``). Messages name the host, port and database, never the credentials.

Needs the ``[postgres]`` extra (psycopg 3).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.service.storage import (
    WORKER_PATIENCE,
    DatabaseUnavailable,
    Patience,
    StorageError,
)

__all__ = [
    "LOCK_MIGRATE",
    "LOCK_RETENTION",
    "LOCK_RUNS",
    "SCHEMA_VERSION",
    "DatabaseUnavailable",
    "PgConnections",
    "PgTarget",
    "migrate",
    "parse_target",
]

T = TypeVar("T")
_log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
"""The schema this code reads and writes; :func:`migrate` creates or moves an older one up."""
LOCK_MIGRATE = 0x6C65_6761_0001
"""Advisory lock keys (``pg_advisory_lock``): schema changes, the retention sweep, and the
run limits checked with an insert."""
LOCK_RETENTION = 0x6C65_6761_0002
LOCK_RUNS = 0x6C65_6761_0003

_MIGRATIONS: tuple[str, ...] = (
    # version 1: the run table (as the SQLite one), the queue with leases, the health row.
    # Every name starts with legaleval_: the database may be one a team already uses.
    """
    CREATE TABLE legaleval_runs (
        seq BIGSERIAL PRIMARY KEY,
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
        done BIGINT NOT NULL DEFAULT 0,
        total BIGINT NOT NULL DEFAULT 0,
        cancel_requested_at TEXT,
        resumes INTEGER NOT NULL DEFAULT 0,
        denominators TEXT,
        metrics TEXT,
        error TEXT,
        raw_deleted_at TEXT,
        summary_deleted_at TEXT
    );
    CREATE INDEX legaleval_runs_by_owner ON legaleval_runs (owner, seq);
    CREATE INDEX legaleval_runs_by_status ON legaleval_runs (status);
    CREATE TABLE legaleval_queue (
        seq BIGSERIAL PRIMARY KEY,
        run_id TEXT NOT NULL UNIQUE,
        priority INTEGER NOT NULL DEFAULT 0,
        claimed_by TEXT,
        claimed_at TIMESTAMPTZ,
        lease_until TIMESTAMPTZ
    );
    CREATE INDEX legaleval_queue_waiting ON legaleval_queue (priority DESC, seq);
    CREATE TABLE legaleval_health (id INTEGER PRIMARY KEY CHECK (id = 1), at TEXT NOT NULL);
    """,
)


@dataclass(frozen=True, slots=True)
class PgTarget:
    """A ``postgresql://`` URL and what may be shown of it."""

    url: str
    host: str
    port: int | None
    name: str
    """The database's name (``/healthz`` shows it)."""
    password: str | None

    def shown(self) -> str:
        """``host:port/name``: where the database is, without the credentials."""
        where = self.host or "local socket"
        return f"{where}{f':{self.port}' if self.port else ''}/{self.name}"

    def scrub(self, text: str) -> str:
        """``text`` with the password (and the URL holding it) removed."""
        text = text.replace(self.url, self.shown())
        if self.password:
            text = text.replace(self.password, "***")
        return text


def parse_target(url: str) -> PgTarget:
    """The target of ``--database postgresql://USER:PASSWORD@HOST:PORT/NAME``.

    Raises:
        ConfigError: not a PostgreSQL URL, or no database name.

    """
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise ConfigError(f"--database: not a postgresql:// URL (scheme {parts.scheme!r})")
    name = unquote(parts.path.lstrip("/"))
    if not name:
        raise ConfigError("--database: the URL names no database (postgresql://HOST/NAME)")
    try:
        port = parts.port
    except ValueError:
        raise ConfigError("--database: the URL's port is not a number") from None
    password = unquote(parts.password) if parts.password else None
    return PgTarget(url, parts.hostname or "", port, name, password)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


class PgConnections:
    """One connection per thread to one database, opened again after a failure.

    Args:
        target: the database.
        patience: how long a call waits for the database while it cannot be reached.
        sleep: waits between attempts (a test passes its own).

    """

    def __init__(
        self,
        target: PgTarget,
        patience: Patience = WORKER_PATIENCE,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import psycopg  # the [postgres] extra: imported only when PostgreSQL is used

        self._psycopg = psycopg
        self.target = target
        self.patience = patience
        self.sleep = sleep
        self._local = threading.local()
        self._all: list[Any] = []
        self._lock = threading.Lock()

    def _open(self) -> Any:
        timeout = max(1, int(min(self.patience.busy_timeout_s, 10)))
        conn = self._psycopg.connect(
            self.target.url, autocommit=True, connect_timeout=timeout,
            application_name="legaleval-serve",
        )  # fmt: skip
        with self._lock:
            self._all.append(conn)
        return conn

    def _conn(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            conn = self._local.conn = self._open()
        return conn

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            with self._lock:
                if conn in self._all:
                    self._all.remove(conn)
            try:
                conn.close()
            except Exception:  # a broken connection may fail to close: it is gone either way
                _log.debug("closing a broken connection failed", exc_info=True)

    def run(self, action: Callable[[Any], T]) -> T:
        """``action(conn)`` in one transaction, tried again while the database is unreachable.

        A lost connection, a server shutting down, a deadlock or a serialization failure is
        transient: the transaction is rolled back and tried again with back-off.

        Raises:
            DatabaseUnavailable: still failing after ``patience.give_up_s``.
            StorageError: the database refused the request for good (a missing table, a
                value a column cannot hold); not tried again.

        """
        errors = self._psycopg.errors
        transient = (
            self._psycopg.OperationalError,
            self._psycopg.InterfaceError,
            errors.SerializationFailure,
            errors.DeadlockDetected,
        )
        start = time.monotonic()
        delay = self.patience.first_delay_s
        attempts = 0
        while True:
            try:
                conn = self._conn()
                with conn.transaction():
                    return action(conn)
            except self._psycopg.Error as exc:
                if not isinstance(exc, transient):
                    # A refusal that trying again cannot change (a missing table, a value
                    # the column cannot hold): the caller's storage failure, named.
                    why = self.target.scrub(_first_line(exc))
                    raise StorageError(
                        f"the database {self.target.shown()} refused the request: {why}"
                    ) from None
                broken = not isinstance(exc, errors.SerializationFailure | errors.DeadlockDetected)
                if broken:
                    self._drop()
                attempts += 1
                waited = time.monotonic() - start
                why = self.target.scrub(_first_line(exc))
                give_up = self.patience.give_up_s
                if give_up is not None and waited + delay > give_up:
                    raise DatabaseUnavailable(
                        f"the database {self.target.shown()} cannot be reached: {why}"
                    ) from None
                if attempts == 1 or attempts % 10 == 0:
                    _log.warning("the database %s fails (%s); waiting", self.target.shown(), why)
                self.sleep(delay)
                delay = min(delay * 2, self.patience.max_delay_s)

    def close(self) -> None:
        """Close every connection opened here."""
        with self._lock:
            conns, self._all = self._all, []
        for conn in conns:
            try:
                conn.close()
            except Exception:
                _log.debug("closing a connection failed", exc_info=True)
        self._local = threading.local()

    @contextmanager
    def session_lock(self, key: int) -> Iterator[bool]:
        """Try the advisory lock ``key`` on a connection of its own; yield whether it was got.

        The lock is the session's: a replica that dies (its connection gone) loses it.
        """
        conn = self._open()
        try:
            got = bool(conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0])
            try:
                yield got
            finally:
                if got and not conn.closed:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        finally:
            with self._lock:
                if conn in self._all:
                    self._all.remove(conn)
            conn.close()


def migrate(connections: PgConnections) -> int:
    """Create the schema or bring it forward to :data:`SCHEMA_VERSION`; return the version.

    Replicas starting at once take turns on an advisory lock; the first creates the
    tables, the others find them. A database of a newer schema is refused (an older
    replica must not write what it does not know).

    Raises:
        ConfigError: the database's schema is newer than this code's.

    """

    def step(conn: Any) -> int:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_MIGRATE,))
        conn.execute("CREATE TABLE IF NOT EXISTS legaleval_schema (version INTEGER NOT NULL)")
        found = conn.execute("SELECT version FROM legaleval_schema").fetchone()
        version = 0 if found is None else int(found[0])
        if version > SCHEMA_VERSION:
            return version
        for number in range(version, SCHEMA_VERSION):
            conn.execute(_MIGRATIONS[number])
        if found is None:
            conn.execute("INSERT INTO legaleval_schema (version) VALUES (%s)", (SCHEMA_VERSION,))
        elif version < SCHEMA_VERSION:
            conn.execute("UPDATE legaleval_schema SET version = %s", (SCHEMA_VERSION,))
        return max(version, SCHEMA_VERSION)

    version = connections.run(step)
    if version > SCHEMA_VERSION:
        raise ConfigError(
            f"the database {connections.target.shown()} has schema version {version}, newer "
            f"than this legaleval's {SCHEMA_VERSION}: upgrade legaleval"
        )
    return version
