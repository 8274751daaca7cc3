"""Where the service keeps its state: SQLite in the data directory (the default) or PostgreSQL.

``legaleval serve`` keeps its run table, queue and leases in one :class:`Database`:

* :class:`SqliteDatabase` — ``state.sqlite`` in ``--data-dir``: one service per data
  directory (its lock file says so), nothing to operate. The embedded default.
* :class:`PostgresDatabase` — ``--database postgresql://…``: any number of replicas, on any
  hosts, share the database and one artifact directory (a shared volume). Runs are claimed
  on leases a heartbeat renews (``service.pgqueue``); the schema is created or migrated by
  ``serve`` under an advisory lock; one replica at a time sweeps retention.

The interface is small on purpose — a run table (:class:`RunTable`), a queue
(``service.queue.RunQueue``), a cluster-wide exclusive section, and a description for
``/healthz`` — so another backend (or more state, such as batch ids) fits beside these.
Both classes are frozen values: a worker process gets one pickled and opens its own
connections from it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pytest_legaleval.service.queue import RunQueue, SqliteRunQueue
from pytest_legaleval.service.storage import WORKER_PATIENCE, Patience
from pytest_legaleval.service.store import RunRow, RunStore

__all__ = [
    "Database",
    "PostgresDatabase",
    "RunTable",
    "SqliteDatabase",
    "open_database",
]


class RunTable(Protocol):
    """What the service needs of a run table (SQLite's ``RunStore``, or ``PgRunStore``).

    Every method is one transaction, safe from any thread and any process; a write waits
    for storage as the table's patience says, then raises
    :class:`~pytest_legaleval.service.storage.StorageError` (a subclass says why). The
    methods mean what :class:`~pytest_legaleval.service.store.RunStore`'s say.
    """

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
        """Insert a queued run unless a limit is reached (then the limit's name)."""

    def get(self, run_id: str) -> RunRow | None:
        """The run, or ``None``."""

    def page(self, owner: str | None, *, limit: int, before: int | None) -> list[RunRow]:
        """Runs newest first, at most ``limit``, before the ``seq`` ``before``."""

    def request_cancel(self, run_id: str) -> RunRow | None:
        """Note a cancellation request; the run as it is now."""

    def count(self, status: str) -> int:
        """Runs in ``status``."""

    def probe(self) -> None:
        """One small write: raises what a write of the table would raise."""

    def cancel_requested(self, run_id: str) -> bool:
        """Whether someone asked to cancel the run."""

    def taken_up(self, run_id: str) -> None:
        """A worker takes up a run another one had started."""

    def set_state(self, run_id: str, state: str, at: str) -> None:
        """Append a state transition."""

    def progress(self, run_id: str, done: int, total: int) -> None:
        """Items recorded so far, of ``total``."""

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
        """Write the terminal status with the figures."""

    def completed_before(self, cutoff: str, column: str) -> Iterator[RunRow]:
        """Ended runs completed before ``cutoff`` whose ``column`` deletion is pending."""

    def mark_deleted(self, run_id: str, column: str) -> None:
        """Note that a part of the run's artifacts was deleted."""

    def unfinished(self) -> list[str]:
        """Runs that have not ended."""

    def known(self, run_ids: Sequence[str]) -> set[str]:
        """Which of ``run_ids`` have a row."""

    def close(self) -> None:
        """Close the connections."""


class Database(Protocol):
    """A backend of the service's state (see the module's docstring)."""

    @property
    def kind(self) -> str:
        """``sqlite`` or ``postgresql``."""

    @property
    def name(self) -> str:
        """What ``/healthz`` shows: the file's name, or ``host:port/database`` (no credentials)."""

    @property
    def shared(self) -> bool:
        """Whether several replicas may use it at once (then the data directory is shared)."""

    def prepare(self) -> None:
        """Create or migrate the schema (``serve`` calls it once, before anything else)."""

    def store(self, patience: Patience = WORKER_PATIENCE) -> RunTable:
        """A run table that waits for storage as ``patience`` says."""

    def queue(self, patience: Patience = WORKER_PATIENCE) -> RunQueue:
        """A run queue that waits for storage as ``patience`` says."""

    def exclusive(self, what: str) -> AbstractContextManager[bool]:
        """Enter a section at most one replica is in (``what``: ``retention``).

        Yields whether this replica got it (one that did not skips the work).
        """


@dataclass(frozen=True, slots=True)
class SqliteDatabase:
    """The data directory's ``state.sqlite`` (one service at a time)."""

    path: Path

    @property
    def kind(self) -> str:
        """See :class:`Database`."""
        return "sqlite"

    @property
    def name(self) -> str:
        """See :class:`Database`."""
        return self.path.name

    @property
    def shared(self) -> bool:
        """See :class:`Database`."""
        return False

    def prepare(self) -> None:
        """Nothing: each table creates itself when opened."""

    def store(self, patience: Patience = WORKER_PATIENCE) -> RunTable:
        """See :class:`Database`."""
        return RunStore(self.path, patience)

    def queue(self, patience: Patience = WORKER_PATIENCE) -> RunQueue:
        """See :class:`Database`."""
        return SqliteRunQueue(self.path, patience)

    def exclusive(self, what: str) -> AbstractContextManager[bool]:
        """Always got: the data directory's lock already makes this service the only one."""
        return nullcontext(True)


@dataclass(frozen=True, slots=True)
class PostgresDatabase:
    """A PostgreSQL database shared by replicas (``--database postgresql://…``)."""

    url: str = field(repr=False)
    """The URL as given (its password never leaves this object: see :attr:`name`)."""
    lease_s: float = 30.0
    """Seconds a worker's claim holds without a heartbeat (``--lease-seconds``)."""

    @property
    def kind(self) -> str:
        """See :class:`Database`."""
        return "postgresql"

    @property
    def name(self) -> str:
        """See :class:`Database`."""
        from pytest_legaleval.service.postgres import parse_target

        return parse_target(self.url).shown()

    @property
    def shared(self) -> bool:
        """See :class:`Database`."""
        return True

    def prepare(self) -> None:
        """See :class:`Database` (under an advisory lock: replicas may start together)."""
        from pytest_legaleval.service.postgres import PgConnections, migrate, parse_target

        # Bounded: a replica that cannot reach its database at start says so and exits.
        connections = PgConnections(parse_target(self.url), Patience(give_up_s=30.0))
        try:
            migrate(connections)
        finally:
            connections.close()

    def store(self, patience: Patience = WORKER_PATIENCE) -> RunTable:
        """See :class:`Database`."""
        from pytest_legaleval.service.pgstore import PgRunStore
        from pytest_legaleval.service.postgres import parse_target

        return PgRunStore(parse_target(self.url), patience)

    def queue(self, patience: Patience = WORKER_PATIENCE) -> RunQueue:
        """See :class:`Database` (the queue's claims are leases of :attr:`lease_s`)."""
        from pytest_legaleval.service.pgqueue import PgRunQueue
        from pytest_legaleval.service.postgres import parse_target

        return PgRunQueue(parse_target(self.url), patience, self.lease_s)

    @contextmanager
    def exclusive(self, what: str) -> Iterator[bool]:
        """A session advisory lock per section: held while inside, lost if the replica dies."""
        from pytest_legaleval.service.postgres import (
            LOCK_RETENTION,
            PgConnections,
            parse_target,
        )

        keys = {"retention": LOCK_RETENTION}
        connections = PgConnections(parse_target(self.url), Patience(give_up_s=10.0))
        try:
            with connections.session_lock(keys[what]) as got:
                yield got
        finally:
            connections.close()


def open_database(url: str | None, data_state: Path, *, lease_s: float = 30.0) -> Database:
    """The database of ``--database URL``; ``None`` (or ``sqlite``): ``data_state``.

    ``postgresql://…`` is a PostgreSQL database (the ``[postgres]`` extra).

    Raises:
        ConfigError: another scheme, a URL without a database name, or PostgreSQL without
            psycopg installed.

    """
    from pytest_legaleval.errors import ConfigError

    if url is None or url in ("", "sqlite"):
        return SqliteDatabase(data_state)
    if url.startswith(("postgresql://", "postgres://")):
        from pytest_legaleval.service.postgres import parse_target

        parse_target(url)  # a malformed URL fails now, not in a worker
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise ConfigError(
                "--database postgresql://… needs the [postgres] extra (psycopg 3): "
                "pip install 'pytest-legaleval[postgres]'"
            ) from None
        return PostgresDatabase(url, lease_s)
    scheme = url.split(":", 1)[0] if ":" in url else url
    raise ConfigError(
        f"--database: unknown kind {scheme[:40]!r}; use postgresql://USER@HOST:PORT/NAME "
        "or leave it out (SQLite in --data-dir)"
    )
