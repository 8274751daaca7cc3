"""The graders of the judged official protocols: ``prbench_official`` and ``apex_official``.

Each criterion is asked of every judge model of the session as the upstream code asks it —
one user message, no system prompt, no JSON schema — through the engine (its cache,
retries with ``--retry-delays`` / ``--max-attempts``, rate limits and attempt log). The
replies are read by the upstream readers (:mod:`.prbench`, :mod:`.apex`). PRBench asks once
per criterion; APEX asks an unreadable reply again (the same message, a call of its own),
up to the panel's re-asks, as its grader retries a criterion it could not read.

Two accountings come out of the same replies and are never mixed:

- ``details.official``: the official verdicts, where a failed call or an unreadable reply
  is *not met* (a positive not earned, a penalty not incurred), the task score computed
  from them (PRBench Σ w·met / Σ w⁺, APEX percent met), and ``judge_failed_unmet``, how many
  criteria that rule scored unmet because the judge failed. :mod:`.prbench_protocol` and
  :mod:`.apex_protocol` build the figures from it.
- ours (DESIGN §7): an item with a criterion the judge failed on is a ``judge_error`` (no
  score, no pass or fail); the others pass when their official score reaches the policy's
  threshold, and their ``score`` is the official task score (PRBench's can be negative).

With several judge models the official score is the mean of their task scores (upstream
has one judge). :func:`replayed_grade` scores recorded per-criterion verdicts
(``--judgments``) the same way, without a call.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_legaleval.engine import Attempt, GenerationParams, GenerationRequest
from pytest_legaleval.grading._base import Grade, GradeRequest
from pytest_legaleval.grading.official import apex as ax
from pytest_legaleval.grading.official import prbench as pr
from pytest_legaleval.records import JudgeSummary, JudgeVerdict, Outcome, Record

__all__ = [
    "APEX_JUDGE_SHA256",
    "JUDGED_PROTOCOLS",
    "PRBENCH_JUDGE_SHA256",
    "ApexOfficialGrader",
    "PrbenchOfficialGrader",
    "Reading",
    "official_skip",
    "replayed_grade",
]

PRBENCH_JUDGE_SHA256 = hashlib.sha256(pr.GRADER_TEMPLATE.encode()).hexdigest()
APEX_JUDGE_SHA256 = hashlib.sha256(ax.GRADING_PROMPT.encode()).hexdigest()
JUDGED_PROTOCOLS = (pr.PROTOCOL, ax.PROTOCOL)
"""The policy ids these graders grade (a verdict file replays them too)."""

_ATTEMPT_FIELDS = tuple(f.name for f in dataclasses.fields(Attempt))


@dataclass(frozen=True, slots=True)
class Reading:
    """One criterion's reply as the official reader read it."""

    met: bool
    """The official verdict."""
    failed: str | None = None
    """Why the judge gave no verdict (a failed call, an unreadable reply), else ``None``."""
    rationale: str = ""
    raw: str | None = None


@dataclass(slots=True)
class _Asked:
    reading: Reading = field(default_factory=lambda: Reading(False, "not asked"))
    cancelled: bool = False
    calls: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float = 0.0
    cached: bool = True
    attempts: list[dict[str, Any]] = field(default_factory=list)
    reply: str | None = None


def _add(total: int | None, value: int | None) -> int | None:
    return total if value is None else (total or 0) + value


async def _ask(
    request: GradeRequest, model: str, key: str, prompt: str, sha: str, rereads: int
) -> _Asked:
    """Ask one criterion of one judge; ask again (``rereads`` times) while unreadable."""
    panel = request.judges
    assert panel is not None
    params = GenerationParams(temperature=panel.temperature, max_new_tokens=panel.max_tokens)
    asked = _Asked()
    read = pr.criteria_met if sha == PRBENCH_JUDGE_SHA256 else ax.criterion_verdict
    for sample in range(1 + rereads):
        result = await panel.engine.agenerate(
            GenerationRequest(
                model=model,
                messages=({"role": "user", "content": prompt},),
                params=params,
                template_version=f"judge:{sha[:16]}",
                purpose="judge",
                sample=sample,
            )
        )
        asked.calls += 1
        asked.reply = result.text
        asked.cached = asked.cached and result.cached
        asked.input_tokens = _add(asked.input_tokens, result.input_tokens)
        asked.output_tokens = _add(asked.output_tokens, result.output_tokens)
        asked.latency_ms += result.latency_ms or 0.0
        asked.attempts.extend(
            {
                "judge_question": key,
                "judge_call": asked.calls,
                **{name: getattr(attempt, name) for name in _ATTEMPT_FIELDS},
            }
            for attempt in result.attempts
        )
        if not result.ok or result.text is None:
            asked.cancelled = result.error_code == "cancelled"
            why = f"judge call failed ({result.error_code}): {result.error_message}".rstrip(": ")
            asked.reading = Reading(False, why)
            return asked
        verdict = read(result.text)
        if verdict.readable:
            asked.reading = Reading(verdict.met, None, result.text)
            return asked
        asked.reading = Reading(False, f"unreadable reply: {verdict.problem}", raw=result.text)
    return asked


def _criteria_rows(record: Record, readings: Sequence[Sequence[Reading]]) -> list[dict[str, Any]]:
    """Per criterion, in the panel's form (``verdict_rows`` reads it back on replay)."""
    rows = []
    for index, criterion in enumerate(record.rubric):
        column = [judge[index] for judge in readings]
        failed = [r.failed for r in column if r.failed]
        row: dict[str, Any] = {
            "id": criterion.id,
            "title": criterion.title,
            "weight": criterion.weight,
            "met": None if failed else sum(1.0 for r in column if r.met) / len(column),
            "official_met": [r.met for r in column],
            "rationale": " | ".join(r.rationale for r in column if r.rationale),
        }
        if failed:
            row["error"] = "; ".join(failed)
        rows.append(row)
    return rows


def _splits(record: Record) -> list[str]:
    splits = record.metadata.get("splits")
    if isinstance(splits, list) and all(isinstance(s, str) for s in splits) and splits:
        return list(splits)
    fields = record.metadata.get("field")
    return [fields.strip().lower()] if isinstance(fields, str) and fields.strip() else []


def _score(record: Record, benchmark: str, met: Sequence[bool]) -> dict[str, Any]:
    """One judge's official task figures."""
    if benchmark == "prbench":
        score = pr.task_score([c.weight for c in record.rubric], met)
        return {"score": score.clipped, "points": score.points, "normalized": score.normalized}
    percent = ax.task_percent(met)
    return {"score": percent / 100, "percent": percent}


def _base(record: Record, benchmark: str) -> dict[str, Any]:
    module = pr if benchmark == "prbench" else ax
    base: dict[str, Any] = {
        "benchmark": benchmark,
        "protocol": module.PROTOCOL,
        "protocol_version": module.PROTOCOL_VERSION,
        "published_judge": module.PUBLISHED_JUDGE,
        "task": str(record.metadata.get("source_id") or record.id),
        # The record's place in its file: upstream averages tasks in file order, and a
        # float sum depends on its order.
        "order": record.source.index,
    }
    if benchmark == "prbench":
        base["splits"] = _splits(record)
        positions = record.metadata.get("split_positions")
        if isinstance(positions, Mapping):
            base["positions"] = {
                str(k): v
                for k, v in positions.items()
                if isinstance(v, int) and not isinstance(v, bool)
            }
    else:
        domain = record.metadata.get("domain")
        base["domain"] = domain if isinstance(domain, str) else ""
    return base


def official_grade(
    request: GradeRequest,
    benchmark: str,
    judges: Sequence[str],
    readings: Sequence[Sequence[Reading]],
    *,
    grader: str,
    extra: Mapping[str, Any] | None = None,
    summary: JudgeSummary | None = None,
    exchanges: tuple[Mapping[str, Any], ...] = (),
) -> Grade:
    """The grade of one item from its per-judge, per-criterion readings."""
    record, policy = request.record, request.policy
    details: dict[str, Any] = {**(extra or {}), "threshold": policy.pass_threshold}
    details["criteria"] = _criteria_rows(record, readings)
    official = _base(record, benchmark)
    failed = sum(1 for judge in readings for r in judge if r.failed)
    official.update(judge_models=list(judges), judge_failed_unmet=failed, skipped=False)
    try:
        per_judge = [_score(record, benchmark, [r.met for r in judge]) for judge in readings]
    except pr.PrbenchScoringError as exc:
        details["official"] = {**official, "score": None}
        return Grade("error", None, None, "no_official_metric", str(exc), grader, details, summary,
                     exchanges)  # fmt: skip
    score = sum(p["score"] for p in per_judge) / len(per_judge)
    official.update(per_judge=per_judge, score=score)
    for key in ("percent", "normalized", "points"):  # one judge: its own value, unchanged
        if all(p.get(key) is not None for p in per_judge):
            official[key] = sum(p[key] for p in per_judge) / len(per_judge)
    details["official"] = official
    name = "PRBench" if benchmark == "prbench" else "APEX"
    shown = f"{score:.4f}" if benchmark == "prbench" else f"{score * 100:.2f}%"
    if failed:
        why = (
            f"the judge gave no verdict on {failed} criterion answer(s) — official {name} "
            f"score {shown} counts them not met; ours is a judge_error"
        )
        return Grade("error", None, None, "judge_error", why, grader, details, summary, exchanges)
    threshold = policy.pass_threshold
    passed = score >= threshold
    why = f"{name} official score {shown} {'>=' if passed else '<'} threshold {threshold:g}"
    reason = "correct" if passed else "below_threshold"
    outcome: Outcome = "passed" if passed else "failed"
    return Grade(outcome, passed, score, reason, why, grader, details, summary, exchanges)


def skipped_grade(request: GradeRequest, grader: str) -> Grade:
    """An APEX answer upstream does not grade (empty, blank, ``error:``): the task is left out."""
    details = {"official": {**_base(request.record, "apex"), "skipped": True, "score": None}}
    why = "APEX leaves out a task whose answer is empty, blank or starts with 'error:'"
    return Grade("skipped", None, None, "official_skip", why, grader, details)


def _verdict(
    model: str, record: Record, asked: Sequence[_Asked], score: float | None
) -> JudgeVerdict:
    criteria = tuple(
        {
            "id": c.id,
            "met": a.reading.met,
            "rationale": a.reading.rationale,
            **({"error": a.reading.failed, "raw": a.reading.raw} if a.reading.failed else {}),
        }
        for c, a in zip(record.rubric, asked, strict=True)
    )
    failed = [a.reading.failed for a in asked if a.reading.failed]
    return JudgeVerdict(
        model,
        None if failed else score,
        criteria=criteria,
        error="; ".join(failed) or None,
        calls=sum(a.calls for a in asked),
        input_tokens=sum(a.input_tokens or 0 for a in asked),
        output_tokens=sum(a.output_tokens or 0 for a in asked),
        latency_ms=sum(a.latency_ms for a in asked),
        cached=all(a.cached for a in asked),
        attempts=tuple(x for a in asked for x in a.attempts),
    )


async def _judge_all(
    request: GradeRequest, benchmark: str, prompts: Sequence[str], rereads: int, grader: str
) -> Grade:
    panel = request.judges
    assert panel is not None
    record = request.record
    sha = PRBENCH_JUDGE_SHA256 if benchmark == "prbench" else APEX_JUDGE_SHA256
    keys = [c.id for c in record.rubric]
    asked = await asyncio.gather(
        *(
            _ask(request, model, key, prompt, sha, rereads)
            for model in panel.models
            for key, prompt in zip(keys, prompts, strict=True)
        )
    )
    n = len(prompts)
    per_model = [asked[i * n : (i + 1) * n] for i in range(len(panel.models))]
    readings = [[a.reading for a in judge] for judge in per_model]
    exchanges = tuple(
        {
            "model": model,
            "criterion_id": key,
            "messages": [{"role": "user", "content": prompt}],
            "reply": a.reply,
        }
        for model, judge in zip(panel.models, per_model, strict=True)
        for key, prompt, a in zip(keys, prompts, judge, strict=True)
    )
    grade = official_grade(request, benchmark, panel.models, readings, grader=grader)
    per_judge = grade.details.get("official", {}).get("per_judge") or [{}] * len(per_model)
    verdicts = tuple(
        _verdict(model, record, judge, scores.get("score"))
        for model, judge, scores in zip(panel.models, per_model, per_judge, strict=True)
    )
    summary = JudgeSummary(
        models=panel.models,
        params={
            "temperature": panel.temperature,
            "max_tokens": panel.max_tokens,
            "reasks": rereads,
            "structured_output": {model: "none" for model in panel.models},
        },
        template_sha256=sha,
        kind="rubric",
        score=grade.score,
        verdicts=verdicts,
    )
    if any(a.cancelled for a in asked):
        # An interrupted judging is no verdict at all, not a judge failure: upstream would
        # have finished asking, so the item is in no official figure.
        official = {**grade.details.get("official", {}), "score": None, "percent": None}
        details = {**grade.details, "official": official}
        why = "the run was cancelled while the judge was being asked"
        return Grade("error", None, None, "cancelled", why, grader, details, summary, exchanges)
    return dataclasses.replace(grade, judge=summary, exchanges=exchanges)


def _no_judge(request: GradeRequest, grader: str) -> Grade:
    from pytest_legaleval.grading._graders import needs_judge_grade

    return dataclasses.replace(needs_judge_grade(request.record), grader=grader)


def _messages(record: Record) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in record.messages] or [
        {"role": "user", "content": record.prompt}
    ]


def apex_criteria(record: Record) -> list[Mapping[str, Any]]:
    """Each criterion as APEX's grader sees it: the task's ``Rubric JSON`` entry."""
    raw = record.metadata.get("rubric_json")
    if raw is not None:
        try:
            found = [value for _, value in ax.rubric_criteria(raw)]
        except ax.ApexReplyError:
            found = []
        if len(found) == len(record.rubric):
            return found
    return [{"description": c.title} for c in record.rubric]


class PrbenchOfficialGrader:
    """PRBench's grader: ``GRADER_TEMPLATE`` per criterion on the whole conversation."""

    name = "prbench_official"
    needs_judge = True

    async def grade(self, request: GradeRequest) -> Grade:
        """Ask every criterion; score the task as ``evals.py`` does."""
        grader = "judge:rubric"
        if request.judges is None:
            return _no_judge(request, grader)
        conversation = pr.judge_conversation(_messages(request.record), request.answer)
        prompts = [pr.judge_prompt(conversation, c.title) for c in request.record.rubric]
        return await _judge_all(request, "prbench", prompts, 0, grader)


class ApexOfficialGrader:
    """APEX's grader: ``grading_prompt.txt`` per criterion on the answer alone."""

    name = "apex_official"
    needs_judge = True

    async def grade(self, request: GradeRequest) -> Grade:
        """Skip what upstream skips; else ask every criterion and score percent met."""
        grader = "judge:rubric"
        if ax.answer_skipped(request.answer):
            return skipped_grade(request, grader)
        if request.judges is None:
            return _no_judge(request, grader)
        criteria = apex_criteria(request.record)
        prompts = [ax.judge_prompt(c, request.answer) for c in criteria]
        return await _judge_all(request, "apex", prompts, request.judges.reasks, grader)


def official_skip(request: GradeRequest) -> Grade | None:
    """The skip of an answer the protocol leaves out ungraded, else ``None``."""
    if request.policy.id == ax.PROTOCOL and ax.answer_skipped(request.answer):
        return skipped_grade(request, "judge:rubric")
    return None


def replayed_grade(
    request: GradeRequest, grades: Sequence[float | None], errors: Sequence[str | None],
    extra: Mapping[str, Any],
) -> Grade:  # fmt: skip
    """The official grade of recorded per-criterion verdicts (in the record's order).

    A recorded grade of 1 is met, 0 not met; a missing one (a failed or unusable verdict)
    is not met officially and a judge error in our accounting, as when judged live.
    """
    policy_id = request.policy.id
    benchmark = "prbench" if policy_id == pr.PROTOCOL else "apex"
    grader = "judge:rubric"
    if benchmark == "apex" and ax.answer_skipped(request.answer):
        return skipped_grade(request, grader)
    readings = [
        Reading(False, error or "no verdict recorded") if grade is None else Reading(grade >= 0.5)
        for grade, error in zip(grades, errors, strict=True)
    ]
    return official_grade(request, benchmark, ["replayed"], [readings], grader=grader, extra=extra)
