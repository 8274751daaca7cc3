"""LEXam's open-question judge, asked through the engine as LEXam asks it.

Each judge model of the session is asked once (no re-ask: LEXam's script makes one call per
answer) with LEXam's system message and judge prompt (:mod:`~pytest_legaleval.grading.
official.lexam_prompts`), as plain text — no JSON schema, no structured output — with the
panel's temperature and at least LEXam's 4,096 output tokens. The reply is graded by
:func:`~pytest_legaleval.grading.official.lexam.judge_grade`.

Two figures come out of the same replies and are never mixed:

- ``details.official.score``: LEXam's grade (the mean over the judges), where an
  unusable reply counts 0 as LEXam counts it; ``metrics._benchmarks`` averages it × 100.
- our grade: the mean of the judges' values, passing at the policy's threshold; an
  unusable reply makes the item a ``judge_error`` with the raw reply kept (DESIGN §7). A
  failed or cancelled judge call leaves both without a value (LEXam retries until it has
  a reply; there is nothing to grade).

Replays (``--judgments``) re-score the recorded per-judge values like any reference
verdict.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from collections.abc import Mapping
from typing import Any

from pytest_legaleval.engine import Attempt, GenerationParams, GenerationRequest, GenerationResult
from pytest_legaleval.errors import InvalidValue
from pytest_legaleval.grading._base import Grade, GradeRequest
from pytest_legaleval.grading.official import lexam as lx
from pytest_legaleval.grading.official.lexam_prompts import JUDGE_PROMPT, JUDGE_SYSTEM, question_of
from pytest_legaleval.records import JudgeSummary, JudgeVerdict

__all__ = ["LEXAM_JUDGE_SHA256", "judge_open_question"]

LEXAM_JUDGE_SHA256 = hashlib.sha256(f"{JUDGE_SYSTEM}\0{JUDGE_PROMPT}".encode()).hexdigest()
"""Identifies LEXam's judge texts (recorded as the judge template hash)."""

_ATTEMPT_FIELDS = tuple(f.name for f in dataclasses.fields(Attempt))
_GRADER = "judge:reference"


def _verdict(model: str, result: GenerationResult) -> tuple[JudgeVerdict, lx.JudgeGrade | None]:
    common: dict[str, Any] = {
        "calls": 1,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "latency_ms": result.latency_ms,
        "cached": result.cached,
        "attempts": tuple(
            {
                "judge_question": "answer",
                "judge_call": 1,
                **{name: getattr(attempt, name) for name in _ATTEMPT_FIELDS},
            }
            for attempt in result.attempts
        ),
    }
    if result.error_code is not None or result.text is None:
        message = f"judge call failed ({result.error_code}): {result.error_message}".rstrip(": ")
        return JudgeVerdict(model, None, error=message, **common), None
    grade = lx.judge_grade(result.text)
    if grade.problem is not None:
        error = f"unusable LEXam judge reply: {grade.problem}"
        return JudgeVerdict(model, None, error=error, raw=result.text, **common), grade
    return JudgeVerdict(model, grade.value, rationale=result.text, **common), grade


async def judge_open_question(request: GradeRequest, details: Mapping[str, Any]) -> Grade:
    """Grade an open LEXam answer with LEXam's judge (``request.judges`` must be set).

    ``details`` are the judge grader's own (lexical scores); the official facts and the
    threshold are added.
    """
    panel = request.judges
    if panel is None:
        raise InvalidValue("LEXam's judge needs the session's judge panel")
    record = request.record
    course = record.metadata.get("course")
    question = question_of(record.prompt, course if isinstance(course, str) else "")
    reference = record.reference_answers[0] if record.reference_answers else ""
    messages = (
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": lx.judge_prompt(question, reference, request.answer)},
    )
    max_tokens = max(panel.max_tokens, lx.JUDGE_MAX_TOKENS)
    params = GenerationParams(temperature=panel.temperature, max_new_tokens=max_tokens)
    results = await asyncio.gather(
        *(
            panel.engine.agenerate(
                GenerationRequest(
                    model=model,
                    messages=messages,
                    params=params,
                    template_version=f"judge:{LEXAM_JUDGE_SHA256[:16]}",
                    purpose="judge",
                )
            )
            for model in panel.models
        )
    )
    pairs = [_verdict(m, r) for m, r in zip(panel.models, results, strict=True)]
    verdicts = tuple(v for v, _ in pairs)
    grades = [g for _, g in pairs]
    threshold = request.policy.pass_threshold
    unusable = sum(1 for g in grades if g is not None and g.problem is not None)
    official: dict[str, Any] = {
        "benchmark": "lexam",
        "protocol": lx.PROTOCOL,
        "protocol_version": lx.PROTOCOL_VERSION,
        "kind": "open",
        "grades": [None if g is None else g.official for g in grades],
        "unusable_replies": unusable,
        "score": None,
    }
    if all(g is not None for g in grades):
        official["score"] = sum(g.official for g in grades if g is not None) / len(grades)
    values = [v.score for v in verdicts]
    ours = None if any(v is None for v in values) else sum(v or 0.0 for v in values) / len(values)
    summary = JudgeSummary(
        models=panel.models,
        params={
            "temperature": panel.temperature,
            "max_tokens": max_tokens,
            "reasks": 0,
            "structured_output": {model: "none" for model in panel.models},
        },
        template_sha256=LEXAM_JUDGE_SHA256,
        kind="reference",
        score=ours,
        verdicts=verdicts,
    )
    out = {**details, "threshold": threshold, "official": official}
    if any(r.error_code == "cancelled" for r in results):
        why = "the run was cancelled while the judge was being asked"
        return Grade("error", None, None, "cancelled", why, _GRADER, out, summary)
    if ours is None:
        failed = "; ".join(f"{v.model}: {v.error}" for v in verdicts if v.error)
        raw = next((v.raw for v in verdicts if v.raw), None)
        shown = f" (raw reply: {' '.join(raw.split())[:300]!r})" if raw else ""
        explanation = f"the judge gave no usable verdict — {failed}{shown}"
        return Grade("error", None, None, "judge_error", explanation, _GRADER, out, summary)
    passed = ours >= threshold
    relation = ">=" if passed else "<"
    explanation = f"LEXam judge grade {ours:.2f} {relation} threshold {threshold:.2f}"
    reason = "correct" if passed else "below_threshold"
    return Grade(
        "passed" if passed else "failed", passed, ours, reason, explanation, _GRADER, out, summary
    )
