"""A warm client's calls (the provider's ``_Sender``) fail and succeed exactly as its first.

A client's first call goes through the SDK's ``post``; later calls reuse the SDK's request
template. Every outcome is checked on both paths, on both transports, through the real
openai client against the mock server.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_legaleval.engine import (
    Engine,
    EngineSettings,
    GenerationParams,
    GenerationRequest,
    GenerationResult,
    RetryPolicy,
    providers,
)
from pytest_legaleval.testing.mock_openai import MockConfig, MockOpenAIServer

KEY = "sender-test-key"


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer(MockConfig(latency=0.0, api_key=KEY)) as srv:
        yield srv


@pytest.fixture
def other_server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer(MockConfig(latency=0.0, api_key=KEY)) as srv:
        yield srv


def _outcome(result: GenerationResult) -> list[tuple[str | None, int | None]]:
    return [(a.error_code, a.status_code) for a in result.attempts]


def _run_all(server: MockOpenAIServer, transport: str, warm: bool) -> dict[str, object]:
    """Each case in a fresh engine, after ``warm`` calls on the same client or none."""
    server.add_fault("400", match="case-400")
    server.add_fault("500", match="case-500", times=1)
    server.add_fault("429", match="case-429", times=1, retry_after=0.001)
    server.add_fault("hang", match="case-hang", times=1, hang_seconds=5)
    server.add_fault("reset", match="case-reset", times=1)
    server.add_fault("malformed", match="case-malformed", times=1)
    server.add_reply("case-404", {"status": 404, "content": "The model does not exist"})
    outcomes: dict[str, object] = {}
    for case in ("ok", "400", "404", "500", "429", "hang", "reset", "malformed"):
        settings = EngineSettings(
            base_url=server.base_url,
            cache_path=None,
            retry=RetryPolicy.scaled(0.001),
            request_timeout_s=0.3,
            transport=transport,
            sdk_fast_path=warm,
            api_key_env="LEGALEVAL_SENDER_KEY",
        )
        with Engine(settings) as engine:
            if warm:
                warmup = GenerationRequest(
                    "openai/mock-model", ({"role": "user", "content": "warm"},), GenerationParams()
                )
                assert engine.submit(warmup).result(timeout=30).ok
            request = GenerationRequest(
                "openai/mock-model",
                ({"role": "user", "content": f"case-{case}"},),
                GenerationParams(),
            )
            result = engine.submit(request).result(timeout=30)
        outcomes[case] = (result.ok, result.text, _outcome(result))
    return outcomes


@pytest.mark.parametrize("transport", ["httpx", "aiohttp"])
def test_the_warm_path_and_the_sdk_post_agree_on_every_outcome(
    server: MockOpenAIServer,
    other_server: MockOpenAIServer,
    transport: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LEGALEVAL_SENDER_KEY", KEY)  # the mock answers 401 without it
    built: list[object] = []
    real_build = providers._Sender.build

    def counting_build(client: object, http: object) -> object:
        sender = real_build(client, http)  # type: ignore[arg-type]
        built.append(sender)
        return sender

    monkeypatch.setattr(providers._Sender, "build", staticmethod(counting_build))
    cold = _run_all(server, transport, warm=False)
    warm = _run_all(other_server, transport, warm=True)
    assert built and all(sender is not None for sender in built)  # the fast path was used
    assert warm == cold
    assert cold["ok"] == (True, cold["ok"][1], [(None, None)])  # type: ignore[index]
    assert cold["400"][2] == [("bad_request", 400)]  # type: ignore[index]
    assert cold["404"][2] == [("not_found", 404)]  # type: ignore[index]
    assert cold["500"][2] == [("internal_error", 500), (None, None)]  # type: ignore[index]
    assert cold["429"][2] == [("rate_limited", 429), (None, None)]  # type: ignore[index]
    assert cold["hang"][2] == [("timeout", None), (None, None)]  # type: ignore[index]
    assert cold["reset"][2] == [("connection_error", None), (None, None)]  # type: ignore[index]
    assert cold["malformed"][2] == [("invalid_response", None)]  # type: ignore[index]


def test_without_the_sdk_internals_calls_go_through_post(
    server: MockOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An SDK without the private pieces: ``build`` gives up and ``post`` serves every call."""
    monkeypatch.setenv("LEGALEVAL_SENDER_KEY", KEY)
    monkeypatch.setattr(providers._Sender, "build", staticmethod(lambda client, http: None))
    warm = _run_all(server, "httpx", warm=True)
    assert warm["ok"][0] is True  # type: ignore[index]
    assert warm["500"][2] == [("internal_error", 500), (None, None)]  # type: ignore[index]
    assert warm["hang"][2] == [("timeout", None), (None, None)]  # type: ignore[index]
