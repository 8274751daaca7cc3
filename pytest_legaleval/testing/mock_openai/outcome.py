"""What one request gets, in OpenAI's shapes: outcomes, error bodies, request validation."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any, Final, Literal

from pytest_legaleval.testing.mock_openai.config import MockConfig

__all__ = [
    "FAULT_ERRORS",
    "JSON_HEADER",
    "MALFORMED_BODY",
    "Outcome",
    "error_outcome",
    "json_bytes",
    "model_object",
    "validate_request",
]


@dataclasses.dataclass(slots=True)
class Outcome:
    """What to do with one request: respond, hang, reset or send raw bytes, after ``delay``.

    ``raw`` (hostile mode only): ``body`` is the whole response, written verbatim (then
    ``repeat`` over and over, if set, until the client goes away); the connection is closed
    ``hold`` seconds later.
    """

    action: Literal["respond", "hang", "reset", "raw"]
    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0
    hang_seconds: float = 0.0
    counts: bool = False  # a chat completion: in_flight/completed/cancelled track it
    completion: bool = False  # the body is a well-formed chat.completion
    hold: float = 0.0
    repeat: bytes = b""  # raw: written again and again after body, until the client leaves


_ERROR_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    409: "conflict_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}

FAULT_ERRORS: Final = {
    "429": (
        429,
        "Rate limit reached for requests (mock fault).",
        "requests",
        "rate_limit_exceeded",
    ),
    "500": (
        500,
        "The server had an error while processing your request (mock fault).",
        "server_error",
        None,
    ),
    "502": (502, "Bad gateway (mock fault).", "server_error", None),
    "503": (
        503,
        "The engine is currently overloaded, please try again later (mock fault).",
        "server_error",
        "service_unavailable",
    ),
    "400": (
        400,
        "Invalid request (mock permanent fault).",
        "invalid_request_error",
        "mock_bad_request",
    ),
}

MALFORMED_BODY: Final = b'{"id": "chatcmpl-mock", "object": "chat.completion", "choices": [{"ind'
JSON_HEADER: Final = ("Content-Type", "application/json")


def json_bytes(value: object) -> bytes:
    """Compact UTF-8 JSON, as OpenAI sends it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def error_outcome(  # noqa: D103 - the arguments are OpenAI's error fields
    status: int,
    message: str,
    error_type: str | None = None,
    code: str | None = None,
    headers: Iterable[tuple[str, str]] = (),
) -> Outcome:
    if error_type is None:
        error_type = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "api_error")
    body = {"error": {"message": message, "type": error_type, "param": None, "code": code}}
    return Outcome("respond", status, json_bytes(body), (JSON_HEADER, *headers))


def model_object(name: str) -> dict[str, Any]:
    """A ``/v1/models`` entry."""
    return {"id": name, "object": "model", "created": 0, "owned_by": "pytest-legaleval-mock"}


def validate_request(request: object, config: MockConfig) -> Outcome | None:
    """The 400/404 OpenAI would give a chat completion request, or ``None`` if it is valid."""
    if not isinstance(request, dict):
        return error_outcome(400, "The request body must be a JSON object.")
    model = request.get("model")
    if not isinstance(model, str) or not model:
        return error_outcome(
            400, "you must provide a model parameter", code="missing_required_parameter"
        )
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        return error_outcome(400, "'messages' must be a non-empty array.", code="invalid_value")
    if request.get("stream"):
        return error_outcome(
            400, "Streaming is not supported by the mock server.", code="unsupported"
        )
    if config.strict_models and model not in config.models:
        return error_outcome(404, f"The model '{model}' does not exist", code="model_not_found")
    response_format = request.get("response_format")
    if config.response_formats is not None and response_format is not None:
        kind = response_format.get("type") if isinstance(response_format, dict) else None
        if kind not in config.response_formats:
            return error_outcome(
                config.response_format_status,
                f"response_format type {kind!r} is not supported",
                code="invalid_value",
            )
    return None
