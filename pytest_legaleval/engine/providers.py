"""Providers: who answers ``PROVIDER/NAME`` requests, looked up through a small registry."""

from __future__ import annotations

import itertools
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pytest_legaleval.engine.openai_reply import DUMMY_KEY, parse_completion, scrub_key
from pytest_legaleval.engine.presets import (
    BATCH_PRICE_FACTORS,
    OPENAI_DEFAULT_BASE_URL,
    PRESETS,
    Route,
)
from pytest_legaleval.engine.retry import ProviderError, classify_error
from pytest_legaleval.engine.routing import (
    missing_key_message,
    model_route,
    refused_effort_message,
    split_model,
    unknown_provider_message,
)
from pytest_legaleval.engine.types import (
    EngineSettings,
    GenerationParams,
    GenerationRequest,
    RawCompletion,
)
from pytest_legaleval.engine.urls import redact_url
from pytest_legaleval.errors import ConfigError

__all__ = [
    "OPENAI_DEFAULT_BASE_URL",
    "PREFERRED_TRANSPORT",
    "BatchTarget",
    "LocalProvider",
    "OpenAIProvider",
    "Provider",
    "ProviderFactory",
    "ProviderRegistry",
    "default_registry",
    "split_model",
]

PREFERRED_TRANSPORT = "wire"
"""What ``transport="auto"`` means: the wire-format client on aiohttp (``engine.wire``),
which costs a fraction of the SDK's CPU per call (``benchmarks/transport.py``; figures in
``benchmarks/RESULTS.md``)."""

_ALIASES = {"auto": PREFERRED_TRANSPORT, "aiohttp": "wire", "httpx": "sdk"}


class _Client(Protocol):
    """What a transport does: POST one body, return the success's bytes."""

    async def post(self, body: Mapping[str, Any], idempotency_key: str) -> bytes: ...

    async def aclose(self) -> None: ...


class Provider(Protocol):
    """Answers chat completions for one provider prefix (``openai``, later ``local`` …)."""

    def endpoint(self, model: str) -> str:
        """Identity of the endpoint serving ``model`` for the cache key (never a secret)."""
        ...

    def check(self, model: str) -> None:
        """Raise ``ConfigError`` if ``model`` cannot be served with this configuration."""
        ...

    def effective_params(self, request: GenerationRequest) -> GenerationParams:
        """Return the request's params with configured per-model defaults filled in."""
        ...

    async def complete(self, request: GenerationRequest) -> RawCompletion:
        """One attempt; failures raise ``ProviderError`` with a classified code."""
        ...

    async def aclose(self) -> None:
        """Release connections (called on the engine's loop)."""
        ...


ProviderFactory = Callable[[EngineSettings], Provider]


class ProviderRegistry:
    """Maps provider prefixes to factories; one instance per engine (no global state)."""

    def __init__(self, factories: Mapping[str, ProviderFactory] | None = None) -> None:
        self._factories: dict[str, ProviderFactory] = dict(factories or {})

    def register(self, name: str, factory: ProviderFactory) -> None:
        """Add or replace the factory for prefix ``name``."""
        self._factories[name] = factory

    def names(self) -> tuple[str, ...]:
        """Return the registered prefixes, sorted."""
        return tuple(sorted(self._factories))

    def create(self, name: str, settings: EngineSettings) -> Provider:
        """Create a provider for prefix ``name``; unknown prefixes raise ``ConfigError``."""
        factory = self._factories.get(name)
        if factory is None:
            raise ConfigError(unknown_provider_message(name, self.names()))
        return factory(settings)


def _preset_factory(name: str) -> ProviderFactory:
    def factory(settings: EngineSettings) -> Provider:
        return OpenAIProvider(settings, provider=name)

    return factory


def default_registry() -> ProviderRegistry:
    """Return a new registry with the built-in providers.

    ``openai``, ``local`` and every preset of ``engine.presets`` (``anthropic``,
    ``gemini`` …), each served by :class:`OpenAIProvider` with the vendor's URL and key.
    """
    factories: dict[str, ProviderFactory] = {"openai": OpenAIProvider, "local": LocalProvider}
    for name in PRESETS:
        factories[name] = _preset_factory(name)
    return ProviderRegistry(factories)


@dataclass(frozen=True, slots=True)
class _Route:
    route: Route
    defaults: GenerationParams
    identity: str
    """The base URL as the cache key names it: credentials redacted (``engine.urls``)."""

    @property
    def base_url(self) -> str:
        return self.route.base_url

    @property
    def api_key_env(self) -> str:
        return self.route.api_key_env


class OpenAIProvider:
    """``openai/NAME``: any OpenAI-compatible endpoint (also vLLM, llama.cpp, Ollama …).

    With ``provider`` set to a preset (``anthropic`` …), the same client serves that
    vendor's OpenAI-compatible endpoint, with the parameter rules of ``engine.presets``.
    One client per (base_url, api_key_env): the wire-format client (``engine.wire``), or
    with ``transport="sdk"`` the openai SDK's public client (``engine.sdk_client``, its own
    retries off so the engine's policy is the only one). The key is read from the
    environment when a client is built and lives only inside that client.
    """

    def __init__(self, settings: EngineSettings, provider: str = "openai") -> None:
        self._settings = settings
        self.provider = provider
        self._routes: dict[str, _Route] = {}
        self._clients: dict[tuple[str, str], tuple[_Client, str]] = {}
        self.transport = _ALIASES.get(settings.transport, settings.transport)
        pool = settings.process_concurrency + (settings.process_judge_concurrency or 0)
        self._pool_size = max(100, pool + 8)
        # One random prefix per provider plus a counter: unique per attempt (a uuid4 per call
        # showed up as ~3 % of a worker's CPU in profiles).
        self._key_prefix = f"legaleval-{secrets.token_hex(8)}-"
        self._key_counter = itertools.count(1)

    def _route(self, model: str) -> _Route:
        route = self._routes.get(model)
        if route is None:
            overrides = self._settings.per_model.get(model, {})
            params = overrides.get("params") or {}
            try:
                defaults = GenerationParams(**dict(params))
            except TypeError as exc:
                raise ConfigError(f"per_model[{model!r}]['params'] is invalid: {exc}") from None
            found = model_route(
                model, overrides, self._settings.base_url, self._settings.api_key_env
            )
            route = _Route(found, defaults, redact_url(found.base_url))
            self._routes[model] = route
        return route

    def endpoint(self, model: str) -> str:
        """``<provider>:<base url>`` (``openai:https://api.openai.com/v1``)."""
        route = self._route(model)
        return f"{self.provider}:{route.identity}"

    def check(self, model: str) -> None:
        """Reject a missing key (only for a vendor's own URL) and a refused reasoning effort."""
        split_model(model)
        route = self._route(model)
        if route.route.key_required and not os.environ.get(route.api_key_env):
            raise ConfigError(missing_key_message(model, route.api_key_env))
        if route.defaults.reasoning_effort is not None and not route.route.rule.reasoning_effort:
            raise ConfigError(refused_effort_message(model, route.route))

    def effective_params(self, request: GenerationRequest) -> GenerationParams:
        """Request params over the per-model defaults."""
        return request.params.merged_over(self._route(request.model).defaults)

    def _client(self, route: _Route) -> tuple[_Client, str]:
        key = (route.base_url, route.api_key_env)
        entry = self._clients.get(key)
        if entry is None:
            api_key = os.environ.get(route.api_key_env) or DUMMY_KEY
            client: _Client
            if self.transport == "sdk":
                from pytest_legaleval.engine.sdk_client import SdkClient

                timeout = self._settings.request_timeout_s
                client = SdkClient(
                    route.base_url,
                    api_key,
                    self._pool_size,
                    timeout,
                    self._settings.max_response_bytes,
                )
            else:
                from pytest_legaleval.engine.wire import WireClient

                client = WireClient(
                    route.base_url, api_key, self._pool_size, self._settings.max_response_bytes
                )
            entry = (client, api_key)
            self._clients[key] = entry
        return entry

    def _body(self, request: GenerationRequest, route: _Route) -> dict[str, Any]:
        params = request.params.merged_over(route.defaults)
        rule = route.route.rule
        kwargs: dict[str, Any] = {
            "model": split_model(request.model)[1],
            "messages": [dict(m) for m in request.messages],
        }
        # What the vendor refuses is never sent (engine.presets.RULES): a reasoning model's
        # temperature, the second of two exclusive parameters.
        for name in ("temperature", "top_p"):
            value = getattr(params, name)
            if value is None or name in rule.refused:
                continue
            if name in rule.exclusive and any(other in kwargs for other in rule.exclusive):
                continue
            kwargs[name] = value
        if params.max_new_tokens is not None:
            kwargs[route.route.max_tokens_field] = params.max_new_tokens
        if params.seed is not None and "seed" not in rule.refused:
            kwargs[rule.seed_field] = params.seed
        if params.reasoning_effort is not None:
            kwargs["reasoning_effort"] = params.reasoning_effort
        if params.response_format is not None:
            kwargs["response_format"] = dict(params.response_format)
        if params.extra_body is not None:
            # Extra fields win over ours, as with the SDK's own ``extra_body``.
            kwargs.update(params.extra_body)
        return kwargs

    def batch_target(self, request: GenerationRequest) -> BatchTarget | None:
        """Where and what ``request`` is sent in a batch.

        ``None``: the vendor has no Batch API (``batch_client.BATCH_PRICE_FACTORS``), the
        call goes live.
        """
        if self.provider not in BATCH_PRICE_FACTORS:
            return None
        route = self._route(request.model)
        api_key = os.environ.get(route.api_key_env) or DUMMY_KEY
        return BatchTarget(route.base_url, api_key, self._body(request, route))

    async def complete(self, request: GenerationRequest) -> RawCompletion:
        """One chat completion; every failure is re-raised as a scrubbed ``ProviderError``."""
        route = self._route(request.model)
        client, api_key = self._client(route)
        try:
            body = self._body(request, route)
            content = await client.post(body, f"{self._key_prefix}{next(self._key_counter)}")
            return parse_completion(content)
        except Exception as exc:
            found = classify_error(exc, scrub=lambda text: scrub_key(text, api_key))
            raise ProviderError(
                found.code,
                found.message,
                transient=found.transient,
                status_code=found.status_code,
                retry_after_s=found.retry_after_s,
            ) from None

    async def aclose(self) -> None:
        """Close every client (and its connection pool)."""
        clients, self._clients = self._clients, {}
        for client, _ in clients.values():
            await client.aclose()


@dataclass(frozen=True, slots=True)
class BatchTarget:
    """Where and what a request is sent in a batch."""

    base_url: str
    """The endpoint (``…/v1``)."""
    api_key: str
    """The key read from its variable (lives only in memory, like a client's)."""
    body: dict[str, Any]
    """The chat completion body, as a live call would send it."""


class LocalProvider(OpenAIProvider):
    """``local/NAME``: the OpenAI-compatible path to a server on this machine.

    The plugin starts the server (see :mod:`pytest_legaleval.engine.local_model`) and puts its URL
    into ``per_model[model]["base_url"]``; there is no fallback to ``--base-url`` or
    ``OPENAI_BASE_URL``, which may point at a paid API.
    """

    def batch_target(self, request: GenerationRequest) -> BatchTarget | None:
        """``None``: a local server has no Batch API."""
        return None

    def endpoint(self, model: str) -> str:
        """``local:NAME``: the weights, not the port, which changes with every session."""
        return "local:" + split_model(model)[1]

    def check(self, model: str) -> None:
        """Reject a ``local/`` model that has no server URL."""
        split_model(model)
        if not self._settings.per_model.get(model, {}).get("base_url"):
            raise ConfigError(
                f"{model!r} has no local server: the pytest plugin starts one for "
                "--model/--judge-model local/NAME; elsewhere set per_model[model]['base_url']"
            )
