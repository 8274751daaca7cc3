"""Spend control in the engine: ``--max-cost`` stops sending before the spend passes it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pytest_legaleval.engine import (
    Engine,
    EngineSettings,
    GenerationParams,
    GenerationRequest,
    RetryPolicy,
)
from pytest_legaleval.engine.budget import Budget
from pytest_legaleval.engine.ratelimit import estimate_prompt_tokens
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.testing.mock_openai import MockConfig, MockOpenAIServer

from ..processes import wait_until

MODEL = "openai/mock-model"
PRICE = (1000.0, 1000.0)  # USD per million tokens: $0.001 per token, either way
LIMIT = GenerationParams(max_new_tokens=10)


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer(MockConfig(latency=0.0)) as srv:
        yield srv


def engine_for(server: MockOpenAIServer, cap: float, **settings: Any) -> Engine:
    options: dict[str, Any] = {
        "base_url": server.base_url,
        "cache_path": None,
        "retry": RetryPolicy.scaled(0.001),
        "max_cost_usd": cap,
        "prices": {MODEL: PRICE},
    }
    options.update(settings)
    return Engine(EngineSettings(**options))


def requests(n: int, params: GenerationParams = LIMIT) -> list[GenerationRequest]:
    return [
        GenerationRequest(MODEL, ({"role": "user", "content": f"question {i:04d}"},), params)
        for i in range(n)
    ]


def reservation(request: GenerationRequest) -> float:
    tokens = estimate_prompt_tokens(request.messages) + (request.params.max_new_tokens or 256)
    return tokens * PRICE[0] / 1e6


def test_calls_stop_before_the_spend_would_pass_the_cap(server: MockOpenAIServer) -> None:
    batch = requests(40)
    cap = 0.1
    with engine_for(server, cap, concurrency=1) as engine:
        results = [f.result(60) for f in engine.submit_many(batch)]
        stats = engine.stats()
    sent = [r for r in results if r.attempts]
    stopped = [r for r in results if not r.attempts]
    assert 0 < len(sent) < len(batch)
    assert server.stats()["requests"] == len(sent)
    spent = sum(((r.input_tokens or 0) + (r.output_tokens or 0)) / 1000 for r in sent)
    assert stats["spent_usd"] == pytest.approx(spent)
    assert spent <= cap
    # The first call not sent would have passed the cap, even at what it reserves.
    assert spent + reservation(batch[len(sent)]) > cap
    assert all(r.ok for r in sent)
    for result in stopped:
        assert (result.error_code, result.cancel_reason) == ("cancelled", "budget")
        assert "--max-cost $0.1000 reached" in result.error_message
    assert stats["budget_refused"] == len(stopped) and stats["cancelled"] == len(stopped)


def test_in_flight_calls_count_against_the_cap(server: MockOpenAIServer) -> None:
    """With 20 slots, only as many calls go out at once as their reservations fit."""
    server.hold()
    batch = requests(30)
    each = reservation(batch[0])
    cap = 3.5 * each  # three reservations fit, a fourth does not
    with engine_for(server, cap, concurrency=20) as engine:
        futures = engine.submit_many(batch)
        # Three calls held at the endpoint and the other 27 kept back by the engine: the cap,
        # not the latency, decides how many go out at once.
        assert wait_until(
            lambda: server.stats()["in_flight"] == 3 and engine.stats()["queued"] == 27,
            within_s=60,  # a hang guard
        ), (server.stats(), engine.stats())
        server.release()
        results = [f.result(60) for f in futures]
    assert server.stats()["peak_in_flight"] == 3
    assert any(r.cancel_reason == "budget" for r in results)


def test_an_exhausted_budget_refuses_later_calls_at_once(server: MockOpenAIServer) -> None:
    with engine_for(server, 0.001) as engine:  # not even one call fits
        first = engine.submit(requests(1)[0]).result(60)
        later = engine.submit(
            GenerationRequest(MODEL, ({"role": "user", "content": "a judge, later"},), LIMIT)
        ).result(60)
    assert server.stats()["requests"] == 0
    assert first.cancel_reason == later.cancel_reason == "budget"


def test_an_http_error_costs_nothing(server: MockOpenAIServer) -> None:
    server.add_fault("400")
    batch = requests(5)
    with engine_for(server, 2.5 * reservation(batch[0]), concurrency=1) as engine:
        results = [f.result(60) for f in engine.submit_many(batch)]
        stats = engine.stats()
    assert [r.error_code for r in results] == ["bad_request"] * 5  # every call was sent
    assert stats["spent_usd"] == 0.0


def test_cache_hits_are_free(server: MockOpenAIServer, tmp_path: Any) -> None:
    batch = requests(3)
    cache = str(tmp_path / "cache.sqlite")
    with engine_for(server, 1.0, cache_path=cache) as engine:
        assert all(f.result(60).ok for f in engine.submit_many(batch))
    # A second run whose cap fits no call at all still gets every answer from the cache.
    with engine_for(server, 0.001, cache_path=cache) as engine:
        again = [f.result(60) for f in engine.submit_many(batch)]
    assert all(r.ok and r.cached for r in again)
    assert server.stats()["requests"] == 3


def test_a_model_without_a_price_cannot_be_submitted(server: MockOpenAIServer) -> None:
    with (
        engine_for(server, 1.0, prices={}) as engine,
        pytest.raises(ConfigError, match="--max-cost needs a price for 'openai/mock-model'"),
    ):
        engine.submit(requests(1)[0])
    assert server.stats()["requests"] == 0


def test_the_cap_is_split_across_processes_and_local_models_are_free() -> None:
    budget = Budget(1.0, 4, {MODEL: PRICE})
    assert budget.cap_usd == 0.25
    assert "this worker's share: $0.2500 of 4" in budget.message(0.3)
    assert budget.cost("local/smol", 10**6, 10**6) == 0.0
    budget.reserve(0.2)
    assert not budget.fits(0.06) and budget.fits(0.05)
    budget.settle(0.2, 0.1)
    assert (budget.spent_usd, budget.reserved_usd, budget.in_flight) == (0.1, 0.0, 0)


@pytest.mark.parametrize("cap", [0.0, -1.0, float("inf"), float("nan")])
def test_the_cap_must_be_a_positive_amount(cap: float) -> None:
    with pytest.raises(ConfigError, match="max_cost_usd"):
        EngineSettings(max_cost_usd=cap)


def test_spent_is_the_answers_cost_and_the_rest_is_named() -> None:
    """A refused call says what the answers cost (the summary's figure) and, beside it,
    the probes and the reservations kept for calls without token counts."""
    budget = Budget(1.0, 1, {MODEL: PRICE})
    for reserved, actual, overhead in ((0.1, 0.04, False), (0.1, 0.02, True), (0.1, None, False)):
        budget.reserve(reserved)
        budget.settle(reserved, actual, overhead=overhead)
    assert budget.answers_usd == pytest.approx(0.04)
    assert budget.spent_usd == pytest.approx(0.16)  # the cap counts all three
    assert budget.message(0.9) == (
        "not sent: --max-cost $1.0000 reached; spent $0.0400 on answers (+ $0.0200 on "
        "structured-output probes, $0.1000 held for 1 call without token counts), this call "
        "would cost up to $0.9000"
    )
    plain = Budget(1.0, 2, {MODEL: PRICE})
    plain.reserve(0.1)
    plain.settle(0.1, 0.05)
    assert plain.message(0.6) == (
        "not sent: --max-cost $1.0000 reached (this worker's share: $0.5000 of 2); this worker "
        "spent $0.0500 on answers, this call would cost up to $0.6000"
    )


def test_a_probe_counts_against_the_cap_but_not_as_an_answer(server: MockOpenAIServer) -> None:
    probe = GenerationRequest(
        MODEL, ({"role": "user", "content": "probe"},), LIMIT,
        template_version="capability-probe-v1",
    )  # fmt: skip
    with engine_for(server, 1.0) as engine:
        assert engine.submit(probe).result(60).ok
        answer = engine.submit(requests(1)[0]).result(60)
        stats = engine.stats()
    cost = ((answer.input_tokens or 0) + (answer.output_tokens or 0)) / 1000
    assert stats["spent_usd"] > cost  # the probe's cost too
    assert stats["answers_usd"] == pytest.approx(cost)
