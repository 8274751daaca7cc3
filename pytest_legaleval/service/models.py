"""The API's bodies as pydantic models: they document the OpenAPI schema (``/openapi.json``).

The handlers build the bodies themselves (``service.views``) and send them as they are; these
models describe them. Field names are the Dataset Contract's where it names them. A
``record_errors`` entry is described by the validator's own dataclass
(:class:`~pytest_legaleval.validation.record_error.RecordError`), not by a copy.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from pytest_legaleval.metrics.artifacts import METRICS_SUMMARY
from pytest_legaleval.validation.record_error import RecordError

__all__ = [
    "Artifact",
    "ArtifactList",
    "ErrorEnvelope",
    "Health",
    "RunAccepted",
    "RunList",
    "RunObject",
]

RunState = Literal[
    "queued", "validating", "running", "retrying", "finalizing",
    "completed", "completed_with_failures", "failed", "cancelled",
]  # fmt: skip


class ValidationSummary(BaseModel):
    """Record counts of an upload (§2.2)."""

    total_records: int
    accepted_records: int
    rejected_records: int


class RunAccepted(BaseModel):
    """HTTP 202: the dataset is accepted and a run is queued (§2.2)."""

    run_id: str = Field(pattern=r"^run_[0-9A-HJKMNP-TV-Z]{26}$")
    status: Literal["accepted", "accepted_with_record_errors"]
    summary: ValidationSummary
    record_errors: list[RecordError]
    request_id: str


class ErrorDetail(BaseModel):
    """What went wrong."""

    code: str = Field(
        description="invalid_request (400) and payload_too_large (413) as in the contract; "
        "unauthorized, forbidden, not_found, method_not_allowed, request_timeout, conflict, "
        "gone, rate_limited, internal_error, service_unavailable, insufficient_storage "
        "(507: the service's disk is full) elsewhere."
    )
    message: str
    details: dict[str, Any] | None = None


class ErrorEnvelope(BaseModel):
    """The standard error envelope (§2.2); no run is created by a request that gets it."""

    error: ErrorDetail
    request_id: str


class Transition(BaseModel):
    """One state of §3.1 and when the run entered it."""

    state: RunState
    at: str


class Progress(BaseModel):
    """Items recorded so far (records × models)."""

    done: int
    total: int


class DatasetRef(BaseModel):
    """The uploaded document (§4.2 inputs)."""

    dataset_id: str
    dataset_version: str | None
    schema_version: str
    sha256: str
    bytes: int


class ValidationRef(BaseModel):
    """How the upload was answered."""

    status: Literal["accepted", "accepted_with_record_errors"]
    summary: ValidationSummary
    record_errors: int = Field(description="Number of record errors (the 202 body lists them).")
    request_id: str = Field(description="The request id of the upload.")


class RetentionRef(BaseModel):
    """§4.3: when the raw artifacts and the summaries are deleted (or were)."""

    raw_expires_at: str | None
    summary_expires_at: str | None
    raw_deleted_at: str | None
    summary_deleted_at: str | None


class RunObject(BaseModel):
    """A run: its state, timestamps, denominators (§3.3) and, once finalized, its metrics."""

    run_id: str
    status: RunState
    models: list[str]
    created_at: str
    started_at: str | None
    completed_at: str | None
    updated_at: str
    state_transitions: list[Transition]
    dataset: DatasetRef
    validation: ValidationRef
    progress: Progress
    denominators: dict[str, int | None] = Field(
        description="total_records, valid_records, evaluated_records, failed_records, "
        "skipped_records (and invalid_records, cancelled_records); null until known."
    )
    metrics: dict[str, Any] | None = Field(
        default=None, description=f"{METRICS_SUMMARY}, once the run is finalized."
    )
    cancel_requested: bool
    error: str | None
    resumes: int = Field(description="How often the run was continued after a crash.")
    artifacts_url: str
    retention: RetentionRef
    request_id: str


class RunList(BaseModel):
    """The caller's runs, newest first."""

    runs: list[RunObject] = Field(description="Run objects without metrics.")
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page.")
    request_id: str


class Artifact(BaseModel):
    """One file of the run directory (§4.1)."""

    name: str
    bytes: int
    sha256: str
    url: str


class ArtifactList(BaseModel):
    """The run's artifacts, with their checksums (from SHA256SUMS)."""

    run_id: str
    artifacts: list[Artifact]
    request_id: str


class Health(BaseModel):
    """The service answers (HTTP 200); ``degraded`` names what does not work now."""

    status: Literal["ok", "degraded"] = Field(
        description="ok, or degraded while a part fails (the service still answers)."
    )
    version: str
    workers: int = Field(description="Worker processes configured (--workers).")
    queued: int | None = Field(description="Runs waiting for a worker (null until counted).")
    degraded: dict[str, str] = Field(
        description="What fails now, by part: storage (a full disk, a locked run table), "
        "worker-<n> (restarting, or waiting for storage), retention; empty when all is well."
    )
    database: dict[str, Any] | None = Field(
        default=None,
        description="The run table's database: kind (sqlite or postgresql), name (the file, "
        "or host:port/database; never credentials) and reachable (null until checked).",
    )
    request_id: str
