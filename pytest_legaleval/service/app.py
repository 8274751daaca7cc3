"""The ASGI application: the Dataset Contract's endpoints on FastAPI.

FastAPI (on Starlette) because it generates ``/openapi.json`` from the routes and the
pydantic models of ``service.models`` (pydantic is already installed with the ``openai``
SDK). The routes live in ``service.routes`` (one ``APIRouter`` per resource) and take the
backend, the caller and the run through ``Depends(...)`` (``service.deps``). The upload is
not parsed by FastAPI: it is read from the ASGI stream into a file within the size limit
(``service.uploads``) and validated in another process. Handlers that only read the run
table are plain functions, run in the thread pool.
"""

from __future__ import annotations

from fastapi import FastAPI

from pytest_legaleval.run.manifest import package_version
from pytest_legaleval.service import openapi
from pytest_legaleval.service.deps import Backend
from pytest_legaleval.service.handlers import install_error_handlers
from pytest_legaleval.service.http import RequestIdMiddleware
from pytest_legaleval.service.review import serve as review
from pytest_legaleval.service.routes import artifacts, health, runs

__all__ = ["Backend", "asgi", "create_app"]


def create_app(backend: Backend) -> FastAPI:
    """The FastAPI application of one service (wrap it in ``RequestIdMiddleware`` to serve)."""
    app = FastAPI(
        title="pytest-legaleval service",
        version=package_version() or "unknown",
        summary="The Dataset Contract v1 batch evaluation service.",
        description=openapi.DESCRIPTION,
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.backend = backend
    install_error_handlers(app)
    for module in (health, runs, artifacts, review):
        app.include_router(module.router)
    return app


def asgi(backend: Backend) -> RequestIdMiddleware:
    """The application as served: every response carries ``X-Request-ID``."""
    return RequestIdMiddleware(create_app(backend), body_timeout=backend.config.limits.body_timeout)
