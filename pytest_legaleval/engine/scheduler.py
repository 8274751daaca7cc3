"""The loop-side half of the engine: dispatch, attempts, retries and cancellation.

Everything here runs on the engine's event-loop thread. Per pool, a single dispatcher
coroutine starts jobs in FIFO order while the in-flight count is below the (adaptive) limit
and the rate buckets allow; only in-flight calls own a task, so 50,000 queued requests cost
a deque entry each. A job waiting for a retry gives its slot back (a timer re-queues it),
so backoff never idles the pool.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Iterable

from pytest_legaleval.engine.budget import BUDGET_REASON, Budget, is_overhead
from pytest_legaleval.engine.jobs import Job, Pool, failed_result, success_result
from pytest_legaleval.engine.ratelimit import AdaptiveConcurrency, TokenBucket
from pytest_legaleval.engine.retry import classify_error
from pytest_legaleval.engine.sanitize import checked_completion, clean_text
from pytest_legaleval.engine.types import (
    Attempt,
    EngineSettings,
    GenerationResult,
    RawCompletion,
    utc_timestamp,
)

__all__ = ["Scheduler"]

OnSuccess = Callable[[Job, RawCompletion, GenerationResult], None]
OnDone = Callable[[Job, GenerationResult], None]


class Scheduler:
    """Pools, rate buckets and retry timers of one engine.

    Args:
        settings: the engine's settings (limits are already per process).
        on_success: called with a successful job (the engine stores, then resolves it).
        on_done: called with a failed or cancelled job (the engine resolves it).
        budget: the spend cap (``--max-cost``), if any.

    """

    def __init__(
        self,
        settings: EngineSettings,
        on_success: OnSuccess,
        on_done: OnDone,
        budget: Budget | None = None,
    ) -> None:
        self.settings = settings
        self.budget = budget
        self._on_success = on_success
        self._on_done = on_done
        self.pools: dict[str, Pool] = {}
        self.waiting: set[Job] = set()
        self._rng = random.Random()
        self._rpm = TokenBucket(settings.process_rpm) if settings.process_rpm else None
        self._tpm = TokenBucket(settings.process_tpm) if settings.process_tpm else None
        self.retries = 0
        self.rate_limited = 0
        self.peak_in_flight = 0

    async def setup(self) -> None:
        """Create the pools and their dispatchers (on the loop)."""
        main = self._new_pool("generation", self.settings.process_concurrency)
        self.pools["generation"] = main
        judge = self.settings.process_judge_concurrency
        self.pools["judge"] = main if judge is None else self._new_pool("judge", judge)

    def _new_pool(self, name: str, limit: int) -> Pool:
        pool = Pool(name, AdaptiveConcurrency(limit), asyncio.Event())
        pool.dispatcher = asyncio.get_running_loop().create_task(self._dispatch(pool))
        return pool

    def distinct_pools(self) -> list[Pool]:
        """Each pool once (``judge`` may be the ``generation`` pool)."""
        return list({id(p): p for p in self.pools.values()}.values())

    def enqueue(self, jobs: Iterable[Job]) -> None:
        """Append jobs in submission order and wake their dispatchers."""
        woken: dict[int, Pool] = {}
        if self.budget is not None and self.budget.exhausted:
            for job in jobs:
                self._refuse(job)
            return
        for job in jobs:
            job.pool.queue.append(job)
            woken[id(job.pool)] = job.pool
        for pool in woken.values():
            pool.wakeup.set()

    def stop_dispatchers(self) -> None:
        """Cancel the dispatcher tasks (at shutdown)."""
        for pool in self.distinct_pools():
            if pool.dispatcher is not None:
                pool.dispatcher.cancel()

    # ----------------------------------------------------------------- dispatch
    async def _dispatch(self, pool: Pool) -> None:
        loop = asyncio.get_running_loop()
        while True:
            job = pool.next_job()
            if job is None or len(pool.running) >= pool.limiter.limit:
                pool.wakeup.clear()
                await pool.wakeup.wait()
                continue
            budget = self.budget
            if budget is not None and not budget.fits(job.cost_estimate):
                if budget.in_flight and not budget.exhausted:
                    # Calls in flight usually cost less than they hold: wait for them.
                    pool.wakeup.clear()
                    await pool.wakeup.wait()
                    continue
                self._exhaust_budget(job.cost_estimate)
                continue
            wait = self._rate_wait(job)
            if wait > 0:
                await asyncio.sleep(wait)
                continue  # the queue may have changed (cancel_all) while sleeping
            pool.pop_next()
            if budget is not None:
                job.reserved = job.cost_estimate
                budget.reserve(job.reserved)
            if self._rpm is not None:
                self._rpm.take(1)
            if self._tpm is not None:
                self._tpm.take(job.token_estimate)
            job.started_epoch = pool.limiter.epoch
            pool.running.add(job)
            job.task = loop.create_task(self._run_attempt(job))
            in_flight = sum(len(p.running) for p in self.distinct_pools())
            self.peak_in_flight = max(self.peak_in_flight, in_flight)

    def _rate_wait(self, job: Job) -> float:
        wait = 0.0
        if self._rpm is not None:
            wait = self._rpm.wait_time(1)
        if self._tpm is not None:
            wait = max(wait, self._tpm.wait_time(job.token_estimate))
        return wait

    def _release(self, job: Job) -> None:
        job.task = None
        job.pool.running.discard(job)
        job.pool.wakeup.set()

    def _settle(self, job: Job, actual: float | None) -> None:
        """Replace the attempt's reservation by its cost (``None``: what it reserved)."""
        budget = self.budget
        if budget is None or not job.reserved:
            return
        reserved, job.reserved = job.reserved, 0.0
        budget.settle(reserved, actual, overhead=is_overhead(job.request))
        # A pool waiting for the budget may fit now.
        for pool in self.distinct_pools():
            pool.wakeup.set()

    def _spent(self, job: Job, raw: RawCompletion) -> float | None:
        if self.budget is None or raw.input_tokens is None or raw.output_tokens is None:
            return None
        return self.budget.cost(job.request.model, raw.input_tokens, raw.output_tokens)

    def _refuse(self, job: Job) -> None:
        assert self.budget is not None
        self.budget.refused += 1
        message = self.budget.message(job.cost_estimate)
        self._on_done(job, failed_result(job, "cancelled", message, BUDGET_REASON))

    def _exhaust_budget(self, amount: float) -> None:
        """Nothing fits and nothing is in flight: every call not yet sent is cancelled."""
        assert self.budget is not None
        self.budget.exhausted = True
        for pool in self.distinct_pools():
            queued = [*pool.retries, *pool.queue]
            pool.retries.clear()
            pool.queue.clear()
            for job in queued:
                self._refuse(job)
        for job in list(self.waiting):
            if job.timer is not None:
                job.timer.cancel()
            self.waiting.discard(job)
            self._refuse(job)

    async def _run_attempt(self, job: Job) -> None:
        try:
            await self._attempt(job)
        except Exception as exc:
            # A bug past the provider call (ours, or a provider's odd value): the job still
            # ends, with a result, so no caller waits forever.
            if job in job.pool.running:
                self._release(job)
            self._settle(job, None)
            if not job.resolved:
                message = clean_text(f"engine error: {type(exc).__name__}: {exc}"[:300])[0]
                self._on_done(job, failed_result(job, "internal_error", message))

    async def _attempt(self, job: Job) -> None:
        number = len(job.attempts) + 1
        started_wall = time.time()
        started = time.perf_counter()
        try:
            # The SDK has the same timeout; this one also bounds slow-trickle bodies, which
            # the transports only time per read.
            async with asyncio.timeout(self.settings.request_timeout_s):
                raw = checked_completion(await job.provider.complete(job.request))
        except asyncio.CancelledError:
            # Only cancel_all/close cancel these tasks; the job ends as "cancelled".
            latency = (time.perf_counter() - started) * 1000.0
            stamp = utc_timestamp(started_wall)
            job.attempts.append(Attempt(number, stamp, latency, "cancelled", message="cancelled"))
            self._release(job)
            self._settle(job, None)
            self._on_done(job, failed_result(job, "cancelled", "cancelled"))
            return
        except Exception as exc:
            self._on_failure(job, exc, number, started_wall, started)
            return
        latency = (time.perf_counter() - started) * 1000.0
        job.attempts.append(
            Attempt(
                number,
                utc_timestamp(started_wall),
                latency,
                None,
                input_tokens=raw.input_tokens,
                output_tokens=raw.output_tokens,
                warnings=raw.warnings,
                cached_input_tokens=raw.cached_input_tokens,
            )
        )
        self._release(job)
        self._settle(job, self._spent(job, raw))
        job.pool.limiter.on_success()
        if self._tpm is not None and raw.input_tokens is not None:
            actual = raw.input_tokens + (raw.output_tokens or 0)
            self._tpm.adjust(job.token_estimate - actual)
        self._on_success(job, raw, success_result(job, raw))

    def _on_failure(
        self, job: Job, exc: Exception, number: int, started_wall: float, started: float
    ) -> None:
        latency = (time.perf_counter() - started) * 1000.0
        found = classify_error(exc)
        job.attempts.append(
            Attempt(
                number,
                utc_timestamp(started_wall),
                latency,
                found.code,
                status_code=found.status_code,
                retry_after_s=found.retry_after_s,
                message=found.message,
            )
        )
        self._release(job)
        # An HTTP error cost nothing; without a reply the vendor may have generated.
        self._settle(job, 0.0 if found.status_code is not None else None)
        if self._tpm is not None and found.status_code is not None:
            self._tpm.adjust(job.token_estimate)  # an HTTP error consumed no generation
        if found.code == "rate_limited":
            self.rate_limited += 1
            job.pool.limiter.on_rate_limited(job.started_epoch)
        policy = self.settings.retry
        max_attempts = job.request.max_attempts or policy.max_attempts
        if found.transient and number - job.live_base < max_attempts:
            self.retries += 1
            delay = policy.delay(number, found.retry_after_s, self._rng.random())
            job.timer = asyncio.get_running_loop().call_later(delay, self._requeue, job)
            self.waiting.add(job)
        else:
            self._on_done(job, failed_result(job, found.code, found.message))

    def _requeue(self, job: Job) -> None:
        job.timer = None
        self.waiting.discard(job)
        job.pool.retries.append(job)
        job.pool.wakeup.set()

    # ----------------------------------------------------------------- cancellation
    async def cancel_everything(self, timeout_s: float) -> None:
        """Resolve queued and waiting jobs as cancelled, cancel in-flight calls."""
        pools = self.distinct_pools()
        for pool in pools:
            queued = [*pool.retries, *pool.queue]
            pool.retries.clear()
            pool.queue.clear()
            for job in queued:
                self._on_done(job, failed_result(job, "cancelled", "cancelled before start"))
        for job in list(self.waiting):
            if job.timer is not None:
                job.timer.cancel()
            self.waiting.discard(job)
            self._on_done(job, failed_result(job, "cancelled", "cancelled while waiting to retry"))
        running = [job for pool in pools for job in pool.running]
        tasks = [job.task for job in running if job.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=max(0.05, timeout_s - 0.25))
        for job in running:
            # A task cancelled before its first step never ran its handler (a job that
            # finished meanwhile was released and is on its way through the cache).
            if job in job.pool.running:
                self._release(job)
                self._settle(job, None)
                self._on_done(job, failed_result(job, "cancelled", "cancelled"))
