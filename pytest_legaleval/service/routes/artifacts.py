"""``/v1/runs/{run_id}/artifacts``: a finished run's files, listed and streamed."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from pytest_legaleval.service import openapi
from pytest_legaleval.service.config import DataDir
from pytest_legaleval.service.deps import BackendDep, VisibleRun
from pytest_legaleval.service.files import FileStream
from pytest_legaleval.service.http import ApiError, request_id_of
from pytest_legaleval.service.models import ArtifactList, ErrorEnvelope
from pytest_legaleval.service.routes import ERRORS
from pytest_legaleval.service.store import RunRow
from pytest_legaleval.service.views import (
    artifact_list,
    checksums,
    deleted_by_retention,
    downloadable,
)

__all__ = ["router", "sealed"]

router = APIRouter(tags=["artifacts"])
_ENDED_ERRORS = {**ERRORS, 409: {"model": ErrorEnvelope}, 410: {"model": ErrorEnvelope}}


def sealed(row: RunRow, data: DataDir) -> Path:
    """The run directory of an ended run that still has its artifacts.

    Raises:
        ApiError: 409 while the run has not ended, 410 once retention deleted them, 404 for
            a run that ended before writing any.

    """
    if not row.terminal:
        raise ApiError(
            409,
            f"run {row.run_id} is {row.status}: its artifacts are served once it has ended",
            details={"status": row.status},
        )
    run_dir = data.runs / row.run_id
    if row.summary_deleted_at is not None:
        raise ApiError(410, f"the artifacts of run {row.run_id} were deleted (retention)")
    if not checksums(run_dir):
        raise ApiError(404, f"run {row.run_id} has no artifacts: it ended before writing any")
    return run_dir


@router.get("/v1/runs/{run_id}/artifacts", response_model=ArtifactList, responses=_ENDED_ERRORS)
def list_artifacts(
    run_id: str, request: Request, row: VisibleRun, backend: BackendDep
) -> JSONResponse:
    """The run's artifacts (§4.1) with their size and sha256."""
    run_dir = sealed(row, backend.config.data)
    return JSONResponse(artifact_list(row, run_dir, request_id_of(request.scope)))


@router.get(
    "/v1/runs/{run_id}/artifacts/{name}",
    response_class=FileStream,
    status_code=200,
    responses={200: {"content": openapi.ARTIFACT_CONTENT}, **_ENDED_ERRORS},
)
def get_artifact(run_id: str, name: str, row: VisibleRun, backend: BackendDep) -> FileStream:
    """One artifact, streamed; its sha256 is in ``X-Content-SHA256`` (and the ETag)."""
    served = downloadable()
    if name not in served:
        raise ApiError(404, f"no artifact {name!r}; the artifacts are {', '.join(served)}")
    run_dir = sealed(row, backend.config.data)
    if deleted_by_retention(row, name):
        raise ApiError(410, f"{name} of run {run_id} was deleted (retention)")
    target = run_dir / name
    if not target.is_file():
        raise ApiError(404, f"run {run_id} has no {name}")
    digest = checksums(run_dir).get(name)
    return FileStream(target, digest, idle_timeout=backend.config.limits.http_timeout)
