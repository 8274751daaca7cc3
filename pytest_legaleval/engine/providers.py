"""Providers: who answers ``PROVIDER/NAME`` requests, looked up through a small registry."""

from __future__ import annotations

import itertools
import json
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

import httpx2
import openai

from pytest_legaleval.engine.openai_reply import DUMMY_KEY, parse_completion, scrub_key
from pytest_legaleval.engine.presets import OPENAI_DEFAULT_BASE_URL, PRESETS, Route
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
from pytest_legaleval.errors import ConfigError

__all__ = [
    "OPENAI_DEFAULT_BASE_URL",
    "PREFERRED_TRANSPORT",
    "LocalProvider",
    "OpenAIProvider",
    "Provider",
    "ProviderFactory",
    "ProviderRegistry",
    "default_registry",
    "split_model",
]

PREFERRED_TRANSPORT = "aiohttp"
"""What ``transport="auto"`` means: the transport that costs the client less CPU per call
at the same wall time (``benchmarks/transport.py``; figures in ``benchmarks/RESULTS.md``),
which decides once the client shares a busy machine."""

_PATH = "/chat/completions"
_OPTIONS: Mapping[str, Any] = {"security": {"bearer_auth": True}}


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

    @property
    def base_url(self) -> str:
        return self.route.base_url

    @property
    def api_key_env(self) -> str:
        return self.route.api_key_env


class OpenAIProvider:
    """``openai/NAME`` through ``openai.AsyncOpenAI`` (also vLLM, llama.cpp, Ollama …).

    With ``provider`` set to a preset (``anthropic`` …), the same client serves that
    vendor's OpenAI-compatible endpoint, with the parameter rules of ``engine.presets``.
    One client per (base_url, api_key_env); the SDK's own retries are off so the engine's
    policy is the only one. The key is read from the environment when a client is built and
    lives only inside that client.
    """

    def __init__(self, settings: EngineSettings, provider: str = "openai") -> None:
        self._settings = settings
        self.provider = provider
        self._routes: dict[str, _Route] = {}
        self._clients: dict[tuple[str, str], tuple[openai.AsyncOpenAI, str]] = {}
        self._http_clients: dict[tuple[str, str], httpx2.AsyncClient] = {}
        transport = settings.transport
        self.transport = PREFERRED_TRANSPORT if transport == "auto" else transport
        pool = settings.process_concurrency + (settings.process_judge_concurrency or 0)
        self._pool_size = max(100, pool + 8)
        # Our own idempotency keys: the SDK would draw a uuid4 per call, which showed up as
        # ~3 % of a worker's CPU in profiles. One random prefix per provider plus a counter
        # is unique per attempt, as the SDK's keys are with its retries off.
        self._key_prefix = f"legaleval-{secrets.token_hex(8)}-"
        self._key_counter = itertools.count(1)
        self._senders: dict[tuple[str, str], _Sender | None] = {}

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
            route = _Route(found, defaults)
            self._routes[model] = route
        return route

    def endpoint(self, model: str) -> str:
        """``<provider>:<base url>`` (``openai:https://api.openai.com/v1``)."""
        return f"{self.provider}:{self._route(model).base_url}"

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

    def _client(self, route: _Route) -> tuple[openai.AsyncOpenAI, str]:
        key = (route.base_url, route.api_key_env)
        entry = self._clients.get(key)
        if entry is None:
            api_key = os.environ.get(route.api_key_env) or DUMMY_KEY
            limits = httpx2.Limits(
                max_connections=self._pool_size, max_keepalive_connections=self._pool_size
            )
            timeout = self._settings.request_timeout_s
            http_client: httpx2.AsyncClient
            if self.transport == "aiohttp":
                http_client = openai.DefaultAioHttpClient(limits=limits, timeout=timeout)
            else:
                http_client = openai.DefaultAsyncHttpxClient(limits=limits, timeout=timeout)
            client = openai.AsyncOpenAI(
                base_url=route.base_url,
                api_key=api_key,
                max_retries=0,
                timeout=timeout,
                http_client=http_client,
            )
            entry = (client, api_key)
            self._clients[key] = entry
            self._http_clients[key] = http_client
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

    def _prepare_sender(self, key: tuple[str, str], client: openai.AsyncOpenAI) -> None:
        if not self._settings.sdk_fast_path:
            return
        if key not in self._senders and self._clients.get(key, (None,))[0] is client:
            self._senders[key] = _Sender.build(client, self._http_clients[key])

    async def complete(self, request: GenerationRequest) -> RawCompletion:
        """One chat completion; every failure is re-raised as a scrubbed ``ProviderError``."""
        route = self._route(request.model)
        client, api_key = self._client(route)
        key = (route.base_url, route.api_key_env)
        try:
            body = self._body(request, route)
            idempotency_key = f"{self._key_prefix}{next(self._key_counter)}"
            sender = self._senders.get(key)
            if sender is not None:
                content = await sender.send(body, idempotency_key)
            else:
                # The client's generic ``post`` (its documented way to call any endpoint)
                # skips the typed ``create`` wrapper's recursive parameter transform and
                # pydantic response model; auth, base URL, timeouts and status-error mapping
                # are still the SDK's. A client's first calls go this way (the SDK probes the
                # platform for its headers off the loop), then its ``_Sender`` takes over.
                options = cast(
                    openai.RequestOptions, {**_OPTIONS, "idempotency_key": idempotency_key}
                )
                try:
                    response = await client.post(
                        _PATH, cast_to=httpx2.Response, body=body, options=options
                    )
                except Exception:
                    self._prepare_sender(key, client)
                    raise
                self._prepare_sender(key, client)
                content = response.content
            return parse_completion(content)
        except ProviderError:
            raise
        except Exception as exc:
            found = classify_error(exc, scrub=lambda text: scrub_key(text, api_key))
            message = found.message
            raise ProviderError(
                found.code,
                message,
                transient=found.transient,
                status_code=found.status_code,
                retry_after_s=found.retry_after_s,
            ) from None

    async def aclose(self) -> None:
        """Close every client (and its connection pool)."""
        clients, self._clients = self._clients, {}
        self._http_clients.clear()
        self._senders.clear()
        for client, _ in clients.values():
            await client.close()


class _Sender:
    """The SDK's request path without its per-call option models (most of its CPU per call).

    ``AsyncOpenAI.post`` validates and copies a pydantic options model, merges headers and
    parses the URL again on every call, about half of the engine's CPU per call (see
    ``benchmarks/RESULTS.md``). Everything here is the SDK's, computed once per client: its own
    ``_build_request`` builds a template request (URL, auth and platform headers, timeouts),
    each call copies it with its own body and goes out through the client's HTTP client (the
    SDK's httpx or aiohttp transport), and error statuses become the SDK's exception types
    through the client's own mapping. The SDK's retries are off, so nothing else of ``request``
    applies.

    ``build`` returns ``None`` when this SDK version lacks one of the (private) pieces; the
    provider then calls ``client.post`` as before.
    """

    __slots__ = (
        "_client",
        "_connection_errors",
        "_extensions",
        "_headers",
        "_http",
        "_idempotency",
        "_timeouts",
        "_url",
    )

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        http: httpx2.AsyncClient,
        template: httpx2.Request,
        idempotency_header: str | None,
        errors: tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]],
    ) -> None:
        self._client = client
        self._http = http
        self._timeouts, self._connection_errors = errors
        self._url = template.url
        self._extensions = template.extensions
        headers = template.headers.copy()
        headers.pop("content-length", None)
        if idempotency_header:
            headers.pop(idempotency_header, None)
        self._headers = headers
        self._idempotency = idempotency_header

    @classmethod
    def build(cls, client: openai.AsyncOpenAI, http: httpx2.AsyncClient) -> _Sender | None:
        """The sender of ``client``, on the engine's loop (the headers name its runtime).

        Built after the client's first call, when the SDK knows the platform it reports.
        """
        try:
            from openai._httpx2 import request_exceptions, timeout_exceptions
            from openai._models import FinalRequestOptions

            options = FinalRequestOptions.construct(
                method="post", url=_PATH, json_data={}, **_OPTIONS
            )
            template = client._build_request(options)
            idempotency = client._idempotency_header
            client._make_status_error_from_response  # noqa: B018 - needed on error
            errors = (timeout_exceptions(), request_exceptions())
        except Exception:  # another SDK version: its public ``post`` still works
            return None
        if not isinstance(template, httpx2.Request) or not (
            idempotency is None or isinstance(idempotency, str)
        ):
            return None
        return cls(client, http, template, idempotency, errors)

    async def send(self, body: Mapping[str, Any], idempotency_key: str) -> bytes:
        """POST ``body``; the response bytes, or the SDK's exception for the failure."""
        headers = self._headers.copy()
        if self._idempotency:
            headers[self._idempotency] = idempotency_key
        content = json.dumps(
            body, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        ).encode()
        request = httpx2.Request(
            "POST", self._url, headers=headers, content=content, extensions=self._extensions
        )
        # As the SDK's ``request`` maps failures (its retries are off).
        try:
            response = await self._http.send(request)
        except self._timeouts as exc:
            raise openai.APITimeoutError(request=request) from exc
        except openai.OpenAIError:
            raise
        except self._connection_errors as exc:
            raise openai.APIConnectionError(request=request) from exc
        if not response.is_success:
            raise self._client._make_status_error_from_response(response) from None
        return response.content


class LocalProvider(OpenAIProvider):
    """``local/NAME``: the OpenAI-compatible path to a server on this machine.

    The plugin starts the server (see :mod:`pytest_legaleval.engine.local_model`) and puts its URL
    into ``per_model[model]["base_url"]``; there is no fallback to ``--base-url`` or
    ``OPENAI_BASE_URL``, which may point at a paid API.
    """

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
