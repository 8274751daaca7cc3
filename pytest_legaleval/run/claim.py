"""Claiming a run id before any call is paid for: two runs never race for one directory.

A run named with ``--run-id`` claims its id at configure time with a lock file created
exclusively beside the run directories (``<run-dir>/.<run_id>.lock``, holding the pid).
A second run with the same id is refused at once, while the first is alive; a lock left by
a process that died (``kill -9``) is taken over. The claim is released when the session
ends, whatever happened; if the run never wrote its directory (a rejected dataset), the
folder the claim had to create is removed again, so nothing is left behind.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from pytest_legaleval.errors import ConfigError

__all__ = ["RunClaim", "claim_run_id"]


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


class RunClaim:
    """A claimed run id; :meth:`release` gives it back (idempotent)."""

    def __init__(self, lock: Path, created: list[Path]) -> None:
        self.lock = lock
        self._created = created
        self._released = False

    def release(self) -> None:
        """Remove the lock, and the folders the claim created if they are still empty."""
        if self._released:
            return
        self._released = True
        with contextlib.suppress(FileNotFoundError):
            self.lock.unlink()
        _remove_empty(self._created)


def _remove_empty(created: list[Path]) -> None:
    """Remove the folders a claim created (innermost first) while they are empty."""
    for folder in reversed(created):
        with contextlib.suppress(OSError):  # not empty (the run was written): kept
            folder.rmdir()


def claim_run_id(run_dir: str | Path, run_id: str) -> RunClaim:
    """Claim ``run_id`` under ``run_dir`` for this process.

    Raises:
        ConfigError: the run directory exists already, or a live process holds the id.

    """
    root = Path(run_dir)
    if (root / run_id).exists():
        raise ConfigError(
            f"run directory {root / run_id} already exists; runs are write-once — choose "
            "another --run-id or omit it"
        )
    created = []
    missing = root
    while not missing.exists() and missing.parent != missing:
        created.append(missing)
        missing = missing.parent
    root.mkdir(parents=True, exist_ok=True)
    created.reverse()  # outermost first, removed last
    lock = root / f".{run_id}.lock"
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            try:
                holder = int(lock.read_text(encoding="ascii").strip() or "0")
            except (OSError, ValueError):
                holder = 0
            if _alive(holder):
                _remove_empty(created)
                raise ConfigError(
                    f"--run-id {run_id}: another run (process {holder}) is using this id "
                    f"right now ({lock}); choose another --run-id or omit it"
                ) from None
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()  # left by a run that died: taken over
            continue
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(str(os.getpid()))
        return RunClaim(lock, created)
    raise ConfigError(f"--run-id {run_id}: cannot claim {lock}; try again")
