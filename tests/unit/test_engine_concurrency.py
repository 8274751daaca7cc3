"""Pipelining, concurrency limits, FIFO, dedupe, rate limits, 429 storms and cancellation."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import pytest

from pytest_legaleval.engine import (
    Engine,
    EngineSettings,
    GenerationParams,
    GenerationRequest,
    RetryPolicy,
)
from pytest_legaleval.testing.mock_openai import MockConfig, MockOpenAIServer

from .. import processes


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer(MockConfig(latency=0.0)) as srv:
        yield srv


def engine_for(server: MockOpenAIServer, **settings: Any) -> Engine:
    options: dict[str, Any] = {
        "base_url": server.base_url,
        "cache_path": None,
        "retry": RetryPolicy.scaled(0.001),
        "request_timeout_s": 60.0,  # a hang guard: no call here should time out
    }
    options.update(settings)
    return Engine(EngineSettings(**options))


def requests(n: int, tag: str = "item", **kw: Any) -> list[GenerationRequest]:
    return [
        GenerationRequest(
            model="openai/mock-model",
            messages=({"role": "user", "content": f"{tag} {i:05d}"},),
            **kw,
        )
        for i in range(n)
    ]


def wait_until(predicate: Any) -> None:
    """Poll until ``predicate()`` holds; the minute only guards against a hang."""
    assert processes.wait_until(predicate, within_s=60), "waited a minute"


def hold_at_the_limit(
    server: MockOpenAIServer, engine: Engine, in_flight: int, queued: int
) -> None:
    """Answer nothing until the server holds ``in_flight`` calls and the engine queues the rest.

    Both numbers at once show the limit as an event: so many calls overlapped, and the
    engine chose to keep the others back (they are queued, not on their way).
    """
    wait_until(
        lambda: server.stats()["in_flight"] == in_flight and engine.stats()["queued"] == queued
    )
    server.release()


def test_run_is_pipelined_and_bounded(server: MockOpenAIServer) -> None:
    server.hold()
    with engine_for(server, concurrency=8) as engine:
        futures = engine.submit_many(requests(40))
        hold_at_the_limit(server, engine, in_flight=8, queued=32)
        results = [f.result(timeout=60) for f in futures]
        stats = engine.stats()
    assert all(r.ok for r in results)
    assert server.stats()["peak_in_flight"] == 8
    assert stats["peak_in_flight"] == 8 and stats["in_flight"] == 0
    assert stats["submitted"] == stats["completed"] == 40


def test_share_divides_concurrency_per_process(server: MockOpenAIServer) -> None:
    server.hold()
    with engine_for(server, concurrency=8, share=2) as engine:
        futures = engine.submit_many(requests(20))
        hold_at_the_limit(server, engine, in_flight=4, queued=16)
        assert all(f.result(timeout=30).ok for f in futures)
    assert server.stats()["peak_in_flight"] == 4


def test_judges_get_their_own_pool(server: MockOpenAIServer) -> None:
    server.hold()
    with engine_for(server, concurrency=4, judge_concurrency=2) as engine:
        judged = engine.submit_many(requests(8, "judge", purpose="judge"))
        generated = engine.submit_many(requests(8, "gen"))
        hold_at_the_limit(server, engine, in_flight=6, queued=10)  # 4 + 2 at once
        assert all(f.result(timeout=30).ok for f in judged + generated)
        assert engine.stats()["judge_concurrency_limit"] == 2
    assert server.stats()["peak_in_flight"] == 6


def test_start_order_is_submission_order(server: MockOpenAIServer) -> None:
    with engine_for(server, concurrency=1) as engine:
        results = [f.result(timeout=30) for f in engine.submit_many(requests(30, "fifo"))]
    arrived = [body["messages"][0]["content"] for body in server.requests()]
    assert arrived == [f"fifo {i:05d}" for i in range(30)]
    starts = [r.attempts[0].started_at for r in results]
    assert starts == sorted(starts)


def test_start_order_is_fifo_under_concurrency(server: MockOpenAIServer) -> None:
    server.set_latency((0.0, 0.02), seed=3)
    with engine_for(server, concurrency=4) as engine:
        results = [f.result(timeout=30) for f in engine.submit_many(requests(60, "fifo"))]
    starts = [r.attempts[0].started_at for r in results]
    assert starts == sorted(starts)  # engine-side start times follow submission order
    arrived = [int(body["messages"][0]["content"].split()[1]) for body in server.requests()]
    assert all(abs(pos - index) <= 4 for pos, index in enumerate(arrived))


def test_identical_requests_share_one_call(server: MockOpenAIServer) -> None:
    server.hold()  # the call stays in flight until all four are submitted
    same = requests(1, "dedupe")[0]
    with engine_for(server) as engine:
        futures = engine.submit_many([same, same, same])
        futures.append(engine.submit(same))
        wait_until(lambda: engine.stats()["deduped"] == 3)
        server.release()
        results = [f.result(timeout=30) for f in futures]
        stats = engine.stats()
    assert server.count_for("dedupe") == 1
    assert len({id(r) for r in results}) == 1 and results[0].ok
    assert stats["deduped"] == 3 and stats["submitted"] == 4 and stats["completed"] == 4


def test_a_deduplicated_waiter_keeps_its_own_latency_budget(server: MockOpenAIServer) -> None:
    server.set_latency(0.1)  # the call lasts at least 100 ms: far over the strict 1 ms
    server.hold()  # and it stays in flight until the strict copy has joined it
    relaxed = requests(1, "budget")[0]
    strict = replace(relaxed, max_latency_ms=1)
    with engine_for(server) as engine:
        first, second = engine.submit_many([relaxed, strict])
        wait_until(lambda: engine.stats()["deduped"] == 1)
        server.release()
        assert not first.result(timeout=30).latency_exceeded
        assert second.result(timeout=30).latency_exceeded
    assert server.count_for("budget") == 1


def test_cancel_all_resolves_everything_quickly(server: MockOpenAIServer) -> None:
    server.add_fault("500", match="waiting-retry", delay=0)
    with engine_for(server, concurrency=4, retry=RetryPolicy(delays_s=(30.0,))) as engine:
        retrying = engine.submit(requests(1, "waiting-retry")[0])
        wait_until(lambda: engine.stats()["retries"] >= 1)
        server.set_latency(30.0)
        futures = engine.submit_many(requests(20, "cancel-me"))
        wait_until(lambda: engine.stats()["in_flight"] >= 4)
        engine.cancel_all()
        # Cancelled, not answered: neither the 30 s retry wait nor the 30 s calls ran out.
        results = [f.result(timeout=60) for f in [retrying, *futures]]
        assert all(r.error_code == "cancelled" and r.text is None for r in results)
        in_flight = [r for r in results if r.attempts and r.attempts[-1].error_code == "cancelled"]
        assert len(in_flight) >= 1
        assert [a.error_code for a in results[0].attempts] == ["internal_error"]
        assert len(in_flight) == 4 and engine.stats()["in_flight"] == 0
        assert engine.stats()["cancelled"] == 21
        # The engine stays usable after a cancel.
        server.set_latency(0.0)
        assert engine.submit(requests(1, "after-cancel")[0]).result(timeout=60).ok


def test_close_cancels_and_is_idempotent(server: MockOpenAIServer) -> None:
    server.set_latency(30.0)
    engine = engine_for(server, concurrency=2)
    futures = engine.submit_many(requests(5, "closing"))
    engine.close()
    engine.close()
    # Cancelled, not answered: close did not wait for the 30 s calls.
    assert all(f.result(timeout=60).error_code == "cancelled" for f in futures)
    with pytest.raises(RuntimeError):
        engine.submit(requests(1)[0])


def test_rpm_limit_spaces_requests(server: MockOpenAIServer) -> None:
    # 1200 rpm = 20/s with a one-second burst of 20: 40 requests need about 1 s.
    with engine_for(server, rpm=1200) as engine:
        start = time.perf_counter()
        assert all(f.result(timeout=30).ok for f in engine.submit_many(requests(40, "rpm")))
        elapsed = time.perf_counter() - start
    # A lower bound only: load can lengthen a run, never shorten it. (The bucket's exact
    # schedule, and so that it does not over-throttle, is tested with a fake clock.)
    assert elapsed >= 0.8


def test_rpm_is_shared_among_processes(server: MockOpenAIServer) -> None:
    # The same 40 requests with 2400 rpm split over 2 workers take as long as 1200 rpm.
    with engine_for(server, rpm=2400, share=2) as engine:
        start = time.perf_counter()
        assert all(f.result(timeout=30).ok for f in engine.submit_many(requests(40, "rpm2")))
        elapsed = time.perf_counter() - start
    assert elapsed >= 0.8  # a lower bound only, as above


def test_tpm_limit_slows_the_run(server: MockOpenAIServer) -> None:
    # 12,000 tpm = 200 tokens/s (burst 200); each call is charged ~34 and really uses ~17.
    params = GenerationParams(max_new_tokens=20)
    batch = [
        GenerationRequest(
            model="openai/mock-model",
            messages=({"role": "user", "content": f"tpm {i:03d} " + "x" * 31},),
            params=params,
        )
        for i in range(20)
    ]
    with engine_for(server, tpm=12_000) as engine:
        start = time.perf_counter()
        assert all(f.result(timeout=30).ok for f in engine.submit_many(batch))
        elapsed = time.perf_counter() - start
    assert elapsed >= 0.35  # a lower bound only, as above


def test_429_storm_shrinks_concurrency_and_every_record_succeeds(
    server: MockOpenAIServer,
) -> None:
    server.set_latency(0.02)
    server.add_fault("429", times=40, retry_after=0.001)
    policy = RetryPolicy(max_attempts=6, delays_s=(0.005, 0.01, 0.02), jitter=0.2)
    with engine_for(server, concurrency=16, retry=policy) as engine:
        results = [f.result(timeout=30) for f in engine.submit_many(requests(64, "storm"))]
        stats = engine.stats()
    assert all(r.ok for r in results), [r.error_code for r in results if not r.ok]
    assert stats["rate_limited"] == 40
    assert stats["concurrency_lowest"] < 16
    assert sum(len(r.attempts) for r in results) == 64 + 40


@pytest.mark.parametrize("transport", ["httpx", "aiohttp"])
def test_connection_pool_is_not_the_bottleneck(server: MockOpenAIServer, transport: str) -> None:
    # Raw httpx and aiohttp default to 100 connections; the engine sizes the pool to its limit.
    server.hold(until_in_flight=150)
    with engine_for(server, concurrency=150, transport=transport) as engine:
        assert all(f.result(timeout=30).ok for f in engine.submit_many(requests(150, "pool")))
    assert server.stats()["peak_in_flight"] == 150


def test_submission_from_many_threads(server: MockOpenAIServer) -> None:
    server.set_latency(0.01)
    batch = requests(40, "threads")
    with engine_for(server, concurrency=8) as engine:
        with ThreadPoolExecutor(4) as pool:
            chunks = list(pool.map(lambda k: engine.submit_many(batch[k % 2 :: 2]), range(4)))
        results = [f.result(timeout=30) for chunk in chunks for f in chunk]
        stats = engine.stats()
    assert len(results) == 80 and all(r.ok for r in results)
    # Each prompt was submitted twice; the copy either joined the call or hit the cache-less
    # engine after it finished, so the server saw each prompt once or twice, never more.
    per_prompt = server.stats()["per_prompt"].values()
    assert sum(per_prompt) == 80 - stats["deduped"] and max(per_prompt) <= 2
