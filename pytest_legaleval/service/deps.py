"""What the route handlers get through ``Depends(...)``: the backend, the caller, the run.

FastAPI's bigger-applications pattern: every handler declares what it needs — the service
(:data:`BackendDep`), the caller's owner id (:data:`OwnerDep`, which is the authentication),
a run the caller may see (:data:`VisibleRun`) — so each handler is short, and a test can
call one with its own backend (``app.dependency_overrides``) or call these functions alone.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from fastapi import Depends, Request

from pytest_legaleval.run.ids import RUN_ID_PATTERN
from pytest_legaleval.service.auth import LOCAL_OWNER, bearer, is_loopback
from pytest_legaleval.service.config import ServiceConfig
from pytest_legaleval.service.database import RunTable
from pytest_legaleval.service.http import ApiError
from pytest_legaleval.service.queue import RunQueue
from pytest_legaleval.service.store import RunRow

__all__ = [
    "Backend",
    "BackendDep",
    "OwnerDep",
    "VisibleRun",
    "caller",
    "get_backend",
    "too_busy",
    "visible_run",
]


@dataclasses.dataclass
class Backend:
    """What the handlers use: configuration, run table, queue and the upload validator."""

    config: ServiceConfig
    store: RunTable
    queue: RunQueue
    validator: Any
    """Has ``async check(path) -> Checked`` (``service.validation.UploadValidator``)."""
    health: Any = None
    """Has ``report() -> HealthReport`` (``service.health.HealthMonitor``); ``None``: the
    health check knows only that the service answers."""


async def get_backend(request: Request) -> Backend:
    """The service's backend, as :func:`~pytest_legaleval.service.app.create_app` stored it."""
    backend: Backend = request.app.state.backend
    return backend


BackendDep = Annotated[Backend, Depends(get_backend)]


async def caller(request: Request, backend: BackendDep) -> str:
    """The owner id of the caller: its token's id, or ``local`` without tokens.

    Raises:
        ApiError: 401 without an accepted bearer token; 403 for a client off the loopback
            interface when the service has no tokens.

    """
    tokens = backend.config.tokens
    if not tokens.enabled:
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
    found = tokens.owner(token)
    if found is None:
        raise ApiError(
            401,
            "the bearer token is not accepted",
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )
    return found


OwnerDep = Annotated[str, Depends(caller)]


def visible_run(run_id: str, owner: OwnerDep, backend: BackendDep) -> RunRow:
    """The run ``run_id`` if the caller may see it.

    Raises:
        ApiError: 404 for no such run (or an id of another shape), 403 for another
            token's run.

    """
    row = backend.store.get(run_id) if RUN_ID_PATTERN.match(run_id) else None
    if row is None:
        raise ApiError(404, f"no run {run_id}")
    if row.owner != owner:
        raise ApiError(403, f"run {run_id} belongs to another token")
    return row


VisibleRun = Annotated[RunRow, Depends(visible_run)]


def too_busy(config: ServiceConfig, why: str) -> ApiError:
    """The 429 of a full queue or a busy token, with ``Retry-After``."""
    wait = config.limits.retry_after_s
    return ApiError(429, why, headers={"Retry-After": str(wait)}, details={"retry_after_s": wait})
