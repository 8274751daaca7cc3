"""The ASGI application: the Dataset Contract's endpoints on FastAPI.

FastAPI (on Starlette) because it generates ``/openapi.json`` from the routes and the
pydantic models of ``service.models`` (pydantic is already installed with the ``openai``
SDK). The upload is not parsed by FastAPI: it is read from the ASGI stream into a file
within the size limit (``service.http.receive_upload``) and validated in another process.
Handlers that only read the run table are plain functions, run in the thread pool.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import uuid
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse

from pytest_legaleval.run.ids import RUN_ID_PATTERN, new_run_id
from pytest_legaleval.run.manifest import package_version
from pytest_legaleval.service import openapi
from pytest_legaleval.service.auth import LOCAL_OWNER, bearer, is_loopback
from pytest_legaleval.service.config import ServiceConfig
from pytest_legaleval.service.files import FileStream
from pytest_legaleval.service.handlers import install_error_handlers
from pytest_legaleval.service.http import (
    ApiError,
    RequestIdMiddleware,
    check_upload_headers,
    receive_upload,
    request_id_of,
)
from pytest_legaleval.service.models import (
    ArtifactList,
    ErrorEnvelope,
    Health,
    RunAccepted,
    RunList,
    RunObject,
)
from pytest_legaleval.service.queue import RunQueue
from pytest_legaleval.service.store import RunRow, RunStore
from pytest_legaleval.service.validation import Checked
from pytest_legaleval.service.views import (
    DOWNLOADABLE,
    artifact_list,
    checksums,
    deleted_by_retention,
    run_object,
)
from pytest_legaleval.validation import contract as limits

__all__ = ["Backend", "create_app"]


@dataclasses.dataclass
class Backend:
    """What the handlers use: configuration, run table, queue and the upload validator."""

    config: ServiceConfig
    store: RunStore
    queue: RunQueue
    validator: Any
    """Has ``async check(path) -> Checked`` (``service.validation.UploadValidator``)."""


def create_app(backend: Backend) -> FastAPI:
    """The FastAPI application of one service (wrap it in ``RequestIdMiddleware`` to serve)."""
    config = backend.config
    store, queue = backend.store, backend.queue
    app = FastAPI(
        title="pytest-legaleval service",
        version=package_version() or "unknown",
        summary="The Dataset Contract v1 batch evaluation service.",
        description=openapi.DESCRIPTION,
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    install_error_handlers(app)
    errors: dict[int | str, dict[str, Any]] = {
        code: {"model": ErrorEnvelope} for code in (400, 401, 403, 404)
    }

    def owner(request: Request) -> str:
        if not config.tokens.enabled:
            client = request.client.host if request.client else None
            if not is_loopback(client):
                raise ApiError(
                    403,
                    "this service has no API tokens configured and answers loopback clients "
                    "only; set LEGALEVAL_API_TOKENS on the server",
                )
            return LOCAL_OWNER
        token = bearer(request.headers.get("authorization"))
        if token is None:
            raise ApiError(
                401,
                "a bearer token is required: send Authorization: Bearer <token>",
                headers={"WWW-Authenticate": "Bearer"},
            )
        found = config.tokens.owner(token)
        if found is None:
            raise ApiError(
                401,
                "the bearer token is not accepted",
                headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
            )
        return found

    def visible(run_id: str, request: Request) -> RunRow:
        who = owner(request)
        row = store.get(run_id) if RUN_ID_PATTERN.match(run_id) else None
        if row is None:
            raise ApiError(404, f"no run {run_id}")
        if row.owner != who:
            raise ApiError(403, f"run {run_id} belongs to another token")
        return row

    def too_busy(why: str) -> ApiError:
        return ApiError(
            429, why, headers={"Retry-After": str(config.limits.retry_after_s)},
            details={"retry_after_s": config.limits.retry_after_s},
        )  # fmt: skip

    @app.get("/healthz", response_model=Health, tags=["service"])
    def healthz(request: Request) -> JSONResponse:
        """Liveness; needs no token."""
        body = {
            "status": "ok",
            "version": package_version() or "unknown",
            "workers": config.workers,
            "request_id": request_id_of(request.scope),
        }
        return JSONResponse(body)

    @app.post(
        "/v1/runs",
        status_code=202,
        response_model=RunAccepted,
        responses={
            **errors,
            408: {"model": ErrorEnvelope},
            413: {"model": ErrorEnvelope},
            429: {"model": ErrorEnvelope},
        },
        openapi_extra=openapi.upload_body(),
        tags=["runs"],
    )
    async def create_run(
        request: Request,
        model: str | None = Query(
            None, description="Evaluate only this one of the configured models."
        ),
    ) -> JSONResponse:
        """Upload a Dataset Contract v1 document; a run is queued if it is accepted (§2)."""
        rid = request_id_of(request.scope)
        who = owner(request)
        models = config.models
        if model is not None:
            if model not in models:
                raise ApiError(
                    400,
                    f"model {model!r} is not configured on this service; choose one of: "
                    f"{', '.join(models)}",
                    details={"models": list(models)},
                )
            models = (model,)
        if await asyncio.to_thread(store.count, "queued") >= config.limits.max_queued:
            raise too_busy(f"the queue is full ({config.limits.max_queued} runs waiting)")
        check_upload_headers(request.headers)
        folder = config.data.incoming / uuid.uuid4().hex
        folder.mkdir(mode=0o700, parents=True)
        try:
            target = folder / "upload.json"
            await receive_upload(
                request.receive,
                target,
                limit=limits.MAX_PAYLOAD_BYTES,
                idle_timeout=config.limits.http_timeout,
            )
            checked = await _validate(backend, target)
            if checked.status != 202:
                return JSONResponse({**checked.body, "request_id": rid}, status_code=checked.status)
            run_id = new_run_id()
            _store_upload(config, target, run_id)
            limit = await asyncio.to_thread(
                store.create,
                run_id=run_id,
                owner=who,
                models=models,
                request_id=rid,
                validation={
                    **checked.body,
                    "record_errors": len(checked.body["record_errors"]),
                    "request_id": rid,
                },
                dataset=checked.dataset or {},
                total=checked.body["summary"]["total_records"] * len(models),
                max_queued=config.limits.max_queued,
                max_per_owner=config.limits.max_runs_per_token,
            )
            if limit is not None:
                shutil.rmtree(config.data.uploads / run_id, ignore_errors=True)
                raise too_busy(
                    f"the queue is full ({config.limits.max_queued} runs waiting)"
                    if limit == "queue"
                    else f"this token has {config.limits.max_runs_per_token} runs in flight"
                )
            await asyncio.to_thread(queue.put, run_id)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        body = {"run_id": run_id, **checked.body, "request_id": rid}
        return JSONResponse(body, status_code=202, headers={"Location": f"/v1/runs/{run_id}"})

    @app.get("/v1/runs", response_model=RunList, responses=errors, tags=["runs"])
    def list_runs(
        request: Request,
        limit: int = Query(20, ge=1, le=100, description="Runs per page."),
        cursor: str | None = Query(None, description="next_cursor of the previous page."),
    ) -> JSONResponse:
        """The caller's runs, newest first."""
        who = owner(request)
        if cursor is not None and not cursor.isdigit():
            raise ApiError(400, f"cursor {cursor!r} is not one this service gave out")
        rows = store.page(who, limit=limit + 1, before=int(cursor) if cursor else None)
        rid = request_id_of(request.scope)
        more = len(rows) > limit
        rows = rows[:limit]
        body = {
            "runs": [run_object(r, config.retention, rid, metrics=False) for r in rows],
            "next_cursor": str(rows[-1].seq) if more and rows else None,
            "request_id": rid,
        }
        return JSONResponse(body)

    @app.get("/v1/runs/{run_id}", response_model=RunObject, responses=errors, tags=["runs"])
    def get_run(run_id: str, request: Request) -> JSONResponse:
        """The run: state, timestamps, denominators, progress and (once final) metrics."""
        row = visible(run_id, request)
        return JSONResponse(run_object(row, config.retention, request_id_of(request.scope)))

    @app.post(
        "/v1/runs/{run_id}/cancel",
        status_code=202,
        response_model=RunObject,
        responses={**errors, 409: {"model": ErrorEnvelope}},
        tags=["runs"],
    )
    def cancel_run(run_id: str, request: Request) -> JSONResponse:
        """Cancel the run (§3.1).

        Pending calls stop, unfinished records become ``cancelled``, and the run is still
        finalized with its eight artifacts.
        """
        row = visible(run_id, request)
        if row.terminal:
            raise ApiError(
                409,
                f"run {run_id} has already ended ({row.status})",
                details={"status": row.status},
            )
        row = store.request_cancel(run_id) or row
        queue.prioritize(run_id)
        return JSONResponse(
            run_object(row, config.retention, request_id_of(request.scope)), status_code=202
        )

    def sealed(row: RunRow) -> Path:
        if not row.terminal:
            raise ApiError(
                409,
                f"run {row.run_id} is {row.status}: its artifacts are served once it has ended",
                details={"status": row.status},
            )
        run_dir = config.data.runs / row.run_id
        if row.summary_deleted_at is not None:
            raise ApiError(410, f"the artifacts of run {row.run_id} were deleted (retention)")
        if not checksums(run_dir):
            raise ApiError(404, f"run {row.run_id} has no artifacts: it ended before writing any")
        return run_dir

    @app.get(
        "/v1/runs/{run_id}/artifacts",
        response_model=ArtifactList,
        responses={**errors, 409: {"model": ErrorEnvelope}, 410: {"model": ErrorEnvelope}},
        tags=["artifacts"],
    )
    def list_artifacts(run_id: str, request: Request) -> JSONResponse:
        """The run's artifacts (§4.1) with their size and sha256."""
        row = visible(run_id, request)
        run_dir = sealed(row)
        return JSONResponse(artifact_list(row, run_dir, request_id_of(request.scope)))

    @app.get(
        "/v1/runs/{run_id}/artifacts/{name}",
        response_class=FileStream,
        status_code=200,
        responses={
            200: {"content": openapi.ARTIFACT_CONTENT},
            **errors,
            409: {"model": ErrorEnvelope},
            410: {"model": ErrorEnvelope},
        },
        tags=["artifacts"],
    )
    def get_artifact(run_id: str, name: str, request: Request) -> FileStream:
        """One artifact, streamed; its sha256 is in ``X-Content-SHA256`` (and the ETag)."""
        row = visible(run_id, request)
        if name not in DOWNLOADABLE:
            raise ApiError(
                404, f"no artifact {name!r}; the artifacts are {', '.join(DOWNLOADABLE)}"
            )
        run_dir = sealed(row)
        if deleted_by_retention(row, name):
            raise ApiError(410, f"{name} of run {run_id} was deleted (retention)")
        sums = checksums(run_dir)
        target = run_dir / name
        if not target.is_file():
            raise ApiError(404, f"run {run_id} has no {name}")
        digest = sums.get(name)
        return FileStream(target, digest, idle_timeout=config.limits.http_timeout)

    return app


async def _validate(backend: Backend, target: Path) -> Checked:
    try:
        checked: Checked = await backend.validator.check(target)
    except TimeoutError:
        raise ApiError(503, "the validation of the upload took too long; try again later") from None
    except BrokenProcessPool:
        raise ApiError(503, "the upload could not be validated; try again later") from None
    return checked


def _store_upload(config: ServiceConfig, target: Path, run_id: str) -> None:
    """Keep the accepted document, read-only, for its run."""
    stored = config.data.upload(run_id)
    stored.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    target.rename(stored)
    stored.chmod(0o400)


def asgi(backend: Backend) -> RequestIdMiddleware:
    """The application as served: every response carries ``X-Request-ID``."""
    return RequestIdMiddleware(create_app(backend))
