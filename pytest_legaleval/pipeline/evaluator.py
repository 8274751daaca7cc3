"""Item evaluation: a process submits all of its items up front, each waits for its own.

An item is generated (live) or taken from the responses file, then graded by the grader
its record's policy or task type names (``grading.registry``). Graders that ask a judge
run on the engine's loop, chained to their generation, so judging one item overlaps
generating the next; the others grade where the item waits. Each item's result is built
once (``pipeline.results``).

Nothing is paid for that cannot be graded: without a judge, an item whose grader needs
one is skipped (``needs_judge``) before its generation, unless ``--generate-ungraded``.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from pytest_legaleval.engine import (
    Engine,
    EngineSettings,
    GenerationParams,
    GenerationRequest,
    GenerationResult,
    RetryPolicy,
    routing,
)
from pytest_legaleval.engine.capabilities import StructuredOutput, structured_params
from pytest_legaleval.grading.attachments import missing_attachments, record_attachments
from pytest_legaleval.grading.base import Grade, GradeRequest
from pytest_legaleval.grading.graders import needs_judge_grade
from pytest_legaleval.grading.judge_schemas import mcq_answer_schema
from pytest_legaleval.grading.policies import PolicyBook
from pytest_legaleval.grading.prompts import build_messages, template_version
from pytest_legaleval.grading.registry import GraderRegistry
from pytest_legaleval.pipeline.grading_plan import GradingPlan
from pytest_legaleval.pipeline.responses import ResponseTable
from pytest_legaleval.pipeline.results import generation_failed, graded_result, skipped_result
from pytest_legaleval.pipeline.settings import Settings
from pytest_legaleval.records import EvalResult, Record

if TYPE_CHECKING:
    from pytest_legaleval.grading.panel import JudgePanel

__all__ = ["LiveEvaluator", "engine_settings"]


def engine_settings(
    settings: Settings,
    share: int,
    position: int = 0,
    prices: Mapping[str, tuple[float, float]] | None = None,
) -> EngineSettings:
    """Engine configuration of process ``position`` (0-based) out of ``share``.

    With ``--max-cost``, ``prices`` (``pipeline.estimate.budget_prices``) are read from the
    run's price table when not given.

    Raises:
        ConfigError: ``--max-cost`` and a model called without a price.

    """
    if settings.max_cost is not None and prices is None:
        from pytest_legaleval.pipeline.estimate import budget_prices, run_prices

        prices = budget_prices(settings, run_prices(settings))
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
        max_cost_usd=settings.max_cost,
        prices=dict(prices or {}),
    )


def _max_latency(record: Record) -> int | None:
    value = record.expected.get("max_latency_ms")
    return value if isinstance(value, int) else None


def _attachment_warnings(record: Record, roots: Sequence[str]) -> list[str]:
    if not record.attachments:
        return []
    return [w for item in record_attachments(record, roots) for w in item.warnings]


def _transfer(source: Future[EvalResult], target: Future[EvalResult]) -> None:
    error = source.exception()
    if error is not None:
        target.set_exception(error)
    else:
        target.set_result(source.result())


class LiveEvaluator:
    """Builds requests, submits them in bulk, grades and judges results as they arrive.

    Args:
        settings: the run's settings.
        share: processes sharing the limits (xdist workers).
        position: this process's place among them (0-based; an xdist worker's number).
        conversation: earlier answers for ``--conversation-from``.
        responses: pre-computed answers (``--responses``): nothing is generated, only judged.
        policies: the run's policies (built-in and ``--policy-dir``).
        graders: the graders (built-in and the user's).
        scrub: applied to answers before they are cached (secrets out; the item itself
            is graded on the answer as received).

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
        graders: GraderRegistry | None = None,
        scrub: Callable[[str], str] | None = None,
    ) -> None:
        self.settings = settings
        self.conversation = conversation
        self.responses = responses
        self.grading = GradingPlan(policies or PolicyBook(settings.policy_dir), graders)
        self.engine = Engine(
            engine_settings(settings, share, position), scrub=scrub
        )
        if responses is None:
            for model in settings.model:
                self.engine.check_model(model)
        for judge in settings.judge_model:
            self.engine.check_model(judge)
        self.judges: JudgePanel | None = None
        if settings.judge_model:
            # Imported here: a run without a judge never loads the panel and its prompts.
            from pytest_legaleval.grading.panel import JudgePanel

            self.judges = JudgePanel(
                self.engine,
                settings.judge_model,
                temperature=settings.judge_temperature,
                max_tokens=settings.judge_max_tokens,
                reasks=settings.judge_reasks,
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

    @property
    def policies(self) -> PolicyBook:
        """The run's policies."""
        return self.grading.policies

    def _skips_before_generation(self, record: Record) -> bool:
        """Whether an item's answer could not be graded here: then it is never generated."""
        return (
            self.judges is None
            and not self.settings.generate_ungraded
            and self.grading.grader(record).needs_judge
        )

    def request(self, record: Record, model: str) -> GenerationRequest:
        """The generation request of one item."""
        previous = self.conversation.get(record.id, model) if self.conversation else None
        if self.conversation is not None and previous is None and self.conversation.models:
            previous = self.conversation.get(record.id, self.conversation.models[0])
        policy = self.grading.policy(record)
        params = self.params
        if policy.answer_contract == "json" and record.choices:
            mode = self._answer_modes.get(model, "none")
            structured = structured_params(mode, mcq_answer_schema(record), "answer")
            if structured:
                params = dataclasses.replace(params, **structured)
        return GenerationRequest(
            model=model,
            messages=tuple(
                build_messages(
                    record,
                    policy,
                    previous_response=previous,
                    attachment_roots=self.settings.attachments_root,
                )
            ),
            params=params,
            template_version=template_version(policy),
            max_latency_ms=_max_latency(record),
        )

    def _request_for(
        self, record: Record, model: str, generation: GenerationResult
    ) -> GradeRequest:
        return GradeRequest(
            record, model, generation.text or "", self.grading.policy(record), self.judges
        )

    def _result(
        self, record: Record, model: str, generation: GenerationResult, grade: Grade | None
    ) -> EvalResult:
        """The item's result from its generation and (when it succeeded) its grade."""
        policy = self.grading.policy(record)
        tag = policy
        version = template_version(policy)
        warnings = _attachment_warnings(record, self.settings.attachments_root)
        if not generation.ok or grade is None:
            return generation_failed(
                record, model, generation, policy=tag, template_version=version, warnings=warnings
            )
        return graded_result(
            record,
            model,
            generation.text or "",
            grade,
            source="live",
            policy=tag,
            generation=generation,
            template_version=version,
            max_latency_ms=_max_latency(record),
            warnings=warnings,
        )

    def _finish(self, record: Record, model: str, generation: GenerationResult) -> EvalResult:
        """Grade a generation where the item waits (graders that ask no judge)."""
        if not generation.ok:
            return self._result(record, model, generation, None)
        grade = self.grading.grade_sync(self._request_for(record, model, generation))
        if inspect.isawaitable(grade):  # a user's grader that awaits something of its own
            grade = self.engine.run_coroutine(_awaited(grade)).result()
        return self._result(record, model, generation, grade)

    async def _judged(self, record: Record, model: str, generation: GenerationResult) -> EvalResult:
        request = self._request_for(record, model, generation)
        if generation.latency_exceeded:
            # Failed whatever the judge would say: not worth a judge call.
            grade: Grade = needs_judge_grade(record)
            return self._result(record, model, generation, grade)
        value = self.grading.grade_sync(request)
        grade = await value if inspect.isawaitable(value) else value
        return self._result(record, model, generation, grade)

    def _chain(
        self, record: Record, model: str, generation: Future[GenerationResult]
    ) -> Future[EvalResult]:
        """The item's result future: generation, then (when it succeeded) the judge."""
        out: Future[EvalResult] = Future()

        def generated(done: Future[GenerationResult]) -> None:
            try:
                gen = done.result()
                if not gen.ok:
                    out.set_result(self._result(record, model, gen, None))
                    return
                judged = self.engine.run_coroutine(self._judged(record, model, gen))
                judged.add_done_callback(lambda f: _transfer(f, out))
            except BaseException as exc:  # the test that waits must see it, not a hang
                out.set_exception(exc)

        generation.add_done_callback(generated)
        return out

    def _judged_by_engine(self, record: Record) -> bool:
        return self.judges is not None and self.grading.grader(record).needs_judge

    def prefetch(self, pairs: Sequence[tuple[Record, str]]) -> None:
        """Submit every item of this process at once (FIFO: earlier items start first)."""
        # Items whose attachment files are missing error at setup; never pay for them.
        todo = [
            (r, m)
            for r, m in pairs
            if (r.id, m) not in self._futures
            and not (r.attachments and missing_attachments(r, self.settings.attachments_root))
        ]
        if self.responses is not None:
            for record, model in todo:
                if self._judged_by_engine(record):
                    value = self.grading.prefilled(record, model, self.responses, self.judges)
                    self._futures[(record.id, model)] = (
                        self.engine.run_coroutine(_awaited(value))
                        if inspect.isawaitable(value)
                        else _done(value)
                    )
            return
        todo = [(r, m) for r, m in todo if not self._skips_before_generation(r)]
        self._probe_answer_modes(todo)
        futures = self.engine.submit_many([self.request(r, m) for r, m in todo])
        for (record, model), future in zip(todo, futures, strict=True):
            self._futures[(record.id, model)] = (
                self._chain(record, model, future) if self._judged_by_engine(record) else future
            )

    def _probe_answer_modes(self, pairs: Sequence[tuple[Record, str]]) -> None:
        """Find how each model's endpoint takes a JSON answer contract (once per model)."""
        wanted = {
            model
            for record, model in pairs
            if model not in self._answer_modes
            and record.choices
            and self.grading.policy(record).answer_contract == "json"
        }
        for model in sorted(wanted):
            probe = self.engine.run_coroutine(self._structured.mode(model))
            self._answer_modes[model] = probe.result()

    def evaluate(self, record: Record, model: str) -> EvalResult:
        """Wait for this item's result (grading a plain generation here)."""
        future = self._futures.pop((record.id, model), None)
        if future is None:
            if self.responses is None and self._skips_before_generation(record):
                grade = needs_judge_grade(record)
                return skipped_result(record, model, grade, self.grading.policy(record))
            self.prefetch([(record, model)])
            future = self._futures.pop((record.id, model), None)
            if future is None:  # prefilled and graded without the engine: graded right here
                assert self.responses is not None
                value = self.grading.prefilled(record, model, self.responses, None)
                if inspect.isawaitable(value):
                    done: EvalResult = self.engine.run_coroutine(_awaited(value)).result()
                    return done
                return value
        result = future.result()
        if isinstance(result, GenerationResult):
            return self._finish(record, model, result)
        return result

    def stats(self) -> Mapping[str, Any]:
        """The engine's counters."""
        return self.engine.stats()

    def cancel(self) -> None:
        """Cancel everything pending (Ctrl-C)."""
        self.engine.cancel_all()

    def close(self) -> None:
        """Stop the engine."""
        self.engine.close()


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


def _done(value: EvalResult) -> Future[EvalResult]:
    future: Future[EvalResult] = Future()
    future.set_result(value)
    return future
