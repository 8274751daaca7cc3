"""The data directory's storage: SQLite connections, lock waits, and storage failures named.

Every process of the service writes the same SQLite file (the run table and the queue).
A writer that finds it locked — another writer, a backup, a ``sqlite3`` shell holding
``BEGIN EXCLUSIVE`` — waits and tries again with back-off (:class:`Patience`), as long as
the lock lasts for a worker (a run is never failed for a lock), up to a bound for an HTTP
request (then :class:`StorageBusy`, answered 503). A full disk or an I/O error is no lock:
it is raised at once as :class:`StorageFull` or :class:`StorageError`, with its cause, for
the caller to answer (507) or to wait out (:func:`storage_problem` says when it is over).
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pytest_legaleval.errors import LegalEvalError

__all__ = [
    "MIN_FREE_BYTES",
    "DatabaseUnavailable",
    "Patience",
    "StorageBusy",
    "StorageError",
    "StorageFull",
    "as_storage_error",
    "connect",
    "storage_cause",
    "storage_problem",
    "with_retries",
]

T = TypeVar("T")
_log = logging.getLogger(__name__)

MIN_FREE_BYTES = 1024 * 1024
"""Free space below which the data directory counts as full (a run writes a line at a time)."""
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_STORAGE_ERRNOS = _FULL_ERRNOS | {errno.EIO, errno.EROFS, errno.EFBIG}
_FULL_TEXTS = ("no space left on device", "disk quota exceeded", "database or disk is full")
_BUSY_NAMES = frozenset({"SQLITE_BUSY", "SQLITE_LOCKED"})


class StorageError(LegalEvalError, OSError):
    """The data directory cannot be written; the message says why (the cause included)."""


class StorageFull(StorageError):
    """The disk (or the quota) of the data directory is full."""


class StorageBusy(StorageError):
    """The run table stayed locked by another process for longer than the caller waits."""


class DatabaseUnavailable(StorageBusy):
    """The database (``--database postgresql://…``) stayed unreachable too long.

    A request gets 503 with ``Retry-After``; a worker waits until it is back.
    """


@dataclass(frozen=True, slots=True)
class Patience:
    """How long a write waits for the run table's lock, and how it tries again."""

    busy_timeout_s: float = 5.0
    """SQLite's own wait on one attempt (``PRAGMA busy_timeout``)."""
    first_delay_s: float = 0.05
    """Pause after the first failed attempt; it doubles up to :attr:`max_delay_s`."""
    max_delay_s: float = 2.0
    give_up_s: float | None = None
    """Give up (:class:`StorageBusy`) after this long; ``None``: wait as long as the lock."""


WORKER_PATIENCE = Patience()
"""Workers wait out any lock: a run is never failed because the table was busy."""
HTTP_PATIENCE = Patience(give_up_s=60.0)
"""A request waits at most a minute (then 503 with ``Retry-After``), longer than a backup."""


def connect(path: Path, patience: Patience = WORKER_PATIENCE) -> sqlite3.Connection:
    """A connection in autocommit mode, WAL, waiting ``patience.busy_timeout_s`` for a lock."""
    conn = sqlite3.connect(
        str(path),
        timeout=patience.busy_timeout_s,
        isolation_level=None,
        check_same_thread=False,
    )
    conn.execute(f"PRAGMA busy_timeout = {int(patience.busy_timeout_s * 1000)}")
    conn.execute("PRAGMA journal_mode = WAL")
    # A committed row survives a crash of the process (only an OS crash can lose the last
    # commits): the run directory, not this table, is the record of a run.
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _is_busy(exc: BaseException) -> bool:
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    name = getattr(exc, "sqlite_errorname", "")
    text = str(exc).lower()
    return name in _BUSY_NAMES or "database is locked" in text or "table is locked" in text


def storage_cause(error: BaseException | str | None) -> str | None:
    """Why storage failed, if ``error`` (an exception, or a run's error text) says it did.

    A full disk, a quota, SQLite's ``database or disk is full``, an I/O error, and the run
    recorder's ``cannot write …`` (any failed write of an artifact) count; anything else is
    not a storage failure (``None``).
    """
    if error is None:
        return None
    if isinstance(error, str):
        text = error.strip()
        lowered = text.lower()
        if lowered.startswith("cannot write ") or any(t in lowered for t in _FULL_TEXTS):
            return text
        return None
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, StorageError):
            return str(current)
        if isinstance(current, OSError) and current.errno in _STORAGE_ERRNOS:
            name = Path(os.fsdecode(current.filename)).name if current.filename else ""
            return f"{current.strerror or current}" + (f" ({name})" if name else "")
        if isinstance(current, sqlite3.OperationalError) and not _is_busy(current):
            lowered = str(current).lower()
            if "full" in lowered or "i/o" in lowered or "readonly" in lowered:
                return f"the run table cannot be written: {current}"
        current = current.__cause__ or current.__context__
    return None


def _is_full(error: BaseException | str) -> bool:
    if isinstance(error, StorageFull):
        return True
    if isinstance(error, OSError) and error.errno in _FULL_ERRNOS:
        return True
    return any(text in str(error).lower() for text in _FULL_TEXTS)


def as_storage_error(error: BaseException | str) -> StorageError | None:
    """``error`` (or a run's error text) as a :class:`StorageError`, else ``None``.

    A full disk or quota becomes :class:`StorageFull`.
    """
    if isinstance(error, StorageError):
        return error
    cause = storage_cause(error)
    if cause is None:
        return None
    return StorageFull(cause) if _is_full(error) else StorageError(cause)


def with_retries(
    action: Callable[[], T],
    patience: Patience,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """Run ``action`` (one whole write transaction) until the run table's lock lets it.

    Raises:
        StorageBusy: still locked after ``patience.give_up_s``.
        StorageFull: the disk (or SQLite's file) is full.
        StorageError: another failure to write (an I/O error, a read-only file).

    """
    start = clock()
    delay = patience.first_delay_s
    attempts = 0
    while True:
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                converted = as_storage_error(exc)
                if converted is None:
                    raise
                raise converted from exc
            attempts += 1
            waited = clock() - start
            if patience.give_up_s is not None and waited + delay > patience.give_up_s:
                raise StorageBusy(
                    f"the run table stayed locked by another process for {waited:.0f} s"
                ) from exc
            if attempts == 1 or attempts % 10 == 0:
                _log.warning("the run table is locked (%s); waiting", exc)
            sleep(delay)
            delay = min(delay * 2, patience.max_delay_s)
        except OSError as exc:
            converted = as_storage_error(exc)
            if converted is None or converted is exc:
                raise
            raise converted from exc


def storage_problem(root: Path, *, min_free: int = MIN_FREE_BYTES) -> str | None:
    """Why the data directory cannot take writes now, or ``None`` when it can.

    Checks the free space (``statvfs``) and writes, syncs and deletes a small file: a full
    disk, a quota, a read-only or failing file system all show. The answer names no path
    (``/healthz`` shows it to anyone).
    """
    try:
        free = shutil.disk_usage(root).free
    except OSError as exc:
        return f"cannot read the data directory's free space: {exc.strerror or exc}"
    if free < min_free:
        return f"the data directory's disk is full ({free:,} bytes free)"
    probe = root / f".probe-{os.getpid()}"
    try:
        with probe.open("wb") as handle:
            handle.write(b"\0" * 4096)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        return f"cannot write in the data directory: {exc.strerror or exc}"
    finally:
        try:
            probe.unlink(missing_ok=True)
        except OSError:
            pass
    return None
