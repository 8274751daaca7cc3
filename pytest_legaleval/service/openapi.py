"""What ``/openapi.json`` says beyond the routes: the upload body and the service's rules."""

from __future__ import annotations

from typing import Any

from pytest_legaleval.validation.schemas import load_schema

__all__ = ["ARTIFACT_CONTENT", "DESCRIPTION", "upload_body"]

DESCRIPTION = """\
Upload a Dataset Contract v1 document (`POST /v1/runs`, `application/json`, UTF-8, at most
100 MB), or `legal_eval_v1` rows of any task type (`application/x-ndjson`): HTTP 202 queues
a run and lists the `record_errors` of malformed records; HTTP 400 (`invalid_request`) or
413 (`payload_too_large`) rejects the document and creates no run. A run moves through
`queued → validating → running → retrying → finalizing` to `completed`,
`completed_with_failures`, `failed` or `cancelled`, and leaves eight write-once artifacts
(`/v1/runs/{run_id}/artifacts`).

Authentication: `Authorization: Bearer <token>` with a token of the server's
`LEGALEVAL_API_TOKENS`; a service without tokens answers loopback clients only. Every
response carries `X-Request-ID`, and every JSON body its `request_id`. Errors are the
contract's envelope `{"error": {"code", "message", "details"?}, "request_id"}`. A full
queue, or a token with too many runs in flight, is HTTP 429 with `Retry-After`.
"""

ARTIFACT_CONTENT: dict[str, Any] = {
    "application/json": {"schema": {"type": "string", "format": "binary"}},
    "application/x-ndjson": {"schema": {"type": "string", "format": "binary"}},
    "text/plain": {"schema": {"type": "string", "format": "binary"}},
}


def _plain(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k not in ("$schema", "$id")}


def upload_body() -> dict[str, Any]:
    """The ``requestBody`` of ``POST /v1/runs``: the contract's document schema.

    The body is read by the service itself (within the size limit), not by FastAPI, so it
    is described here.
    """
    document = _plain(load_schema("contract_v1_document"))
    document["properties"]["records"]["items"] = _plain(load_schema("contract_v1_record"))
    return {
        "requestBody": {
            "required": True,
            "description": "One Dataset Contract v1 document (UTF-8 JSON, BOM allowed, at "
            "most 100 MB), or legal_eval_v1 rows of any task type, one JSON object per line "
            "(application/x-ndjson, the same limits and answers).",
            "content": {
                "application/json": {"schema": document},
                "application/x-ndjson": {"schema": {"type": "string", "format": "binary"}},
            },
        }
    }
