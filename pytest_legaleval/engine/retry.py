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
from typing import NamedTuple

from pytest_legaleval.engine.sanitize import clean_text
from pytest_legaleval.engine.types import TRANSIENT_ERROR_CODES
from pytest_legaleval.errors import LegalEvalError

__all__ = [
    "ErrorClassification",
    "ProviderError",
    "classify_error",
    "classify_status",
    "parse_retry_after",
]

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


class ProviderError(LegalEvalError):
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


def classify_status(status: int, body_code: str | None = None) -> tuple[str, bool]:
    """The contract error code of an HTTP error status, and whether it is transient.

    ``body_code`` is the error body's ``error.code``: a content filter's refusal is
    ``content_filter`` whatever the status.
    """
    if body_code in ("content_filter", "content_policy_violation"):
        return "content_filter", False
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


def _named(exc: BaseException, *names: str) -> bool:
    """Whether an aiohttp exception class of one of ``names`` is in ``exc``'s MRO.

    Matched by name so that this module (and an engine that never sends a request) does
    not import aiohttp.
    """
    return any(
        cls.__module__.startswith("aiohttp") and cls.__name__ in names for cls in type(exc).__mro__
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
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return ErrorClassification("timeout", True, None, None, "request timed out")
    if _named(exc, "ClientPayloadError"):
        # The body was cut short (a dropped connection, a lying Content-Length).
        return ErrorClassification("connection_error", True, None, None, "connection lost")
    if _named(exc, "ClientResponseError", "HttpProcessingError"):
        # aiohttp's response parser refused what the server sent (data after a
        # "Connection: close" body, a bad status line or header): a broken reply, not a
        # broken connection, so it is not retried either.
        return ErrorClassification(
            "invalid_response", False, None, None, _short(f"invalid response: {exc}", scrub)
        )
    if _named(exc, "ClientConnectionError"):
        return ErrorClassification(
            "connection_error", True, None, None, f"connection: {type(exc).__name__}"
        )
    if _named(exc, "InvalidURL"):
        return ErrorClassification("bad_request", False, None, None, _short(str(exc), scrub))
    if isinstance(exc, ValueError | RecursionError):
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
