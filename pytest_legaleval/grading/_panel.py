"""The judge panel: asks every judge model every question of an item, concurrently.

Runs as coroutines on the engine's loop, so judge calls share the engine's cache, retries
and rate limits, and use its ``judge`` pool (their own concurrency): judging one item
overlaps generating the next ones, and the criteria of a rubric are asked all at once.

A reply that does not parse or validate is sent back to the judge with the problem
(``reasks`` times); a reply cut off by the token limit counts as unparseable. A judge that
never gives a usable reply, or whose call fails after the engine's retries, makes the item
a ``judge_error`` (an error outcome with the raw reply kept) — never a wrong answer or 0.
The item's score is the mean over all configured judges; it exists only if every judge
gave one (a score that depends on which judge happened to fail would not be comparable).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_legaleval.engine import Attempt, Engine, GenerationParams, GenerationRequest
from pytest_legaleval.engine.capabilities import StructuredOutput, structured_params
from pytest_legaleval.errors import InvalidValue
from pytest_legaleval.grading._base import Grade
from pytest_legaleval.grading._judge import (
    JudgeTask,
    build_tasks,
    criteria_ratings,
    criteria_score,
    judge_kind,
    judge_template_sha256,
    parse_reply,
    round_to_step,
    semantic_problem,
)
from pytest_legaleval.grading._judge_schemas import criterion_grade
from pytest_legaleval.grading._policies import Policy
from pytest_legaleval.grading._scoring import RubricOutcome, score_rubric
from pytest_legaleval.records import JudgeSummary, JudgeVerdict, Record

__all__ = ["JUDGE_SYSTEM_PROMPT", "JudgeOutcome", "JudgePanel", "judged_grade"]

_ATTEMPT_FIELDS = tuple(f.name for f in dataclasses.fields(Attempt))

JUDGE_SYSTEM_PROMPT = (
    "You are a careful, impartial grader of answers to legal tasks. Grade only what you "
    "are asked, follow the reply format exactly, and reply with the JSON object alone."
)


@dataclass(slots=True)
class _Asked:
    """The outcome of one judge question (after re-asks)."""

    value: dict[str, Any] | None = None
    error: str | None = None
    raw: str | None = None
    cancelled: bool = False
    calls: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    batch_input_tokens: int | None = None
    batch_output_tokens: int | None = None
    latency_ms: float = 0.0
    all_cached: bool = True
    attempts: list[dict[str, Any]] = field(default_factory=list)
    """Every network attempt of every call (re-asks included), for attempt_logs.jsonl."""
    messages: list[dict[str, str]] = field(default_factory=list)
    """The last call's messages (re-asks included), for the transcript."""
    reply: str | None = None
    """The last call's reply text, for the transcript."""


@dataclass(slots=True)
class JudgeOutcome:
    """What judging one item produced."""

    summary: JudgeSummary
    score: float | None
    error: str | None
    """``None``, or why the item is a judge error."""
    cancelled: bool
    criteria: list[dict[str, Any]] = field(default_factory=list)
    """Rubric: per criterion ``id``, ``title``, ``weight``, ``met`` (the judges' mean grade,
    ``None`` where a verdict failed, then with ``error``), ``rationale`` — kept also when the
    item is a judge error. Criteria records: ``id``, ``rating`` (mean), ``score``,
    ``rationale``."""
    rationale: str = ""
    rubric: RubricOutcome | None = None
    """Rubric items: the share of the rubric the score covers, under the policy's scoring."""
    exchanges: tuple[dict[str, Any], ...] = ()
    """Per judge question: ``model``, ``criterion_id``, ``messages`` and ``reply``."""


def _add(total: int | None, value: int | None) -> int | None:
    if value is None:
        return total
    return (total or 0) + value


class JudgePanel:
    """Every judge model of the session, with its parameters."""

    def __init__(
        self,
        engine: Engine,
        models: Sequence[str],
        *,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        reasks: int = 2,
        judge_epochs: int = 1,
    ) -> None:
        self.engine = engine
        self.models = tuple(models)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.reasks = reasks
        self.judge_epochs = max(1, judge_epochs)
        """Judgings of each answer (``--judge-epochs``): the first grades it; the others,
        each a call of its own (its own cache key), measure how often the verdict flips."""
        self.structured = StructuredOutput(engine)

    def params(self) -> dict[str, Any]:
        """The judge parameters recorded with every judged result."""
        modes = {m: self.structured.known(m) for m in self.models}
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "reasks": self.reasks,
            "structured_output": modes,
        }

    async def _ask(
        self, model: str, task: JudgeTask, template_sha: str, record: Record, sample: int = 0
    ) -> _Asked:
        mode = await self.structured.mode(model)
        params = GenerationParams(
            temperature=self.temperature,
            max_new_tokens=self.max_tokens,
            **structured_params(mode, task.schema),
        )
        messages: list[dict[str, str]] = [
            {"role": "system", "content": task.system or JUDGE_SYSTEM_PROMPT},
            {"role": "user", "content": task.prompt},
        ]
        asked = _Asked()
        for _ in range(1 + self.reasks):
            request = GenerationRequest(
                model=model,
                messages=tuple(messages),
                params=params,
                template_version=f"judge:{template_sha[:16]}",
                purpose="judge",
                sample=sample,
            )
            result = await self.engine.agenerate(request)
            asked.calls += 1
            asked.messages = list(messages)
            asked.reply = result.text
            for attempt in result.attempts:
                asked.attempts.append(
                    {
                        "judge_question": task.key,
                        "judge_call": asked.calls,
                        **{name: getattr(attempt, name) for name in _ATTEMPT_FIELDS},
                    }
                )
            asked.all_cached = asked.all_cached and result.cached
            asked.input_tokens = _add(asked.input_tokens, result.input_tokens)
            asked.output_tokens = _add(asked.output_tokens, result.output_tokens)
            asked.cached_input_tokens = _add(asked.cached_input_tokens, result.cached_input_tokens)
            if result.batch:
                asked.batch_input_tokens = _add(asked.batch_input_tokens, result.input_tokens)
                asked.batch_output_tokens = _add(asked.batch_output_tokens, result.output_tokens)
            asked.latency_ms += result.latency_ms or 0.0
            if not result.ok:
                asked.cancelled = result.error_code == "cancelled"
                asked.error = (
                    f"judge call failed ({result.error_code}): {result.error_message}".rstrip(": ")
                )
                return asked
            text = result.text or ""
            parsed = parse_reply(text, task.schema, finish_reason=result.finish_reason)
            problem = parsed.error
            if parsed.value is not None:
                record_problem = semantic_problem(task, parsed.value, record)
                if record_problem is None:
                    asked.value = parsed.value
                    asked.error = asked.raw = None
                    return asked
                problem = record_problem
            asked.error, asked.raw = problem, text
            messages.append({"role": "assistant", "content": text})
            messages.append(
                {
                    "role": "user",
                    "content": f"That reply could not be used: {problem}. Reply again with only "
                    "the JSON object, in exactly the required format, and keep it short.",
                }
            )
        asked.error = f"no usable reply after {asked.calls} calls: {asked.error}"
        return asked

    async def judge(self, record: Record, answer: str, policy: Policy) -> JudgeOutcome:
        """Ask every judge every question of ``record`` and aggregate.

        With ``judge_epochs`` K > 1 the answer is judged K times: the first judging is the
        verdict; the verdicts of all K are kept in the summary, each marked with its
        ``judge_epoch`` (the judges' consistency is measured from them).
        """
        if self.judge_epochs == 1:
            return await self._judge(record, answer, policy, 0)
        outcomes = await asyncio.gather(
            *(self._judge(record, answer, policy, k) for k in range(self.judge_epochs))
        )
        first = outcomes[0]
        verdicts = tuple(
            dataclasses.replace(verdict, judge_epoch=k)
            for k, outcome in enumerate(outcomes)
            for verdict in outcome.summary.verdicts
        )
        return dataclasses.replace(
            first, summary=dataclasses.replace(first.summary, verdicts=verdicts)
        )

    async def _judge(
        self, record: Record, answer: str, policy: Policy, sample: int
    ) -> JudgeOutcome:
        kind = judge_kind(record)
        if kind is None:
            raise InvalidValue(f"{record.task_type} records are not judged")
        tasks = build_tasks(record, answer, policy)
        template_sha = judge_template_sha256(policy, kind)
        asked = await asyncio.gather(
            *(self._ask(m, t, template_sha, record, sample) for m in self.models for t in tasks)
        )
        per_model = [asked[i * len(tasks) : (i + 1) * len(tasks)] for i in range(len(self.models))]
        verdicts = [
            self._verdict(model, kind, record, policy, tasks, results)
            for model, results in zip(self.models, per_model, strict=True)
        ]
        cancelled = any(a.cancelled for a in asked)
        exchanges = tuple(
            {
                "model": model,
                "criterion_id": task.key if kind == "rubric" else None,
                "messages": a.messages,
                "reply": a.reply,
                "cached_input_tokens": a.cached_input_tokens,
                "batch": a.batch_input_tokens is not None or a.batch_output_tokens is not None,
            }
            for model, results in zip(self.models, per_model, strict=True)
            for task, a in zip(tasks, results, strict=True)
        )
        return dataclasses.replace(
            self._outcome(kind, record, policy, template_sha, verdicts, cancelled),
            exchanges=exchanges,
        )

    def _outcome(
        self,
        kind: str,
        record: Record,
        policy: Policy,
        template_sha: str,
        verdicts: Sequence[JudgeVerdict],
        cancelled: bool,
    ) -> JudgeOutcome:
        if kind == "rubric":
            return self._rubric_outcome(record, policy, template_sha, verdicts, cancelled)
        scores = [v.score for v in verdicts]
        failed = [v for v in verdicts if v.error is not None]
        score = None if failed or not scores else sum(s or 0.0 for s in scores) / len(scores)
        summary = self._summary(kind, template_sha, score, verdicts)
        error = "; ".join(f"{v.model}: {v.error}" for v in failed) or None
        if error is not None:
            return JudgeOutcome(summary, score, error, cancelled)
        return JudgeOutcome(
            summary,
            score,
            None,
            cancelled,
            criteria=self._criteria(kind, record, verdicts),
            rationale=" | ".join(v.rationale for v in verdicts if v.rationale),
        )

    def _summary(
        self, kind: str, template_sha: str, score: float | None, verdicts: Sequence[JudgeVerdict]
    ) -> JudgeSummary:
        return JudgeSummary(
            models=self.models,
            params=self.params(),
            template_sha256=template_sha,
            kind=kind,
            score=score,
            verdicts=tuple(verdicts),
        )

    def _rubric_outcome(
        self,
        record: Record,
        policy: Policy,
        template_sha: str,
        verdicts: Sequence[JudgeVerdict],
        cancelled: bool,
    ) -> JudgeOutcome:
        """A rubric item: each criterion's grade is the judges' mean, scored by the policy.

        A criterion some judge could not grade has no grade; the policy says whether that
        makes the item a judge error (``on_partial_judge_failure: error``) or whether the
        judged criteria are scored alone (``score_judged``). Either way every criterion
        verdict is kept.
        """
        criteria: list[dict[str, Any]] = []
        pairs: list[tuple[float, float | None]] = []
        for i, criterion in enumerate(record.rubric):
            entries = [v.criteria[i] for v in verdicts]
            grades: list[float] = [e["grade"] for e in entries if e.get("grade") is not None]
            grade = sum(grades) / len(grades) if len(grades) == len(entries) else None
            first = entries[0]
            failure = next((e.get("error") for e in entries if e.get("error")), None)
            criteria.append(
                {
                    "id": criterion.id,
                    "title": criterion.title,
                    "weight": criterion.weight,
                    "met": grade,
                    "rationale": first.get("rationale") or "",
                    **({"error": failure} if failure else {}),
                }
            )
            pairs.append((criterion.weight, grade))
        rubric = score_rubric(pairs, policy.scoring, policy.on_partial_judge_failure)
        summary = self._summary("rubric", template_sha, rubric.score, verdicts)
        error = None
        if rubric.score is None:
            failed = [v for v in verdicts if v.error is not None]
            error = "; ".join(f"{v.model}: {v.error}" for v in failed) or rubric.describe()
        return JudgeOutcome(
            summary, rubric.score, error, cancelled, criteria=criteria, rubric=rubric
        )

    def _verdict(
        self,
        model: str,
        kind: str,
        record: Record,
        policy: Policy,
        tasks: Sequence[JudgeTask],
        results: Sequence[_Asked],
    ) -> JudgeVerdict:
        input_tokens: int | None = None
        output_tokens: int | None = None
        cached: int | None = None
        batch_in: int | None = None
        batch_out: int | None = None
        for a in results:
            input_tokens = _add(input_tokens, a.input_tokens)
            output_tokens = _add(output_tokens, a.output_tokens)
            cached = _add(cached, a.cached_input_tokens)
            batch_in = _add(batch_in, a.batch_input_tokens)
            batch_out = _add(batch_out, a.batch_output_tokens)
        common: dict[str, Any] = {
            "calls": sum(a.calls for a in results),
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cached_input_tokens": cached,
            "batch_input_tokens": batch_in,
            "batch_output_tokens": batch_out,
            "latency_ms": sum(a.latency_ms for a in results),
            "cached": all(a.all_cached for a in results),
            "attempts": tuple(attempt for a in results for attempt in a.attempts),
        }
        errors = [(t, a) for t, a in zip(tasks, results, strict=True) if a.value is None]
        if kind == "rubric":
            return self._rubric_verdict(model, policy, tasks, results, common)
        if errors:
            first = errors[0][1]
            return JudgeVerdict(model, None, error=first.error, raw=first.raw, **common)
        values = [a.value for a in results if a.value is not None]
        if kind == "reference":
            value = values[0]
            verdict_of = (
                ({"id": "verdict", "verdict": value["verdict"]},) if "verdict" in value else ()
            )
            return JudgeVerdict(
                model,
                round_to_step(float(value["score"]), policy.judge.reference_step),
                rationale=str(value.get("rationale", "")),
                criteria=verdict_of,
                **common,
            )
        if kind == "criteria":
            ratings = criteria_ratings(values[0], record)
            low, high = policy.judge.scale_min, policy.judge.scale_max
            rated = tuple(
                {**item, "score": (item["rating"] - low) / (high - low)} for item in ratings
            )
            return JudgeVerdict(
                model,
                criteria_score([r["rating"] for r in ratings], low, high),
                criteria=rated,
                **common,
            )
        raise AssertionError(f"unexpected judge kind {kind!r}")  # unreachable: kinds checked

    @staticmethod
    def _rubric_verdict(
        model: str,
        policy: Policy,
        tasks: Sequence[JudgeTask],
        results: Sequence[_Asked],
        common: dict[str, Any],
    ) -> JudgeVerdict:
        """One judge's verdict on a rubric: every criterion, graded or with its failure."""
        criteria: list[dict[str, Any]] = []
        pairs: list[tuple[float, float | None]] = []
        first_failure: tuple[JudgeTask, _Asked] | None = None
        for task, asked in zip(tasks, results, strict=True):
            weight = task.criterion.weight if task.criterion else 1.0
            if asked.value is None:
                first_failure = first_failure or (task, asked)
                criteria.append(
                    {"id": task.key, "grade": None, "error": asked.error, "raw": asked.raw}
                )
                pairs.append((weight, None))
                continue
            grade, reason = criterion_grade(asked.value)
            criteria.append(
                {
                    "id": task.key,
                    "met": grade >= 0.5,
                    "grade": grade,
                    "score": grade,
                    "rationale": reason,
                }
            )
            pairs.append((weight, grade))
        rubric = score_rubric(pairs, policy.scoring, policy.on_partial_judge_failure)
        error = raw = None
        if first_failure is not None:
            task, asked = first_failure
            raw = asked.raw
            if rubric.score is None:
                error = f"criterion {task.key!r}: {asked.error}"
        return JudgeVerdict(
            model, rubric.score, criteria=tuple(criteria), error=error, raw=raw, **common
        )

    @staticmethod
    def _criteria(
        kind: str, record: Record, verdicts: Sequence[JudgeVerdict]
    ) -> list[dict[str, Any]]:
        if kind == "criteria":
            out = []
            for i, name in enumerate(record.required_criteria):
                ratings = [v.criteria[i]["rating"] for v in verdicts]
                scores = [v.criteria[i]["score"] for v in verdicts]
                out.append(
                    {
                        "id": name,
                        "rating": sum(ratings) / len(ratings),
                        "score": sum(scores) / len(scores),
                        "rationale": verdicts[0].criteria[i]["rationale"],
                    }
                )
            return out
        return []


def _excerpt(text: str | None, limit: int = 300) -> str:
    if not text:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _explain(kind: str, outcome: JudgeOutcome, threshold: float, passed: bool) -> str:
    score = outcome.score or 0.0
    relation = ">=" if passed else "<"
    head = f"judge score {score:.2f} {relation} threshold {threshold:.2f}"
    if kind == "rubric":
        graded = [c for c in outcome.criteria if c["met"] is not None]
        unmet = [c for c in graded if c["weight"] > 0 and c["met"] < 1]
        penalties = [c for c in graded if c["weight"] < 0 and c["met"] > 0]
        parts = [head]
        if outcome.rubric is not None and outcome.rubric.partial:
            parts.append(outcome.rubric.describe())
        if unmet:
            parts.append(
                "not met: "
                + "; ".join(f"{c['id']} {c['title']!r} (w={c['weight']:g})" for c in unmet)
            )
        if penalties:
            parts.append(
                "penalties: "
                + "; ".join(f"{c['id']} {c['title']!r} (w={c['weight']:g})" for c in penalties)
            )
        return ". ".join(parts)
    if kind == "criteria":
        ratings = ", ".join(f"{c['id']} {c['rating']:g}" for c in outcome.criteria)
        return f"{head}. ratings: {ratings}"
    return f"{head}. {_excerpt(outcome.rationale, 600)}".rstrip(". ")


def judged_grade(outcome: JudgeOutcome, policy: Policy, details: Mapping[str, Any]) -> Grade:
    """The grade of a judged answer: the panel's verdict under the policy's pass rule.

    ``details`` are the grader's own (lexical scores, the citation check); the threshold
    and, with a verdict, the per-criterion results are added.
    """
    kind = outcome.summary.kind
    grader = f"judge:{kind}"
    details = {**details, "threshold": policy.pass_threshold}
    if outcome.criteria:
        details["criteria"] = outcome.criteria
    if outcome.rubric is not None:
        details["rubric"] = outcome.rubric.details(policy.scoring)
    if outcome.cancelled:
        return Grade(
            "error",
            None,
            None,
            "cancelled",
            "the run was cancelled while the judge was being asked",
            grader,
            details,
            outcome.summary,
            outcome.exchanges,
        )
    error = outcome.error
    if error is None and outcome.score is not None and not math.isfinite(outcome.score):
        # Replies are parsed strictly (parse_reply), but the rule holds for any outcome:
        # a non-finite number is no verdict, never a score below the threshold.
        error = f"the verdict is not a finite number ({outcome.score!r})"
    if error is not None:
        raws = [v.raw for v in outcome.summary.verdicts if v.raw]
        shown = f" (raw reply: {_excerpt(raws[0])!r})" if raws else ""
        return Grade(
            "error",
            None,
            None,
            "judge_error",
            f"the judge gave no usable verdict — {error}{shown}",
            grader,
            details,
            outcome.summary,
            outcome.exchanges,
        )
    score = outcome.score if outcome.score is not None else 0.0
    passed = score >= policy.pass_threshold
    reason = "correct" if passed else "below_threshold"
    explanation = _explain(kind, outcome, policy.pass_threshold, passed)
    citations = details.get("citations")
    if isinstance(citations, dict) and not citations["passed"]:
        problems = []
        if citations["unknown"]:
            problems.append(f"cites contexts that do not exist: {citations['unknown']}")
        if citations["missing"]:
            problems.append(f"does not cite required contexts: {citations['missing']}")
        explanation += ". Citations: " + "; ".join(problems)
        if passed:
            passed, reason = False, "citation_error"
    return Grade(
        "passed" if passed else "failed",
        passed,
        score,
        reason,
        explanation,
        grader,
        details,
        outcome.summary,
        outcome.exchanges,
    )
