"""The one item runner: how a record × model becomes its ``EvalResult``.

Every process that evaluates items (a single pytest process, an xdist worker, a service
worker) runs them here, whatever the answers' source:

1. an item whose record cannot be asked (an attachment refused or missing) is an error
   with its ``record_errors``; nothing is sent;
2. an item whose grader needs a judge, in a live run without one, is skipped before any
   call (unless ``--generate-ungraded``);
3. each of the ``--epochs K`` samples gets its answer — generated now (the engine, one
   call per epoch, its own seed and cache key), or taken from ``--responses`` (a missing
   row is that epoch's ``missing_response``) — and is graded by the record's grader (a
   judge on the engine's loop, ``--judgments`` from recorded verdicts, a programmatic
   grader where the answer arrives);
4. with K > 1 the epochs are reduced to the item's verdict (``metrics._epochs``).

A live process submits all of its items up front (:meth:`ItemRunner.prefetch`) and each
item then waits only for its own result (:meth:`ItemRunner.evaluate`). What was sent and
what came back rides on the result as its ``transcript``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import Future
from functools import partial
from typing import TYPE_CHECKING, Any

from pytest_legaleval.grading._base import Grade, GradeRequest, run_inline
from pytest_legaleval.grading._graders import needs_judge_grade
from pytest_legaleval.grading._prompts import build_messages, template_version
from pytest_legaleval.pipeline.plan import ItemSpec, RunPlan
from pytest_legaleval.pipeline.results import (
    generation_failed,
    graded_result,
    missing_response_result,
    record_error_result,
    reduce_epochs,
    skipped_result,
    transcript,
)
from pytest_legaleval.records import EvalResult, Record

if TYPE_CHECKING:
    from pytest_legaleval.engine import Engine, GenerationRequest, GenerationResult
    from pytest_legaleval.grading._panel import JudgePanel

__all__ = ["ItemRunner", "engine_settings"]


def engine_settings(plan: RunPlan, share: int, position: int = 0) -> Any:
    """The engine configuration of process ``position`` (0-based) out of ``share``.

    With ``--max-cost``, the prices come from the run's price table.

    Raises:
        ConfigError: ``--max-cost`` and a model called without a price.

    """
    from pytest_legaleval.engine import EngineSettings, RetryPolicy, routing

    settings = plan.settings
    prices: Mapping[str, tuple[float, float]] = {}
    if settings.max_cost is not None:
        from pytest_legaleval.pipeline.estimate import budget_prices

        prices = budget_prices(settings, plan.prices())
    return EngineSettings(
        base_url=settings.base_url,
        api_key_env=settings.api_key_env,
        concurrency=settings.concurrency,
        judge_concurrency=settings.judge_concurrency if settings.judge_model else None,
        rpm=settings.rpm,
        tpm=settings.tpm,
        request_timeout_s=settings.request_timeout,
        max_response_bytes=settings.max_response_bytes,
        retry=RetryPolicy(max_attempts=settings.max_attempts, delays_s=settings.retry_delays),
        cache_path=settings.cache,
        share=share,
        position=position,
        transport=settings.transport,
        per_model=routing.per_model(settings),
        max_cost_usd=settings.max_cost,
        prices=dict(prices),
        batch=settings.batch,
        batch_poll_s=settings.batch_poll,
        batch_attempts=settings.batch_attempts,
        batch_max_wait_s=settings.batch_max_wait,
    )


def _max_latency(record: Record) -> int | None:
    value = record.expected.get("max_latency_ms")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _attachment_warnings(record: Record, roots: Sequence[str]) -> list[str]:
    if not record.attachments:
        return []
    from pytest_legaleval.grading._attachments import record_attachments

    return [w for item in record_attachments(record, roots) for w in item.warnings]


class _Item:
    """One item in flight: its epochs' results as they arrive, then its own."""

    __slots__ = ("done", "epochs", "future", "left", "lock", "spec")

    def __init__(self, spec: ItemSpec, epochs: int) -> None:
        self.spec = spec
        self.epochs: list[EvalResult | None] = [None] * epochs
        self.left = epochs
        self.lock = threading.Lock()
        self.future: Future[EvalResult] = Future()
        self.done: Callable[[list[EvalResult]], EvalResult] | None = None


class ItemRunner:
    """Evaluates the items of one process (see the module's docstring).

    Args:
        plan: the run's plan.
        share: processes that share the run's limits (xdist workers).
        position: this process's place among them (0-based).

    The engine starts with the first item that needs it: a run on pre-computed answers
    without a judge never imports it.

    """

    def __init__(
        self, plan: RunPlan, *, share: int = 1, position: int = 0, batch_state: Any = None
    ) -> None:
        self.plan = plan
        self._batch_state = batch_state
        """``--batch``'s store (``engine.batch_store.BatchState``); default: the cache's."""
        self.settings = plan.settings
        self.grading = plan.grading
        self.epochs = max(1, int(getattr(plan.settings, "epochs", 1) or 1))
        self.reducer = str(getattr(plan.settings, "epoch_reducer", "mean") or "mean")
        self._share = share
        self._position = position
        self._engine: Engine | None = None
        self.judges: JudgePanel | None = None
        self._items: dict[int, _Item] = {}
        self._answer_modes: dict[str, str] = {}
        self._params: dict[int, Any] = {}
        """The generation parameters of each epoch (one object, shared by its requests)."""
        self._params_seen: dict[int, tuple[Any, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    # -- the engine -----------------------------------------------------------------------

    @property
    def live(self) -> bool:
        """Whether answers are generated now (no ``--responses``)."""
        return self.plan.responses is None

    @property
    def needs_engine(self) -> bool:
        """Whether this run calls a model: live answers, or a judge."""
        return self.live or bool(self.settings.judge_model)

    @property
    def engine(self) -> Engine:
        """The engine, started on first use (the SDK-free wire client; see ``engine``)."""
        with self._lock:
            if self._engine is None:
                self._engine = self._start_engine()
            return self._engine

    def start(self) -> None:
        """Start the engine now, if the run needs one (its cache opens, its clients check).

        Raises:
            ConfigError: the engine cannot start (a key missing, a cache unusable).

        """
        if self.needs_engine:
            self.engine  # noqa: B018 - started here, not at the first item

    def _start_engine(self) -> Engine:
        from pytest_legaleval.engine import Engine

        s = self.settings
        engine = Engine(
            engine_settings(self.plan, self._share, self._position),
            scrub=self.plan.secret_scrubber(),
            batch_state=self._batch_state,
        )
        if self.live:
            for model in s.model:
                engine.check_model(model)
        for judge in s.judge_model:
            engine.check_model(judge)
        if s.judge_model:
            # Imported here: a run without a judge never loads the panel and its prompts.
            from pytest_legaleval.grading._panel import JudgePanel

            self.judges = JudgePanel(
                engine,
                s.judge_model,
                temperature=s.judge_temperature,
                max_tokens=s.judge_max_tokens,
                reasks=s.judge_reasks,
                judge_epochs=s.judge_epochs,
            )
        engine.start()
        if self.judges is not None and getattr(s, "batch", False):
            # Under --batch the judge's structured-output probe is a batch of its own: sent
            # now, it runs beside the answers' batch instead of after it (one round trip,
            # minutes to hours at a provider, saved).
            for judge in s.judge_model:
                engine.run_coroutine(self.judges.structured.mode(judge))
        return engine

    # -- one item -------------------------------------------------------------------------

    def before_any_call(self, spec: ItemSpec) -> EvalResult | None:
        """The result of an item that stops before any answer, else ``None``.

        Its attachments refused or missing (``invalid_record``), or a judge needed in a
        live run without one (``needs_judge``).
        """
        record = spec.entry
        assert isinstance(record, Record), "rejected records never reach evaluation"
        missing = self.plan.attachment_errors(record)
        if missing:
            errors = [error.to_dict() for error in missing]
            return record_error_result(record, spec.model, errors, self.grading.policy(record))
        if (
            self.live
            and not self.settings.judge_model
            and not self.settings.generate_ungraded
            and self.grading.grader(record).needs_judge
        ):
            grade = needs_judge_grade(record)
            return skipped_result(record, spec.model, grade, self.grading.policy(record))
        return None

    def _request(self, record: Record, model: str, epoch: int) -> GenerationRequest:
        """The generation request of one epoch of an item."""
        from pytest_legaleval.engine import GenerationParams, GenerationRequest

        conversation = self.plan.conversation
        previous = conversation.get(record.id, model) if conversation else None
        if conversation is not None and previous is None and conversation.models:
            previous = conversation.get(record.id, conversation.models[0])
        policy = self.grading.policy(record)
        s = self.settings
        params = self._params.get(epoch)
        if params is None:
            seed = s.seed + epoch if s.seed is not None and epoch else s.seed
            params = self._params[epoch] = GenerationParams(
                temperature=s.temperature,
                top_p=s.top_p,
                max_new_tokens=s.max_new_tokens,
                seed=seed,
            )
        if policy.answer_contract == "json" and record.choices:
            from pytest_legaleval.engine.capabilities import structured_params
            from pytest_legaleval.grading._judge_schemas import mcq_answer_schema

            mode = self._answer_modes.get(model, "none")
            structured = structured_params(mode, mcq_answer_schema(record), "answer")
            if structured:
                params = dataclasses.replace(params, **structured)
        messages = build_messages(
            record, policy, previous_response=previous, attachment_roots=s.attachments_root
        )
        return GenerationRequest(
            model=model,
            messages=tuple(messages),
            params=params,
            template_version=template_version(policy),
            max_latency_ms=_max_latency(record),
            sample=epoch,
        )

    def _params_json(self, request: GenerationRequest | None) -> Mapping[str, Any] | None:
        """A request's parameters as JSON, made once per parameters object (they are shared)."""
        if request is None:
            return None
        params = request.params
        found = self._params_seen.get(id(params))
        if found is None or found[0] is not params:
            if len(self._params_seen) >= 64:  # per-record parameters (a JSON answer schema)
                self._params_seen.clear()
            found = self._params_seen[id(params)] = (params, params.as_dict())
        return found[1]

    def _graded(
        self,
        spec: ItemSpec,
        epoch: int,
        answer: str,
        grade: Grade,
        generation: GenerationResult | None,
        request: GenerationRequest | None,
    ) -> EvalResult:
        record = spec.entry
        assert isinstance(record, Record)
        policy = self.grading.policy(record)
        result = graded_result(
            record,
            spec.model,
            answer,
            grade,
            source="prefilled" if generation is None else "live",
            policy=policy,
            generation=generation,
            template_version=template_version(policy) if generation is not None else None,
            max_latency_ms=_max_latency(record),
            warnings=_attachment_warnings(record, self.settings.attachments_root),
            recorded=(
                self.plan.responses.recorded_for(record.id, spec.model, epoch)
                if self.plan.responses is not None and generation is None
                else None
            ),
            epoch=epoch,
            transcript=transcript(
                request, answer, grade, self._params_json(request), generation=generation
            ),
        )
        return result

    def _grade(
        self,
        spec: ItemSpec,
        epoch: int,
        answer: str,
        generation: GenerationResult | None,
        request: GenerationRequest | None,
        deliver: Callable[[EvalResult], None],
    ) -> None:
        """Grade one epoch's answer and hand its result to ``deliver`` (now, or later)."""
        record = spec.entry
        assert isinstance(record, Record)
        if generation is not None and generation.latency_exceeded:
            # Failed whatever the judge would say: not worth a judge call.
            grade = needs_judge_grade(record)
            deliver(self._graded(spec, epoch, answer, grade, generation, request))
            return
        grader = self.grading.grader(record)
        graded = GradeRequest(
            record, spec.model, answer, self.grading.policy(record), self.judges, epoch
        )
        if getattr(grader, "grades_inline", False):
            grade = run_inline(grader.grade(graded))
            deliver(self._graded(spec, epoch, answer, grade, generation, request))
            return

        async def later() -> EvalResult:
            return self._graded(
                spec, epoch, answer, await grader.grade(graded), generation, request
            )

        self._run_async(later(), deliver)

    def _run_async(
        self, coroutine: Coroutine[Any, Any, EvalResult], deliver: Callable[[EvalResult], None]
    ) -> None:
        """Run a grader that awaits: on the engine's loop, else on a loop of its own."""
        if self._engine is None and not self.needs_engine:
            deliver(asyncio.run(coroutine))
            return
        future = self.engine.run_coroutine(coroutine)
        future.add_done_callback(lambda done: deliver(done.result()))

    def _epoch_done(self, item: _Item, epoch: int, result: EvalResult) -> None:
        with item.lock:
            item.epochs[epoch] = result
            item.left -= 1
            finished = item.left == 0
        if finished:
            results = [r for r in item.epochs if r is not None]
            try:
                final = results[0] if len(results) == 1 else reduce_epochs(results, self.reducer)
            except BaseException as exc:  # the item that waits must see it, not hang
                item.future.set_exception(exc)
                return
            item.future.set_result(final)

    def _deliver(self, item: _Item, epoch: int) -> Callable[[EvalResult], None]:
        def deliver(result: EvalResult) -> None:
            self._epoch_done(item, epoch, result)

        return deliver

    def _guarded(self, item: _Item, call: Callable[[], None]) -> None:
        """Run ``call``; an exception in it ends the item with that exception, never a hang."""
        try:
            call()
        except BaseException as exc:
            if not item.future.done():
                item.future.set_exception(exc)

    # -- submitting -----------------------------------------------------------------------

    def prefetch(self, specs: Sequence[ItemSpec]) -> None:
        """Submit every item of this process at once (earlier items start first).

        Without model calls (pre-computed answers, no judge) there is nothing to overlap:
        each item is graded when it is evaluated.
        """
        if not self.needs_engine and len(specs) > 1:
            return
        todo: list[_Item] = []
        for spec in specs:
            if not isinstance(spec.entry, Record) or spec.index in self._items:
                continue
            item = _Item(spec, self.epochs)
            self._items[spec.index] = item
            early = self.before_any_call(spec)
            if early is not None:
                item.future.set_result(early)
                continue
            todo.append(item)
        if not todo:
            return
        if not self.live:
            for item in todo:
                self._guarded(item, partial(self._prefilled, item))
            return
        self._probe_answer_modes([item.spec for item in todo])
        pairs = [(item, epoch) for item in todo for epoch in range(self.epochs)]
        requests = []
        for item, epoch in pairs:
            record = item.spec.entry
            assert isinstance(record, Record)
            requests.append(self._request(record, item.spec.model, epoch))
        futures = self.engine.submit_many(requests)
        for (item, epoch), request, future in zip(pairs, requests, futures, strict=True):
            future.add_done_callback(partial(self._generated, item, epoch, request))

    def _generated(
        self,
        item: _Item,
        epoch: int,
        request: GenerationRequest,
        done: Future[GenerationResult],
    ) -> None:
        self._guarded(item, partial(self._answered, item, epoch, request, done.result()))

    def _answered(
        self, item: _Item, epoch: int, request: GenerationRequest, generation: GenerationResult
    ) -> None:
        spec = item.spec
        record = spec.entry
        assert isinstance(record, Record)
        if not generation.ok:
            policy = self.grading.policy(record)
            failed = generation_failed(
                record,
                spec.model,
                generation,
                policy=policy,
                template_version=template_version(policy),
                warnings=_attachment_warnings(record, self.settings.attachments_root),
            )
            result = dataclasses.replace(
                failed,
                epoch=epoch,
                transcript=transcript(request, None, None, self._params_json(request)),
            )
            self._epoch_done(item, epoch, result)
            return
        answer = generation.text or ""
        self._grade(spec, epoch, answer, generation, request, self._deliver(item, epoch))

    def _prefilled(self, item: _Item) -> None:
        spec = item.spec
        record = spec.entry
        assert isinstance(record, Record)
        responses = self.plan.responses
        assert responses is not None
        for epoch in range(self.epochs):
            answer = responses.get(record.id, spec.model, epoch)
            if answer is None:
                missing = missing_response_result(
                    record, spec.model, responses.path, self.grading.policy(record), epoch
                )
                self._epoch_done(item, epoch, missing)
                continue
            self._grade(spec, epoch, answer, None, None, self._deliver(item, epoch))

    def _probe_answer_modes(self, specs: Sequence[ItemSpec]) -> None:
        """Find how each model's endpoint takes a JSON answer contract (once per model)."""
        wanted = {
            spec.model
            for spec in specs
            if spec.model not in self._answer_modes
            and isinstance(spec.entry, Record)
            and spec.entry.choices
            and self.grading.policy(spec.entry).answer_contract == "json"
        }
        if not wanted:
            return
        from pytest_legaleval.engine.capabilities import StructuredOutput

        engine = self.engine
        structured = self.judges.structured if self.judges else StructuredOutput(engine)
        for model in sorted(wanted):
            self._answer_modes[model] = engine.run_coroutine(structured.mode(model)).result()

    # -- waiting --------------------------------------------------------------------------

    def evaluate(self, spec: ItemSpec) -> EvalResult:
        """Wait for this item's result (submitting it first if it was not prefetched)."""
        item = self._items.get(spec.index)
        if item is None:
            self.prefetch([spec])
            item = self._items[spec.index]
        result = item.future.result()
        del self._items[spec.index]
        return result

    def finished(self) -> list[tuple[ItemSpec, EvalResult]]:
        """The items whose result is in but not yet taken, in order.

        What an interrupted run keeps: cancelled ones are left out (they are recorded as
        such).
        """
        out = []
        for index in sorted(self._items):
            item = self._items[index]
            future = item.future
            if not future.done() or future.exception() is not None:
                continue
            result = future.result()
            if result.reason != "cancelled" and "cancelled" not in {
                e.reason for e in result.epochs
            }:
                out.append((item.spec, result))
        return out

    def stats(self) -> Mapping[str, Any]:
        """The engine's counters (empty without an engine)."""
        return self._engine.stats() if self._engine is not None else {}

    def cancel(self, timeout_s: float = 2.0) -> None:
        """Cancel every pending call (Ctrl-C); their items end ``cancelled``.

        Returns within about ``timeout_s``: in-flight calls are waited for that long.
        """
        if self._engine is not None:
            self._engine.cancel_all(timeout_s)

    def close(self) -> None:
        """Stop the engine."""
        if self._engine is not None:
            self._engine.close()
