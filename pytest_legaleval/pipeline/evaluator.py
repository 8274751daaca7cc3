"""Item evaluation through the engine: a process submits all of its items up front.

Each test waits only for its own result. An item is generated (live, or taken from the
responses file), graded, and — for reference, rubric and criteria records with a judge
configured — judged, all pipelined on the engine's loop: judging one item overlaps
generating the next.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from pytest_legaleval.engine import (
    Attempt,
    Engine,
    EngineSettings,
    GenerationParams,
    GenerationRequest,
    GenerationResult,
    RetryPolicy,
    routing,
)
from pytest_legaleval.engine.capabilities import StructuredOutput, structured_params
from pytest_legaleval.evaluation import EvalResult, grade_response, prefilled_result
from pytest_legaleval.grading.attachments import missing_attachments, record_attachments
from pytest_legaleval.grading.judge import judge_kind, mcq_answer_schema
from pytest_legaleval.grading.panel import JudgePanel, apply_judgment
from pytest_legaleval.grading.policies import Policy, PolicyBook
from pytest_legaleval.grading.prompts import build_messages, template_version
from pytest_legaleval.pipeline.responses import ResponseTable
from pytest_legaleval.pipeline.settings import Settings
from pytest_legaleval.records import Record

__all__ = ["LiveEvaluator", "engine_settings", "result_from_generation"]

_ATTEMPT_FIELDS = tuple(f.name for f in dataclasses.fields(Attempt))


def engine_settings(settings: Settings, share: int, position: int = 0) -> EngineSettings:
    """Engine configuration of process ``position`` (0-based) out of ``share``."""
    return EngineSettings(
        base_url=settings.base_url,
        api_key_env=settings.api_key_env,
        concurrency=settings.concurrency,
        judge_concurrency=settings.judge_concurrency if settings.judge_model else None,
        rpm=settings.rpm,
        tpm=settings.tpm,
        request_timeout_s=settings.request_timeout,
        retry=RetryPolicy(max_attempts=settings.max_attempts, delays_s=settings.retry_delays),
        cache_path=settings.cache,
        share=share,
        position=position,
        transport=settings.transport,
        per_model=routing.per_model(settings),
    )


def result_from_generation(
    record: Record,
    model: str,
    generation: GenerationResult,
    max_latency_ms: int | None,
    policy: Policy | None = None,
) -> EvalResult:
    """Grade a generation, or turn its error into the item's outcome."""
    tag = (policy.id, policy.sha256) if policy is not None else None
    if generation.ok:
        assert generation.text is not None
        result = grade_response(record, model, generation.text, "live", tag)
        if generation.latency_exceeded:
            result.update(
                {
                    "outcome": "failed",
                    "passed": False,
                    "reason": "latency_exceeded",
                    "explanation": f"answer took {generation.latency_ms:.0f} ms, more than "
                    f"expected.max_latency_ms={max_latency_ms} "
                    f"(graded: {result['reason']})",
                }
            )
    else:
        code = generation.error_code or "unknown"
        reason = code if code in ("timeout", "cancelled") else f"generation_error:{code}"
        result = grade_response(record, model, "", "live", tag)
        tries = len(generation.attempts)
        result.update(
            {
                "outcome": "error",
                "passed": None,
                "score": None,
                "reason": reason,
                "response": None,
                "grader": "none",
                "details": {},
                "explanation": f"{generation.error_message or code} after {tries} "
                f"attempt{'s' if tries != 1 else ''}",
            }
        )
    result.update(
        {
            "latency_ms": generation.latency_ms,
            "input_tokens": generation.input_tokens,
            "output_tokens": generation.output_tokens,
            "total_tokens": generation.total_tokens,
            "first_attempt_at": generation.first_attempt_at,
            "last_attempt_at": generation.last_attempt_at,
            # Attempt holds only scalars: a flat copy is what asdict would give, at a tenth of
            # its cost (asdict deep-copies every field; it showed up in controller profiles).
            "attempts": [{f: getattr(a, f) for f in _ATTEMPT_FIELDS} for a in generation.attempts],
        }
    )
    result["details"] = {
        **result["details"],
        "cached": generation.cached,
        "cache_key": generation.cache_key,
        "finish_reason": generation.finish_reason,
        "template_version": template_version(policy) if policy is not None else None,
    }
    return result


def _transfer(source: Future[EvalResult], target: Future[EvalResult]) -> None:
    error = source.exception()
    if error is not None:
        target.set_exception(error)
    else:
        target.set_result(source.result())


class LiveEvaluator:
    """Builds requests, submits them in bulk, grades and judges results as they arrive.

    Args:
        settings: the session's settings.
        share: processes sharing the limits (xdist workers).
        position: this process's place among them (0-based; an xdist worker's number).
        conversation: earlier answers for ``--conversation-from``.
        responses: pre-computed answers (``--responses``): nothing is generated, only judged.
        policies: the session's policies (built-in and ``--policy-dir``).

    """

    def __init__(
        self,
        settings: Settings,
        *,
        share: int = 1,
        position: int = 0,
        conversation: ResponseTable | None = None,
        responses: ResponseTable | None = None,
        policies: PolicyBook | None = None,
    ) -> None:
        self.settings = settings
        self.conversation = conversation
        self.responses = responses
        self.policies = policies or PolicyBook(settings.policy_dir)
        self.engine = Engine(engine_settings(settings, share, position))
        if responses is None:
            for model in settings.model:
                self.engine.check_model(model)
        for judge in settings.judge_model:
            self.engine.check_model(judge)
        self.judges = (
            JudgePanel(
                self.engine,
                settings.judge_model,
                temperature=settings.judge_temperature,
                max_tokens=settings.judge_max_tokens,
                reasks=settings.judge_reasks,
            )
            if settings.judge_model
            else None
        )
        self.params = GenerationParams(
            temperature=settings.temperature,
            top_p=settings.top_p,
            max_new_tokens=settings.max_new_tokens,
            seed=settings.seed,
        )
        self._futures: dict[tuple[str, str], Future[GenerationResult] | Future[EvalResult]] = {}
        self._structured = self.judges.structured if self.judges else StructuredOutput(self.engine)
        self._answer_modes: dict[str, str] = {}

    def needs_judge(self, record: Record) -> bool:
        """Whether this record is judged in this session."""
        return self.judges is not None and judge_kind(record) is not None

    def request(self, record: Record, model: str) -> GenerationRequest:
        """The generation request of one item."""
        previous = self.conversation.get(record.id, model) if self.conversation else None
        if self.conversation is not None and previous is None and self.conversation.models:
            previous = self.conversation.get(record.id, self.conversation.models[0])
        max_latency = record.expected.get("max_latency_ms")
        policy = self.policies.for_record(record)
        params = self.params
        if policy.answer_contract == "json" and record.choices:
            mode = self._answer_modes.get(model, "none")
            structured = structured_params(mode, mcq_answer_schema(record), "answer")
            if structured:
                params = dataclasses.replace(params, **structured)
        return GenerationRequest(
            model=model,
            messages=tuple(build_messages(record, policy, previous_response=previous)),
            params=params,
            template_version=template_version(policy),
            max_latency_ms=max_latency if isinstance(max_latency, int) else None,
        )

    def _finish(self, record: Record, model: str, generation: GenerationResult) -> EvalResult:
        max_latency = record.expected.get("max_latency_ms")
        policy = self.policies.for_record(record)
        result = result_from_generation(
            record,
            model,
            generation,
            max_latency if isinstance(max_latency, int) else None,
            policy,
        )
        _attachment_warnings(record, result)
        return result

    async def _judged(self, record: Record, result: EvalResult, answer: str) -> EvalResult:
        assert self.judges is not None
        policy = self.policies.for_record(record)
        outcome = await self.judges.judge(record, answer, policy)
        apply_judgment(result, outcome, policy, record)  # type: ignore[arg-type]
        return result

    def _chain(
        self, record: Record, model: str, generation: Future[GenerationResult]
    ) -> Future[EvalResult]:
        """The item's result future: generation, then (when it succeeded) the judge."""
        out: Future[EvalResult] = Future()

        def generated(done: Future[GenerationResult]) -> None:
            try:
                gen = done.result()
                result = self._finish(record, model, gen)
                if not gen.ok or result["reason"] == "latency_exceeded":
                    out.set_result(result)
                    return
                judged = self.engine.run_coroutine(self._judged(record, result, gen.text or ""))
                judged.add_done_callback(lambda f: _transfer(f, out))
            except BaseException as exc:  # the test that waits must see it, not a hang
                out.set_exception(exc)

        generation.add_done_callback(generated)
        return out

    def _prefilled(self, record: Record, model: str) -> Future[EvalResult]:
        assert self.responses is not None
        response = self.responses.get(record.id, model)
        policy = self.policies.for_record(record)
        result = prefilled_result(
            record, model, response, self.responses.path, (policy.id, policy.sha256)
        )
        if response is None:
            done: Future[EvalResult] = Future()
            done.set_result(result)
            return done
        return self.engine.run_coroutine(self._judged(record, result, response))

    def prefetch(self, pairs: Sequence[tuple[Record, str]]) -> None:
        """Submit every item of this process at once (FIFO: earlier items start first)."""
        # Items whose attachment files are missing error at setup; never pay for them.
        todo = [
            (r, m)
            for r, m in pairs
            if (r.id, m) not in self._futures and not (r.attachments and missing_attachments(r))
        ]
        if self.responses is not None:
            for record, model in todo:
                if self.needs_judge(record):
                    self._futures[(record.id, model)] = self._prefilled(record, model)
            return
        self._probe_answer_modes(todo)
        futures = self.engine.submit_many([self.request(r, m) for r, m in todo])
        for (record, model), future in zip(todo, futures, strict=True):
            self._futures[(record.id, model)] = (
                self._chain(record, model, future) if self.needs_judge(record) else future
            )

    def _probe_answer_modes(self, pairs: Sequence[tuple[Record, str]]) -> None:
        """Find how each model's endpoint takes a JSON answer contract (once per model)."""
        wanted = {
            model
            for record, model in pairs
            if model not in self._answer_modes
            and record.choices
            and self.policies.for_record(record).answer_contract == "json"
        }
        for model in sorted(wanted):
            probe = self.engine.run_coroutine(self._structured.mode(model))
            self._answer_modes[model] = probe.result()

    def evaluate(self, record: Record, model: str) -> EvalResult:
        """Wait for this item's result (grading a plain generation here)."""
        future = self._futures.pop((record.id, model), None)
        if future is None:
            self.prefetch([(record, model)])
            future = self._futures.pop((record.id, model), None)
            if future is None:  # prefilled and not judged: graded right here
                assert self.responses is not None
                response = self.responses.get(record.id, model)
                policy = self.policies.for_record(record)
                return prefilled_result(
                    record, model, response, self.responses.path, (policy.id, policy.sha256)
                )
        value = future.result()
        if isinstance(value, GenerationResult):
            return self._finish(record, model, value)
        return value

    def stats(self) -> Mapping[str, Any]:
        """The engine's counters."""
        return self.engine.stats()

    def cancel(self) -> None:
        """Cancel everything pending (Ctrl-C)."""
        self.engine.cancel_all()

    def close(self) -> None:
        """Stop the engine."""
        self.engine.close()


def _attachment_warnings(record: Record, result: EvalResult) -> None:
    if not record.attachments:
        return
    warnings = [w for item in record_attachments(record) for w in item.warnings]
    if warnings:
        result["details"] = {**result["details"], "attachment_warnings": warnings}
