"""The wire-format client and the openai SDK's public client agree on every outcome.

The engine's default transport speaks the Chat Completions wire format over aiohttp
(``engine.wire``); the SDK's public ``AsyncOpenAI.post`` (``--transport sdk``) is the
reference. Both run through the real engine against the mock server, case by case: the
same bodies reach the server, the same results and attempt codes come back.
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
)
from pytest_legaleval.testing.mock_openai import MockConfig, MockOpenAIServer

KEY = "wire-test-key"
CASES = ("ok", "400", "404", "500", "429", "hang", "reset", "malformed", "filter", "filtered-400")


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


def _run_all(server: MockOpenAIServer, transport: str) -> dict[str, object]:
    server.add_fault("400", match="case-400")
    server.add_fault("500", match="case-500", times=1)
    server.add_fault("429", match="case-429", times=1, retry_after=0.001)
    server.add_fault("hang", match="case-hang", times=1, hang_seconds=600)
    server.add_fault("reset", match="case-reset", times=1)
    server.add_fault("malformed", match="case-malformed", times=1)
    server.add_fault("content_filter", match="case-filter$", times=1)
    server.add_reply("case-404", {"status": 404, "content": "The model does not exist"})
    server.add_reply(
        "case-filtered-400",
        {"status": 400, "content": "blocked", "error_code": "content_filter"},
    )
    outcomes: dict[str, object] = {}
    settings = EngineSettings(
        base_url=server.base_url,
        cache_path=None,
        retry=RetryPolicy.scaled(0.001),
        # Short enough for the hang case, long enough that no other call times out on a
        # loaded machine.
        request_timeout_s=3.0,
        transport=transport,
        api_key_env="LEGALEVAL_WIRE_KEY",
    )
    with Engine(settings) as engine:
        # A client's first call may be slow (the SDK's set-up): not under the short timeout.
        warm = GenerationRequest("openai/mock-model", ({"role": "user", "content": "warm"},))
        assert engine.submit(warm).result(timeout=60).ok
        for case in CASES:
            request = GenerationRequest(
                "openai/mock-model",
                ({"role": "user", "content": f"case-{case}"},),
                GenerationParams(temperature=0.2, max_new_tokens=16, seed=7),
            )
            result = engine.submit(request).result(timeout=30)
            outcomes[case] = (result.ok, result.text, _outcome(result), result.error_code)
    outcomes["bodies"] = server.requests()
    return outcomes


def test_wire_and_sdk_agree_on_every_outcome(
    server: MockOpenAIServer, other_server: MockOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEGALEVAL_WIRE_KEY", KEY)  # the mock answers 401 without it
    wire = _run_all(server, "wire")
    sdk = _run_all(other_server, "sdk")
    assert wire == sdk
    assert wire["ok"][:1] == (True,)  # type: ignore[index]
    assert wire["400"][2] == [("bad_request", 400)]  # type: ignore[index]
    assert wire["404"][2] == [("not_found", 404)]  # type: ignore[index]
    assert wire["500"][2] == [("internal_error", 500), (None, None)]  # type: ignore[index]
    assert wire["429"][2] == [("rate_limited", 429), (None, None)]  # type: ignore[index]
    assert wire["hang"][2] == [("timeout", None), (None, None)]  # type: ignore[index]
    assert wire["reset"][2] == [("connection_error", None), (None, None)]  # type: ignore[index]
    assert wire["malformed"][2] == [("invalid_response", None)]  # type: ignore[index]
    assert wire["filter"][3] == "content_filter"  # type: ignore[index]
    bodies = wire["bodies"]
    assert isinstance(bodies, list) and bodies[1]["temperature"] == 0.2
    assert bodies[1]["max_tokens"] == 16 and bodies[1]["seed"] == 7


def test_a_wrong_key_is_an_auth_error_on_both(
    server: MockOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEGALEVAL_WIRE_KEY", "wrong-key")
    codes = []
    for transport in ("wire", "sdk"):
        settings = EngineSettings(
            base_url=server.base_url,
            cache_path=None,
            retry=RetryPolicy.scaled(0.001),
            transport=transport,
            api_key_env="LEGALEVAL_WIRE_KEY",
        )
        with Engine(settings) as engine:
            request = GenerationRequest("openai/mock-model", ({"role": "user", "content": "x"},))
            result = engine.submit(request).result(timeout=30)
        codes.append((_outcome(result), "wrong-key" in (result.error_message or "")))
    assert codes == [([("auth_error", 401)], False)] * 2


def test_auto_is_the_wire_client_and_the_sdk_is_not_imported(
    server: MockOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from pytest_legaleval.engine import providers

    monkeypatch.setenv("LEGALEVAL_WIRE_KEY", KEY)
    monkeypatch.delitem(sys.modules, "pytest_legaleval.engine.sdk_client", raising=False)
    settings = EngineSettings(
        base_url=server.base_url, cache_path=None, api_key_env="LEGALEVAL_WIRE_KEY"
    )
    assert providers.OpenAIProvider(settings).transport == "wire"
    with Engine(settings) as engine:
        request = GenerationRequest("openai/mock-model", ({"role": "user", "content": "x"},))
        assert engine.submit(request).result(timeout=30).ok
    assert "pytest_legaleval.engine.sdk_client" not in sys.modules


def test_proxy_variables_are_read_once_per_client(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_legaleval.engine.wire import WireClient, proxy_for

    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    assert proxy_for("https://api.example/v1/chat/completions") == "http://proxy.example:3128"
    assert proxy_for("https://internal.example/v1/chat/completions") is None
    assert proxy_for("http://api.example/v1/chat/completions") is None  # no HTTP_PROXY
    assert WireClient("https://api.example/v1", "", 4)._proxy == "http://proxy.example:3128"
