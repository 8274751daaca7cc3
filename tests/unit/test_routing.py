"""The configure-time model checks (no SDK): the same verdicts as the engine's own."""

from __future__ import annotations

import pytest

from pytest_legaleval.engine import default_registry
from pytest_legaleval.engine.routing import (
    BUILTIN_PROVIDERS,
    check_models,
    per_model,
    split_model,
)
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.pipeline.settings import Settings

KEY = "LEGALEVAL_TEST_ROUTING_KEY"


@pytest.fixture(autouse=True)
def _no_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY, raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_the_built_in_providers_are_the_engine_registry() -> None:
    assert default_registry().names() == BUILTIN_PROVIDERS


@pytest.mark.parametrize("model", ["gpt-x", "openai/", "/gpt-x", ""])
def test_a_model_is_provider_slash_name(model: str) -> None:
    with pytest.raises(ConfigError, match="Expected PROVIDER/NAME"):
        split_model(model)


def _settings(**values: object) -> Settings:
    return Settings(dataset=("d.jsonl",), api_key_env=KEY, **values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "values",
    [
        {"model": ("openai/gpt-x",), "base_url": "http://127.0.0.1:8000/v1"},
        {"model": ("openai/gpt-x",), "per_model": {"openai/gpt-x": {"base_url": "http://h/v1"}}},
        {"model": ("local/smol",)},  # the plugin starts its server and sets the URL later
        {"responses": "r.jsonl", "model": ()},  # nothing is generated
        {"responses": "r.jsonl", "judge_model": ("openai/j",), "judge_base_url": "http://j/v1"},
    ],
)
def test_models_that_have_an_endpoint_pass(values: dict[str, object]) -> None:
    check_models(_settings(**values))


def test_the_real_api_without_its_key_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=f"^{KEY} is not set: export it for 'openai/gpt-x'"):
        check_models(_settings(model=("openai/gpt-x",)))
    monkeypatch.setenv(KEY, "sk-test")
    check_models(_settings(model=("openai/gpt-x",)))


def test_a_judge_without_an_endpoint_is_checked_too() -> None:
    settings = _settings(responses="r.jsonl", judge_model=("openai/j",))
    with pytest.raises(ConfigError, match="is not set: export it for 'openai/j'"):
        check_models(settings)


def test_a_per_model_key_variable_is_the_one_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _settings(
        model=("openai/gpt-x",), per_model={"openai/gpt-x": {"api_key_env": "OTHER_KEY_VAR"}}
    )
    monkeypatch.setenv(KEY, "sk-test")  # the default variable is set, the model's is not
    monkeypatch.delenv("OTHER_KEY_VAR", raising=False)
    with pytest.raises(ConfigError, match=r"^OTHER_KEY_VAR is not set"):
        check_models(settings)


def test_unknown_providers_and_model_settings_are_errors() -> None:
    with pytest.raises(ConfigError, match="Unknown model provider 'foo'; accepted providers"):
        check_models(_settings(model=("foo/x",), base_url="http://h/v1"))
    with pytest.raises(ConfigError, match=r"models\['openai/x'\]: unknown settings \['api_key'\]"):
        per_model(_settings(per_model={"openai/x": {"api_key": "sk-no"}}))
