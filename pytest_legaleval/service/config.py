"""The service's configuration: the runs' settings, the data directory, limits, retention."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_legaleval.pipeline.settings import Settings
from pytest_legaleval.service.auth import Tokens
from pytest_legaleval.service.database import Database, SqliteDatabase

__all__ = [
    "MIN_RAW_DAYS",
    "MIN_SUMMARY_DAYS",
    "DataDir",
    "Limits",
    "Retention",
    "ServiceConfig",
    "run_settings",
    "service_settings",
]

MIN_RAW_DAYS = 30
"""The contract's minimum retention of raw artifacts (§4.3), in days."""
MIN_SUMMARY_DAYS = 180
"""The contract's minimum retention of aggregate summaries (§4.3), in days."""


@dataclass(frozen=True, slots=True)
class DataDir:
    """The layout of ``--data-dir``: state, uploads, run directories, the response cache."""

    root: Path

    @property
    def state(self) -> Path:
        """The SQLite file of runs and queue."""
        return self.root / "state.sqlite"

    @property
    def runs(self) -> Path:
        """Where run directories are written (``runs/<run_id>/``)."""
        return self.root / "runs"

    @property
    def uploads(self) -> Path:
        """Accepted documents (``uploads/<run_id>/upload.json``, read-only)."""
        return self.root / "uploads"

    @property
    def incoming(self) -> Path:
        """Uploads being received or validated (removed when answered)."""
        return self.root / "uploads" / ".incoming"

    @property
    def interrupted(self) -> Path:
        """Unsealed run directories of runs a worker continued (kept for the audit)."""
        return self.root / "interrupted"

    @property
    def locks(self) -> Path:
        """Lock files: one for the service, one per run being evaluated."""
        return self.root / "locks"

    @property
    def cache(self) -> Path:
        """The default response cache, shared by all runs."""
        return self.root / "cache.sqlite"

    def upload(self, run_id: str, fmt: str = "contract_v1") -> Path:
        """The stored upload of a run.

        ``upload.json`` holds a contract document, ``upload.jsonl`` ``legal_eval_v1`` rows.
        """
        name = "upload.json" if fmt == "contract_v1" else "upload.jsonl"
        return self.uploads / run_id / name

    def stored_upload(self, run_id: str) -> tuple[Path, str]:
        """The run's stored upload and the format it is read in.

        ``contract_v1``, or ``legal_eval_v1_upload``: uploaded ``legal_eval_v1`` rows under
        the contract's per-record limits, as :func:`.validation.check_upload` checked them.
        """
        rows = self.upload(run_id, "legal_eval_v1")
        if rows.is_file():
            return rows, "legal_eval_v1_upload"
        return self.upload(run_id), "contract_v1"

    def create(self) -> None:
        """Create every folder, readable by the owner only (uploads hold the datasets)."""
        for folder in (self.root, self.runs, self.uploads, self.incoming, self.interrupted,
                       self.locks):  # fmt: skip
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)


@dataclass(frozen=True, slots=True)
class Limits:
    """Backpressure and timeouts."""

    max_queued: int = 100
    """Runs waiting for a worker; an upload beyond it gets 429 with ``Retry-After``."""
    max_runs_per_token: int = 20
    """Runs of one token not yet ended (queued or running)."""
    http_timeout: float = 30.0
    """Seconds a client may pause while sending a body or reading a download."""
    validation_timeout: float = 600.0
    """Seconds the validation of one upload may take."""
    header_timeout: float = 5.0
    """Seconds a connection may take to send a request's headers, or stay idle between
    requests; then it is closed (a half-open request holds nothing for longer)."""
    body_timeout: float = 60.0
    """Seconds a request's whole body may take to arrive after its headers, however it
    trickles, with or without a token; then it is answered 408 and the connection closed."""
    validators: int = 1
    """Processes that validate uploads (besides the one-off process of a large upload)."""
    retry_after_s: int = 10
    """``Retry-After`` of a 429."""


@dataclass(frozen=True, slots=True)
class Retention:
    """§4.3 retention: raw artifacts and aggregate summaries are deleted after their period."""

    raw_days: int = MIN_RAW_DAYS
    summary_days: int = MIN_SUMMARY_DAYS
    sweep_interval_s: float = 3600.0


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """Everything ``legaleval serve`` was configured with."""

    settings: Settings
    """The runs' settings (model, judge, limits …); each run sets its own dataset."""
    data: DataDir
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    limits: Limits = field(default_factory=Limits)
    retention: Retention = field(default_factory=Retention)
    tokens: Tokens = field(default_factory=Tokens)
    poll_interval_s: float = 0.1
    """How often an idle worker looks for a queued run."""
    db: Database | None = None
    """``--database``: ``None`` is the data directory's SQLite file (see :attr:`database`)."""

    @property
    def database(self) -> Database:
        """Where the run table and the queue are kept (``service.database``)."""
        return self.db if self.db is not None else SqliteDatabase(self.data.state)

    @property
    def models(self) -> tuple[str, ...]:
        """The models a run may ask for (``?model=``); all of them by default."""
        return self.settings.model


def service_settings(
    settings: Settings, data: DataDir, database: Database | None = None
) -> Settings:
    """The runs' settings as the service holds them: its cache and run directory.

    The response cache is the data directory's — or, with a PostgreSQL ``database``, a
    table of that database, shared by every replica — unless ``--cache`` (or the YAML)
    names one; ``--no-cache`` keeps it off (then a run cut short by a crash cannot be
    continued). The database URL reaches the run manifest with its user and password
    redacted, as every URL's are.
    """
    sources = dict(settings.sources)
    changes: dict[str, object] = {"run_dir": str(data.runs), "dataset_format": "contract_v1"}
    if settings.cache is not None and sources.get("cache") == "default":
        shared = database is not None and database.shared
        changes["cache"] = getattr(database, "url", None) if shared else str(data.cache)
        sources["cache"] = "service"
    sources.update(run_dir="service", dataset_format="service")
    return dataclasses.replace(settings, sources=sources, **changes)  # type: ignore[arg-type]


def run_settings(base: Settings, data: DataDir, run_id: str, models: Sequence[str]) -> Settings:
    """One run's settings: its stored upload (and its format), its models and its id."""
    sources = {**base.sources, "dataset": "service", "run_id": "service", "model": "service"}
    path, fmt = data.stored_upload(run_id)
    return dataclasses.replace(
        base,
        dataset=(os.fspath(path),),
        dataset_format=fmt,
        model=tuple(models),
        run_id=run_id,
        sources=sources,
    )
