"""The review routes under ``legaleval serve``: ``/v1/runs/{run_id}/review/``.

Raters are named with tokens of their own: ``LEGALEVAL_REVIEW_RATERS`` holds
comma-separated ``name=token`` pairs (``alice=5f3c…,bob=9e1a…``). A rater opens
``/v1/runs/{run_id}/review/#token=<token>`` (the fragment never reaches the server; the
page keeps the token for its tab and sends it as ``Authorization: Bearer``); a script sends
the header itself. Only the tokens' SHA-256 digests are kept, compared in constant time.
Without the variable the review routes answer 404 (review is off). Rater tokens are not
API tokens: they open the review of any ended run the service holds, and nothing else.

The review folder of a run is ``<data-dir>/reviews/<run_id>/`` (never inside the run
directory). Its sample is drawn on the first request — :data:`SERVE_SAMPLE` items, a
:data:`SERVE_DOUBLE` share of them for a second rater — unless one was prepared there with
``legaleval review <data-dir>/runs/<run_id> --review-dir <data-dir>/reviews/<run_id>
--sample N [--double F] --prepare``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from pytest_legaleval.datasets.review import ReviewDesk, open_sample
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.run.ids import RUN_ID_PATTERN
from pytest_legaleval.service.auth import bearer
from pytest_legaleval.service.deps import BackendDep
from pytest_legaleval.service.http import ApiError
from pytest_legaleval.service.review.routes import ReviewContext, review_router
from pytest_legaleval.service.routes.artifacts import sealed

__all__ = ["RATERS_ENV", "SERVE_DOUBLE", "SERVE_SAMPLE", "RaterTokens", "router"]

RATERS_ENV = "LEGALEVAL_REVIEW_RATERS"
SERVE_SAMPLE = 100
SERVE_DOUBLE = 0.25


@dataclass(frozen=True, slots=True)
class RaterTokens:
    """Rater names by their tokens' digests."""

    raters: tuple[tuple[bytes, str], ...] = ()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RaterTokens:
        """Read ``LEGALEVAL_REVIEW_RATERS`` (``name=token`` pairs, comma-separated).

        Raises:
            ConfigError: a pair without a name or a token.

        """
        text = (environ if environ is not None else os.environ).get(RATERS_ENV, "")
        pairs = []
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            name, sep, token = part.partition("=")
            if not sep or not name.strip() or not token.strip():
                raise ConfigError(f"{RATERS_ENV}: each entry is name=token; one is not")
            digest = hashlib.sha256(token.strip().encode("utf-8")).digest()
            pairs.append((digest, name.strip()))
        return cls(tuple(pairs))

    def rater(self, token: str) -> str | None:
        """The name of ``token``'s rater (every digest compared, in constant time)."""
        presented = hashlib.sha256(token.encode("utf-8")).digest()
        found = None
        for digest, name in self.raters:
            if hmac.compare_digest(presented, digest):
                found = name
        return found

    def __repr__(self) -> str:
        return f"RaterTokens({len(self.raters)} configured)"


@dataclass
class _Desks:
    """The open desks of one application (one per run under review)."""

    desks: dict[Path, ReviewDesk] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _desk(desks: _Desks, run_dir: Path, folder: Path) -> ReviewDesk:
    with desks.lock:
        desk = desks.desks.get(folder)
        if desk is None:
            sample, _ = open_sample(folder, run_dir, size=SERVE_SAMPLE, double=SERVE_DOUBLE)
            desk = desks.desks[folder] = ReviewDesk(folder, sample, run_dir)
        return desk


async def serve_context(run_id: str, request: Request, backend: BackendDep) -> ReviewContext:
    """The rater (from their token) and the desk of run ``run_id``'s review."""
    try:
        raters = RaterTokens.from_env()
    except ConfigError as exc:  # the operator's mistake: say so, never a bare 500
        raise ApiError(503, f"review is misconfigured on this service: {exc}") from None
    if not raters.raters:
        raise ApiError(404, f"review is off on this service: set {RATERS_ENV}=name=token,…")
    token = bearer(request.headers.get("authorization"))
    name = raters.rater(token) if token is not None else None
    if name is None:
        raise ApiError(
            401,
            "a rater's token is required: open the page with #token=<token> or send "
            "Authorization: Bearer <token>",
            headers={"WWW-Authenticate": "Bearer"},
        )
    row = (
        await run_in_threadpool(backend.store.get, run_id) if RUN_ID_PATTERN.match(run_id) else None
    )
    if row is None:
        raise ApiError(404, f"no run {run_id}")
    run_dir = sealed(row, backend.config.data)
    folder = backend.config.data.root / "reviews" / run_id
    state = request.app.state
    if not hasattr(state, "review_desks"):  # on the event loop: no other request runs here
        state.review_desks = _Desks()
    try:
        desk = await run_in_threadpool(_desk, state.review_desks, run_dir, folder)
        return ReviewContext(desk, name)
    except ConfigError as exc:
        raise ApiError(409, f"the review of run {run_id} cannot start: {exc}") from None


router = APIRouter(prefix="/v1/runs/{run_id}/review")
router.include_router(review_router(serve_context))
