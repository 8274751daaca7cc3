"""The bodies the API answers with, built from the run table and the run directory."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pytest_legaleval.metrics._artifacts import CHECKSUMS, artifacts
from pytest_legaleval.run.names import KNOWN_ARTIFACTS
from pytest_legaleval.run.recorder import DENOMINATORS
from pytest_legaleval.service.config import Retention
from pytest_legaleval.service.retention import iso, raw_artifacts
from pytest_legaleval.service.store import RunRow

__all__ = ["DOWNLOADABLE", "artifact_list", "downloadable", "run_object"]

DOWNLOADABLE = (*KNOWN_ARTIFACTS, CHECKSUMS)
"""The built-in files of a run directory the API serves, and their checksums."""


def downloadable() -> tuple[str, ...]:
    """Files of a run directory the API lists and serves (the table's ``listed`` rows)."""
    return (*(a.name for a in artifacts() if a.listed), CHECKSUMS)


def _after(at: str | None, days: int) -> str | None:
    if at is None:
        return None
    moment = datetime.fromisoformat(at.replace("Z", "+00:00"))
    return iso(moment + timedelta(days=days))


def _denominators(row: RunRow) -> dict[str, int | None]:
    if row.denominators is not None:
        return {key: row.denominators.get(key) for key in DENOMINATORS}
    summary = row.validation.get("summary") or {}
    known: dict[str, int | None] = dict.fromkeys(DENOMINATORS)
    known["total_records"] = summary.get("total_records")
    known["valid_records"] = summary.get("accepted_records")
    known["invalid_records"] = summary.get("rejected_records")
    return known


def run_object(
    row: RunRow, retention: Retention, request_id: str, *, metrics: bool = True
) -> dict[str, Any]:
    """The run object of ``GET /v1/runs/{run_id}`` (``metrics=False``: the list's)."""
    started = next((t["at"] for t in row.transitions if t["state"] == "running"), None)
    return {
        "run_id": row.run_id,
        "status": row.status,
        "models": list(row.models),
        "created_at": row.created_at,
        "started_at": started,
        "completed_at": row.completed_at,
        "updated_at": row.updated_at,
        "state_transitions": [dict(t) for t in row.transitions],
        "dataset": dict(row.dataset),
        "validation": dict(row.validation),
        "progress": {"done": row.done, "total": row.total},
        "denominators": _denominators(row),
        "metrics": dict(row.metrics) if metrics and row.metrics is not None else None,
        "cancel_requested": row.cancel_requested_at is not None,
        "error": row.error,
        "resumes": row.resumes,
        "artifacts_url": f"/v1/runs/{row.run_id}/artifacts",
        "retention": {
            "raw_expires_at": _after(row.completed_at, retention.raw_days),
            "summary_expires_at": _after(row.completed_at, retention.summary_days),
            "raw_deleted_at": row.raw_deleted_at,
            "summary_deleted_at": row.summary_deleted_at,
        },
        "request_id": request_id,
    }


def checksums(run_dir: Path) -> dict[str, str]:
    """``SHA256SUMS`` of a sealed run directory, by file name."""
    sums: dict[str, str] = {}
    target = run_dir / CHECKSUMS
    if not target.is_file():
        return sums
    for line in target.read_text(encoding="utf-8").splitlines():
        digest, _, name = line.partition("  ")
        if name:
            sums[name] = digest
    return sums


def artifact_list(row: RunRow, run_dir: Path, request_id: str) -> dict[str, Any]:
    """The body of ``GET /v1/runs/{run_id}/artifacts``: the files still kept."""
    sums = checksums(run_dir)
    artifacts = []
    for name in downloadable()[:-1]:  # the artifacts, not the checksums
        target = run_dir / name
        if name in sums and target.is_file():
            artifacts.append(
                {
                    "name": name,
                    "bytes": target.stat().st_size,
                    "sha256": sums[name],
                    "url": f"/v1/runs/{row.run_id}/artifacts/{name}",
                }
            )
    return {"run_id": row.run_id, "artifacts": artifacts, "request_id": request_id}


def deleted_by_retention(row: RunRow, name: str) -> bool:
    """Whether ``name`` of the run was deleted by the retention sweeper."""
    if row.summary_deleted_at is not None:
        return True
    return row.raw_deleted_at is not None and name in raw_artifacts()
