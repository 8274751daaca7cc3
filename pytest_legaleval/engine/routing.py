"""Where each model's calls go, checked when the session configures (without the SDK).

The engine reads the same settings when it starts, in the process that calls the model:
under xdist that is a worker, where a configuration error can only end the session with an
internal error. The controller (or the single process) checks them here first, so a missing
key or a malformed ``models:`` entry is a usage error that names the fix. This module
imports nothing heavy: the controller never imports the SDK.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from pytest_legaleval.engine.presets import (
    PRESETS,
    REASONING_EFFORTS,
    Route,
    base_url_variable,
    resolve_route,
)
from pytest_legaleval.engine.urls import redact_url
from pytest_legaleval.errors import ConfigError

__all__ = [
    "BUILTIN_PROVIDERS",
    "ModelConfig",
    "ProjectChoices",
    "check_key_destinations",
    "check_models",
    "is_loopback_url",
    "key_env_vars",
    "missing_key_message",
    "model_route",
    "per_model",
    "refused_effort_message",
    "split_model",
    "unknown_provider_message",
]

BUILTIN_PROVIDERS: tuple[str, ...] = tuple(sorted(("local", "openai", *PRESETS)))
"""The provider prefixes of the engine's default registry (``PROVIDER/NAME``): ``openai``,
``local`` and the presets (``anthropic``, ``gemini`` …, see ``engine.presets``)."""


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


_PARAM_KEYS = ("temperature", "top_p", "max_new_tokens", "seed", "reasoning_effort")
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
    """The error for a model bound to its vendor's URL whose key variable is not set."""
    provider = model.partition("/")[0]
    if provider in PRESETS:
        return (
            f"{api_key_env} is not set: export it for {model!r} ({PRESETS[provider].base_url}), "
            f"or point models['{model}'].base_url (or {base_url_variable(provider)}) at "
            "another OpenAI-compatible server"
        )
    return (
        f"{api_key_env} is not set: export it for {model!r}, or point "
        "--base-url / OPENAI_BASE_URL at an OpenAI-compatible server"
    )


def model_route(model: str, entry: Mapping[str, Any], base_url: str | None, key_env: str) -> Route:
    """The route of an ``openai/`` or preset model (see ``engine.presets.resolve_route``)."""
    provider, name = split_model(model)
    return resolve_route(provider, name, entry, base_url=base_url, api_key_env=key_env)


def _check_reasoning_effort(model: str, value: object) -> None:
    if not isinstance(value, str) or value not in REASONING_EFFORTS:
        raise ConfigError(
            f"models[{model!r}]: reasoning_effort must be one of "
            f"{', '.join(REASONING_EFFORTS)}, got {value!r}"
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
        if "reasoning_effort" in values:
            _check_reasoning_effort(model, values["reasoning_effort"])
        entry: dict[str, Any] = {k: values[k] for k in ("base_url", "api_key_env") if k in values}
        params = {k: values[k] for k in _PARAM_KEYS if k in values}
        if params:
            entry["params"] = params
        out[model] = entry
    if settings.judge_base_url:
        # Like --base-url, the judges' URL is the openai/ provider's: a preset judge keeps
        # its vendor (or its models: entry).
        for judge in settings.judge_model:
            if judge.partition("/")[0] == "openai":
                out.setdefault(judge, {}).setdefault("base_url", settings.judge_base_url)
    return out


def key_env_vars(settings: ModelConfig) -> list[str]:
    """Every variable that may hold an API key of this run (their values are secrets).

    The session's ``--api-key-env``, each ``models:`` entry's, and the preset variable of
    every model of the run.
    """
    names = [settings.api_key_env]
    for values in settings.per_model.values():
        if isinstance(values.get("api_key_env"), str):
            names.append(values["api_key_env"])
    for model in (*settings.model, *settings.judge_model, *settings.per_model):
        preset = PRESETS.get(str(model).partition("/")[0])
        if preset is not None:
            names.append(preset.api_key_env)
    return list(dict.fromkeys(names))


def endpoint_urls(settings: ModelConfig) -> list[str]:
    """Every base URL this run may call (their credentials are secrets, ``engine.urls``).

    ``--base-url``, ``--judge-base-url``, each ``models:`` entry's, ``OPENAI_BASE_URL`` and
    the URL variable of every preset model of the run.
    """
    urls = [settings.base_url, settings.judge_base_url, os.environ.get("OPENAI_BASE_URL")]
    for values in settings.per_model.values():
        if isinstance(values.get("base_url"), str):
            urls.append(values["base_url"])
    for model in (*settings.model, *settings.judge_model, *settings.per_model):
        provider = str(model).partition("/")[0]
        if provider in PRESETS:
            urls.append(os.environ.get(base_url_variable(provider)))
    return list(dict.fromkeys(url for url in urls if url))


def check_models(settings: ModelConfig) -> None:
    """Raise ``ConfigError`` for a model the engine could not serve.

    A model that is not ``PROVIDER/NAME`` of a built-in provider; an ``openai/`` or preset
    model bound for its vendor's own URL whose key variable is unset; a ``reasoning_effort``
    the model's vendor refuses (``engine.presets.RULES``). ``local/`` models get their
    server (and URL) from the plugin later.
    """
    overrides = per_model(settings)
    models = [*settings.model] if not settings.responses else []
    for model in [*models, *settings.judge_model]:
        provider, _ = split_model(model)
        if provider not in BUILTIN_PROVIDERS:
            raise ConfigError(unknown_provider_message(provider, BUILTIN_PROVIDERS))
        if provider == "local":
            continue
        entry = overrides.get(model, {})
        route = model_route(model, entry, settings.base_url, settings.api_key_env)
        if route.key_required and not os.environ.get(route.api_key_env):
            raise ConfigError(missing_key_message(model, route.api_key_env))
        if "reasoning_effort" in entry.get("params", {}) and not route.rule.reasoning_effort:
            raise ConfigError(refused_effort_message(model, route))


def refused_effort_message(model: str, route: Route) -> str:
    """The error for a ``reasoning_effort`` that the model's vendor answers with an error."""
    return (
        f"models[{model!r}]: {model} does not take reasoning_effort (its vendor answers it "
        f"with an error, see {route.rule.source}); remove it from the models: entry"
    )


def is_loopback_url(url: str) -> bool:
    """Whether ``url`` names this machine: ``localhost``, ``127.0.0.0/8`` or ``::1``.

    A key sent there never leaves the machine. Only literal addresses and the name
    ``localhost`` count; any other name could resolve elsewhere.
    """
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        return False
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class ProjectChoices:
    """What configuration that comes with the project chose, not the person running it.

    A ``legaleval.yaml`` found at the rootdir and the ``legaleval_*`` ini options travel
    with the repository under test; the command line, ``--legaleval-config FILE`` and the
    environment are the user's.
    """

    file: str = ""
    """The ``legaleval.yaml`` read automatically (``""``: none)."""
    file_options: frozenset[str] = frozenset()
    """``base_url``, ``judge_base_url``, ``api_key_env`` as that file sets them."""
    ini_options: frozenset[str] = frozenset()
    """The same options as ``legaleval_*`` ini keys set them."""
    models: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """That file's ``models:`` entries."""

    def __bool__(self) -> bool:
        return bool(self.file_options or self.ini_options or self.models)


_FLAGS = {"base_url": "--base-url", "judge_base_url": "--judge-base-url"}
_FLAGS["api_key_env"] = "--api-key-env"


def _chooser(
    model: str, key: str, settings: ModelConfig, project: ProjectChoices, judge: bool
) -> tuple[str, str] | None:
    """Where the project chose ``key`` (``base_url``/``api_key_env``) of ``model``, if it did.

    Returns ``(what, source)``: the setting (``models['m'].base_url``, ``base_url``) and
    ``file`` or ``ini``.
    """
    entry = settings.per_model.get(model) or {}
    if key in entry:
        chosen = key in (project.models.get(model) or {})
        return (f"models[{model!r}].{key}", "file") if chosen else None
    if model.partition("/")[0] not in ("openai", "local"):
        return None  # a preset keeps its vendor's URL and key variable unless its entry moves it
    if key == "base_url" and judge and settings.judge_base_url:
        key = "judge_base_url"
    if key in project.file_options:
        return key, "file"
    return (key, "ini") if key in project.ini_options else None


def check_key_destinations(settings: ModelConfig, project: ProjectChoices) -> None:
    """Refuse to send a key where configuration that came with the project points it.

    For every model the run calls, its endpoint and its key variable are resolved as the
    engine resolves them. If the project's own configuration (``project``) chose either
    of them, the endpoint must be a loopback address: otherwise a repository could send
    any environment variable (``GITHUB_TOKEN``) to any host, or a vendor's key to another
    host, without the user naming it.

    Raises:
        ConfigError: naming the setting and where it was set, the host, the variable,
            and how the user can name the host themselves.

    """
    if not project:
        return
    overrides = per_model(settings)
    live = [] if settings.responses else [(m, False) for m in settings.model]
    for model, judge in [*live, *((m, True) for m in settings.judge_model)]:
        provider, _ = split_model(model)
        entry = overrides.get(model, {})
        if provider not in BUILTIN_PROVIDERS or (provider == "local" and "base_url" not in entry):
            continue  # a local/ model without a URL gets the plugin's own loopback server
        route = model_route(model, entry, settings.base_url, settings.api_key_env)
        chosen = [
            found
            for key in ("base_url", "api_key_env")
            if (found := _chooser(model, key, settings, project, judge)) is not None
        ]
        if chosen and not is_loopback_url(route.base_url):
            raise ConfigError(_moved_key_message(model, route, chosen, project))


def _moved_key_message(
    model: str, route: Route, chosen: list[tuple[str, str]], project: ProjectChoices
) -> str:
    where = [
        f"{project.file} (read automatically from the rootdir) sets {what}"
        if source == "file"
        else f"the ini option legaleval_{what}"
        for what, source in chosen
    ]
    fixes = [f"give {_FLAGS[what]} on the command line" for what, _ in chosen if what in _FLAGS]
    if any(source == "file" for _, source in chosen):
        fixes.insert(0, f"name the file with --legaleval-config {project.file} (you vouch for it)")
    host = urlsplit(route.base_url).hostname or redact_url(route.base_url)
    return (
        f"{' and '.join(where)}: the key in ${route.api_key_env} for {model} would go to "
        f"{host}, a host you did not name. Configuration that comes with the project "
        "(legaleval.yaml found at the rootdir, legaleval_* ini options) may point keys "
        "only at this machine (localhost, 127.0.0.1, ::1); to send it there, "
        f"{', or '.join(fixes)}"
    )
