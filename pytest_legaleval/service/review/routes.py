"""The review page and its small JSON API, as one ``APIRouter`` both servers mount.

Routes (relative to where the router is mounted: ``/`` for ``legaleval review``,
``/v1/runs/{run_id}/review`` under ``legaleval serve``):

* ``GET /`` — the page (static: it holds no data; the API gives it each item);
* ``GET /api/review/next`` — 200 ``{"item": view, "progress": …}``, the rater's next
  unlabelled item, or 204 when they are done;
* ``POST /api/review/labels`` — one item's labels
  (``{"item", "passed", "grade"?, "criteria"?, "note"?, "seconds"?}``): 201 with the new
  progress; 404 an unknown item, 409 a second submission of it, 422 a bad verdict or
  body; nothing is written then;
* ``GET /api/review/progress`` — ``{"rater", "total", "done", "remaining",
  "seconds_median", "seconds_total", "submitted": [ids]}``;
* ``GET /api/review/items/{id}`` — an item of the rater's sample, with their own labels
  once submitted (the page's "back").

Who the rater is and which desk serves them comes from the ``context`` dependency the
mounting server gives (:func:`review_router`). Every answer is ``Cache-Control: no-store``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from pytest_legaleval.datasets.review import ReviewDesk, ReviewRefused
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.service.http import ApiError

__all__ = ["MAX_BODY_BYTES", "ReviewContext", "review_router"]

MAX_BODY_BYTES = 64 * 1024
"""A submission's body limit (a note is at most 4,000 characters)."""
_NO_STORE = {"Cache-Control": "no-store"}
_PAGE_HEADERS = {
    **_NO_STORE,
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_ASSETS = {
    "": ("review.html", "text/html; charset=utf-8"),
    "review.js": ("review.js", "text/javascript; charset=utf-8"),
    "review.css": ("review.css", "text/css; charset=utf-8"),
}


@dataclass(frozen=True, slots=True)
class ReviewContext:
    """The desk of the sample being labelled and the rater asking."""

    desk: ReviewDesk
    rater: str


def _asset(name: str) -> bytes:
    return resources.files(__package__).joinpath(name).read_bytes()


def _refused(exc: ConfigError) -> ApiError:
    if isinstance(exc, ReviewRefused):
        return ApiError(exc.status, exc.message)
    return ApiError(409, str(exc))  # a seat that cannot be taken, a damaged file


async def _body(request: Request) -> Any:
    data = b""
    async for chunk in request.stream():
        data += chunk
        if len(data) > MAX_BODY_BYTES:
            raise ApiError(413, f"the body is over {MAX_BODY_BYTES} bytes")
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"the body is not JSON ({exc})") from None


def review_router(context: Callable[..., Any]) -> APIRouter:
    """The page and API routes, with ``context`` (a FastAPI dependency) naming the rater.

    ``context`` returns a :class:`ReviewContext` or raises ``ApiError`` (401/403/404).
    """
    router = APIRouter(tags=["review"])
    needs = Depends(context)

    def page(name: str) -> Callable[[], Response]:
        file, media = _ASSETS[name]

        def serve() -> Response:
            return Response(_asset(file), media_type=media, headers=_PAGE_HEADERS)

        return serve

    for name in _ASSETS:
        router.add_api_route(f"/{name}", page(name), methods=["GET"], include_in_schema=False)

    @router.get("/api/review/next", responses={204: {"description": "every item is labelled"}})
    async def next_item(ctx: ReviewContext = needs) -> Response:
        """The rater's next unlabelled item (blind), or 204 when every item is labelled."""
        try:
            found = await run_in_threadpool(ctx.desk.next_item, ctx.rater)
        except ConfigError as exc:
            raise _refused(exc) from None
        if found is None:
            return Response(status_code=204, headers=_NO_STORE)
        return JSONResponse(found, headers=_NO_STORE)

    @router.post("/api/review/labels", status_code=201)
    async def post_labels(request: Request, ctx: ReviewContext = needs) -> JSONResponse:
        """One item's labels: appended to the labels file and flushed before the answer."""
        body = await _body(request)
        try:
            done = await run_in_threadpool(ctx.desk.submit, ctx.rater, body)
        except ConfigError as exc:
            raise _refused(exc) from None
        return JSONResponse(done, status_code=201, headers=_NO_STORE)

    @router.get("/api/review/progress")
    async def progress(ctx: ReviewContext = needs) -> JSONResponse:
        """How far the rater is."""
        try:
            found = await run_in_threadpool(ctx.desk.progress, ctx.rater)
        except ConfigError as exc:
            raise _refused(exc) from None
        return JSONResponse(found, headers=_NO_STORE)

    @router.get("/api/review/items/{item}")
    async def one_item(item: str, ctx: ReviewContext = needs) -> JSONResponse:
        """An item of the rater's sample, with their own labels once they submitted it."""
        try:
            found = await run_in_threadpool(ctx.desk.item, ctx.rater, item)
        except ConfigError as exc:
            raise _refused(exc) from None
        return JSONResponse(found, headers=_NO_STORE)

    return router
