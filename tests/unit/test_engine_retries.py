"""Retries and error codes, through the real openai client against the mock server."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from pytest_legaleval.engine import (
    Engine,
    EngineSettings,
    GenerationParams,
    GenerationRequest,
    GenerationResult,
    RetryPolicy,
)
from pytest_legaleval.testing.mock_openai import FaultKind, MockConfig, MockOpenAIServer

FAST = RetryPolicy.scaled(0.001)


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer(MockConfig(latency=0.0)) as srv:
        yield srv


def run_one(
    server: MockOpenAIServer,
    prompt: str,
    *,
    params: GenerationParams | None = None,
    max_latency_ms: int | None = None,
    **settings: Any,
) -> GenerationResult:
    options: dict[str, Any] = {
        "base_url": server.base_url,
        "cache_path": None,
        "retry": FAST,
        "request_timeout_s": 5.0,
    }
    options.update(settings)
    request = GenerationRequest(
        model="openai/mock-model",
        messages=({"role": "user", "content": prompt},),
        params=params or GenerationParams(),
        max_latency_ms=max_latency_ms,
    )
    with Engine(EngineSettings(**options)) as engine:
        return engine.submit(request).result(timeout=30)


def _at(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def test_success_returns_text_usage_and_one_attempt(server: MockOpenAIServer) -> None:
    server.add_reply(
        "capital", {"content": "Paris", "usage": {"prompt_tokens": 11, "completion_tokens": 2}}
    )
    result = run_one(server, "capital of France?")
    assert result.ok and result.text == "Paris" and result.finish_reason == "stop"
    assert (result.input_tokens, result.output_tokens, result.total_tokens) == (11, 2, 13)
    assert result.error_code is None and result.error_message == ""
    assert not result.cached and not result.latency_exceeded
    assert len(result.attempts) == 1
    attempt = result.attempts[0]
    assert attempt.number == 1 and attempt.error_code is None
    assert (attempt.input_tokens, attempt.output_tokens) == (11, 2)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", attempt.started_at)
    assert result.first_attempt_at == result.last_attempt_at == attempt.started_at
    assert result.latency_ms == attempt.latency_ms > 0
    assert result.model == "openai/mock-model"


def test_params_are_sent_as_given(server: MockOpenAIServer) -> None:
    params = GenerationParams(
        temperature=0.0,
        top_p=0.5,
        max_new_tokens=64,
        seed=7,
        response_format={"type": "json_object"},
        extra_body={"grammar": "root ::= [a-z]+"},
    )
    assert run_one(server, "params please", params=params).ok
    body = server.last_request()
    assert body is not None
    assert body["model"] == "mock-model"
    assert body["messages"] == [{"role": "user", "content": "params please"}]
    assert body["temperature"] == 0.0 and body["top_p"] == 0.5 and body["seed"] == 7
    assert body["max_tokens"] == 64  # a compatible server, not api.openai.com
    assert body["response_format"] == {"type": "json_object"}
    assert body["grammar"] == "root ::= [a-z]+"


def test_per_model_defaults_fill_unset_params(server: MockOpenAIServer) -> None:
    per_model = {"openai/mock-model": {"params": {"temperature": 0.3, "seed": 1}}}
    params = GenerationParams(seed=9)
    assert run_one(server, "defaults", params=params, per_model=per_model).ok
    body = server.last_request()
    assert body is not None and body["temperature"] == 0.3 and body["seed"] == 9


@pytest.mark.parametrize("transport", ["httpx", "aiohttp"])
@pytest.mark.parametrize(
    ("kind", "code", "status"),
    [
        ("500", "internal_error", 500),
        ("502", "service_unavailable", 502),
        ("503", "service_unavailable", 503),
        ("429", "rate_limited", 429),
        ("reset", "connection_error", None),
    ],
)
def test_transient_faults_are_retried(
    server: MockOpenAIServer, transport: str, kind: FaultKind, code: str, status: int | None
) -> None:
    server.add_fault(kind, match="flaky-record", times=2, retry_after=0.001)
    result = run_one(server, "flaky-record", transport=transport)
    assert result.ok, result
    assert [a.error_code for a in result.attempts] == [code, code, None]
    assert [a.status_code for a in result.attempts] == [status, status, None]
    assert [a.number for a in result.attempts] == [1, 2, 3]
    assert server.count_for("flaky-record") == 3
    assert result.first_attempt_at == result.attempts[0].started_at
    assert result.last_attempt_at == result.attempts[2].started_at


@pytest.mark.parametrize("transport", ["httpx", "aiohttp"])
def test_a_malformed_body_is_not_retried(server: MockOpenAIServer, transport: str) -> None:
    # Dataset Contract §3.2: only transient errors are retried; a garbled 200 is not one.
    server.add_fault("malformed", match="garbled-record", times=2)
    result = run_one(server, "garbled-record", transport=transport)
    assert result.error_code == "invalid_response"
    assert [a.error_code for a in result.attempts] == ["invalid_response"]
    assert server.count_for("garbled-record") == 1


@pytest.mark.parametrize("transport", ["httpx", "aiohttp"])
def test_timeout_is_transient(server: MockOpenAIServer, transport: str) -> None:
    server.add_fault("hang", match="slow-record", times=1, hang_seconds=600)
    # 2 s, not less: the retry must be answered within it, on a loaded machine too.
    result = run_one(server, "slow-record", request_timeout_s=2.0, transport=transport)
    assert result.ok
    assert [a.error_code for a in result.attempts] == ["timeout", None]
    assert result.attempts[0].latency_ms >= 1990  # the timeout ended it (a lower bound)


def test_permanent_400_is_not_retried(server: MockOpenAIServer) -> None:
    server.add_fault("400", match="bad-record")
    result = run_one(server, "bad-record")
    assert not result.ok and result.text is None
    assert result.error_code == "bad_request"
    assert [(a.error_code, a.status_code) for a in result.attempts] == [("bad_request", 400)]
    assert server.count_for("bad-record") == 1


def test_404_is_not_found_and_not_retried(server: MockOpenAIServer) -> None:
    server.add_reply("missing-model", {"status": 404, "content": "The model does not exist"})
    result = run_one(server, "missing-model")
    assert result.error_code == "not_found" and len(result.attempts) == 1
    assert "does not exist" in result.error_message


def test_content_filter_is_permanent(server: MockOpenAIServer) -> None:
    server.add_fault("content_filter", match="filtered-record")
    result = run_one(server, "filtered-record")
    assert result.error_code == "content_filter" and result.text is None
    assert len(result.attempts) == 1 and server.count_for("filtered-record") == 1


def test_length_finish_is_a_success(server: MockOpenAIServer) -> None:
    server.add_fault("length", match="long-record")
    result = run_one(server, "long-record")
    assert result.ok and result.finish_reason == "length"


def test_auth_error_is_permanent(server: MockOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server.update_config(api_key="right-key")
    monkeypatch.setenv("LEGALEVAL_TEST_WRONG_KEY", "wrong-key")
    result = run_one(server, "auth-record", api_key_env="LEGALEVAL_TEST_WRONG_KEY")
    assert result.error_code == "auth_error" and len(result.attempts) == 1
    assert result.attempts[0].status_code == 401
    monkeypatch.setenv("LEGALEVAL_TEST_WRONG_KEY", "right-key")
    assert run_one(server, "auth-record", api_key_env="LEGALEVAL_TEST_WRONG_KEY").ok


def test_max_attempts_and_final_code_is_the_last_attempts(server: MockOpenAIServer) -> None:
    server.add_fault("500", match="doomed-record", times=1)
    server.add_fault("503", match="doomed-record")
    result = run_one(server, "doomed-record")
    assert [a.error_code for a in result.attempts] == [
        "internal_error",
        "service_unavailable",
        "service_unavailable",
    ]
    assert result.error_code == "service_unavailable" and result.text is None
    assert server.count_for("doomed-record") == 3
    two = run_one(server, "doomed-record", retry=RetryPolicy.scaled(0.001, max_attempts=2))
    assert len(two.attempts) == 2 and two.error_code == "service_unavailable"
    one = run_one(server, "doomed-record", retry=RetryPolicy.scaled(0.001, max_attempts=1))
    assert len(one.attempts) == 1


def test_backoff_waits_at_least_the_jittered_schedule(server: MockOpenAIServer) -> None:
    server.add_fault("500", match="backoff-record", times=2)
    policy = RetryPolicy(delays_s=(0.15, 0.3), jitter=0.2)
    result = run_one(server, "backoff-record", retry=policy)
    first, second, third = result.attempts
    gap1 = _at(second.started_at) - _at(first.started_at) - first.latency_ms / 1000
    gap2 = _at(third.started_at) - _at(second.started_at) - second.latency_ms / 1000
    assert gap1 >= 0.15 * 0.8 - 0.002
    assert gap2 >= 0.3 * 0.8 - 0.002


def test_retry_after_is_honoured(server: MockOpenAIServer) -> None:
    server.add_fault("429", match="patient-record", times=1, retry_after=0.4)
    policy = RetryPolicy(delays_s=(0.001,), retry_after_cap_s=5.0)
    result = run_one(server, "patient-record", retry=policy)
    assert result.ok
    first, second = result.attempts
    assert first.retry_after_s == pytest.approx(0.4)
    assert _at(second.started_at) - _at(first.started_at) >= 0.4 - 0.002


def test_retry_after_is_capped(server: MockOpenAIServer) -> None:
    server.add_fault("429", match="capped-record", times=1, retry_after=30)
    policy = RetryPolicy(delays_s=(0.001,), retry_after_cap_s=0.2)
    result = run_one(server, "capped-record", retry=policy)
    assert result.ok
    first, second = result.attempts
    assert first.retry_after_s == pytest.approx(30)
    gap = _at(second.started_at) - _at(first.started_at)
    assert 0.2 - 0.002 <= gap < 30  # the cap's wait, not the 30 s the server asked for


def test_latency_budget_is_flagged_not_enforced(server: MockOpenAIServer) -> None:
    server.set_latency(0.05)
    slow = run_one(server, "budget-record", max_latency_ms=10)
    assert slow.ok and slow.latency_exceeded
    fine = run_one(server, "budget-record", max_latency_ms=10_000)
    assert fine.ok and not fine.latency_exceeded
