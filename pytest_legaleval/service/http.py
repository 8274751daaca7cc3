"""HTTP plumbing: the error envelope, request ids, and reading an upload within its limits.

Every error the service answers is the contract's envelope
``{"error": {"code", "message", "details"?}, "request_id"}``: ``invalid_request`` (400) and
``payload_too_large`` (413) as the contract defines them, and for the rest of the API
``unauthorized`` (401), ``forbidden`` (403), ``not_found`` (404), ``method_not_allowed``
(405), ``request_timeout`` (408), ``conflict`` (409), ``gone`` (410), ``rate_limited``
(429), ``internal_error`` (500), ``service_unavailable`` (503) and
``insufficient_storage`` (507).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import LegalEvalError
from pytest_legaleval.service.storage import StorageBusy, StorageError, StorageFull
from pytest_legaleval.validation import contract as limits

__all__ = [
    "DRAIN_LIMIT_BYTES",
    "REQUEST_ID_HEADER",
    "ApiError",
    "RequestIdMiddleware",
    "check_upload_headers",
    "envelope",
    "receive_upload",
    "request_id_of",
    "storage_answer",
]

REQUEST_ID_HEADER = "X-Request-ID"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    409: "conflict",
    410: "gone",
    413: "payload_too_large",
    429: "rate_limited",
    500: "internal_error",
    503: "service_unavailable",
    507: "insufficient_storage",
}
STORAGE_RETRY_AFTER_S = 30
"""``Retry-After`` of an answer that storage (a full disk, a locked table) made fail."""


class ApiError(LegalEvalError):
    """An error answered with the envelope (``code`` defaults to the status's)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code or _CODES.get(status, "invalid_request")
        self.message = message
        self.details = details
        self.headers = headers or {}


def storage_answer(error: StorageError) -> ApiError:
    """The answer to a request that storage made fail: 507 for a full disk, else 503.

    The cause is named; the request left nothing behind, so it can simply be sent again.
    """
    retry = {"Retry-After": str(STORAGE_RETRY_AFTER_S)}
    if isinstance(error, StorageFull):
        return ApiError(
            507,
            f"the service's storage is full ({error}); nothing was kept, try again later",
            details={"cause": str(error)},
            headers=retry,
        )
    if isinstance(error, StorageBusy):
        return ApiError(503, f"the service's run table is busy ({error}); try again", headers=retry)
    return ApiError(
        503,
        f"the service's storage failed ({error}); nothing was kept, try again later",
        details={"cause": str(error)},
        headers=retry,
    )


def envelope(
    code: str, message: str, request_id: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The contract's error envelope."""
    error: dict[str, Any] = {"code": code, "message": message}
    if details:
        error["details"] = details
    return {"error": error, "request_id": request_id}


def request_id_of(scope: Scope) -> str:
    """The request id the middleware gave this request."""
    state = scope.get("state") or {}
    return str(state.get("request_id") or "")


DRAIN_LIMIT_BYTES = 2 * limits.MAX_PAYLOAD_BYTES
"""Unread request body the service still reads (and drops) to deliver an early answer."""
DRAIN_IDLE_S = 5.0
BODY_TIMEOUT_S = 60.0
"""Default seconds a request's whole body may take after its headers (``--body-timeout``)."""
"""A client that pauses this long while its unread body is dropped gets the answer anyway."""


def _has_body(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return True
    return False


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length" and value.strip().isdigit():
            return int(value)
    return None


class RequestIdMiddleware:
    """Gives every request a fresh id (UUID4) and every response its ``X-Request-ID``.

    A client's own ``X-Request-ID`` is not trusted: ids end up in logs and artifacts.

    It also reads and drops what is left of a request body the application answered
    without reading (a 401, 429 or 413 before or during an upload), up to
    :data:`DRAIN_LIMIT_BYTES`, before the answer goes out: Hypercorn stops reading a
    connection whose body nobody reads, and a client that sends its whole body before
    reading the answer (``http.client``, ``requests``, ``legaleval submit``) would see a
    broken pipe or a stall instead of the error envelope.

    It also bounds the time a request's body may take as a whole (``body_timeout``, from
    the end of its headers): a client trickling a byte every few seconds passes every
    per-read timeout, so past the deadline the body is refused with 408 and the connection
    closed, whether or not the request carries a token.
    """

    def __init__(self, app: ASGIApp, *, body_timeout: float = BODY_TIMEOUT_S) -> None:
        self.app = app
        self.body_timeout = body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request with its id."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = str(uuid.uuid4())
        scope.setdefault("state", {})["request_id"] = request_id
        header = (REQUEST_ID_HEADER.lower().encode(), request_id.encode())
        body = _BodyTracker(
            receive,
            pending=_has_body(scope),
            declared=_declared_length(scope),
            deadline=asyncio.get_running_loop().time() + self.body_timeout,
        )

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                await body.drain()
                extra = [header]
                if body.expired:  # the rest of the body will never be read: close
                    extra.append((b"connection", b"close"))
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, body.receive, send_with_id)


class _BodyTracker:
    """Knows whether a request's body has been read to its end, and can drop the rest."""

    def __init__(
        self, receive: Receive, *, pending: bool, declared: int | None, deadline: float
    ) -> None:
        self._receive = receive
        self.pending = pending
        self.declared = declared
        self.received = 0
        self.deadline = deadline
        self.expired = False

    async def receive(self) -> Message:
        if not self.pending:
            message = await self._receive()
        else:
            remaining = self.deadline - asyncio.get_running_loop().time()
            try:
                if remaining <= 0:
                    raise TimeoutError
                message = await asyncio.wait_for(self._receive(), remaining)
            except TimeoutError:
                self.expired = True
                self.pending = False
                raise BodyDeadline() from None
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if not message.get("more_body"):
                self.pending = False
        else:
            self.pending = False
        return message

    async def drain(self) -> None:
        if not self.pending:
            return
        if self.declared is not None and self.declared - self.received > DRAIN_LIMIT_BYTES:
            return  # not worth reading: the connection is closed after the answer
        dropped = 0
        while self.pending and dropped <= DRAIN_LIMIT_BYTES:
            try:
                message = await asyncio.wait_for(self.receive(), DRAIN_IDLE_S)
            except (TimeoutError, BodyDeadline):
                return
            dropped += len(message.get("body", b""))


class BodyDeadline(ApiError):
    """A request body that did not arrive within the deadline (408; the connection closes)."""

    def __init__(self) -> None:
        super().__init__(
            408, "the request body did not arrive in time (--body-timeout); send it again"
        )


def _too_large(received: int) -> ApiError:
    return ApiError(
        413,
        f"payload is over the limit of {limits.MAX_PAYLOAD_BYTES:,} bytes (100 MB): at least "
        f"{received:,} bytes were sent",
        details={"payload_bytes": received, "max_payload_bytes": limits.MAX_PAYLOAD_BYTES},
    )


async def _next(receive: Receive, idle_timeout: float) -> Message:
    try:
        return await asyncio.wait_for(receive(), idle_timeout)
    except TimeoutError:
        raise ApiError(
            408, f"the request body stalled for more than {idle_timeout:g} s; send it again"
        ) from None


async def receive_upload(receive: Receive, target: Path, *, limit: int, idle_timeout: float) -> int:
    """Write the request body to ``target`` as it arrives; return its size.

    Never holds more than one chunk: the size limit is enforced while reading. An oversized
    body is refused (413) as soon as it passes ``limit``; :class:`RequestIdMiddleware` reads
    and drops the rest of it before the answer, so a client still sending sees the answer,
    not a reset.

    Raises:
        ApiError: 413 past ``limit``, 408 when the client stalls for ``idle_timeout``,
            400 when it disconnects.

    """
    received = 0
    with target.open("wb") as handle:
        while True:
            message = await _next(receive, idle_timeout)
            if message["type"] != "http.request":
                raise ApiError(400, "the client disconnected before the body was complete")
            chunk = message.get("body", b"")
            received += len(chunk)
            if received > limit:
                handle.close()
                target.unlink(missing_ok=True)
                raise _too_large(received)
            handle.write(chunk)
            if not message.get("more_body"):
                return received


def check_upload_headers(headers: Mapping[str, str]) -> None:
    """The transport rules of §1.3 that the headers show: JSON, UTF-8, no compression.

    ``headers`` is case-insensitive on lower-case names (Starlette's ``Headers``).

    Raises:
        ApiError: 400 for another type, charset or encoding.
        DatasetRejected: 413 when ``Content-Length`` is over 100 MB (nothing is read).

    """
    media, _, params = headers.get("content-type", "").partition(";")
    if media.strip().lower() != "application/json":
        raise ApiError(400, "Content-Type must be application/json (a Dataset Contract document)")
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip().strip('"').lower() not in (
            "utf-8",
            "utf8",
        ):
            raise ApiError(
                400, f"charset={value.strip()} is not accepted: the payload must be UTF-8"
            )
    encoding = headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise ApiError(400, f"Content-Encoding {encoding} is not accepted: send the JSON as is")
    length = headers.get("content-length")
    if length is not None:
        if not length.strip().isdigit():
            raise ApiError(400, f"Content-Length {length!r} is not a number")
        limits.check_payload_size(int(length))  # 413 before a byte of the body is read
