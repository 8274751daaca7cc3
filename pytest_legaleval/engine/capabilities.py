"""Structured-output capability of an endpoint, found by probing it once per model.

Endpoints differ in how they constrain a reply to JSON: OpenAI and vLLM take
``{"type": "json_schema", …}``; the llama.cpp server refuses that (HTTP 500) but takes
``{"type": "json_object", "schema": {…}}``; others take only a bare ``json_object``; some
take nothing. The probe asks for a tiny JSON reply in each form, best first, with a single
attempt each, and keeps the first form the endpoint accepts. Only a refusal (HTTP 400/422
``bad_request`` or a 500 ``internal_error``) moves on to the next form; any other failure
(timeout, auth, connection) says nothing about capability, so the current form is kept and
the real calls report their own errors.

Whatever the form, replies are still parsed and validated (see ``grading._judge``): a
constrained reply is only more likely to parse, never trusted blindly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pytest_legaleval.engine.types import GenerationParams, GenerationRequest

if TYPE_CHECKING:
    from pytest_legaleval.engine.runner import Engine

__all__ = ["MODES", "StructuredOutput", "structured_params"]

MODES: tuple[str, ...] = ("json_schema", "json_object_schema", "json_object", "none")
"""Structured-output forms, best first."""

_REFUSALS = frozenset({"bad_request", "internal_error"})
_PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}


def structured_params(mode: str, schema: Mapping[str, Any], name: str = "reply") -> dict[str, Any]:
    """``GenerationParams`` fields (``response_format``) that ask for ``schema`` in ``mode``."""
    if mode == "json_schema":
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": dict(schema), "strict": False},
            }
        }
    if mode == "json_object_schema":
        return {"response_format": {"type": "json_object", "schema": dict(schema)}}
    if mode == "json_object":
        return {"response_format": {"type": "json_object"}}
    return {}


class StructuredOutput:
    """Per-model structured-output form of one engine, probed on first use (async-safe)."""

    def __init__(self, engine: Engine, *, template_version: str = "capability-probe-v1") -> None:
        self._engine = engine
        self._template_version = template_version
        self._modes: dict[str, str] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def known(self, model: str) -> str | None:
        """The form found for ``model``, if probed already."""
        return self._modes.get(model)

    async def mode(self, model: str) -> str:
        """The best form ``model``'s endpoint accepts (probing it once)."""
        found = self._modes.get(model)
        if found is not None:
            return found
        lock = self._locks.setdefault(model, asyncio.Lock())
        async with lock:
            found = self._modes.get(model)
            if found is None:
                found = self._modes[model] = await self._probe(model)
        return found

    async def _probe(self, model: str) -> str:
        for mode in MODES[:-1]:
            request = GenerationRequest(
                model=model,
                messages=({"role": "user", "content": 'Reply with the JSON object {"ok": true}.'},),
                params=GenerationParams(
                    temperature=0.0, max_new_tokens=16, **structured_params(mode, _PROBE_SCHEMA)
                ),
                template_version=self._template_version,
                purpose="judge",
                max_attempts=1,
            )
            result = await self._engine.agenerate(request)
            if result.ok or result.error_code not in _REFUSALS:
                return mode
        return "none"
