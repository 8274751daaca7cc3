"""Classification of failures into contract error codes; separate from the retry schedule.

The schedule lives in ``RetryPolicy.delay``; this module only answers "what went wrong and
may it be retried". Keeping the two apart lets providers add their own exception types
without touching the schedule.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import openai

from pytest_legaleval.engine.sanitize import clean_text
from pytest_legaleval.engine.types import TRANSIENT_ERROR_CODES

__all__ = ["ErrorClassification", "ProviderError", "classify_error", "parse_retry_after"]

_MAX_MESSAGE = 300


class ErrorClassification(NamedTuple):
    """What ``classify_error`` decided about one failure."""

    code: str
    """Contract error code (``timeout``, ``rate_limited`` …)."""
    transient: bool
    """Whether another attempt may succeed."""
    retry_after_s: float | None
    """The server's requested wait, if it sent one."""
    status_code: int | None = None
    """HTTP status, when a response arrived."""
    message: str = ""
    """Short, secret-free description."""


class ProviderError(Exception):
    """A failure a provider has already classified (e.g. a ``content_filter`` finish)."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        transient: bool | None = None,
        status_code: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.transient = code in TRANSIENT_ERROR_CODES if transient is None else transient
        self.status_code = status_code
        self.retry_after_s = retry_after_s


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            value = float(raw_ms) / 1000.0
            if not math.isnan(value):  # "nan" parses; it is no wait at all
                return max(value, 0.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        value = float(raw)
        return None if math.isnan(value) else max(value, 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)


def _status_code_to_error(status: int) -> tuple[str, bool]:
    if status == 429:
        return "rate_limited", True
    if status in (502, 503, 504):
        return "service_unavailable", True
    if status >= 500:
        return "internal_error", True
    if status in (401, 403):
        return "auth_error", False
    if status == 404:
        return "not_found", False
    if status == 408:
        return "timeout", True
    return "bad_request", False


def _chain(exc: BaseException) -> list[BaseException]:
    """Return the exception and its causes, innermost last (bounded against cycles)."""
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(out) < 8 and current not in out:
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


def _is_connection_fault(exc: BaseException) -> bool:
    """Tell whether a dropped/reset connection is somewhere in the cause chain.

    The SDK's aiohttp adapter maps every ``aiohttp.ClientConnectionError`` (a reset included)
    to ``ConnectTimeout``, so only the original cause tells a reset from a real timeout.
    """
    for inner in _chain(exc)[1:]:
        if isinstance(inner, asyncio.TimeoutError | TimeoutError):
            return False
        if isinstance(inner, ConnectionError):
            return True
        name = type(inner).__name__
        if name in ("ServerDisconnectedError", "ClientOSError", "ClientConnectorError"):
            return True
    return False


def _is_refused_by_parser(exc: BaseException) -> bool:
    """Whether aiohttp's response parser refused what the server sent.

    Matched by name so that the engine does not import aiohttp before a transport needs it.
    """
    return any(
        cls.__module__.startswith("aiohttp")
        and cls.__name__ in ("ClientResponseError", "HttpProcessingError")
        for cls in type(exc).__mro__
    )


def _short(text: str, scrub: Callable[[str], str] | None = None) -> str:
    # Messages quote server text (an error body): keep them writable as UTF-8 and on one line,
    # and scrub before cutting, so a secret is never left half-cut past the scrubber.
    if scrub is not None:
        text = scrub(text)
    text = " ".join(clean_text(text)[0].replace("\x00", " ").split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def classify_error(
    exc: BaseException, *, scrub: Callable[[str], str] | None = None
) -> ErrorClassification:
    """Map any exception from a provider call to a contract error code.

    Transient (retried): ``timeout``, ``rate_limited`` (429), ``service_unavailable``
    (502/503/504), ``internal_error`` (other 5xx) and ``connection_error`` (also a body cut
    short). Permanent: ``bad_request`` (400/422/other 4xx), ``auth_error`` (401/403),
    ``not_found`` (404), ``content_filter``, ``cancelled`` and ``invalid_response`` (a body
    that is no usable completion: Dataset Contract §3.2 retries transient errors only).

    Args:
        exc: what the provider call raised.
        scrub: applied to the message's text before it is shortened (e.g. removes the key).

    Returns:
        The error code, whether it is transient, and the server's ``Retry-After`` if any.

    """
    if isinstance(exc, ProviderError):
        return ErrorClassification(
            exc.code, exc.transient, exc.retry_after_s, exc.status_code, _short(exc.message, scrub)
        )
    if isinstance(exc, asyncio.CancelledError):
        return ErrorClassification("cancelled", False, None, None, "cancelled")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        code, transient = _status_code_to_error(status)
        body_code = _body_error_code(exc.body)
        if body_code == "content_filter" or body_code == "content_policy_violation":
            code, transient = "content_filter", False
        retry_after = parse_retry_after(exc.response.headers)
        return ErrorClassification(code, transient, retry_after, status, _short(exc.message, scrub))
    if isinstance(exc, openai.APITimeoutError):
        if _is_connection_fault(exc):
            return ErrorClassification("connection_error", True, None, None, "connection lost")
        return ErrorClassification("timeout", True, None, None, "request timed out")
    if isinstance(exc, openai.APIConnectionError):
        detail = type(_chain(exc)[-1]).__name__
        return ErrorClassification("connection_error", True, None, None, f"connection: {detail}")
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return ErrorClassification("timeout", True, None, None, "request timed out")
    if _is_refused_by_parser(exc):
        # The aiohttp transport's own parser refused the response (data after a
        # "Connection: close" body, a bad status line or header): a broken reply, not a
        # broken connection, so it is not retried either.
        return ErrorClassification(
            "invalid_response", False, None, None, _short(f"invalid response: {exc}", scrub)
        )
    if isinstance(exc, openai.APIResponseValidationError | ValueError | RecursionError):
        # Malformed JSON (json.JSONDecodeError is a ValueError; nesting too deep for the
        # parser a RecursionError) or an unexpected shape.
        return ErrorClassification(
            "invalid_response", False, None, None, _short(f"invalid response: {exc}", scrub)
        )
    if isinstance(exc, ConnectionError | OSError):
        return ErrorClassification(
            "connection_error", True, None, None, f"connection: {type(exc).__name__}"
        )
    # Anything else is a bug or an unknown failure: retrying would only repeat it.
    return ErrorClassification(
        "internal_error", False, None, None, _short(f"{type(exc).__name__}: {exc}", scrub)
    )


def _body_error_code(body: Any) -> str | None:
    if not isinstance(body, Mapping):
        return None
    error = body.get("error", body)
    if isinstance(error, Mapping):
        code = error.get("code")
        return str(code) if code is not None else None
    return None
