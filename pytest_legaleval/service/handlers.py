"""Every error answered as the contract's envelope, with the request id.

FastAPI's own validation errors (a bad query parameter) become 400 ``invalid_request``;
Starlette's 404 and 405 keep their status under the envelope; a storage failure is 507 (a
full disk) or 503 (a locked table) naming its cause; an unexpected exception is a 500
whose body says only to quote the request id (the log has the rest).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from pytest_legaleval.errors import DatasetRejected
from pytest_legaleval.service.http import ApiError, envelope, request_id_of, storage_answer
from pytest_legaleval.service.storage import StorageError

__all__ = ["install_error_handlers"]

_log = logging.getLogger(__name__)


def _error(
    status: int, body: dict[str, Any], headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error with the contract's envelope and the request id."""

    async def api_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        rid = request_id_of(request.scope)
        return _error(exc.status, envelope(exc.code, exc.message, rid, exc.details), exc.headers)

    async def rejected(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, DatasetRejected)
        return _error(exc.status, exc.envelope(request_id_of(request.scope)))

    async def invalid(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        problems = [
            {"location": ".".join(str(p) for p in e.get("loc", ())), "message": str(e.get("msg"))}
            for e in exc.errors()
        ]
        text = "; ".join(f"{p['location']}: {p['message']}" for p in problems) or "bad request"
        rid = request_id_of(request.scope)
        return _error(400, envelope("invalid_request", text, rid, {"errors": problems}))

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        error = ApiError(exc.status_code, str(exc.detail))
        rid = request_id_of(request.scope)
        return _error(exc.status_code, envelope(error.code, error.message, rid), exc.headers)

    async def storage(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StorageError)
        _log.warning("request %s: storage failed: %s", request_id_of(request.scope), exc)
        return await api_error(request, storage_answer(exc))

    async def crashed(request: Request, exc: Exception) -> JSONResponse:
        rid = request_id_of(request.scope)
        _log.error("request %s failed: %s", rid, type(exc).__name__, exc_info=exc)
        return _error(500, envelope("internal_error", "internal error; quote the request_id", rid))

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(DatasetRejected, rejected)
    app.add_exception_handler(StorageError, storage)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, crashed)
