"""Internal bookkeeping of the engine.

One job per distinct in-flight request, one pool per concurrency limit, and the
construction of results from attempts.
"""

from __future__ import annotations

import asyncio
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field, replace

from pytest_legaleval.engine.cache import CachedRow
from pytest_legaleval.engine.providers import Provider
from pytest_legaleval.engine.ratelimit import AdaptiveConcurrency
from pytest_legaleval.engine.types import (
    Attempt,
    GenerationRequest,
    GenerationResult,
    RawCompletion,
)

__all__ = [
    "Job",
    "Pool",
    "cached_result",
    "failed_result",
    "for_waiter",
    "success_result",
]


@dataclass(slots=True, eq=False)
class Job:
    """A distinct request (by cache key) and every caller future waiting for it."""

    request: GenerationRequest
    key: str
    provider: Provider
    pool: Pool
    waiters: list[tuple[Future[GenerationResult], int | None]]
    """Each caller's future with its own ``max_latency_ms`` (duplicates may differ there)."""
    token_estimate: int
    cost_estimate: float = 0.0
    """USD reserved for each attempt under ``--max-cost`` (``engine.budget``)."""
    reserved: float = 0.0
    """USD held for the attempt in flight (0 when none is)."""
    attempts: list[Attempt] = field(default_factory=list)
    started_epoch: int = 0
    task: asyncio.Task[None] | None = None
    timer: asyncio.TimerHandle | None = None
    resolved: bool = False
    batch_attempts: int = 0
    """Provider batches this request went into (``--batch``; ``engine.batch``)."""
    live_base: int = 0
    """Attempts made before the job went live (its batch attempts): a live fallback still
    gets the retry policy's full number of attempts."""


@dataclass(slots=True, eq=False)
class Pool:
    """A FIFO of jobs sharing one adaptive in-flight limit (``generation`` or ``judge``)."""

    name: str
    limiter: AdaptiveConcurrency
    wakeup: asyncio.Event
    queue: deque[Job] = field(default_factory=deque)
    retries: deque[Job] = field(default_factory=deque)
    running: set[Job] = field(default_factory=set)
    dispatcher: asyncio.Task[None] | None = None

    def next_job(self) -> Job | None:
        """Return the job to start next: due retries first (they are older), then new ones."""
        if self.retries:
            return self.retries[0]
        if self.queue:
            return self.queue[0]
        return None

    def pop_next(self) -> Job:
        """Remove and return what ``next_job`` returned."""
        return self.retries.popleft() if self.retries else self.queue.popleft()


def for_waiter(result: GenerationResult, job: Job, max_latency_ms: int | None) -> GenerationResult:
    """Adapt ``result`` to a deduplicated waiter whose latency budget differs from the job's."""
    if max_latency_ms == job.request.max_latency_ms or result.latency_ms is None:
        return result
    exceeded = max_latency_ms is not None and result.latency_ms > max_latency_ms
    return replace(result, latency_exceeded=exceeded)


def success_result(job: Job, raw: RawCompletion) -> GenerationResult:
    """Build the result of a job whose last attempt succeeded."""
    last = job.attempts[-1]
    batch = last.batch_id is not None
    # A batch's turnaround (minutes to hours) is no latency of the model's: it is kept on
    # the attempt, and the answer has none (no latency budget applies to it).
    limit = None if batch else job.request.max_latency_ms
    return GenerationResult(
        text=raw.text,
        finish_reason=raw.finish_reason,
        error_code=None,
        error_message="",
        attempts=tuple(job.attempts),
        input_tokens=raw.input_tokens,
        output_tokens=raw.output_tokens,
        latency_ms=None if batch else last.latency_ms,
        cached=False,
        cache_key=job.key,
        model=job.request.model,
        first_attempt_at=job.attempts[0].started_at,
        last_attempt_at=last.started_at,
        latency_exceeded=limit is not None and last.latency_ms > limit,
        cached_input_tokens=raw.cached_input_tokens,
        batch=batch,
    )


def failed_result(
    job: Job, code: str, message: str, cancel_reason: str | None = None
) -> GenerationResult:
    """Build the result of a failed job (``code``: the last attempt's, or ``cancelled``)."""
    attempts = tuple(job.attempts)
    return GenerationResult(
        text=None,
        finish_reason=None,
        error_code=code,
        error_message=message,
        attempts=attempts,
        input_tokens=None,
        output_tokens=None,
        latency_ms=None,
        cached=False,
        cache_key=job.key,
        model=job.request.model,
        first_attempt_at=attempts[0].started_at if attempts else None,
        last_attempt_at=attempts[-1].started_at if attempts else None,
        latency_exceeded=False,
        cancel_reason=cancel_reason,
    )


def cached_result(request: GenerationRequest, row: CachedRow) -> GenerationResult:
    """Build a cache hit: no attempts this run; tokens and latency are the original call's."""
    limit = request.max_latency_ms
    return GenerationResult(
        text=row.text,
        finish_reason=row.finish_reason,
        error_code=None,
        error_message="",
        attempts=(),
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        latency_ms=row.latency_ms,
        cached=True,
        cache_key=row.cache_key,
        model=request.model,
        first_attempt_at=None,
        last_attempt_at=None,
        latency_exceeded=limit is not None
        and row.latency_ms is not None
        and row.latency_ms > limit,
        cached_input_tokens=row.cached_input_tokens,
        batch=row.batch,
    )
