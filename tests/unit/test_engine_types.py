"""Engine building blocks without a network: policy, classification, buckets, cache keys."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from pytest_legaleval.engine import (
    AdaptiveConcurrency,
    EngineSettings,
    GenerationParams,
    GenerationRequest,
    GenerationResult,
    ProviderError,
    RetryPolicy,
    TokenBucket,
    cache_key,
    classify_error,
    estimate_tokens,
    parse_retry_after,
)
from pytest_legaleval.engine.types import utc_timestamp
from pytest_legaleval.engine.wire import error_from_status
from pytest_legaleval.errors import ConfigError


def _request(**kw: object) -> GenerationRequest:
    base: dict[str, object] = {
        "model": "openai/gpt-4.1-mini",
        "messages": ({"role": "user", "content": "What is consideration?"},),
    }
    base.update(kw)
    return GenerationRequest(**base)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ RetryPolicy
def test_default_policy_is_the_contract_schedule() -> None:
    policy = RetryPolicy()
    assert policy.max_attempts == 3
    assert policy.delays_s == (2.0, 6.0, 14.0)
    assert policy.jitter == 0.2


@pytest.mark.parametrize("retry", [1, 2, 3])
def test_delay_stays_within_jitter_bounds(retry: int) -> None:
    policy = RetryPolicy()
    base = policy.delays_s[retry - 1]
    assert policy.delay(retry, None, 0.0) == pytest.approx(base * 0.8)
    assert policy.delay(retry, None, 0.5) == pytest.approx(base)
    assert policy.delay(retry, None, 0.999999) == pytest.approx(base * 1.2, rel=1e-5)


def test_delay_repeats_the_last_step_beyond_the_schedule() -> None:
    policy = RetryPolicy(max_attempts=6)
    assert policy.delay(5, None, 0.5) == pytest.approx(14.0)


def test_retry_after_is_honoured_up_to_the_cap_and_never_shortens_the_schedule() -> None:
    policy = RetryPolicy(delays_s=(1.0,), jitter=0.0, retry_after_cap_s=10.0)
    assert policy.delay(1, 5.0, 0.5) == pytest.approx(5.0)
    assert policy.delay(1, 500.0, 0.5) == pytest.approx(10.0)
    assert policy.delay(1, 0.1, 0.5) == pytest.approx(1.0)


def test_scaled_policy_shrinks_waits_and_cap() -> None:
    policy = RetryPolicy.scaled(0.001)
    assert policy.delays_s == pytest.approx((0.002, 0.006, 0.014))
    assert policy.retry_after_cap_s == pytest.approx(0.06)
    assert RetryPolicy.scaled(0.5, max_attempts=5).max_attempts == 5


@pytest.mark.parametrize(
    "kwargs", [{"max_attempts": 0}, {"delays_s": ()}, {"delays_s": (-1.0,)}, {"jitter": 1.5}]
)
def test_invalid_policy_is_a_config_error(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ settings
def test_limits_are_divided_among_sharing_processes() -> None:
    settings = EngineSettings(concurrency=32, rpm=600, tpm=90_000, share=4, judge_concurrency=6)
    assert settings.process_concurrency == 8
    assert settings.process_rpm == pytest.approx(150)
    assert settings.process_tpm == pytest.approx(22_500)
    assert settings.process_judge_concurrency == 2  # 6 over 4: 2, 2, 1, 1
    assert EngineSettings(concurrency=3, share=8).process_concurrency == 1


@pytest.mark.parametrize(("total", "share"), [(50, 2), (50, 3), (50, 4), (7, 3), (32, 5), (4, 4)])
def test_slots_of_the_sharing_processes_add_up_to_the_total(total: int, share: int) -> None:
    """The remainder goes to the first processes: 50 over 3 is 17, 17, 16, never 16 x 3."""
    slots = [
        EngineSettings(concurrency=total, judge_concurrency=total, share=share, position=p)
        for p in range(share)
    ]
    assert sum(s.process_concurrency for s in slots) == total
    assert sum(s.process_judge_concurrency or 0 for s in slots) == total
    sizes = [s.process_concurrency for s in slots]
    assert sizes == sorted(sizes, reverse=True) and max(sizes) - min(sizes) <= 1


def test_fewer_slots_than_processes_still_leave_each_one_call() -> None:
    slots = [EngineSettings(concurrency=2, share=4, position=p) for p in range(4)]
    assert [s.process_concurrency for s in slots] == [1, 1, 1, 1]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"concurrency": 0},
        {"share": 0},
        {"position": -1},
        {"share": 2, "position": 2},
        {"rpm": 0},
        {"transport": "curl"},
        {"request_timeout_s": 0},
        {"per_model": {"openai/x": {"api_key": "sk-nope"}}},
    ],
)
def test_invalid_settings_are_config_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        EngineSettings(**kwargs)  # type: ignore[arg-type]


def test_settings_repr_holds_only_the_env_var_name() -> None:
    assert "OPENAI_API_KEY" in repr(EngineSettings())


# ------------------------------------------------------------------------------ results
def test_result_properties() -> None:
    result = GenerationResult(
        text="x",
        finish_reason="stop",
        error_code=None,
        error_message="",
        attempts=(),
        input_tokens=3,
        output_tokens=None,
        latency_ms=1.0,
        cached=True,
        cache_key="k",
        model="openai/m",
        first_attempt_at=None,
        last_attempt_at=None,
    )
    assert result.ok and result.total_tokens == 3
    failed = GenerationResult(
        None, None, "timeout", "t", (), None, None, None, False, "k", "openai/m", None, None
    )
    assert not failed.ok and failed.total_tokens is None


def test_utc_timestamp_format() -> None:
    assert utc_timestamp(0.5) == "1970-01-01T00:00:00.500Z"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", utc_timestamp(1.7e9))


# ------------------------------------------------------------------------------ classification
def _status_error(
    status: int, headers: dict[str, str] | None = None, body: object = None
) -> ProviderError:
    """The wire client's error for a response (the SDK's are compared in test_engine_wire)."""
    content = b"" if body is None else json.dumps(body).encode()
    return error_from_status(status, headers or {}, content)


@pytest.mark.parametrize(
    ("status", "code", "transient"),
    [
        (429, "rate_limited", True),
        (500, "internal_error", True),
        (501, "internal_error", True),
        (502, "service_unavailable", True),
        (503, "service_unavailable", True),
        (504, "service_unavailable", True),
        (400, "bad_request", False),
        (422, "bad_request", False),
        (401, "auth_error", False),
        (403, "auth_error", False),
        (404, "not_found", False),
    ],
)
def test_status_errors_are_classified(status: int, code: str, transient: bool) -> None:
    found = classify_error(_status_error(status))
    assert (found.code, found.transient, found.status_code) == (code, transient, status)


def test_rate_limit_carries_retry_after() -> None:
    found = classify_error(_status_error(429, {"retry-after": "7"}))
    assert found.retry_after_s == pytest.approx(7.0)
    found = classify_error(_status_error(429, {"retry-after-ms": "250", "retry-after": "7"}))
    assert found.retry_after_s == pytest.approx(0.25)


def test_content_filter_400_is_permanent() -> None:
    body = {"error": {"code": "content_filter", "message": "filtered"}}
    found = classify_error(_status_error(400, body=body))
    assert (found.code, found.transient) == ("content_filter", False)


@pytest.mark.parametrize(
    ("exc", "code", "transient"),
    [
        (TimeoutError(), "timeout", True),
        (ConnectionResetError(), "connection_error", True),
        (json.JSONDecodeError("bad", "x", 0), "invalid_response", False),
        (ProviderError("content_filter", "withheld"), "content_filter", False),
        (ProviderError("rate_limited", "slow down", retry_after_s=2.0), "rate_limited", True),
        (asyncio.CancelledError(), "cancelled", False),
        (RuntimeError("bug"), "internal_error", False),
    ],
)
def test_other_exceptions_are_classified(exc: BaseException, code: str, transient: bool) -> None:
    found = classify_error(exc)
    assert (found.code, found.transient) == (code, transient)


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "1.5"}) == pytest.approx(1.5)
    assert parse_retry_after({"retry-after": "garbage"}) is None
    when = datetime(2030, 1, 1, tzinfo=UTC)
    header = format_datetime(when + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"retry-after": header}, now=when.timestamp()) == pytest.approx(30)


# ------------------------------------------------------------------------------ rate limits
class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_bursts_one_second_then_paces() -> None:
    clock = _Clock()
    bucket = TokenBucket(600, clock)  # 10 per second, capacity 10
    for _ in range(10):
        assert bucket.wait_time(1) == 0.0
        bucket.take(1)
    assert bucket.wait_time(1) == pytest.approx(0.1)
    clock.now += 0.1
    assert bucket.wait_time(1) == pytest.approx(0.0, abs=1e-9)


def test_token_bucket_allows_oversized_charges_and_corrections() -> None:
    clock = _Clock()
    bucket = TokenBucket(60, clock)  # 1 per second, capacity 1
    assert bucket.wait_time(50) == 0.0
    bucket.take(50)
    assert bucket.wait_time(1) == pytest.approx(50.0)
    bucket.adjust(45)  # the real usage was 5
    assert bucket.wait_time(1) == pytest.approx(5.0)


def test_adaptive_concurrency_halves_once_per_epoch_and_recovers() -> None:
    limiter = AdaptiveConcurrency(16, recover_after=2)
    epoch = limiter.epoch
    assert limiter.on_rate_limited(epoch)
    assert not limiter.on_rate_limited(epoch)  # same storm, started before the shrink
    assert limiter.limit == 8
    assert limiter.on_rate_limited(limiter.epoch)
    assert limiter.limit == 4 and limiter.lowest == 4
    for _ in range(4):
        limiter.on_success()
    assert limiter.limit == 6
    for _ in range(10):
        limiter.on_rate_limited(limiter.epoch)
    assert limiter.limit == 1


def test_estimate_tokens() -> None:
    messages = ({"role": "user", "content": "x" * 400},)
    assert estimate_tokens(messages, 50) == 100 + 4 + 50
    assert estimate_tokens(messages, None) == 100 + 4 + 256


# ------------------------------------------------------------------------------ cache key
def test_cache_key_is_stable_and_sensitive() -> None:
    endpoint = "openai:https://api.openai.com/v1"
    key = cache_key(_request(), endpoint)
    assert re.fullmatch(r"[0-9a-f]{64}", key)
    assert key == cache_key(_request(), endpoint)
    assert key == cache_key(_request(purpose="judge", max_latency_ms=5), endpoint)
    variants = [
        cache_key(_request(template_version="v2"), endpoint),
        cache_key(_request(params=GenerationParams(temperature=0.0)), endpoint),
        cache_key(_request(model="openai/gpt-4.1"), endpoint),
        cache_key(_request(messages=({"role": "user", "content": "Other"},)), endpoint),
        cache_key(_request(), "openai:http://127.0.0.1:8000/v1"),
        cache_key(
            _request(params=GenerationParams(extra_body={"grammar": "root ::= x"})), endpoint
        ),
    ]
    assert len({key, *variants}) == len(variants) + 1


def test_cache_key_ignores_mapping_types_and_order() -> None:
    endpoint = "openai:x"
    a = _request(params=GenerationParams(response_format={"type": "json_object", "b": [1]}))
    b = _request(params=GenerationParams(response_format={"b": (1,), "type": "json_object"}))
    assert cache_key(a, endpoint) == cache_key(b, endpoint)
