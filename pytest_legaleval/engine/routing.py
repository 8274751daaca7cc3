"""Where each model's calls go, checked when the session configures (without the SDK).

The engine reads the same settings when it starts, in the process that calls the model:
under xdist that is a worker, where a configuration error can only end the session with an
internal error. The controller (or the single process) checks them here first, so a missing
key or a malformed ``models:`` entry is a usage error that names the fix. This module
imports nothing heavy: the controller never imports the SDK.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Protocol

from pytest_legaleval.errors import ConfigError

__all__ = [
    "BUILTIN_PROVIDERS",
    "ModelConfig",
    "check_models",
    "missing_key_message",
    "per_model",
    "split_model",
    "unknown_provider_message",
]

BUILTIN_PROVIDERS = ("local", "openai")
"""The provider prefixes of the engine's default registry (``PROVIDER/NAME``)."""


class ModelConfig(Protocol):
    """The settings routing reads (a run's ``Settings`` has them all)."""

    @property
    def model(self) -> tuple[str, ...]:
        """Models evaluated live."""

    @property
    def judge_model(self) -> tuple[str, ...]:
        """Judge models."""

    @property
    def responses(self) -> str | None:
        """The responses file, when answers are pre-computed."""

    @property
    def per_model(self) -> Mapping[str, Mapping[str, Any]]:
        """Per-model settings (the YAML ``models:`` mapping)."""

    @property
    def base_url(self) -> str | None:
        """The default endpoint."""

    @property
    def judge_base_url(self) -> str | None:
        """The judges' endpoint."""

    @property
    def api_key_env(self) -> str:
        """The default key variable."""


_PARAM_KEYS = ("temperature", "top_p", "max_new_tokens", "seed")
_MODEL_KEYS = frozenset({"base_url", "api_key_env", *_PARAM_KEYS})


def split_model(model: str) -> tuple[str, str]:
    """``"openai/gpt-4.1-mini"`` → ``("openai", "gpt-4.1-mini")``."""
    provider, sep, name = model.partition("/")
    if not sep or not provider or not name:
        raise ConfigError(
            f"Expected PROVIDER/NAME for the model but got {model!r} ({type(model).__name__}); "
            "try e.g. 'openai/gpt-4.1-mini'"
        )
    return provider, name


def unknown_provider_message(provider: str, accepted: tuple[str, ...]) -> str:
    """The error for a ``PROVIDER/NAME`` whose provider nobody serves."""
    return (
        f"Unknown model provider {provider!r}; accepted providers: "
        f"{', '.join(accepted) or '(none)'} (write the model as PROVIDER/NAME)"
    )


def missing_key_message(model: str, api_key_env: str) -> str:
    """The error for a model on the real OpenAI API whose key variable is not set."""
    return (
        f"{api_key_env} is not set: export it for {model!r}, or point "
        "--base-url / OPENAI_BASE_URL at an OpenAI-compatible server"
    )


def per_model(settings: ModelConfig) -> dict[str, dict[str, Any]]:
    """The engine's per-model overrides: the YAML ``models:`` entries, and the judges' URL.

    Each entry becomes ``base_url``, ``api_key_env`` and ``params``; an unknown setting is
    a ``ConfigError``. ``--judge-base-url`` is each judge's ``base_url`` unless its entry
    names one.
    """
    out: dict[str, dict[str, Any]] = {}
    for model, values in settings.per_model.items():
        unknown = set(values) - _MODEL_KEYS
        if unknown:
            hint = (
                " (keys are read from the environment only: use api_key_env)"
                if any("key" in k for k in unknown)
                else ""
            )
            raise ConfigError(
                f"models[{model!r}]: unknown settings {sorted(unknown)}; accepted: "
                f"{sorted(_MODEL_KEYS)}{hint}"
            )
        entry: dict[str, Any] = {k: values[k] for k in ("base_url", "api_key_env") if k in values}
        params = {k: values[k] for k in _PARAM_KEYS if k in values}
        if params:
            entry["params"] = params
        out[model] = entry
    if settings.judge_base_url:
        for judge in settings.judge_model:
            out.setdefault(judge, {}).setdefault("base_url", settings.judge_base_url)
    return out


def check_models(settings: ModelConfig) -> None:
    """Raise ``ConfigError`` for a model the engine could not serve.

    A model that is not ``PROVIDER/NAME`` of a built-in provider, or an ``openai/`` model
    bound for the real OpenAI API (no base URL anywhere) whose key variable is unset.
    ``local/`` models get their server (and URL) from the plugin later.
    """
    overrides = per_model(settings)
    models = [*settings.model] if not settings.responses else []
    for model in [*models, *settings.judge_model]:
        provider, _ = split_model(model)
        if provider not in BUILTIN_PROVIDERS:
            raise ConfigError(unknown_provider_message(provider, BUILTIN_PROVIDERS))
        if provider != "openai":
            continue
        entry = overrides.get(model, {})
        base_url = entry.get("base_url") or settings.base_url or os.environ.get("OPENAI_BASE_URL")
        api_key_env = str(entry.get("api_key_env") or settings.api_key_env)
        if not base_url and not os.environ.get(api_key_env):
            raise ConfigError(missing_key_message(model, api_key_env))
