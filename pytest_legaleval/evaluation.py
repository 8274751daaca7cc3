"""Per-item evaluation results and the ``evaluation`` fixture's object.

An ``EvalResult`` is a JSON-safe ``TypedDict``: it rides on the pytest report from an
xdist worker to the controller, which alone writes artifacts.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

import pytest

from pytest_legaleval.grading.lexical import best_exact_match, best_token_f1
from pytest_legaleval.grading.text import strip_reasoning
from pytest_legaleval.records import Record

__all__ = [
    "EvalResult",
    "Evaluation",
    "JudgeSummary",
    "JudgeVerdict",
    "RecordFailed",
    "cancelled_result",
    "grade_response",
    "missing_response_result",
    "prefilled_result",
    "rag_citations",
    "record_error_result",
]

Outcome = Literal["passed", "failed", "skipped", "error"]


class JudgeVerdict(TypedDict):
    """One judge model's verdict on one item (several judges: one verdict each)."""

    model: str
    score: float | None
    """This judge's score in [0, 1]; ``None`` when it produced a judge error."""
    rationale: str
    criteria: list[dict[str, Any]]
    """Per criterion (rubric / criteria records): ``id``, ``met`` (bool) or ``rating``
    (number), ``score`` in [0, 1], ``rationale``; per-criterion ``error`` when that one failed."""
    error: str | None
    """Why this judge failed (``judge_error``), else ``None``."""
    raw: str | None
    """The raw reply that could not be parsed (kept for audit), else ``None``."""
    calls: int
    """Judge calls made (re-asks included; cache hits count too)."""
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: float | None
    """Sum over this judge's calls."""
    cached: bool
    """Every call of this judge was a cache hit (nothing paid this run)."""
    attempts: list[dict[str, Any]]
    """Every network attempt of this judge's calls (``judge_question``, ``judge_call`` and
    the engine's attempt fields); cache hits make none."""


class JudgeSummary(TypedDict):
    """Provenance and outcome of judging one item."""

    models: list[str]
    params: dict[str, Any]
    """``temperature``, ``max_tokens``, ``reasks``, ``response_format`` mode used."""
    template_sha256: str
    """sha256 of the judge template text (the policy's, with its scale)."""
    kind: str
    """``reference``, ``rubric`` or ``criteria``."""
    score: float | None
    """Mean of the judges' scores; ``None`` when every judge failed."""
    verdicts: list[JudgeVerdict]


class EvalResult(TypedDict):
    """What one (record × model) item produced; every value is JSON-safe."""

    record_id: str
    dataset: str
    task_type: str
    model: str
    source: str
    """``prefilled`` (from --responses) or ``live``."""
    outcome: Outcome
    """The grader's verdict as a pytest outcome."""
    passed: bool | None
    score: float | None
    reason: str
    """``correct``, ``wrong_answer``, ``no_answer_extracted``, ``missing_response``,
    ``needs_judge`` …"""
    explanation: str
    response: str | None
    grader: str
    details: dict[str, Any]
    record_sha256: str
    latency_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int | None
    first_attempt_at: str | None
    last_attempt_at: str | None
    attempts: list[dict[str, Any]]
    policy_id: str | None
    """The policy that prompted and graded this item (``default`` unless the record names
    another); ``None`` for items never prompted (invalid, cancelled)."""
    policy_sha256: str | None
    """sha256 of the policy's content."""
    judge: JudgeSummary | None
    """Judging provenance and verdicts; ``None`` for programmatic grading."""


def _base(record: Record, model: str, source: str) -> EvalResult:
    return EvalResult(
        record_id=record.id,
        dataset=record.dataset,
        task_type=record.task_type,
        model=model,
        source=source,
        outcome="error",
        passed=None,
        score=None,
        reason="",
        explanation="",
        response=None,
        grader="",
        details={},
        record_sha256=record.sha256,
        latency_ms=None,
        input_tokens=None,
        output_tokens=None,
        total_tokens=None,
        first_attempt_at=None,
        last_attempt_at=None,
        attempts=[],
        policy_id=None,
        policy_sha256=None,
        judge=None,
    )


def missing_response_result(record: Record, model: str, responses_path: str) -> EvalResult:
    """The result of a selected record that has no response: a failure, never a skip."""
    result = _base(record, model, "prefilled")
    result.update(
        {
            "outcome": "failed",
            "passed": False,
            "score": 0.0,
            "reason": "missing_response",
            "grader": "none",
            "explanation": f"no response for record {record.id!r} and model {model!r} "
            f"in {responses_path}",
        }
    )
    return result


def prefilled_result(
    record: Record,
    model: str,
    response: str | None,
    responses_path: str,
    policy: tuple[str, str],
) -> EvalResult:
    """A pre-computed response graded under ``policy`` (``(id, sha256)``), or its absence."""
    if response is None:
        result = missing_response_result(record, model, responses_path)
        result["policy_id"], result["policy_sha256"] = policy
        return result
    return grade_response(record, model, response, "prefilled", policy)


def record_error_result(
    record: Record, model: str, errors: list[dict[str, Any]], policy: tuple[str, str]
) -> EvalResult:
    """The result of an item whose record cannot be asked (e.g. a missing attachment file).

    The record passed validation, but this machine cannot build its prompt; the item is an
    error with reason ``invalid_record`` and the contract's ``record_errors`` entries, and
    nothing is sent to the model.
    """
    result = _base(record, model, "none")
    result.update(
        {
            "outcome": "error",
            "reason": "invalid_record",
            "grader": "none",
            "explanation": "; ".join(f"{e['path']}: {e['message']}" for e in errors),
            "details": {"record_errors": errors},
            "policy_id": policy[0],
            "policy_sha256": policy[1],
        }
    )
    return result


def cancelled_result(record: Record, model: str) -> EvalResult:
    """The result of an item that never finished because the run was cancelled."""
    result = _base(record, model, "none")
    result.update(
        {
            "outcome": "error",
            "reason": "cancelled",
            "grader": "none",
            "explanation": "the run was cancelled before this item finished",
        }
    )
    return result


def unfinished_result(record: Record, model: str, outcome: str, message: str) -> EvalResult:
    """The result of an item that ended without one (its grade never reached the recorder).

    ``outcome`` is pytest's: ``skipped`` (a skip mark or ``pytest.skip`` in a fixture, counted
    with the skipped records) or ``failed`` (a fixture errored before the evaluation, or the
    xdist worker running the item crashed: an ``evaluation_error``). ``message`` says why,
    in pytest's words.
    """
    result = _base(record, model, "none")
    if outcome == "skipped":
        result.update(
            {
                "outcome": "skipped",
                "reason": "skipped",
                "grader": "none",
                "explanation": f"pytest skipped the item: {message}",
            }
        )
    else:
        result.update(
            {
                "outcome": "error",
                "reason": "evaluation_error",
                "grader": "none",
                "explanation": f"the item ended without a result: {message}",
            }
        )
    return result


def grade_response(
    record: Record,
    model: str,
    response: str,
    source: str,
    policy: tuple[str, str] | None = None,
) -> EvalResult:
    """Grade one response by the record's task type (MCQ programmatically).

    Judged task types (reference, rubric, criteria) need a judge model; without one they
    are reported as skipped with reason ``needs_judge`` — visible and counted, not silent.
    With a judge, the judge panel replaces that placeholder with its grade.

    Args:
        record: the record.
        model: who answered.
        response: the answer text.
        source: ``live`` or ``prefilled``.
        policy: ``(policy_id, policy_sha256)`` that prompted and grades the item.

    """
    result = _base(record, model, source)
    result["response"] = response
    if policy is not None:
        result["policy_id"], result["policy_sha256"] = policy
    if record.task_type == "mcq":
        # Imported at the first MCQ grade: its answer patterns compile at import (~15 ms),
        # which an xdist controller (it grades nothing) and a worker's start-up (its first
        # grade comes after its model calls are out) both skip.
        from pytest_legaleval.grading.mcq import grade_mcq

        grade = grade_mcq(record, response)
        result.update(
            {
                "outcome": "passed" if grade.passed else "failed",
                "passed": grade.passed,
                "score": grade.score,
                "reason": grade.reason,
                "explanation": grade.explanation,
                "grader": "mcq",
                "details": {
                    "chosen": list(grade.chosen),
                    "correct": list(grade.correct),
                    "method": grade.method,
                },
            }
        )
        return result
    if record.reference_answers:
        answer = strip_reasoning(response)
        result["details"] = {
            "exact_match": best_exact_match(answer, record.reference_answers),
            "token_f1": round(best_token_f1(answer, record.reference_answers), 6),
        }
        citations = rag_citations(record, answer)
        if citations is not None:
            result["details"]["citations"] = citations
    result.update(
        {
            "outcome": "skipped",
            "reason": "needs_judge",
            "grader": "none",
            "explanation": f"{record.task_type} records are graded by an LLM judge: pass "
            "--judge-model PROVIDER/NAME",
        }
    )
    return result


def rag_citations(record: Record, answer: str) -> dict[str, Any] | None:
    """The citation check of a RAG QA answer, when it applies.

    It applies to QA records from the RAG splits whose answer cites ``[n]`` markers or whose
    curated ``answer_citations`` expect some; summaries are not checked.
    """
    rag = record.metadata.get("rag")
    if not isinstance(rag, dict) or rag.get("task_type") != "qa":
        return None
    contexts = rag.get("contexts") or []
    curated = rag.get("answer_citations") or []
    if not isinstance(contexts, list) or not isinstance(curated, list):
        return None
    from pytest_legaleval.grading.citations import check_citations, cited_markers

    if not curated and not cited_markers(answer):
        return None
    sources = rag.get("sources") or []
    check = check_citations(
        answer,
        [str(c) for c in contexts],
        [c for c in curated if isinstance(c, dict)],
        [str(s) for s in sources] if isinstance(sources, list) else [],
    )
    return {
        "passed": check.passed,
        "score": check.score,
        "cited": list(check.cited),
        "unknown": list(check.unknown),
        "missing": list(check.missing),
        "required": list(check.required),
    }


class RecordFailed(pytest.fail.Exception):  # type: ignore[misc,name-defined]
    """A record that failed its grader: reported with the grader's reasons, no traceback."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg, pytrace=False)


class Evaluation:
    """The ``evaluation`` fixture's value: the graded answer of one item.

    Use ``evaluation.check()`` for the default pass rule, or assert on ``passed``,
    ``score``, ``response`` and ``explanation`` in your own suites.
    """

    def __init__(self, record: Record, result: EvalResult) -> None:
        self.record = record
        self.result = result

    @property
    def model(self) -> str:
        """The model (or response-file label) that answered."""
        return self.result["model"]

    @property
    def passed(self) -> bool:
        """Whether the grader's pass rule holds."""
        return bool(self.result["passed"])

    @property
    def score(self) -> float | None:
        """The grader's score in [0, 1], or ``None`` when ungraded."""
        return self.result["score"]

    @property
    def response(self) -> str | None:
        """The model's answer text."""
        return self.result["response"]

    @property
    def reason(self) -> str:
        """A short machine-readable reason (``wrong_answer`` …)."""
        return self.result["reason"]

    @property
    def explanation(self) -> str:
        """The grader's explanation, for people."""
        return self.result["explanation"]

    def check(self) -> None:
        """Apply the default pass rule: skip ungraded items, fail with the grader's reasons."""
        if self.result["outcome"] == "skipped":
            pytest.skip(f"{self.reason}: {self.explanation}")
        if not self.passed:
            raise RecordFailed(f"{self.reason}: {self.explanation}")

    def __repr__(self) -> str:
        return (
            f"Evaluation(record={self.record.id!r}, model={self.model!r}, "
            f"passed={self.passed}, score={self.score}, reason={self.reason!r})"
        )
