"""Batch mode (``--batch``): the engine's requests through a provider's Batch API.

Runs on the engine's loop. A request that missed the cache is either carried by a batch
stored in the cache database (a killed run's batch: it is polled, never sent again) or
gathered for a short window with the others of its endpoint and model, written to as few
input files as the provider's limits allow, uploaded and submitted. The batch and the
``custom_id`` (the cache key) of each of its requests are committed to the store before
anything waits on it (``engine.batch_store``).

Polling starts after ``batch_poll_s`` and backs off by half each time up to a minute (or
``batch_poll_s`` if that is longer); a change of status starts the backoff again. When the
batch ends, its output and error files are read (bounded, see
``batch_client.download_bound``) and matched to the requests by ``custom_id``. A success
is stored in the result cache and handed to its callers, like a live answer. A failure is
what a live attempt's failure would be (``batch_client.classify_line``): a permanent one (a
4xx line, an unusable answer) gets one live call, which decides as it would have in a live
run (a content filter's refusal ends the request at once); transient ones (a 5xx line,
``batch_expired``, ``batch_cancelled``, ``request_timeout``, a request the files do not
mention, the requests of a ``failed`` batch) go into a new batch, or live once
``batch_attempts`` batches were tried or the ``batch_max_wait_s`` deadline passed (the
batch is then cancelled and what it answered is kept). A line a ``failed`` batch's
``errors.data`` refused goes live at once: another batch would refuse it again. An
endpoint without a Batch API (404/405 on ``/files`` or ``/batches``) gets its requests
live, and the run says so.

Nothing is paid twice: a request is in at most one live batch; its row moves to a new batch
only after the old one ended; an answer is in the cache before the batch is marked
collected. Cancelling the run (Ctrl-C) ends the waiting calls ``cancelled`` and leaves the
provider's batches running: a rerun with the same cache collects them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pytest_legaleval.engine.batch_client import (
    TERMINAL_STATUSES,
    BatchClient,
    LineResult,
    batch_errors,
    classify_line,
    download_bound,
    input_line,
    line_errors,
    parse_result_lines,
    split_lines,
)
from pytest_legaleval.engine.batch_store import BatchRow, BatchState, format_age
from pytest_legaleval.engine.jobs import Job, failed_result
from pytest_legaleval.engine.providers import BatchTarget
from pytest_legaleval.engine.retry import classify_error
from pytest_legaleval.engine.types import Attempt, EngineSettings, RawCompletion, utc_timestamp
from pytest_legaleval.engine.urls import redact_url

__all__ = ["BatchRunner", "StoreAnswer"]

_log = logging.getLogger(__name__)

POLL_CAP_S = 60.0
"""Polling backs off to at most this (or ``batch_poll_s`` when that is longer)."""


StoreAnswer = Callable[[str, str, RawCompletion, "Job | None", Callable[[], None]], None]
"""``(cache_key, model, raw, job, after)``: cache an answer, resolve ``job`` (if any), then
call ``after`` once it is durable."""


@dataclass(slots=True, eq=False)
class _Watch:
    """One provider batch being waited on."""

    batch_id: str
    client: BatchClient
    requests: int
    created_epoch: float
    jobs: dict[str, Job] = field(default_factory=dict)
    """Jobs of this run waiting on it, by ``custom_id``."""
    task: asyncio.Task[None] | None = None
    status: str = "validating"


class BatchRunner:
    """Batches of one engine (see the module).

    Args:
        settings: the engine's settings (``batch_*`` fields).
        store: the batch tables of the cache file (``None`` without a cache: batches then
            live in memory only and a killed run loses them).
        store_answer: caches an answer and resolves its job (the engine's).
        on_done: resolves a failed or cancelled job (the engine's).
        go_live: hands jobs to the live scheduler.

    """

    def __init__(
        self,
        settings: EngineSettings,
        store: BatchState | None,
        store_answer: StoreAnswer,
        on_done: Callable[[Job, Any], None],
        go_live: Callable[[list[Job]], None],
    ) -> None:
        self.settings = settings
        self.store = store
        self._store_answer = store_answer
        self._on_done = on_done
        self._go_live = go_live
        self._clients: dict[tuple[str, str], BatchClient] = {}
        self._buffers: dict[tuple[str, str, str], list[tuple[Job, BatchTarget]]] = {}
        self._flush_timer: asyncio.TimerHandle | None = None
        self._watches: dict[str, _Watch] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._unsupported: set[str] = set()
        self._left: dict[str, float] = {}
        """Batches this run stopped waiting on (Ctrl-C), by id: their creation time."""
        self.counts: dict[str, int] = dict.fromkeys(
            (
                "batches_created",
                "batches_resumed",
                "batch_requests",
                "batch_answers",
                "batch_retries",
                "batch_live_fallbacks",
                "batch_failed_requests",
            ),
            0,
        )

    # ----------------------------------------------------------------- intake
    def enqueue(self, jobs: Iterable[tuple[Job, BatchTarget]]) -> None:
        """Take jobs that missed the cache (on the loop)."""
        items = list(jobs)
        pending = self.store.pending_for(j.key for j, _ in items) if self.store else {}
        live: list[Job] = []
        for job, target in items:
            stored = pending.get(job.key)
            if stored is not None:
                self._attach(job, target, stored.batch_id, stored.custom_id)
            elif target.base_url in self._unsupported:
                live.append(job)
            else:
                group = (target.base_url, target.api_key, job.request.model)
                self._buffers.setdefault(group, []).append((job, target))
        if live:
            self._live(live)
        if self._buffers and self._flush_timer is None:
            window = min(1.0, self.settings.batch_poll_s)
            self._flush_timer = asyncio.get_running_loop().call_later(window, self._flush)

    def _client(self, target: BatchTarget) -> BatchClient:
        key = (target.base_url, target.api_key)
        client = self._clients.get(key)
        if client is None:
            client = BatchClient(target.base_url, target.api_key, self.settings.request_timeout_s)
            self._clients[key] = client
        return client

    def _attach(self, job: Job, target: BatchTarget, batch_id: str, custom_id: str) -> None:
        watch = self._watches.get(batch_id)
        if watch is None:
            row = self.store.batch(batch_id) if self.store else None
            requests = row.requests if row else 1
            created = row.created_epoch if row else time.time()
            watch = _Watch(batch_id, self._client(target), requests, created)
            self._watches[batch_id] = watch
            self.counts["batches_resumed"] += 1
            self._start(watch)
        job.batch_attempts += 1
        watch.jobs[custom_id] = job

    def _flush(self) -> None:
        self._flush_timer = None
        buffers, self._buffers = self._buffers, {}
        for (base_url, _, model), items in buffers.items():
            self._spawn(self._submit(base_url, model, items))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ----------------------------------------------------------------- submission
    async def _submit(
        self, base_url: str, model: str, items: list[tuple[Job, BatchTarget]]
    ) -> None:
        lines = [input_line(job.key, target.body) for job, target in items]
        try:
            for start, stop in split_lines(
                lines,
                max_requests=self.settings.batch_file_requests,
                max_bytes=self.settings.batch_file_bytes,
            ):
                part = items[start:stop]
                if base_url in self._unsupported:
                    self._live([job for job, _ in part])
                    continue
                try:
                    await self._submit_file(model, part, b"".join(lines[start:stop]))
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    self._submit_failed(base_url, part, exc)
        except asyncio.CancelledError:
            # Ctrl-C while submitting: what is in no batch yet ends cancelled (a job that
            # is in one was ended by cancel_all; ending it again does nothing).
            for job, _ in items:
                if not job.resolved:
                    self._on_done(
                        job, failed_result(job, "cancelled", "cancelled before its batch")
                    )
            raise

    async def _submit_file(
        self, model: str, part: list[tuple[Job, BatchTarget]], content: bytes
    ) -> None:
        client = self._client(part[0][1])
        file_id = await client.upload(content, f"legaleval-{part[0][0].key[:16]}.jsonl")
        attempt = max(job.batch_attempts for job, _ in part) + 1
        try:
            batch = await client.create(file_id, {"legaleval": "1", "attempt": str(attempt)})
        except Exception as exc:
            # A lost reply may hide a batch that exists (and is paid): look before retrying.
            found = await client.find(file_id) if classify_error(exc).transient else None
            if found is None:
                raise
            batch = found
        batch_id = str(batch["id"])
        now = time.time()
        endpoint = part[0][0].provider.endpoint(model)
        row = BatchRow(
            batch_id, endpoint, model, str(batch.get("status") or "validating"), len(part),
            attempt, utc_timestamp(now), now, utc_timestamp(now),
        )  # fmt: skip
        requests = [(job.key, job.key, line) for line, (job, _) in enumerate(part, start=1)]
        if self.store is not None:
            # Durable before anything waits on it: a kill from here on resumes this batch.
            try:
                await asyncio.to_thread(self.store.record_batch, row, file_id, requests)
            except Exception as exc:  # the batch is paid for: wait on it all the same
                _log.warning(
                    "legaleval --batch: cannot store batch %s (%s); a killed run would not "
                    "resume it",
                    batch_id,
                    exc,
                )
        watch = _Watch(batch_id, client, len(part), now)
        for job, _ in part:
            job.batch_attempts += 1
            watch.jobs[job.key] = job
        self._watches[batch_id] = watch
        self.counts["batches_created"] += 1
        self.counts["batch_requests"] += len(part)
        self._start(watch)

    def _submit_failed(
        self, base_url: str, part: list[tuple[Job, BatchTarget]], exc: Exception
    ) -> None:
        found = classify_error(exc, scrub=self._client(part[0][1]).scrub)
        jobs = [job for job, _ in part]
        if found.status_code in (404, 405, 501):
            self._unsupported.add(base_url)
            _log.warning(
                "legaleval --batch: %s has no Batch API (%s); its calls go live",
                redact_url(base_url),
                found.message,
            )
            self._live(jobs)
            return
        retry = [job for job in jobs if found.transient and job.batch_attempts + 1 < self._limit]
        for job in jobs:
            job.batch_attempts += 1
        _log.warning("legaleval --batch: submitting a batch failed: %s", found.message)
        self._live([job for job in jobs if job not in retry])
        if retry:
            self.counts["batch_retries"] += len(retry)
            self.enqueue((job, target) for job, target in part if job in retry)

    @property
    def _limit(self) -> int:
        return self.settings.batch_attempts

    def _live(self, jobs: list[Job]) -> None:
        for job in jobs:
            job.live_base = len(job.attempts)
        self.counts["batch_live_fallbacks"] += len(jobs)
        self._go_live(jobs)

    # ----------------------------------------------------------------- waiting
    def _start(self, watch: _Watch) -> None:
        watch.task = asyncio.get_running_loop().create_task(self._guarded(watch))
        self._tasks.add(watch.task)
        watch.task.add_done_callback(self._tasks.discard)

    async def _guarded(self, watch: _Watch) -> None:
        """Wait on ``watch``; a bug on the way must not leave its callers waiting forever."""
        try:
            await self._wait(watch)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            _log.error(
                "legaleval --batch: waiting on %s failed (%s: %s); its requests go live",
                watch.batch_id,
                type(exc).__name__,
                exc,
            )
            self._watches.pop(watch.batch_id, None)
            self._live([job for job in watch.jobs.values() if not job.resolved])

    async def _wait(self, watch: _Watch) -> None:
        poll = self.settings.batch_poll_s
        cap = max(poll, POLL_CAP_S)
        delay = poll
        cancel_sent = False
        batch: dict[str, Any] = {}
        failures = 0
        while True:
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, cap)
            try:
                batch = await watch.client.retrieve(watch.batch_id, watch.requests)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                found = classify_error(exc, scrub=watch.client.scrub)
                failures += 1
                if found.transient and failures < 20:
                    continue
                # The provider forgot the batch or refuses us: its requests start again.
                batch = {"status": "failed", "errors": {"data": []}}
                _log.warning("legaleval --batch: %s: %s", watch.batch_id, found.message)
            failures = 0
            status = str(batch.get("status"))
            if status != watch.status:
                # A batch that moved on (to finalizing, say) may end soon: look again soon.
                delay = poll
                watch.status = status
                if self.store is not None:
                    await asyncio.to_thread(self.store.set_status, watch.batch_id, status)
            if status in TERMINAL_STATUSES:
                break
            max_wait = self.settings.batch_max_wait_s
            if (
                max_wait is not None
                and not cancel_sent
                and time.time() - watch.created_epoch > max_wait
            ):
                cancel_sent = True
                with contextlib.suppress(Exception):
                    await watch.client.cancel(watch.batch_id)
        await self._collect(watch, batch, deadline=cancel_sent)

    async def _download(
        self, watch: _Watch, batch: dict[str, Any], name: str, problems: list[str]
    ) -> dict[str, LineResult]:
        file_id = batch.get(name)
        if not isinstance(file_id, str) or not file_id:
            return {}
        try:
            data = await watch.client.download(file_id, download_bound(watch.requests))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            problems.append(f"{name}: {classify_error(exc, scrub=watch.client.scrub).message}")
            return {}
        return parse_result_lines(data, problems)

    async def _collect(self, watch: _Watch, batch: dict[str, Any], *, deadline: bool) -> None:
        problems: list[str] = []
        errors = await self._download(watch, batch, "error_file_id", problems)
        outputs = await self._download(watch, batch, "output_file_id", problems)
        lines = {**errors, **{k: v for k, v in outputs.items() if v.ok or k not in errors}}
        by_line = line_errors(batch)
        for message in [*problems, *batch_errors(batch)][:5]:
            _log.warning("legaleval --batch %s: %s", watch.batch_id, watch.client.scrub(message))
        owed = (
            await asyncio.to_thread(self.store.requests_of, watch.batch_id)
            if self.store is not None
            else []
        )
        models = {p.custom_id: (p.cache_key, p.model, p.line) for p in owed}
        for custom_id, asker in watch.jobs.items():
            models.setdefault(custom_id, (asker.key, asker.request.model, 0))
        state = str(batch.get("status"))
        if problems:  # why a request may be missing: said on each one it concerns
            state += "; " + "; ".join(problems[:3])
        answers: list[tuple[str, str, RawCompletion, Job | None]] = []
        finished: list[str] = []
        retry: list[Job] = []
        live: list[Job] = []
        for custom_id, (key, model, line) in models.items():
            job = watch.jobs.get(custom_id)
            raw, failure = classify_line(lines.get(custom_id), by_line.get(line), state)
            if raw is not None:
                if job is not None:
                    job.attempts.append(self._attempt(job, watch, raw=raw))
                answers.append((key, model, raw, job))
                continue
            finished.append(key)
            if job is None:
                continue  # another run's request: it is retried when someone asks for it
            code, message, kind, status = failure
            message = watch.client.scrub(message)  # the server's words may echo the key
            job.attempts.append(self._attempt(job, watch, error=(code, message, status)))
            if kind == "final":
                self.counts["batch_failed_requests"] += 1
                self._on_done(job, failed_result(job, code, message))
            else:
                (live if kind == "live" else retry).append(job)
        self._watches.pop(watch.batch_id, None)
        store = self.store
        # The batch is collected once its last answer is durable in the cache; that last
        # write's callback marks it (on the cache's writer thread, which finishes its work
        # even when the caller closes the engine right after its results arrived).
        countdown = _Countdown(
            len(answers), (lambda: store.collected(watch.batch_id)) if store else None
        )
        self.counts["batch_answers"] += len(answers)
        for key, model, raw, job in answers:
            self._store_answer(key, model, raw, job, countdown.step)
        if store is not None and finished:
            # Before the retries are taken in (they would find this batch's rows), and on
            # the loop itself: nothing between here and the handoff below may be cancelled.
            store.forget(watch.batch_id, finished)
        if live:
            self._live(live)
        self._retry(retry, deadline)

    def _retry(self, jobs: list[Job], deadline: bool) -> None:
        if not jobs:
            return
        again = [j for j in jobs if not deadline and j.batch_attempts < self._limit]
        live = [j for j in jobs if j not in again]
        if live:
            self._live(live)
        if again:
            self.counts["batch_retries"] += len(again)
            targets = [(job, self._target_of(job)) for job in again]
            self.enqueue((job, target) for job, target in targets if target is not None)

    def _target_of(self, job: Job) -> BatchTarget | None:
        target = getattr(job.provider, "batch_target", None)
        return target(job.request) if callable(target) else None

    def _attempt(
        self,
        job: Job,
        watch: _Watch,
        *,
        raw: RawCompletion | None = None,
        error: tuple[str, str, int | None] | None = None,
    ) -> Attempt:
        latency = max(0.0, (time.time() - watch.created_epoch) * 1000.0)
        started = utc_timestamp(watch.created_epoch)
        number = len(job.attempts) + 1
        if raw is not None:
            return Attempt(
                number, started, latency, None,
                input_tokens=raw.input_tokens, output_tokens=raw.output_tokens,
                warnings=raw.warnings, cached_input_tokens=raw.cached_input_tokens,
                batch_id=watch.batch_id,
            )  # fmt: skip
        assert error is not None
        code, message, status = error
        return Attempt(
            number, started, latency, code, status_code=status, message=message[:300],
            batch_id=watch.batch_id,
        )  # fmt: skip

    # ----------------------------------------------------------------- state
    def snapshot(self) -> dict[str, Any]:
        """Counters, and the batches waited on now with the oldest one's age in seconds."""
        now = time.time()
        created = {w.batch_id: w.created_epoch for w in self._watches.values()}
        created.update(self._left)
        ages = [now - epoch for epoch in created.values()]
        return {
            **self.counts,
            "batches_pending": len(created),
            "batch_oldest_pending_s": round(max(ages), 1) if ages else None,
            "batch_unsupported_endpoints": len(self._unsupported),
        }

    def cancel_all(self) -> None:
        """End every waiting job ``cancelled``; the provider's batches are left running."""
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        buffers, self._buffers = self._buffers, {}
        for items in buffers.values():
            for job, _ in items:
                self._on_done(job, failed_result(job, "cancelled", "cancelled before its batch"))
        for task in list(self._tasks):
            task.cancel()
        watches, self._watches = self._watches, {}
        now = time.time()
        for watch in watches.values():
            self._left[watch.batch_id] = watch.created_epoch
            waited = format_age(now - watch.created_epoch)
            message = (
                f"cancelled while batch {watch.batch_id} was {watch.status} ({waited} since "
                "it was created); the batch is kept: a rerun with the same cache collects it"
            )
            for job in watch.jobs.values():
                self._on_done(job, failed_result(job, "cancelled", message))

    async def aclose(self) -> None:
        """Close the HTTP clients."""
        clients, self._clients = self._clients, {}
        for client in clients.values():
            with contextlib.suppress(Exception):
                await client.aclose()


class _Countdown:
    """Calls ``on_zero`` once ``count`` steps were taken (at once for 0); thread-safe."""

    def __init__(self, count: int, on_zero: Callable[[], None] | None) -> None:
        self._left = count
        self._lock = threading.Lock()
        self._on_zero = on_zero
        if count == 0:
            self._fire()

    def step(self) -> None:
        with self._lock:
            self._left -= 1
            last = self._left == 0
        if last:
            self._fire()

    def _fire(self) -> None:
        if self._on_zero is not None:
            try:
                self._on_zero()
            except Exception as exc:  # the batch stays listed as pending; nothing is lost
                _log.warning("legaleval --batch: cannot mark a batch collected: %s", exc)
