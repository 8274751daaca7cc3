"""LLM-judge prompts, reply parsing and scoring (pure: no I/O, no engine).

Three kinds of judgment:

* ``reference`` — one call: the answer against the reference answer(s) and the context;
  reply ``{"score": 0..1, "verdict": …, "rationale": …}`` (or LBR's ``{"score", "pass",
  "rationale", "criteria"}``; the judge's own ``pass`` is not used).
* ``rubric`` — one call per criterion: ``{"met": bool, "rationale": …}`` (or ``{"result":
  0|1, "reason": …}``, LBR's ``{"grade": 0|1, "reasoning": …, "criterion_id": …}``,
  PRBench's ``{"explanation": …, "criteria_met": bool}``; ``criterion_grade`` reads them
  all). The item's score follows the policy's ``scoring`` (``grading._scoring``: ``minmax``
  or ``clipped``); ``rubric_score`` here is the ``clipped`` rule.
* ``criteria`` — one call rating every required criterion on the policy's integer scale:
  ``{"ratings": [{"criterion", "rating", "rationale"}]}``; score = mean of
  ``(rating − min) / (max − min)``.

A reply is parsed tolerantly (reasoning tags removed, code fences, the first balanced JSON
object) and then validated against the kind's JSON Schema; any failure gives an error text
that the caller sends back to the judge (a re-ask) and finally reports as ``judge_error``.
Only standard JSON counts: a ``NaN``, ``Infinity`` or ``1e999`` anywhere in the object is
such a failure, never a score.
A reply cut off by the token limit is an error as well. Nothing here ever turns a failure
into a score.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from string import Template
from typing import Any

from pytest_legaleval.errors import InvalidValue, NonFiniteNumber
from pytest_legaleval.grading._judge_schemas import (
    RATIONALE_MAX,
    criterion_grade,
    mcq_answer_schema,
    output_schema,
    with_met,
)
from pytest_legaleval.grading._policies import Policy
from pytest_legaleval.grading._prompts import NONE
from pytest_legaleval.grading._scoring import clipped_score, round_to_step
from pytest_legaleval.grading._text import split_reasoning, strip_reasoning
from pytest_legaleval.records import Criterion, Record
from pytest_legaleval.util import strict_json

__all__ = [
    "RATIONALE_MAX",
    "JudgeTask",
    "ParsedReply",
    "build_tasks",
    "criteria_ratings",
    "criteria_score",
    "criterion_grade",
    "judge_kind",
    "judge_template_sha256",
    "mcq_answer_schema",
    "output_schema",
    "parse_reply",
    "round_to_step",
    "rubric_score",
    "semantic_problem",
    "strip_reasoning",
]

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def judge_kind(record: Record) -> str | None:
    """``reference``, ``rubric`` or ``criteria`` for judged records; ``None`` for MCQ."""
    return {"reference_qa": "reference", "rubric_qa": "rubric", "criteria": "criteria"}.get(
        record.task_type
    )


def _system_prompt(policy: Policy, kind: str) -> str | None:
    judge = policy.judge
    return {
        "reference": judge.reference_system_prompt,
        "rubric": judge.criterion_system_prompt,
        "criterion": judge.criterion_system_prompt,
        "criteria": judge.criteria_system_prompt,
    }[kind]


def judge_template_sha256(policy: Policy, kind: str) -> str:
    """sha256 of the template text, output schema and system prompt used for ``kind``.

    A policy without its own judge system prompt hashes as before system prompts could be
    set, so the judge calls cached under it stay valid.
    """
    judge = policy.judge
    template = {
        "reference": judge.reference_template,
        "rubric": judge.criterion_template,
        "criteria": judge.criteria_template,
    }[kind]
    schema = output_schema("criterion" if kind == "rubric" else kind, policy)
    parts: list[Any] = [template, schema, judge.reference_step]
    system = _system_prompt(policy, kind)
    if system is not None:
        parts.append(system)
    payload = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class JudgeTask:
    """One judge question about one item."""

    key: str
    """``answer`` (reference/criteria) or the criterion id (rubric)."""
    kind: str
    """``reference``, ``criterion`` or ``criteria`` (the reply shape)."""
    prompt: str
    """The judge's user turn."""
    schema: Mapping[str, Any]
    criterion: Criterion | None = None
    system: str | None = None
    """The policy's judge system prompt for this kind; ``None``: the panel's own."""


def _question(record: Record) -> str:
    turns = [m for m in record.messages if m.role != "system"]
    if turns and turns[-1].role == "user" and turns[-1].content == record.prompt:
        turns = turns[:-1]
    lines = [f"[{m.role}] {m.content}" for m in turns]
    if record.choices:
        options = "\n".join(f"{c.id}) {c.text}" for c in record.choices)
        prompt = f"{record.prompt}\n{options}"
    else:
        prompt = record.prompt
    return "\n\n".join([*lines, f"[user] {prompt}"]) if lines else prompt


def _conversation(record: Record, answer: str) -> str:
    """``role: text`` lines of every user/assistant turn, the prompt and the answer."""
    turns = [(m.role, m.content) for m in record.messages if m.role != "system"]
    if not (turns and turns[-1] == ("user", record.prompt)):
        turns.append(("user", record.prompt))
    turns.append(("assistant", answer))
    return "\n".join(f"{role}: {text}" for role, text in turns)


def _references(record: Record) -> str:
    refs = record.reference_answers
    if not refs:
        return NONE
    if len(refs) == 1:
        return refs[0]
    return "\n\n".join(f"({i}) {ref}" for i, ref in enumerate(refs, 1))


def build_tasks(record: Record, answer: str, policy: Policy) -> list[JudgeTask]:
    """Every judge question needed to grade ``answer`` to ``record`` under ``policy``."""
    kind = judge_kind(record)
    if kind is None:
        return []
    judge = policy.judge
    if judge.strip_reasoning:
        # Only an answer with reasoning blocks is rewritten: any other reaches the judge as
        # the model gave it (trailing blank lines included, as LBR's judge saw it).
        kept, found = split_reasoning(answer)
        answer = kept.strip() if found else answer
    answer = answer if answer.strip() else judge.empty_answer
    fields = {
        "question": _question(record),
        "context": record.context or NONE,
        "references": _references(record),
        "reference_lines": "\n".join(record.reference_answers) or NONE,
        "answer": answer,
        "conversation": _conversation(record, answer),
        "scale_min": str(judge.scale_min),
        "scale_max": str(judge.scale_max),
        "choices": "\n".join(f"{c.id}) {c.text}" for c in record.choices) or NONE,
        "pass_threshold": f"{policy.pass_threshold:.3f}",
        "criterion_id": "",
        "criterion_id_json": "",
        "criterion_weight": "",
        "criterion_title": "",
        "criterion_description": "",
        "criteria": "",
    }
    system = _system_prompt(policy, kind)
    if kind == "reference":
        prompt = Template(judge.reference_template).substitute(fields)
        schema = output_schema("reference", policy)
        return [JudgeTask("answer", "reference", prompt, schema, system=system)]
    if kind == "criteria":
        fields["criteria"] = "\n".join(f"- {name}" for name in record.required_criteria)
        prompt = Template(judge.criteria_template).substitute(fields)
        schema = output_schema("criteria", policy)
        return [JudgeTask("answer", "criteria", prompt, schema, system=system)]
    tasks = []
    schema = output_schema("criterion", policy)
    for criterion in record.rubric:
        fields["criterion_id"] = criterion.id
        fields["criterion_id_json"] = json.dumps(criterion.id)
        fields["criterion_weight"] = str(float(criterion.weight))
        fields["criterion_title"] = criterion.title
        fields["criterion_description"] = criterion.description or ""
        prompt = Template(judge.criterion_template).substitute(fields)
        tasks.append(JudgeTask(criterion.id, "criterion", prompt, schema, criterion, system))
    return tasks


@dataclass(frozen=True, slots=True)
class ParsedReply:
    """A judge reply: the validated object, or the reason it is unusable."""

    value: dict[str, Any] | None
    error: str | None


def _json_candidates(text: str) -> list[str]:
    out = [text]
    out.extend(match.group(1) for match in _FENCE.finditer(text))
    start = text.find("{")
    while start != -1:
        depth, in_string, escaped = 0, False, False
        for i in range(start, len(text)):
            ch = text[i]
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    out.append(text[start : i + 1])
                    break
        start = text.find("{", start + 1)
    return out


def parse_reply(
    text: str, schema: Mapping[str, Any], *, finish_reason: str | None = None
) -> ParsedReply:
    """Parse and validate a judge reply; ``error`` explains a failure in one line."""
    if finish_reason == "length":
        return ParsedReply(None, "the reply was cut off at the token limit")
    cleaned = strip_reasoning(text)
    if not cleaned:
        return ParsedReply(None, "the reply is empty")
    # Imported here: a run without a judge never needs jsonschema (slow to import).
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(schema)
    first_problem: str | None = None
    for candidate in _json_candidates(cleaned):
        try:
            # Strict: Python's json reads NaN, Infinity and 1e999 (as inf), and a schema's
            # bounds do not catch NaN (every comparison with it is false).
            value = strict_json.loads(candidate)
        except NonFiniteNumber as exc:
            first_problem = first_problem or f"the reply is not standard JSON: {exc}"
            continue
        except (ValueError, RecursionError):
            continue
        if not isinstance(value, dict):
            continue
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if not errors:
            return ParsedReply(with_met(value), None)
        if first_problem is None:
            where = "/".join(str(p) for p in errors[0].absolute_path) or "the object"
            first_problem = (
                f"the JSON object does not match the required shape at {where}: {errors[0].message}"
            )
    return ParsedReply(None, first_problem or "no JSON object found in the reply")


def rubric_score(results: Sequence[tuple[float, float]]) -> float:
    """Weighted rubric score from ``(weight, met)`` pairs under the ``clipped`` rule.

    ``met`` is in [0, 1] (a share of judges); see ``grading._scoring`` for both rules.
    """
    return clipped_score(results)


def criteria_score(ratings: Sequence[int | float], low: int, high: int) -> float:
    """Mean rating normalized to [0, 1]."""
    if not ratings:
        raise InvalidValue("criteria_score needs at least one rating")
    return sum((r - low) / (high - low) for r in ratings) / len(ratings)


def _name_key(text: str) -> str:
    return " ".join(text.casefold().replace("_", " ").split())


def semantic_problem(task: JudgeTask, value: Mapping[str, Any], record: Record) -> str | None:
    """What a schema-valid reply still gets wrong (criteria: every criterion rated once)."""
    if task.kind != "criteria":
        return None
    wanted = {_name_key(name): name for name in record.required_criteria}
    seen: dict[str, int] = {}
    for item in value["ratings"]:
        key = _name_key(str(item["criterion"]))
        if key not in wanted:
            return f"criterion {item['criterion']!r} was not asked for; rate exactly: " + ", ".join(
                record.required_criteria
            )
        seen[key] = seen.get(key, 0) + 1
    missing = [name for key, name in wanted.items() if key not in seen]
    if missing:
        return f"no rating for {', '.join(missing)}"
    doubled = [wanted[key] for key, count in seen.items() if count > 1]
    if doubled:
        return f"more than one rating for {', '.join(doubled)}"
    return None


def criteria_ratings(value: Mapping[str, Any], record: Record) -> list[dict[str, Any]]:
    """The ratings of a validated criteria reply, in the record's criterion order."""
    by_key = {_name_key(str(item["criterion"])): item for item in value["ratings"]}
    out = []
    for name in record.required_criteria:
        item = by_key[_name_key(name)]
        out.append(
            {"id": name, "rating": item["rating"], "rationale": str(item.get("rationale", ""))}
        )
    return out
