"""What one item is, for the counts: its category, failure type, record and warnings.

The vocabulary is ``metrics/_counts.py``'s; :func:`item_facts` works it out once for an item
result (an ``EvalResult``) or a ``predictions.jsonl`` line, which carry the same fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_legaleval.records import PredictionLine

__all__ = [
    "FAILURE_TYPES",
    "ItemFacts",
    "attachment_warnings",
    "failure_type",
    "item_category",
    "item_facts",
    "record_key",
]

FAILURE_TYPES: tuple[str, ...] = (
    "invalid_record",
    "missing_response",
    "generation_error:<code>",
    "timeout",
    "judge_error",
    "latency_exceeded",
    "cancelled",
    "evaluation_error",
)
"""The taxonomy of permanent failures (``failures.jsonl``'s ``failure_type``)."""

_NAMED_FAILURES = frozenset(
    {
        "invalid_record",  # a valid record this machine cannot ask (missing attachment file)
        "missing_response",
        "timeout",
        "judge_error",
        "latency_exceeded",
        "cancelled",
    }
)


def failure_type(result: Mapping[str, Any]) -> str | None:
    """The permanent-failure label of an item result, or ``None`` for a graded outcome.

    A wrong answer is a graded outcome, not a failure. Failures are items that did not get a
    trustworthy verdict: no response, a generation error after the retries, a timeout, a
    judge that could not be parsed, a broken latency budget, a cancelled run.
    """
    reason = str(result.get("reason") or "")
    if reason == "budget":  # --max-cost stopped the call before it was sent
        return "cancelled"
    if reason in _NAMED_FAILURES or reason.startswith("generation_error:"):
        return reason
    if result.get("outcome") == "error":
        return "evaluation_error"
    return None


def item_category(result: Mapping[str, Any]) -> str:
    """The item's category: ``passed``, ``failed``, ``error``, ``skipped`` or ``invalid``.

    Classified from the result's ``outcome`` and ``reason`` (see ``metrics/_counts.py``): a
    permanent failure is an ``error`` (``invalid`` for ``invalid_record``) whatever its
    outcome says — a missing response's outcome is ``failed`` —, a reply with no extractable
    answer stays ``failed``.
    """
    return _category(failure_type(result), result.get("outcome"))


def _category(failure: str | None, outcome: Any) -> str:
    if failure == "invalid_record":
        return "invalid"
    if failure is not None:
        return "error"
    return str(outcome) if outcome in ("passed", "skipped") else "failed"


def record_key(result: Mapping[str, Any]) -> tuple[str, str]:
    """The record of an item result or prediction line: ``(dataset, record_id)``."""
    dataset = result.get("dataset", result.get("dataset_id"))
    return str(dataset), str(result.get("record_id"))


def attachment_warnings(result: Mapping[str, Any]) -> list[str]:
    """The attachment warnings of an item (``details.attachment_warnings``), as text."""
    details = result.get("details")
    found = details.get("attachment_warnings") if isinstance(details, Mapping) else None
    return [str(w) for w in found] if isinstance(found, list) else []


@dataclass(frozen=True, slots=True)
class ItemFacts:
    """What the counts need to know of an item result, worked out once."""

    category: str
    failure: str | None
    key: tuple[str, str]
    warnings: list[str]


def item_facts(result: PredictionLine) -> ItemFacts:
    """The category, failure type, record and attachment warnings of an item's line."""
    failure = failure_type(result)
    category = _category(failure, result.get("outcome"))
    return ItemFacts(category, failure, record_key(result), attachment_warnings(result))
