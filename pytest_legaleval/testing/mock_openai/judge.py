"""Default judge verdicts: the mock answers pytest-legaleval's judge prompts in their shape.

With ``--judge-model openai/mock`` against the mock, every judge question gets a reply its
parser accepts, with no hand-written script: the reply is built from the request's JSON
schema (``response_format``, as the judge panel sends it), else from the reply format the
prompt asks for —

- a reference verdict ``{"score", "verdict", "rationale"}`` (LBR's ``"pass"`` too);
- a rubric criterion in any of its formats: ``{"met", "rationale"}``, PRBench's
  ``{"explanation", "criteria_met"}``, LBR's ``{"grade", "reasoning", "criterion_id"}``
  (the id the prompt names), ``{"result", "reason"}``;
- a criteria rating ``{"ratings": [...]}``, one per criterion the prompt lists, on its scale;
- LEXam's free-text grade ending ``The correctness score: [[0.5]]``;
- the structured-output probe's ``{"ok": true}``.

The verdict is deterministic: a level 0, 1 or 2 from the prompt's SHA-256 decides it
(score 0, 0.5 or 1; not met, met, met; the scale's bottom, middle or top), so a run is
reproducible and holds passes and failures. ``MockConfig.judge_replies = False`` turns it off.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["judge_reply"]

_TAIL = 1500
"""Characters at the end of the last user turn searched for the reply format (the answer
being judged sits above it and must not be mistaken for the instructions)."""

_SHAPES: tuple[tuple[str, dict[str, Any]], ...] = (
    ('"criteria_met"', {"explanation": {"type": "string"}, "criteria_met": {"type": "boolean"}}),
    ('"met"', {"met": {"type": "boolean"}, "rationale": {"type": "string"}}),
    ('"grade"', {"grade": {"enum": [0, 1]}, "reasoning": {"type": "string"},
                 "criterion_id": {"type": "string"}}),
    ('"result"', {"result": {"enum": [0, 1]}, "reason": {"type": "string"}}),
    ('"score"', {"score": {"type": "number", "minimum": 0, "maximum": 1},
                 "verdict": {"enum": ["correct", "partially_correct", "incorrect"]},
                 "rationale": {"type": "string"}}),
)  # fmt: skip
"""Reply formats by the key the prompt's instructions name (most specific first)."""

_SCALE = re.compile(r"from\s+(-?\d+)\b[^\n]*?\bto\s+(-?\d+)\b")
_CRITERION_ID = re.compile(r"criterion_id exactly to\s+(\"(?:[^\"\\]|\\.)*\")")
_LIST_ITEM = re.compile(r"^- (.+)$")


def _texts(messages: object) -> tuple[str, str]:
    """``(instructions, whole)``: system turns and the last user turn's end; all text."""
    if not isinstance(messages, list):
        return "", ""
    system, last_user, whole = [], "", []
    for message in messages:
        if not isinstance(message, Mapping) or not isinstance(message.get("content"), str):
            continue
        whole.append(message["content"])
        if message.get("role") == "system":
            system.append(message["content"])
        elif message.get("role") == "user":
            last_user = message["content"]
    return "\n".join([*system, last_user[-_TAIL:]]), "\n".join(whole)


def _criteria_names(text: str) -> list[str]:
    """The last block of ``- name`` lines before the ratings instruction."""
    before = text[: text.rfind('"ratings"')] if '"ratings"' in text else text
    blocks: list[list[str]] = [[]]
    for line in before.splitlines():
        found = _LIST_ITEM.match(line.strip())
        if found:
            blocks[-1].append(found.group(1).strip())
        elif blocks[-1]:
            blocks.append([])
    named = [block for block in blocks if block]
    return named[-1] if named else []


class _Hints:
    def __init__(self, level: int, instructions: str, whole: str) -> None:
        self.level = level
        self.tag = hashlib.sha256(whole.encode("utf-8")).hexdigest()[:8]
        found = _CRITERION_ID.search(whole)
        self.criterion_id: str | None = None
        if found:
            try:
                self.criterion_id = str(json.loads(found.group(1)))
            except ValueError:
                self.criterion_id = None
        self.criteria = _criteria_names(whole)
        scale = _SCALE.search(instructions) or _SCALE.search(whole)
        self.scale = (int(scale.group(1)), int(scale.group(2))) if scale else (1, 5)


def _pick(values: Sequence[Any], level: int) -> Any:
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return max(values) if level > 0 else min(values)
    return values[round((2 - level) * (len(values) - 1) / 2)]  # best first, worst last


def _instance(schema: Mapping[str, Any], hints: _Hints, name: str = "") -> Any:
    """A value valid under ``schema`` (the subset judge schemas use), decided by the level."""
    level = hints.level
    if schema.get("enum"):
        return _pick(schema["enum"], level)
    kind = schema.get("type")
    if kind == "object":
        out: dict[str, Any] = {}
        for key, sub in (schema.get("properties") or {}).items():
            if key == "criterion_id" and hints.criterion_id is not None:
                out[key] = hints.criterion_id
            elif key == "ratings" and hints.criteria:
                low, high = hints.scale
                out[key] = [
                    {"criterion": criterion, "rating": low + round((high - low) * level / 2),
                     "rationale": f"mock rating {hints.tag}"}
                    for criterion in hints.criteria
                ]  # fmt: skip
            elif isinstance(sub, Mapping):
                out[key] = _instance(sub, hints, key)
        return out
    if kind == "array":
        items = schema.get("items")
        count = max(int(schema.get("minItems", 1)), 1)
        return [_instance(items, hints) for _ in range(count)] if isinstance(items, Mapping) else []
    if kind == "boolean":
        return level > 0
    if kind in ("number", "integer"):
        low = schema.get("minimum", 0)
        high = schema.get("maximum", 1 if kind == "number" else low + 4)
        value = low + (high - low) * level / 2
        return round(value) if kind == "integer" else value
    if kind == "string":
        text = f"mock {name or 'verdict'} {hints.tag}"
        return text[: int(schema.get("maxLength", len(text)))]
    return None


def _schema_of(request: Mapping[str, Any]) -> Mapping[str, Any] | None:
    fmt = request.get("response_format")
    if not isinstance(fmt, Mapping):
        return None
    found = fmt.get("schema")
    inner = fmt.get("json_schema")
    if isinstance(inner, Mapping):
        found = inner.get("schema", found)
    return found if isinstance(found, Mapping) and found.get("type") == "object" else None


def judge_reply(request: Mapping[str, Any]) -> str | None:
    """The default verdict for a judge request, or ``None`` when it is no judge question."""
    instructions, whole = _texts(request.get("messages"))
    level = int(hashlib.sha256(whole.encode("utf-8")).hexdigest()[:8], 16) % 3
    hints = _Hints(level, instructions, whole)
    if '{"ok": true}' in instructions:
        return '{"ok": true}'
    schema = _schema_of(request)
    if schema is not None:
        return json.dumps(_instance(schema, hints), ensure_ascii=False)
    if "[[score]]" in whole and "correctness score" in whole.lower():
        grade = (0.0, 0.5, 1.0)[level]
        return f"Explanation: mock judgment {hints.tag}.\nThe correctness score: [[{grade:.1f}]]"
    if '"ratings"' in instructions and hints.criteria:
        return json.dumps(_instance({"type": "object", "properties": {"ratings": {}}}, hints))
    for key, properties in _SHAPES:
        if key in instructions:
            shape: dict[str, Any] = {"type": "object", "properties": dict(properties)}
            if key == '"score"' and '"pass"' in instructions:
                shape["properties"]["pass"] = {"type": "boolean"}
            return json.dumps(_instance(shape, hints), ensure_ascii=False)
    return None
