"""The pipelined engine: one asyncio loop per process in a daemon thread.

The synchronous pytest side submits everything up front and each test then waits only for
its own ``concurrent.futures.Future``. This module is the thread-safe, caller-side half
(lifecycle, submission, dedupe, cache reads, resolution, stats); ``scheduler`` is the
loop-side half (dispatch, attempts, retries, rate limits, cancellation).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_legaleval.engine.batch_store import BatchState, BatchStore
from pytest_legaleval.engine.budget import Budget
from pytest_legaleval.engine.cache import CachedRow, ResultCache, cache_key, now_timestamp
from pytest_legaleval.engine.jobs import Job, cached_result, for_waiter, success_result
from pytest_legaleval.engine.pgcache import PgResultCache, is_database_url
from pytest_legaleval.engine.providers import (
    BatchTarget,
    Provider,
    ProviderRegistry,
    default_registry,
    split_model,
)
from pytest_legaleval.engine.ratelimit import estimate_tokens
from pytest_legaleval.engine.scheduler import Scheduler
from pytest_legaleval.engine.types import (
    EngineSettings,
    GenerationRequest,
    GenerationResult,
    RawCompletion,
)
from pytest_legaleval.errors import ConfigError, InvalidState

if TYPE_CHECKING:
    from pytest_legaleval.engine.batch import BatchRunner

__all__ = ["PURPOSES", "Engine"]

_log = logging.getLogger(__name__)

T = TypeVar("T")

PURPOSES: tuple[str, ...] = ("generation", "judge")
"""Accepted values of ``GenerationRequest.purpose``."""


class Engine:
    """Runs generation requests concurrently with retries, rate limits and a result cache.

    Thread-safe: ``submit``/``submit_many``/``cancel_all``/``stats``/``close`` may be called
    from any thread. Futures never raise; failures are results with an ``error_code``.

    Args:
        settings: limits, retry policy, cache location and transport.
        registry: provider lookup; defaults to the built-in providers (``openai``).
        scrub: applied to a reply's text before it is written to the cache (e.g. a redactor
            that removes secrets); callers always get the reply as received, a later cache
            hit gets the scrubbed text. A scrub that raises leaves that result uncached.
            Behaviour, not configuration, so it is not part of ``EngineSettings``.
        batch_state: where ``--batch`` keeps its batches; default: tables in the cache
            file (``engine.batch_store``). The engine closes it.

    """

    def __init__(
        self,
        settings: EngineSettings,
        *,
        registry: ProviderRegistry | None = None,
        scrub: Callable[[str], str] | None = None,
        batch_state: BatchState | None = None,
    ) -> None:
        self.settings = settings
        self._scrub = scrub
        self._registry = registry if registry is not None else default_registry()
        self._lock = threading.Lock()  # guards _inflight, _providers and the counters
        self._inflight: dict[str, Job] = {}
        self._providers: dict[str, Provider] = {}
        self._checked_models: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._cache: ResultCache | PgResultCache | None = None
        self._budget = Budget.for_settings(settings)
        self._scheduler = Scheduler(settings, self._store_and_resolve, self._resolve, self._budget)
        self._batcher: BatchRunner | None = None
        self._batch_store: BatchState | None = batch_state
        self._no_batch_api = 0
        """``--batch`` calls that went live because their provider has no Batch API."""
        self._closed = False
        self._counts: dict[str, int] = dict.fromkeys(
            ("submitted", "completed", "failed", "cancelled", "cache_hits", "deduped"), 0
        )

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Open the cache and start the loop thread; idempotent."""
        with self._lock:
            if self._closed:
                raise InvalidState("Engine is closed")
            if self._thread is not None:
                return
            path = self.settings.cache_path
            if path is not None and is_database_url(path):
                # a service's replicas share their database's cache (engine.pgcache)
                self._cache = PgResultCache(path, scrub=self._scrub)
            elif path is not None:
                self._cache = ResultCache(path, scrub=self._scrub)
            if self.settings.batch:
                if self._batch_store is None and isinstance(self._cache, ResultCache):
                    self._batch_store = BatchStore.beside(self._cache)
                elif self._batch_store is None and self._cache is not None:
                    # No batch tables in PostgreSQL yet: a caller passes its own BatchState.
                    _log.warning(
                        "legaleval --batch: batches are kept in memory only with a database "
                        "cache; a killed run will not resume them"
                    )
                # Imported here: it loads aiohttp, which a run of recorded answers never needs.
                from pytest_legaleval.engine.batch import BatchRunner

                self._batcher = BatchRunner(
                    self.settings,
                    self._batch_store,
                    self._store_batch_answer,
                    self._resolve,
                    self._scheduler.enqueue,
                )
            loop = asyncio.new_event_loop()
            ready = threading.Event()
            thread = threading.Thread(
                target=self._run_loop, args=(loop, ready), name="legaleval-engine", daemon=True
            )
            thread.start()
            ready.wait()
            # Pools exist before any other thread can see a started engine.
            asyncio.run_coroutine_threadsafe(self._scheduler.setup(), loop).result()
            self._loop, self._thread = loop, thread
        atexit.register(self.close)

    def _run_loop(self, loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        loop.run_forever()

    def __enter__(self) -> Engine:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Cancel what is left, close clients, stop the loop and close the cache; idempotent.

        Safe to call from ``atexit`` (it is registered there by ``start``).
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        atexit.unregister(self.close)
        if loop is not None and thread is not None and thread.is_alive():
            self._cancel_all(loop, 2.0)
            try:
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(5.0)
            except (FutureTimeout, RuntimeError):
                pass
            loop.call_soon_threadsafe(loop.stop)
            thread.join(5.0)
            if not thread.is_alive():
                loop.close()
        if self._cache is not None:
            self._cache.close()
        if self._batch_store is not None:
            self._batch_store.close()

    async def _shutdown(self) -> None:
        self._scheduler.stop_dispatchers()
        if self._batcher is not None:
            await self._batcher.aclose()
        for provider in list(self._providers.values()):
            try:
                await provider.aclose()
            except Exception:  # closing is best effort; the loop stops right after
                pass

    # ----------------------------------------------------------------- submission
    def check_model(self, model: str) -> None:
        """Raise ``ConfigError`` now if ``model`` cannot be served (unknown provider, no key)."""
        self._provider_for(model)

    def _provider_for(self, model: str) -> Provider:
        with self._lock:
            prefix = split_model(model)[0]
            provider = self._providers.get(prefix)
            if provider is None:
                provider = self._registry.create(prefix, self.settings)
                self._providers[prefix] = provider
            if model not in self._checked_models:
                provider.check(model)
                self._checked_models.add(model)
            return provider

    def submit(self, request: GenerationRequest) -> Future[GenerationResult]:
        """Queue one request; non-blocking. Identical in-flight requests share one call.

        A duplicate submitted after the first one finished is a cache hit (or, without a
        cache, a new call).

        Raises:
            ConfigError: the model's provider is unknown or not configured.

        """
        return self.submit_many([request])[0]

    def submit_many(self, requests: Sequence[GenerationRequest]) -> list[Future[GenerationResult]]:
        """Queue many requests with one cache query and one loop wake-up; FIFO start order.

        Raises:
            ConfigError: a model's provider is unknown or not configured, or a purpose is
                unknown; nothing is queued then.

        """
        self.start()
        loop = self._loop
        assert loop is not None
        return self._submit_many(loop, requests)

    def _submit_many(
        self, loop: asyncio.AbstractEventLoop, requests: Sequence[GenerationRequest]
    ) -> list[Future[GenerationResult]]:
        prepared: list[tuple[GenerationRequest, str, Provider]] = []
        for request in requests:
            if request.purpose not in PURPOSES:
                raise ConfigError(f"Expected purpose in {PURPOSES} but got {request.purpose!r}")
            provider = self._provider_for(request.model)
            if self._budget is not None:
                self._budget.cost(request.model, 0, 0)  # a model without a price: ConfigError
            params = provider.effective_params(request)
            if params is not request.params:
                request = replace(request, params=params)
            prepared.append(
                (request, cache_key(request, provider.endpoint(request.model)), provider)
            )
        hits = self._cache.get_many(k for _, k, _ in prepared) if self._cache else {}

        futures: list[Future[GenerationResult]] = []
        ready: list[tuple[Future[GenerationResult], GenerationResult]] = []
        new_jobs: list[Job] = []
        batch_jobs: list[tuple[Job, BatchTarget]] = []
        with self._lock:
            if self._closed:
                raise InvalidState("Engine is closed")
            for request, key, provider in prepared:
                future: Future[GenerationResult] = Future()
                futures.append(future)
                self._counts["submitted"] += 1
                job = self._inflight.get(key)
                if job is not None:
                    job.waiters.append((future, request.max_latency_ms))
                    self._counts["deduped"] += 1
                elif key in hits:
                    self._counts["cache_hits"] += 1
                    ready.append((future, cached_result(request, hits[key])))
                else:
                    estimate = estimate_tokens(request.messages, request.params.max_new_tokens)
                    job = Job(
                        request,
                        key,
                        provider,
                        self._scheduler.pools[request.purpose],
                        [(future, request.max_latency_ms)],
                        estimate,
                    )
                    if self._budget is not None:
                        job.cost_estimate = self._budget.estimate(request)
                    self._inflight[key] = job
                    target = self._batch_target(job)
                    if target is not None:
                        batch_jobs.append((job, target))
                    else:
                        new_jobs.append(job)
            self._counts["completed"] += len(ready)
        for future, result in ready:
            future.set_result(result)
        if new_jobs:
            loop.call_soon_threadsafe(self._scheduler.enqueue, new_jobs)
        if batch_jobs and self._batcher is not None:
            loop.call_soon_threadsafe(self._batcher.enqueue, batch_jobs)
        return futures

    def _batch_target(self, job: Job) -> BatchTarget | None:
        """Where ``job`` goes in a batch.

        ``None``: it goes live (no ``--batch``, or a provider without a Batch API). The
        judge's structured-output probe is batched too: under ``--batch`` nothing goes
        live but retries.
        """
        if self._batcher is None:
            return None
        target = getattr(job.provider, "batch_target", None)
        found = target(job.request) if callable(target) else None
        if found is None:
            self._no_batch_api += 1  # under self._lock (see _submit_many)
        return found

    async def agenerate(self, request: GenerationRequest) -> GenerationResult:
        """Await one request from a coroutine running on this engine's loop."""
        return await asyncio.wrap_future(self.submit(request))

    def run_coroutine(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Run ``coro`` on the engine's loop (from any thread); its future for the result."""
        self.start()
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    # ----------------------------------------------------------------- completion
    def _store_and_resolve(self, job: Job, raw: RawCompletion, result: GenerationResult) -> None:
        if self._cache is None:
            self._resolve(job, result)
            return
        row = CachedRow(
            cache_key=job.key,
            text=raw.text,
            finish_reason=raw.finish_reason,
            input_tokens=raw.input_tokens,
            output_tokens=raw.output_tokens,
            latency_ms=result.latency_ms,
            model=job.request.model,
            created_at=now_timestamp(),
            cached_input_tokens=raw.cached_input_tokens,
            batch=result.batch,
        )
        # Callers see the result only after it is durable, so a SIGKILL can never lose a
        # result someone already acted on.
        self._cache.put(row, lambda: self._resolve(job, result))

    def _store_batch_answer(
        self,
        key: str,
        model: str,
        raw: RawCompletion,
        job: Job | None,
        after: Callable[[], None],
    ) -> None:
        """Cache a batch's answer, resolve its job (if this run asked), then ``after``.

        A resumed batch also answers requests no caller of this run asked for: they are
        cached all the same, so no later run pays for them again.
        """
        result = success_result(job, raw) if job is not None else None

        def durable() -> None:
            if job is not None and result is not None:
                self._resolve(job, result)
            after()

        if self._cache is None:
            durable()
            return
        row = CachedRow(
            cache_key=key,
            text=raw.text,
            finish_reason=raw.finish_reason,
            input_tokens=raw.input_tokens,
            output_tokens=raw.output_tokens,
            latency_ms=result.latency_ms if result is not None else None,
            model=model,
            created_at=now_timestamp(),
            cached_input_tokens=raw.cached_input_tokens,
            batch=True,
        )
        self._cache.put(row, durable)

    def _resolve(self, job: Job, result: GenerationResult) -> None:
        """Hand ``result`` to every waiter of ``job``; callable from any thread, once."""
        with self._lock:
            if job.resolved:
                return
            job.resolved = True
            if self._inflight.get(job.key) is job:
                del self._inflight[job.key]
            waiters, job.waiters = job.waiters, []
            self._counts["completed"] += len(waiters)
            if result.error_code == "cancelled":
                self._counts["cancelled"] += len(waiters)
            elif result.error_code is not None:
                self._counts["failed"] += len(waiters)
        for future, max_latency_ms in waiters:
            if future.set_running_or_notify_cancel():
                future.set_result(for_waiter(result, job, max_latency_ms))

    # ----------------------------------------------------------------- cancellation
    def cancel_all(self, timeout_s: float = 2.0) -> None:
        """Cancel queued, waiting and in-flight calls; their futures get ``cancelled`` results.

        Returns within about ``timeout_s``. The engine stays usable afterwards.
        """
        loop = self._loop
        if loop is None or self._thread is None or not self._thread.is_alive():
            return
        self._cancel_all(loop, timeout_s)

    def _cancel_all(self, loop: asyncio.AbstractEventLoop, timeout_s: float) -> None:
        future = asyncio.run_coroutine_threadsafe(self._cancel_everything(timeout_s), loop)
        try:
            future.result(timeout_s + 0.5)
        except (FutureTimeout, RuntimeError):
            future.cancel()

    async def _cancel_everything(self, timeout_s: float) -> None:
        if self._batcher is not None:
            self._batcher.cancel_all()
        await self._scheduler.cancel_everything(timeout_s)

    # ----------------------------------------------------------------- introspection
    def stats(self) -> dict[str, Any]:
        """Return a snapshot of the counters.

        Keys: submitted, completed, in_flight, queued, peak_in_flight, cache_hits, deduped,
        retries, rate_limited, failed, cancelled, concurrency_limit (current, adaptive),
        concurrency_max, concurrency_lowest, judge_concurrency_limit, cache_write_errors,
        spent_usd, answers_usd (the items' calls only: no probe, no held reservation) and
        budget_refused (``None`` without ``--max-cost``; read on the loop's thread, so a
        value may lag by a call).
        """
        with self._lock:
            out: dict[str, Any] = dict(self._counts)
        scheduler = self._scheduler
        pools = scheduler.distinct_pools()
        main = scheduler.pools.get("generation")
        judge = scheduler.pools.get("judge")
        out.update(
            in_flight=sum(len(p.running) for p in pools),
            queued=sum(len(p.queue) + len(p.retries) for p in pools) + len(scheduler.waiting),
            peak_in_flight=scheduler.peak_in_flight,
            retries=scheduler.retries,
            rate_limited=scheduler.rate_limited,
            concurrency_limit=main.limiter.limit if main else self.settings.process_concurrency,
            concurrency_max=self.settings.process_concurrency,
            concurrency_lowest=main.limiter.lowest if main else self.settings.process_concurrency,
            judge_concurrency_limit=judge.limiter.limit if judge and judge is not main else None,
            cache_write_errors=self._cache.write_errors if self._cache else 0,
            spent_usd=self._budget.spent_usd if self._budget else None,
            answers_usd=self._budget.answers_usd if self._budget else None,
            budget_refused=self._budget.refused if self._budget else None,
        )
        if self._batcher is not None:
            out.update(self._batcher.snapshot(), batch_no_api_calls=self._no_batch_api)
        return out
