"""An item's ``EvalResult``, built once from what the item produced.

A graded answer (:func:`graded_result`), a failed generation (:func:`generation_failed`),
or an item that never got an answer (missing response, invalid record, cancelled,
skipped, crashed). Each builder returns a complete, frozen result.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from pytest_legaleval.grading.base import Grade
from pytest_legaleval.grading.policies import Policy
from pytest_legaleval.grading.scoring import scoring_rule
from pytest_legaleval.pipeline.responses import Recorded
from pytest_legaleval.records import EvalResult, Record

if TYPE_CHECKING:  # the engine's types load with the engine, not with every result
    from pytest_legaleval.engine.types import GenerationResult

__all__ = [
    "cancelled_result",
    "generation_failed",
    "graded_result",
    "missing_response_result",
    "record_error_result",
    "skipped_result",
    "unfinished_result",
]


def _policy_fields(policy: Policy | None) -> dict[str, Any]:
    """What a result records about the policy that prompted and graded it."""
    if policy is None:
        return {}
    return {
        "policy_id": policy.id,
        "policy_sha256": policy.sha256,
        "policy_version": policy.version,
        "scoring": policy.scoring,
        "scoring_version": scoring_rule(policy.scoring).version,
    }


@cache
def _attempt_fields() -> tuple[str, ...]:
    from pytest_legaleval.engine.types import Attempt

    return tuple(f.name for f in dataclasses.fields(Attempt))


def _never_answered(
    record: Record,
    model: str,
    *,
    outcome: str,
    reason: str,
    explanation: str,
    source: str = "none",
    passed: bool | None = None,
    score: float | None = None,
    details: Mapping[str, Any] | None = None,
    policy: Policy | None = None,
) -> EvalResult:
    return EvalResult(
        record_id=record.id,
        dataset=record.dataset,
        task_type=record.task_type,
        model=model,
        source=source,
        outcome=outcome,  # type: ignore[arg-type]
        passed=passed,
        score=score,
        reason=reason,
        explanation=explanation,
        details=dict(details or {}),
        record_sha256=record.sha256,
        **_policy_fields(policy),
    )


def _generation_fields(generation: GenerationResult | None) -> dict[str, Any]:
    if generation is None:
        return {}
    fields = _attempt_fields()
    return {
        "latency_ms": generation.latency_ms,
        "input_tokens": generation.input_tokens,
        "output_tokens": generation.output_tokens,
        "total_tokens": generation.total_tokens,
        "first_attempt_at": generation.first_attempt_at,
        "last_attempt_at": generation.last_attempt_at,
        # Attempt holds only scalars: a flat copy is what asdict would give, without its
        # deep copies.
        "attempts": tuple({f: getattr(a, f) for f in fields} for a in generation.attempts),
    }


def _generation_details(
    generation: GenerationResult | None, template_version: str | None
) -> dict[str, Any]:
    if generation is None:
        return {}
    return {
        "cached": generation.cached,
        "cache_key": generation.cache_key,
        "finish_reason": generation.finish_reason,
        "template_version": template_version,
    }


def graded_result(
    record: Record,
    model: str,
    answer: str,
    grade: Grade,
    *,
    source: str,
    policy: Policy | None,
    generation: GenerationResult | None = None,
    template_version: str | None = None,
    max_latency_ms: int | None = None,
    warnings: Sequence[str] = (),
    recorded: Recorded | None = None,
) -> EvalResult:
    """The result of a graded answer (``generation`` when it was generated now).

    An answer slower than the record's ``expected.max_latency_ms`` fails with reason
    ``latency_exceeded`` whatever its grade (the grade stays in the explanation).
    ``recorded``: a pre-computed response's usage and latency (its row's), which become
    the result's tokens and latency; what was repaired in the row is kept in
    ``details.response_warnings``.
    """
    outcome, passed, score = grade.outcome, grade.passed, grade.score
    reason, explanation = grade.reason, grade.explanation
    if generation is not None and generation.latency_exceeded:
        outcome, passed, reason = "failed", False, "latency_exceeded"
        explanation = (
            f"answer took {generation.latency_ms:.0f} ms, more than "
            f"expected.max_latency_ms={max_latency_ms} (graded: {grade.reason})"
        )
    details = {**grade.details, **_generation_details(generation, template_version)}
    if warnings:
        details["attachment_warnings"] = list(warnings)
    fields = _generation_fields(generation)
    if recorded is not None and generation is None:
        fields = _recorded_fields(recorded)
        if recorded.warnings:
            details["response_warnings"] = list(recorded.warnings)
    return EvalResult(
        record_id=record.id,
        dataset=record.dataset,
        task_type=record.task_type,
        model=model,
        source=source,
        outcome=outcome,
        passed=passed,
        score=score,
        reason=reason,
        explanation=explanation,
        response=answer,
        grader=grade.grader,
        details=details,
        record_sha256=record.sha256,
        **_policy_fields(policy),
        judge=grade.judge,
        **fields,
    )


def _recorded_fields(recorded: Recorded) -> dict[str, Any]:
    known = recorded.input_tokens is not None or recorded.output_tokens is not None
    return {
        "latency_ms": recorded.latency_ms,
        "input_tokens": recorded.input_tokens,
        "output_tokens": recorded.output_tokens,
        "total_tokens": (recorded.input_tokens or 0) + (recorded.output_tokens or 0)
        if known
        else None,
    }


def generation_failed(
    record: Record,
    model: str,
    generation: GenerationResult,
    *,
    policy: Policy | None,
    template_version: str | None = None,
    warnings: Sequence[str] = (),
) -> EvalResult:
    """The result of an item whose generation failed after the engine's retries."""
    code = generation.error_code or "unknown"
    reason = code if code in ("timeout", "cancelled") else f"generation_error:{code}"
    tries = len(generation.attempts)
    explanation = (
        f"{generation.error_message or code} after {tries} attempt{'s' if tries != 1 else ''}"
    )
    if code == "cancelled" and generation.cancel_reason == "budget":
        # --max-cost stopped it before it was sent: the message says the cap.
        reason, explanation = "budget", generation.error_message
    details = _generation_details(generation, template_version)
    if warnings:
        details["attachment_warnings"] = list(warnings)
    return dataclasses.replace(
        _never_answered(
            record,
            model,
            outcome="error",
            reason=reason,
            explanation=explanation,
            source="live",
            details=details,
            policy=policy,
        ),
        **_generation_fields(generation),
    )


def missing_response_result(
    record: Record, model: str, responses_path: str, policy: Policy | None = None
) -> EvalResult:
    """The result of a selected record that has no response: a failure, never a skip."""
    return _never_answered(
        record,
        model,
        outcome="failed",
        reason="missing_response",
        explanation=f"no response for record {record.id!r} and model {model!r} in {responses_path}",
        source="prefilled",
        passed=False,
        score=0.0,
        policy=policy,
    )


def record_error_result(
    record: Record, model: str, errors: list[dict[str, Any]], policy: Policy
) -> EvalResult:
    """The result of an item whose record cannot be asked (e.g. a missing attachment file).

    The record passed validation, but this machine cannot build its prompt; the item is an
    error with reason ``invalid_record`` and the contract's ``record_errors`` entries, and
    nothing is sent to the model.
    """
    return _never_answered(
        record,
        model,
        outcome="error",
        reason="invalid_record",
        explanation="; ".join(f"{e['path']}: {e['message']}" for e in errors),
        details={"record_errors": errors},
        policy=policy,
    )


def skipped_result(record: Record, model: str, grade: Grade, policy: Policy) -> EvalResult:
    """The result of an item skipped before any call (a grader that needs a judge, none set)."""
    return _never_answered(
        record,
        model,
        outcome=grade.outcome,
        reason=grade.reason,
        explanation=grade.explanation,
        details=grade.details,
        policy=policy,
    )


def cancelled_result(record: Record, model: str, policy: Policy | None = None) -> EvalResult:
    """The result of an item that never finished because the run was cancelled."""
    return _never_answered(
        record,
        model,
        outcome="error",
        reason="cancelled",
        explanation="the run was cancelled before this item finished",
        policy=policy,
    )


def unfinished_result(
    record: Record, model: str, outcome: str, message: str, policy: Policy | None = None
) -> EvalResult:
    """The result of an item that ended without one (its grade never reached the recorder).

    ``outcome`` is pytest's: ``skipped`` (a skip mark or ``pytest.skip`` in a fixture, counted
    with the skipped records) or ``failed`` (a fixture errored before the evaluation, or the
    xdist worker running the item crashed: an ``evaluation_error``). ``message`` says why.
    """
    if outcome == "skipped":
        return _never_answered(
            record,
            model,
            outcome="skipped",
            reason="skipped",
            explanation=f"pytest skipped the item: {message}",
            policy=policy,
        )
    return _never_answered(
        record,
        model,
        outcome="error",
        reason="evaluation_error",
        explanation=f"the item ended without a result: {message}",
        policy=policy,
    )
