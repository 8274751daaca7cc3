"""One exception tree for pytest-legaleval.

User-facing errors also inherit the matching builtin, so callers that only know
``ValueError`` still catch them.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "ConfigError",
    "DatasetRejected",
    "LegalEvalError",
    "ResponsesError",
]


class LegalEvalError(Exception):
    """Base class of every error raised by pytest-legaleval."""


class ConfigError(LegalEvalError, ValueError):
    """An impossible or malformed configuration; the message names the fix."""


class ResponsesError(LegalEvalError, ValueError):
    """A responses file that cannot be read at all (a bad row is reported per record)."""


class DatasetRejected(LegalEvalError, ValueError):
    """A dataset-level failure of the Dataset Contract (HTTP 400 or 413; no run is created).

    Attributes:
        status: the HTTP status the contract assigns (400 or 413).
        code: ``invalid_request`` or ``payload_too_large``.
        message: human-readable reason.
        details: extra JSON-safe details for the envelope.

    """

    def __init__(
        self,
        message: str,
        *,
        code: str = "invalid_request",
        status: int = 400,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = dict(details or {})

    def envelope(self, request_id: str) -> dict[str, Any]:
        """The contract's standard error envelope for this failure."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"error": error, "request_id": request_id}

    def envelope_json(self, request_id: str) -> str:
        """The envelope as indented JSON text."""
        return json.dumps(self.envelope(request_id), indent=2, ensure_ascii=False)
