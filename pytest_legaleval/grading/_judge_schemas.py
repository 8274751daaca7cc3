"""The JSON Schemas judge replies (and JSON MCQ answers) must satisfy, and their reading.

Part of ``grading._judge`` (which re-exports the public names). Every criterion reply
format is read the same way by ``criterion_grade``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_legaleval.errors import InvalidValue
from pytest_legaleval.grading._policies import Policy
from pytest_legaleval.records import Record

__all__ = [
    "RATIONALE_MAX",
    "criterion_grade",
    "mcq_answer_schema",
    "output_schema",
    "with_met",
]

RATIONALE_MAX = 1000
"""Longest rationale accepted: with a grammar-constrained endpoint (llama.cpp) the bound is
enforced while generating, so a reply always closes its JSON before the token limit. Keep
it at 1,000 or below: llama.cpp's grammar builder refuses longer bounds (measured: 1,500
fails with "exceeds sane defaults") and its server then dies."""

_REFERENCE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "verdict": {"enum": ["correct", "partially_correct", "incorrect"]},
        "rationale": {"type": "string", "maxLength": RATIONALE_MAX},
    },
    "required": ["score", "rationale"],
}
_MET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "met": {"type": "boolean"},
        "rationale": {"type": "string", "maxLength": RATIONALE_MAX},
    },
    "required": ["met", "rationale"],
}
_RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "result": {"enum": [0, 1]},
        "reason": {"type": "string", "maxLength": RATIONALE_MAX},
    },
    "required": ["result", "reason"],
}
_GRADE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "grade": {"enum": [0, 1]},
        "reasoning": {"type": "string", "maxLength": RATIONALE_MAX},
        "criterion_id": {"type": "string"},
    },
    "required": ["grade", "reasoning"],
}
_CRITERIA_MET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "explanation": {"type": "string", "maxLength": RATIONALE_MAX},
        "criteria_met": {"type": "boolean"},
    },
    "required": ["explanation", "criteria_met"],
}
_SCORE_PASS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "pass": {"type": "boolean"},
        "rationale": {"type": "string", "maxLength": RATIONALE_MAX},
        "criteria": {"type": "object"},
    },
    "required": ["score", "rationale"],
}
_CRITERION_SCHEMAS: dict[str, dict[str, Any]] = {
    "met": _MET_SCHEMA,
    "result": _RESULT_SCHEMA,
    "grade": _GRADE_SCHEMA,
    "criteria_met": _CRITERIA_MET_SCHEMA,
}


def _criteria_schema(low: int, high: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "ratings": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "criterion": {"type": "string"},
                        "rating": {"type": "integer", "minimum": low, "maximum": high},
                        "rationale": {"type": "string", "maxLength": RATIONALE_MAX},
                    },
                    "required": ["criterion", "rating"],
                },
            }
        },
        "required": ["ratings"],
    }


def output_schema(kind: str, policy: Policy) -> dict[str, Any]:
    """The JSON Schema a judge reply of this kind must satisfy."""
    if kind == "reference":
        return (
            _SCORE_PASS_SCHEMA
            if policy.judge.reference_format == "score_pass"
            else (_REFERENCE_SCHEMA)
        )
    if kind == "criterion":
        return _CRITERION_SCHEMAS[policy.judge.criterion_format]
    return _criteria_schema(policy.judge.scale_min, policy.judge.scale_max)


def with_met(value: dict[str, Any]) -> dict[str, Any]:
    """Add the common ``met``/``rationale`` reading to a criterion reply of another format.

    Every criterion format then reads the same way (the judge panel reads ``met``);
    ``criterion_grade`` is the one reading.
    """
    if "met" in value or not any(key in value for key in ("grade", "criteria_met", "result")):
        return value
    grade, rationale = criterion_grade(value)
    return {**value, "met": grade >= 0.5, "rationale": value.get("rationale", rationale)}


def criterion_grade(value: Mapping[str, Any]) -> tuple[float, str]:
    """The grade (0 or 1) and rationale of a validated criterion reply, in any format."""
    for key, why in (
        ("met", "rationale"),
        ("criteria_met", "explanation"),
        ("result", "reason"),
        ("grade", "reasoning"),
    ):
        if key in value:
            flag = value[key]
            grade = 1.0 if (flag is True or (not isinstance(flag, bool) and flag >= 0.5)) else 0.0
            return grade, str(value.get(why, value.get("rationale", "")))
    raise InvalidValue("not a criterion reply: no met, criteria_met, result or grade")


def mcq_answer_schema(record: Record, contract: str = "json") -> dict[str, Any]:
    """The JSON answer contract of an MCQ record.

    ``json``: ``{"answer": [ids of its choices]}``; ``json_single`` (LBR): ``{"answer": one
    id, "reasoning": text}``.
    """
    ids = [choice.id for choice in record.choices]
    if contract == "json_single":
        return {
            "type": "object",
            "properties": {
                "answer": {"enum": ids},
                "reasoning": {"type": "string", "maxLength": RATIONALE_MAX},
            },
            "required": ["answer", "reasoning"],
        }
    return {
        "type": "object",
        "properties": {
            "answer": {
                "type": "array",
                "items": {"enum": ids},
                "minItems": 1,
            }
        },
        "required": ["answer"],
    }
