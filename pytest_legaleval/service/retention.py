"""§4.3 retention: raw artifacts and summaries are deleted after their periods.

Both periods (``--retention-days-raw``, ``--retention-days-summary``) count from the run's end.

Raw: the stored upload, ``input_dataset.json``, ``record_validation.jsonl``,
``predictions.jsonl``, ``attempt_logs.jsonl``, ``failures.jsonl`` and any interrupted
attempt's directory. Summaries: ``run_manifest.json``, ``metrics_summary.json``,
``metrics_by_slice.json`` and ``SHA256SUMS`` (whose lines still verify what is left). The
run's row stays, noting when each part was deleted, so the API says so instead of 404.

An upload kept for no run (its run's row could not be written) is deleted after an hour.
With several replicas on one database, one sweeps at a time (``Database.exclusive``); the
others skip that round. The sweeper survives any error: a run it cannot clean now is tried
again at the next sweep, and a sweep that fails as a whole is tried again within a minute.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pytest_legaleval.metrics._artifacts import ARTIFACT_TABLE, CHECKSUMS, artifacts
from pytest_legaleval.service.config import DataDir, Retention
from pytest_legaleval.service.database import RunTable

__all__ = [
    "RAW_ARTIFACTS",
    "SUMMARY_ARTIFACTS",
    "Sweep",
    "Sweeper",
    "iso",
    "raw_artifacts",
    "summary_artifacts",
    "sweep",
]

_log = logging.getLogger(__name__)
ORPHAN_AFTER_S = 3600.0
"""An upload without a run row is deleted once it is this old (a run row follows it within
a request, so an older one belongs to an upload that failed)."""
RETRY_AFTER_ERROR_S = 60.0

RAW_ARTIFACTS = tuple(a.name for a in ARTIFACT_TABLE if a.retention == "raw")
"""The built-in artifacts of retention class ``raw`` (``metrics._artifacts``)."""
SUMMARY_ARTIFACTS = (*(a.name for a in ARTIFACT_TABLE if a.retention == "summary"), CHECKSUMS)
"""The built-in artifacts of retention class ``summary``, and ``SHA256SUMS``."""


def raw_artifacts() -> tuple[str, ...]:
    """Every artifact of retention class ``raw``, registered ones included."""
    return tuple(a.name for a in artifacts() if a.retention == "raw")


def summary_artifacts() -> tuple[str, ...]:
    """Every artifact of retention class ``summary``, registered ones included, and the sums."""
    return (*(a.name for a in artifacts() if a.retention == "summary"), CHECKSUMS)


def iso(moment: datetime) -> str:
    """``moment`` in the run table's timestamp format (UTC, milliseconds, ``Z``)."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(slots=True)
class Sweep:
    """What one sweep deleted."""

    raw: list[str] = field(default_factory=list)
    """Runs whose raw artifacts were deleted."""
    summaries: list[str] = field(default_factory=list)
    """Runs whose summaries were deleted."""
    orphans: list[str] = field(default_factory=list)
    """Uploads deleted because no run row names them."""
    errors: list[str] = field(default_factory=list)
    """Runs (or uploads) that could not be cleaned now: the next sweep tries again."""


def _unlink(folder: Path, names: tuple[str, ...]) -> None:
    for name in names:
        (folder / name).unlink(missing_ok=True)  # read-only files: the folder is writable


def _raw(store: RunTable, data: DataDir, run_id: str) -> None:
    _unlink(data.runs / run_id, raw_artifacts())
    shutil.rmtree(data.uploads / run_id, ignore_errors=True)
    for aside in data.interrupted.glob(f"{run_id}.*"):
        shutil.rmtree(aside, ignore_errors=True)
    store.mark_deleted(run_id, "raw_deleted_at")


def _summaries(store: RunTable, data: DataDir, run_id: str) -> None:
    folder = data.runs / run_id
    _unlink(folder, (*raw_artifacts(), *summary_artifacts()))
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
    store.mark_deleted(run_id, "summary_deleted_at")


def _orphans(store: RunTable, data: DataDir, cutoff: float) -> list[str]:
    """Upload folders older than ``cutoff`` (a timestamp) that no run row names."""
    candidates = []
    for folder in data.uploads.iterdir() if data.uploads.is_dir() else ():
        if folder.name.startswith(".") or not folder.is_dir():
            continue
        try:
            if folder.stat().st_mtime < cutoff:
                candidates.append(folder.name)
        except OSError:
            continue
    known = store.known(candidates)
    return [name for name in candidates if name not in known]


def sweep(store: RunTable, data: DataDir, retention: Retention, now: datetime) -> Sweep:
    """Delete what has outlived its period at ``now``; a run that fails is left for later."""
    done = Sweep()
    raw_cutoff = iso(now - timedelta(days=retention.raw_days))
    for row in list(store.completed_before(raw_cutoff, "raw_deleted_at")):
        try:
            _raw(store, data, row.run_id)
            done.raw.append(row.run_id)
        except Exception as exc:
            _log.warning("retention: cannot delete the raw artifacts of %s: %s", row.run_id, exc)
            done.errors.append(row.run_id)
    summary_cutoff = iso(now - timedelta(days=retention.summary_days))
    for row in list(store.completed_before(summary_cutoff, "summary_deleted_at")):
        try:
            _summaries(store, data, row.run_id)
            done.summaries.append(row.run_id)
        except Exception as exc:
            _log.warning("retention: cannot delete the summaries of %s: %s", row.run_id, exc)
            done.errors.append(row.run_id)
    for name in _orphans(store, data, now.timestamp() - ORPHAN_AFTER_S):
        try:
            shutil.rmtree(data.uploads / name)
            done.orphans.append(name)
        except OSError as exc:
            _log.warning("retention: cannot delete the orphaned upload %s: %s", name, exc)
            done.errors.append(name)
    return done


class Sweeper:
    """Sweeps once at start and then every ``retention.sweep_interval_s`` seconds."""

    def __init__(
        self,
        store: RunTable,
        data: DataDir,
        retention: Retention,
        exclusive: Callable[[str], AbstractContextManager[bool]] | None = None,
    ) -> None:
        self.store = store
        self.exclusive = exclusive
        """Enters the section one replica at a time sweeps (``Database.exclusive``)."""
        self.skipped = 0
        """Sweeps left to another replica that held the retention lock."""
        self.data = data
        self.retention = retention
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="legaleval-retention", daemon=True)
        self.sweeps = 0
        """Sweeps done (or attempted)."""
        self.failures = 0
        """Sweeps that failed as a whole."""
        self.last_sweep: float | None = None
        self.last_error: str | None = None
        """Why the last sweep did not finish its work (``None`` when it did)."""

    def problem(self) -> str | None:
        """What keeps retention from working now, or ``None``."""
        if self.last_error is not None:
            return self.last_error
        if self.sweeps and not self._thread.is_alive() and not self._stop.is_set():
            return "the sweeper stopped"
        return None

    def start(self) -> None:
        """Start sweeping."""
        self._thread.start()

    def _loop(self) -> None:
        while True:
            wait = self.retention.sweep_interval_s
            try:
                done = self._sweep_once()
                self.last_error = (
                    f"could not clean {len(done.errors)} run(s) yet" if done.errors else None
                )
                if done.errors:
                    wait = min(wait, RETRY_AFTER_ERROR_S)
            except Exception as exc:  # the table or the disk failed: sweep again soon
                _log.warning("retention: the sweep failed (%s); trying again", exc)
                self.failures += 1
                self.last_error = f"the last sweep failed: {exc}"
                wait = min(wait, RETRY_AFTER_ERROR_S)
            self.sweeps += 1
            self.last_sweep = time.monotonic()
            if self._stop.wait(wait):
                return

    def _sweep_once(self) -> Sweep:
        """One sweep, unless another replica is sweeping (then nothing is done)."""
        if self.exclusive is None:
            return sweep(self.store, self.data, self.retention, datetime.now(UTC))
        with self.exclusive("retention") as got:
            if not got:
                self.skipped += 1
                return Sweep()
            return sweep(self.store, self.data, self.retention, datetime.now(UTC))

    def stop(self) -> None:
        """Stop after the current sweep."""
        self._stop.set()
        self._thread.join(10)
