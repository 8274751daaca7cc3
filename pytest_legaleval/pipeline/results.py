"""An item's ``EvalResult``, built once from what the item produced.

A graded answer (:func:`graded_result`), a failed generation (:func:`generation_failed`),
or an item that never got an answer (missing response, invalid record, cancelled,
skipped, crashed). Each builder returns a complete, frozen result. An item without a
verdict has ``outcome`` ``error`` with ``passed`` and ``score`` ``None``: never a 0. With
``--epochs K`` the epochs' results are reduced to the item's (:func:`reduce_epochs`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from pytest_legaleval.grading._base import Grade
from pytest_legaleval.grading._policies import Policy
from pytest_legaleval.grading._scoring import scoring_rule
from pytest_legaleval.pipeline.responses import Recorded
from pytest_legaleval.records import EvalResult, PredictionLine, Record

if TYPE_CHECKING:  # the engine's types load with the engine, not with every result
    from pytest_legaleval.engine.types import GenerationRequest, GenerationResult

__all__ = [
    "TRANSCRIPT_TEXT_LIMIT",
    "cancelled_result",
    "generation_failed",
    "graded_result",
    "missing_response_result",
    "record_error_result",
    "reduce_epochs",
    "skipped_result",
    "transcript",
    "unfinished_result",
]

TRANSCRIPT_TEXT_LIMIT = 1_000_000
"""Characters of one message or reply kept in a transcript (the rest is cut, and
``truncated`` says so); the answer itself is whole on the prediction line."""


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
        "cached_input_tokens": generation.cached_input_tokens,
        "batch": generation.batch,
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
    epoch: int = 0,
    transcript: Mapping[str, Any] | None = None,
) -> EvalResult:
    """The result of a graded answer (``generation`` when it was generated now).

    An answer slower than the record's ``expected.max_latency_ms`` is an error with reason
    ``latency_exceeded`` whatever its grade: no score, no pass flag (the grade stays in the
    explanation and ``details.graded``).
    ``recorded``: a pre-computed response's usage and latency (its row's), which become
    the result's tokens and latency; what was repaired in the row is kept in
    ``details.response_warnings``.
    """
    outcome, passed, score = grade.outcome, grade.passed, grade.score
    reason, explanation = grade.reason, grade.explanation
    details = {**grade.details, **_generation_details(generation, template_version)}
    if generation is not None and generation.latency_exceeded:
        # A broken latency budget is no verdict (an error, as the counts file it): no score
        # and no pass flag, like every other error; the grade is kept beside.
        outcome, passed, score, reason = "error", None, None, "latency_exceeded"
        explanation = (
            f"answer took {generation.latency_ms:.0f} ms, more than "
            f"expected.max_latency_ms={max_latency_ms} (graded: {grade.reason})"
        )
        details["graded"] = {"reason": grade.reason, "passed": grade.passed, "score": grade.score}
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
        epoch=epoch,
        transcript=transcript,
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
    record: Record,
    model: str,
    responses_path: str,
    policy: Policy | None = None,
    epoch: int = 0,
) -> EvalResult:
    """The result of a selected record that has no response: an error, never a skip or a 0."""
    at = f" epoch {epoch}" if epoch else ""
    result = _never_answered(
        record,
        model,
        outcome="error",
        reason="missing_response",
        explanation=(
            f"no response for record {record.id!r} and model {model!r}{at} in {responses_path}"
        ),
        source="prefilled",
        policy=policy,
    )
    return dataclasses.replace(result, epoch=epoch) if epoch else result


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


# -- epochs and transcripts --------------------------------------------------------------------


def reduce_epochs(results: Sequence[EvalResult], reducer: str) -> EvalResult:
    """The item's result from its epochs' (``--epochs K``), by ``metrics._epochs``' reducer.

    The result of the first epoch whose own verdict is the reduced one stands for the
    item, with the reduced ``outcome``, ``passed`` and ``score`` (the mean score of the
    epochs with a verdict) and ``epochs`` holding every epoch's result. Epochs without a
    verdict take no part; an item none of whose epochs has one keeps its first epoch's
    error. Readers of ``predictions.jsonl`` reduce its epoch lines the same way.
    """
    from pytest_legaleval.metrics._epochs import group_items

    lines: list[PredictionLine] = [
        {
            "dataset": r.dataset,
            "record_id": r.record_id,
            "model": r.model,
            "epoch": r.epoch,
            "outcome": r.outcome,
            "score": r.score,
            "reason": r.reason,
            "details": dict(r.details),
        }
        for r in results
    ]  # what reducing reads of each epoch, as the epoch's prediction line holds it
    (item,) = group_items(lines, reducer).values()
    chosen = results[item.representative]
    summary = f"{item.c} of {item.n} epochs passed ({reducer})"
    if item.passed is None:
        return dataclasses.replace(chosen, epochs=tuple(results), transcript=None)
    return dataclasses.replace(
        chosen,
        outcome="passed" if item.passed else "failed",
        passed=item.passed,
        score=item.score,
        explanation=f"{summary}; {chosen.explanation}",
        details={**chosen.details, "epochs": {"reducer": reducer, "n": item.n, "passed": item.c}},
        epochs=tuple(results),
        transcript=None,
    )


def _bounded(text: str) -> tuple[str, bool]:
    if len(text) <= TRANSCRIPT_TEXT_LIMIT:
        return text, False
    return text[:TRANSCRIPT_TEXT_LIMIT], True


def transcript(
    request: GenerationRequest | None,
    reply: str | None,
    grade: Grade | None,
    params: Mapping[str, Any] | None = None,
    generation: GenerationResult | None = None,
) -> dict[str, Any]:
    """What one epoch sent and got back.

    The messages and parameters (``None`` for a pre-computed answer), the raw reply, and
    the judge's prompts and replies. ``params``: the request's parameters as JSON, when the
    caller has them already (a run shares one parameters object among its requests).
    ``generation``: the answer's call, whose usage (prompt-cache tokens included) and
    batch flag are kept beside the reply.
    """
    cut = False
    sent: dict[str, Any] | None = None
    if request is not None:
        messages = []
        for message in request.messages:
            content, shortened = _bounded(str(message.get("content", "")))
            cut |= shortened
            messages.append({"role": message.get("role"), "content": content})
        sent = {
            "model": request.model,
            "messages": messages,
            "params": params if params is not None else request.params.as_dict(),
        }
    text = None
    if reply is not None:
        text, shortened = _bounded(reply)
        cut |= shortened
    judge = []
    for exchange in grade.exchanges if grade is not None else ():
        messages = []
        for message in exchange.get("messages") or ():
            content, shortened = _bounded(str(message.get("content", "")))
            cut |= shortened
            messages.append({"role": message.get("role"), "content": content})
        answer = exchange.get("reply")
        if isinstance(answer, str):
            answer, shortened = _bounded(answer)
            cut |= shortened
        judge.append(
            {
                "model": exchange.get("model"),
                "criterion_id": exchange.get("criterion_id"),
                "messages": messages,
                "reply": answer,
                "cached_input_tokens": exchange.get("cached_input_tokens"),
                "batch": bool(exchange.get("batch")),
            }
        )
    usage = None
    if generation is not None:
        usage = {
            "input_tokens": generation.input_tokens,
            "output_tokens": generation.output_tokens,
            "cached_input_tokens": generation.cached_input_tokens,
            "batch": generation.batch,
        }
    return {"request": sent, "reply": text, "usage": usage, "judge": judge, "truncated": cut}
