"""``legaleval review RUN_DIR``: the review page for one rater, on the loopback interface.

One process serves one rater (``--rater NAME``) of one sample; two raters run two of them
(two ports) on the same review folder, and join the same sample. It answers loopback
clients only and listens on 127.0.0.1 only: the page shows a run's questions and answers,
and a local review has no tokens.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import IO, Any

from fastapi import FastAPI, Request

from pytest_legaleval.datasets.review import ReviewDesk
from pytest_legaleval.service.auth import is_loopback
from pytest_legaleval.service.handlers import install_error_handlers
from pytest_legaleval.service.http import ApiError, RequestIdMiddleware
from pytest_legaleval.service.review.routes import ReviewContext, review_router
from pytest_legaleval.service.server import bind

__all__ = ["URL_PREFIX", "create_review_app", "serve_review"]

URL_PREFIX = "LEGALEVAL_REVIEW_URL="
HOST = "127.0.0.1"


def create_review_app(desk: ReviewDesk, rater: str) -> RequestIdMiddleware:
    """The page and API of ``rater`` on ``desk``, loopback clients only."""
    app = FastAPI(title="legaleval review", docs_url=None, redoc_url=None, openapi_url=None)
    install_error_handlers(app)

    def context(request: Request) -> ReviewContext:
        client = request.client.host if request.client else None
        if not is_loopback(client):
            raise ApiError(403, "legaleval review answers loopback clients only")
        return ReviewContext(desk, rater)

    app.include_router(review_router(context))
    return RequestIdMiddleware(app)


def serve_review(desk: ReviewDesk, rater: str, port: int, *, out: IO[str] | None = None) -> int:
    """Serve the page until SIGINT or SIGTERM; prints ``LEGALEVAL_REVIEW_URL=…`` when ready.

    Raises:
        ConfigError: the port cannot be bound.

    """
    from hypercorn.asyncio import serve as hypercorn_serve
    from hypercorn.config import Config

    sock = bind(HOST, port)
    http = Config()
    http.bind = [f"fd://{os.dup(sock.fileno())}"]
    http.include_server_header = False
    http.accesslog = None
    http.graceful_timeout = 5.0
    app: Any = create_review_app(desk, rater)
    url = f"http://{HOST}:{sock.getsockname()[1]}/"

    async def run() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        print(f"{URL_PREFIX}{url}", file=out or sys.stdout, flush=True)
        shutdown: Any = stop.wait
        await hypercorn_serve(app, http, shutdown_trigger=shutdown, mode="asgi")

    try:
        asyncio.run(run())
    finally:
        sock.close()
    return 0
