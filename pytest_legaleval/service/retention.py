"""§4.3 retention: raw artifacts and summaries are deleted after their periods.

Both periods (``--retention-days-raw``, ``--retention-days-summary``) count from the run's end.

Raw: the stored upload, ``input_dataset.json``, ``record_validation.jsonl``,
``predictions.jsonl``, ``attempt_logs.jsonl``, ``failures.jsonl`` and any interrupted
attempt's directory. Summaries: ``run_manifest.json``, ``metrics_summary.json``,
``metrics_by_slice.json`` and ``SHA256SUMS`` (whose lines still verify what is left). The
run's row stays, noting when each part was deleted, so the API says so instead of 404.
"""

from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pytest_legaleval.run.directory import CHECKSUMS
from pytest_legaleval.service.config import DataDir, Retention
from pytest_legaleval.service.store import RunStore

__all__ = ["RAW_ARTIFACTS", "SUMMARY_ARTIFACTS", "Sweep", "Sweeper", "iso", "sweep"]

RAW_ARTIFACTS = (
    "input_dataset.json",
    "record_validation.jsonl",
    "predictions.jsonl",
    "attempt_logs.jsonl",
    "failures.jsonl",
)
SUMMARY_ARTIFACTS = (
    "run_manifest.json",
    "metrics_summary.json",
    "metrics_by_slice.json",
    CHECKSUMS,
)


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


def _unlink(folder: Path, names: tuple[str, ...]) -> None:
    for name in names:
        (folder / name).unlink(missing_ok=True)  # read-only files: the folder is writable


def sweep(store: RunStore, data: DataDir, retention: Retention, now: datetime) -> Sweep:
    """Delete what has outlived its period at ``now``."""
    done = Sweep()
    raw_cutoff = iso(now - timedelta(days=retention.raw_days))
    for row in store.completed_before(raw_cutoff, "raw_deleted_at"):
        _unlink(data.runs / row.run_id, RAW_ARTIFACTS)
        shutil.rmtree(data.uploads / row.run_id, ignore_errors=True)
        for aside in data.interrupted.glob(f"{row.run_id}.*"):
            shutil.rmtree(aside, ignore_errors=True)
        store.mark_deleted(row.run_id, "raw_deleted_at")
        done.raw.append(row.run_id)
    summary_cutoff = iso(now - timedelta(days=retention.summary_days))
    for row in store.completed_before(summary_cutoff, "summary_deleted_at"):
        folder = data.runs / row.run_id
        _unlink(folder, (*RAW_ARTIFACTS, *SUMMARY_ARTIFACTS))
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
        store.mark_deleted(row.run_id, "summary_deleted_at")
        done.summaries.append(row.run_id)
    return done


class Sweeper:
    """Sweeps once at start and then every ``retention.sweep_interval_s`` seconds."""

    def __init__(self, store: RunStore, data: DataDir, retention: Retention) -> None:
        self.store = store
        self.data = data
        self.retention = retention
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="legaleval-retention", daemon=True)

    def start(self) -> None:
        """Start sweeping."""
        self._thread.start()

    def _loop(self) -> None:
        while True:
            sweep(self.store, self.data, self.retention, datetime.now(UTC))
            if self._stop.wait(self.retention.sweep_interval_s):
                return

    def stop(self) -> None:
        """Stop after the current sweep."""
        self._stop.set()
        self._thread.join(10)
