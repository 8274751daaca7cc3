"""``GET /healthz``: 200 while the service can answer, naming what is degraded."""

from __future__ import annotations

import functools

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from pytest_legaleval.run.manifest import package_version
from pytest_legaleval.service.deps import BackendDep
from pytest_legaleval.service.http import request_id_of
from pytest_legaleval.service.models import Health

__all__ = ["router"]

router = APIRouter(tags=["service"])


@functools.cache
def _version() -> str:
    return package_version() or "unknown"  # read once: package metadata is slow to look up


@router.get("/healthz", response_model=Health)
async def healthz(request: Request, backend: BackendDep) -> JSONResponse:
    """Liveness; needs no token.

    ``status`` is ``degraded`` and ``degraded`` names each failing part (``storage``,
    ``worker-<n>``, ``retention``) while the service still answers.
    """
    report = backend.health.report() if backend.health is not None else None
    problems = dict(report.problems) if report is not None else {}
    body = {
        "status": "degraded" if problems else "ok",
        "version": _version(),
        "workers": backend.config.workers,
        "queued": report.queued if report is not None else None,
        "degraded": problems,
        "database": dict(report.database) if report is not None and report.database else None,
        "request_id": request_id_of(request.scope),
    }
    return JSONResponse(body)
