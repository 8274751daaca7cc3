"""``/v1/runs``: upload a document (a run is queued), list the runs, read and cancel one."""

from __future__ import annotations

import re

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from pytest_legaleval.service import openapi
from pytest_legaleval.service.deps import BackendDep, OwnerDep, VisibleRun
from pytest_legaleval.service.http import ApiError, request_id_of
from pytest_legaleval.service.models import ErrorEnvelope, RunAccepted, RunList, RunObject
from pytest_legaleval.service.routes import ERRORS
from pytest_legaleval.service.uploads import accept_upload
from pytest_legaleval.service.views import run_object

__all__ = ["parse_cursor", "router"]

router = APIRouter(tags=["runs"])

_CURSOR = re.compile(r"[0-9]{1,18}")
"""A cursor is the ``seq`` of the last run of a page: ASCII digits, within SQLite's integers."""


def parse_cursor(cursor: str | None) -> int | None:
    """The ``seq`` a ``next_cursor`` stands for (``None``: the first page).

    Raises:
        ApiError: 400 for anything this service did not give out (not ASCII digits — ``²``
            is a digit to ``str.isdigit`` — or too long for a row number).

    """
    if cursor is None:
        return None
    if not _CURSOR.fullmatch(cursor):
        shown = cursor if len(cursor) <= 40 else cursor[:40] + "…"
        raise ApiError(400, f"cursor {shown!r} is not one this service gave out")
    return int(cursor)


@router.post(
    "/v1/runs",
    status_code=202,
    response_model=RunAccepted,
    responses={
        **ERRORS,
        408: {"model": ErrorEnvelope},
        413: {"model": ErrorEnvelope},
        429: {"model": ErrorEnvelope},
    },
    openapi_extra=openapi.upload_body(),
)
async def create_run(
    request: Request,
    owner: OwnerDep,
    backend: BackendDep,
    model: str | None = Query(None, description="Evaluate only this one of the configured models."),
) -> JSONResponse:
    """Upload a Dataset Contract v1 document; a run is queued if it is accepted (§2)."""
    models = backend.config.models
    if model is not None:
        if model not in models:
            raise ApiError(
                400,
                f"model {model!r} is not configured on this service; choose one of: "
                f"{', '.join(models)}",
                details={"models": list(models)},
            )
        models = (model,)
    status, body, headers = await accept_upload(
        backend,
        request.receive,
        request.headers,
        owner=owner,
        models=models,
        request_id=request_id_of(request.scope),
    )
    return JSONResponse(body, status_code=status, headers=headers)


@router.get("/v1/runs", response_model=RunList, responses=ERRORS)
def list_runs(
    request: Request,
    owner: OwnerDep,
    backend: BackendDep,
    limit: int = Query(20, ge=1, le=100, description="Runs per page."),
    cursor: str | None = Query(None, description="next_cursor of the previous page."),
) -> JSONResponse:
    """The caller's runs, newest first."""
    before = parse_cursor(cursor)
    rows = backend.store.page(owner, limit=limit + 1, before=before)
    rid = request_id_of(request.scope)
    more = len(rows) > limit
    rows = rows[:limit]
    retention = backend.config.retention
    body = {
        "runs": [run_object(r, retention, rid, metrics=False) for r in rows],
        "next_cursor": str(rows[-1].seq) if more and rows else None,
        "request_id": rid,
    }
    return JSONResponse(body)


@router.get("/v1/runs/{run_id}", response_model=RunObject, responses=ERRORS)
def get_run(run_id: str, request: Request, row: VisibleRun, backend: BackendDep) -> JSONResponse:
    """The run: state, timestamps, denominators, progress and (once final) metrics."""
    return JSONResponse(run_object(row, backend.config.retention, request_id_of(request.scope)))


@router.post(
    "/v1/runs/{run_id}/cancel",
    status_code=202,
    response_model=RunObject,
    responses={**ERRORS, 409: {"model": ErrorEnvelope}},
)
def cancel_run(run_id: str, request: Request, row: VisibleRun, backend: BackendDep) -> JSONResponse:
    """Cancel the run (§3.1).

    Pending calls stop, unfinished records become ``cancelled``, and the run is still
    finalized with its eight artifacts.
    """
    if row.terminal:
        raise ApiError(
            409,
            f"run {run_id} has already ended ({row.status})",
            details={"status": row.status},
        )
    row = backend.store.request_cancel(run_id) or row
    backend.queue.prioritize(run_id)
    return JSONResponse(
        run_object(row, backend.config.retention, request_id_of(request.scope)), status_code=202
    )
