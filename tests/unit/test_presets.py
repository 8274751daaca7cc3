"""Provider presets: each vendor's URL and key, the overrides, and the parameter rules.

Every preset is driven through the real engine (the ``openai`` SDK) against our mock
server, pointed there by a ``models:`` entry or by ``LEGALEVAL_<PRESET>_BASE_URL``: the
mock checks the ``Authorization`` header (a wrong key is a 401) and records the body.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pytest_legaleval.engine import Engine, EngineSettings, GenerationParams, GenerationRequest
from pytest_legaleval.engine.presets import PRESETS, base_url_variable, param_rule
from pytest_legaleval.engine.routing import BUILTIN_PROVIDERS, check_models, key_env_vars
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._prices import Price, PriceTable
from pytest_legaleval.pipeline.settings import Settings
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

PARAMS = GenerationParams(temperature=0.2, top_p=0.9, max_new_tokens=32, seed=7)

# What each vendor must receive for PARAMS (written out, not derived from the rule table).
EXPECTED: dict[str, tuple[str, dict[str, Any], tuple[str, ...]]] = {
    # model: (provider, fields sent, fields absent)
    "anthropic/claude-sonnet-4-5": (
        "anthropic",
        {"temperature": 0.2, "max_tokens": 32, "seed": 7},
        ("top_p", "max_completion_tokens"),
    ),
    "gemini/gemini-2.5-flash": (
        "gemini",
        {"temperature": 0.2, "top_p": 0.9, "max_tokens": 32, "seed": 7},
        ("max_completion_tokens",),
    ),
    "mistral/mistral-small-latest": (
        "mistral",
        {"temperature": 0.2, "top_p": 0.9, "max_tokens": 32, "random_seed": 7},
        ("seed", "max_completion_tokens"),
    ),
    "xai/grok-3-mini": (
        "xai",
        {"temperature": 0.2, "top_p": 0.9, "max_completion_tokens": 32, "reasoning_effort": "low"},
        ("max_tokens",),
    ),
    "openrouter/anthropic/claude-3.5-haiku": (
        "openrouter",
        {"temperature": 0.2, "top_p": 0.9, "max_tokens": 32, "seed": 7},
        ("max_completion_tokens",),
    ),
    "together/meta-llama/Llama-3.3-70B-Instruct-Turbo": (
        "together",
        {"temperature": 0.2, "top_p": 0.9, "max_tokens": 32, "seed": 7},
        (),
    ),
    "groq/llama-3.3-70b-versatile": (
        "groq",
        {"temperature": 0.2, "top_p": 0.9, "max_tokens": 32, "seed": 7},
        (),
    ),
    "deepseek/deepseek-reasoner": (
        "deepseek",
        {"max_tokens": 32, "seed": 7},
        ("temperature", "top_p"),
    ),
    "ollama/llama3.2": ("ollama", {"temperature": 0.2, "top_p": 0.9, "max_tokens": 32}, ()),
    "vllm/Qwen/Qwen2.5-7B-Instruct": (
        "vllm",
        {"temperature": 0.2, "top_p": 0.9, "max_tokens": 32, "seed": 7},
        (),
    ),
}


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for preset in PRESETS.values():
        monkeypatch.delenv(preset.api_key_env, raising=False)
        monkeypatch.delenv(base_url_variable(preset.name), raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer() as srv:
        yield srv


def test_every_preset_is_a_provider_of_the_engine() -> None:
    assert set(PRESETS) == {e[0] for e in EXPECTED.values()}
    assert set(BUILTIN_PROVIDERS) == {"openai", "local", *PRESETS}
    for preset in PRESETS.values():
        assert preset.base_url.startswith(("https://", "http://localhost:"))
        assert preset.api_key_env.endswith("_API_KEY") and preset.docs.startswith("https://")


@pytest.mark.parametrize("model", sorted(EXPECTED))
@pytest.mark.parametrize("how", ["models_entry", "environment"])
def test_each_preset_sends_its_key_and_the_vendor_parameters(
    model: str, how: str, server: MockOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider, sent, absent = EXPECTED[model]
    key = f"sk-{provider}-test-0123456789"
    monkeypatch.setenv(PRESETS[provider].api_key_env, key)
    server.update_config(api_key=key)  # the mock answers 401 to any other Authorization
    entry: dict[str, Any] = {}
    if how == "models_entry":
        entry["base_url"] = server.base_url
    else:
        monkeypatch.setenv(base_url_variable(provider), server.base_url)
    if model == "xai/grok-3-mini":
        entry["params"] = {"reasoning_effort": "low"}
    params = PARAMS
    settings = EngineSettings(cache_path=None, per_model={model: entry} if entry else {})
    with Engine(settings) as engine:
        engine.check_model(model)
        result = engine.submit(
            GenerationRequest(model, ({"role": "user", "content": "hi"},), params)
        ).result(60)
    assert result.ok, result.error_message
    body = server.last_request()
    assert body is not None
    assert body["model"] == model.partition("/")[2]
    for name, value in sent.items():
        assert body.get(name) == value, (name, body)
    for name in absent:
        assert name not in body, (name, body)


def test_a_wrong_key_reaches_the_vendor_as_sent(
    server: MockOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The header is the preset variable's value: the mock refuses another key."""
    server.update_config(api_key="sk-the-right-one-12345")
    monkeypatch.setenv("GEMINI_API_KEY", "sk-a-wrong-one-123456")
    monkeypatch.setenv(base_url_variable("gemini"), server.base_url)
    with Engine(EngineSettings(cache_path=None)) as engine:
        result = engine.submit(
            GenerationRequest("gemini/g", ({"role": "user", "content": "hi"},))
        ).result(60)
    assert result.error_code == "auth_error"


def test_an_openai_reasoning_model_gets_no_temperature(server: MockOpenAIServer) -> None:
    settings = EngineSettings(cache_path=None, base_url=server.base_url)
    with Engine(settings) as engine:
        for model in ("openai/o3-mini", "openai/gpt-5-mini", "openai/gpt-4.1-mini"):
            engine.submit(GenerationRequest(model, ({"role": "user", "content": model},), PARAMS))
        engine.submit(
            GenerationRequest(
                "openai/gpt-5-chat-latest", ({"role": "user", "content": "c"},), PARAMS
            )
        ).result(60)
    bodies = {b["model"]: b for b in server.requests()}
    for name in ("o3-mini", "gpt-5-mini"):
        assert "temperature" not in bodies[name] and "top_p" not in bodies[name]
        assert bodies[name]["max_completion_tokens"] == 32
    for name in ("gpt-4.1-mini", "gpt-5-chat-latest"):
        # A compatible server (a base URL was given) reads max_tokens.
        assert bodies[name]["temperature"] == 0.2 and bodies[name]["max_tokens"] == 32


def _settings(**values: Any) -> Settings:
    return Settings(dataset=("d.jsonl",), **values)


@pytest.mark.parametrize("provider", sorted(p for p in PRESETS if PRESETS[p].key_required))
def test_a_preset_bound_to_its_vendor_needs_its_key(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = f"{provider}/some-model"
    variable = PRESETS[provider].api_key_env
    with pytest.raises(ConfigError, match=f"^{variable} is not set: export it for '{model}'"):
        check_models(_settings(model=(model,)))
    with pytest.raises(ConfigError, match=variable):  # the engine refuses it the same way
        Engine(EngineSettings(cache_path=None)).check_model(model)
    # Pointed elsewhere, no key is needed (a proxy, a mock); with the key, the vendor is fine.
    check_models(_settings(model=(model,), per_model={model: {"base_url": "http://h/v1"}}))
    monkeypatch.setenv(base_url_variable(provider), "http://proxy/v1")
    check_models(_settings(model=(model,)))
    monkeypatch.delenv(base_url_variable(provider))
    monkeypatch.setenv(variable, "sk-test-0123456789")
    check_models(_settings(model=(model,)))


def test_local_presets_need_no_key_and_openai_options_stay_openai(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    check_models(_settings(model=("ollama/llama3.2", "vllm/m"), judge_model=("ollama/j",)))
    # --base-url is the openai/ provider's: it does not move a preset off its vendor.
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set"):
        check_models(_settings(model=("anthropic/c",), base_url="http://127.0.0.1:1/v1"))
    with pytest.raises(ConfigError, match="MISTRAL_API_KEY is not set"):
        check_models(
            _settings(
                responses="r.jsonl",
                judge_model=("mistral/m",),
                judge_base_url="http://127.0.0.1:1/v1",
            )
        )


def test_a_models_entry_can_name_another_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = {"anthropic/c": {"api_key_env": "TEAM_CLAUDE_KEY"}}
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-not-this-one-123")
    with pytest.raises(ConfigError, match=r"^TEAM_CLAUDE_KEY is not set"):
        check_models(_settings(model=("anthropic/c",), per_model=entry))
    settings = _settings(model=("anthropic/c", "openai/x"), per_model=entry)
    assert key_env_vars(settings) == ["OPENAI_API_KEY", "TEAM_CLAUDE_KEY", "ANTHROPIC_API_KEY"]


def test_a_reasoning_effort_the_vendor_refuses_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XAI_API_KEY", "xai-test-0123456789")
    with pytest.raises(ConfigError, match=r"xai/grok-4 does not take reasoning_effort.*x\.ai"):
        check_models(
            _settings(model=("xai/grok-4",), per_model={"xai/grok-4": {"reasoning_effort": "low"}})
        )
    check_models(
        _settings(
            model=("xai/grok-3-mini",), per_model={"xai/grok-3-mini": {"reasoning_effort": "high"}}
        )
    )
    with pytest.raises(ConfigError, match="reasoning_effort must be one of"):
        check_models(
            _settings(model=("openai/o3",), per_model={"openai/o3": {"reasoning_effort": 3}})
        )


def test_the_rule_table_matches_by_provider_and_model_prefix() -> None:
    assert param_rule("anthropic", "claude-opus-4-1-20250805").exclusive == ("temperature", "top_p")
    assert param_rule("anthropic", "claude-sonnet-4-20250514").exclusive == ()
    assert param_rule("deepseek", "deepseek-chat").refused == frozenset()
    assert not param_rule("xai", "grok-4-0709").reasoning_effort
    assert param_rule("xai", "grok-3-mini-fast").reasoning_effort
    assert param_rule("openai", "o4-mini").max_tokens_field == "max_completion_tokens"
    assert param_rule("openrouter", "openai/o3").refused == frozenset()  # OpenRouter adapts


def test_a_preset_model_is_priced_through_its_prefixes() -> None:
    table = PriceTable({"claude-3-5-haiku": Price(0.8, 4.0)})
    assert table.lookup("openrouter/anthropic/claude-3-5-haiku-20241022") == Price(0.8, 4.0)
    assert table.lookup("anthropic/claude-3-5-haiku") == Price(0.8, 4.0)
