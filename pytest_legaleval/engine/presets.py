"""Provider presets: vendors' OpenAI-compatible endpoints, and what each vendor refuses.

A preset is a provider prefix (``anthropic/claude-sonnet-4-5``) served by the engine's
OpenAI-compatible client with the vendor's documented base URL and key variable. Both can
be overridden: a model's ``base_url`` / ``api_key_env`` in the YAML ``models:`` section,
or the whole preset's URL with ``LEGALEVAL_<PRESET>_BASE_URL`` (e.g. a proxy, or a mock
server in tests). ``--base-url``, ``OPENAI_BASE_URL`` and ``--api-key-env`` stay what they
were: the ``openai/`` provider's.

A key is required only when a model goes to its vendor's own URL: a missing key there is
a configuration error naming the variable. An overridden URL (a proxy, a local server)
gets the key when the variable is set, a placeholder otherwise.

Vendors differ in the parameters they accept, mostly for reasoning models. :data:`RULES`
is the table (first match wins, by provider and model-name pattern), each row citing the
vendor's documentation; a model no row matches gets its preset's defaults. What a row can
say: which field carries the token limit (``max_tokens`` or ``max_completion_tokens``),
parameters the vendor refuses or ignores (never sent), parameters that exclude each other
(the first one set is sent), a renamed ``seed``, and whether ``reasoning_effort`` is
refused (a configuration error: the vendor answers it with an HTTP 400).

This module imports nothing heavy: the configure-time check (``engine.routing``) reads it
in a process that never imports the SDK.

Vendor documentation (OpenAI-compatible base URLs, read 2025):

* anthropic: https://docs.anthropic.com/en/api/openai-sdk — ``https://api.anthropic.com/v1/``
* gemini: https://ai.google.dev/gemini-api/docs/openai —
  ``https://generativelanguage.googleapis.com/v1beta/openai/``
* mistral: https://docs.mistral.ai/api — ``https://api.mistral.ai/v1``
* xai: https://docs.x.ai/docs/guides/reasoning — ``https://api.x.ai/v1``
* openrouter: https://openrouter.ai/docs/quick-start — ``https://openrouter.ai/api/v1``
* together: https://docs.together.ai/docs/inference/openai-compatibility —
  ``https://api.together.ai/v1``
* groq: https://console.groq.com/docs/openai — ``https://api.groq.com/openai/v1``
* deepseek: https://api-docs.deepseek.com/guides/reasoning_model —
  ``https://api.deepseek.com/v1``
* ollama: https://github.com/ollama/ollama/blob/main/docs/openai.md —
  ``http://localhost:11434/v1`` (the key is required by clients but ignored)
* vllm: https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html —
  ``http://localhost:8000/v1`` (a key only when the server was started with ``--api-key``)
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BATCH_PRICE_FACTORS",
    "DEFAULT_BATCH_FACTOR",
    "OPENAI_DEFAULT_BASE_URL",
    "PRESETS",
    "REASONING_EFFORTS",
    "RULES",
    "ParamRule",
    "Preset",
    "Route",
    "base_url_variable",
    "param_rule",
    "resolve_route",
]

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where ``openai/...`` goes without ``base_url`` or ``OPENAI_BASE_URL``."""

REASONING_EFFORTS: tuple[str, ...] = ("none", "minimal", "low", "medium", "high", "xhigh")
"""Values of ``reasoning_effort`` some vendor documents (each vendor takes a subset)."""


BATCH_PRICE_FACTORS: Mapping[str, float] = {"openai": 0.5, "together": 0.5, "groq": 0.5}
"""Providers whose vendor runs the OpenAI Batch API (``--batch``), and the share of the
price table a batch request costs there: OpenAI, Together AI and Groq bill batches at half
price (their pricing pages, 2025). ``openai/`` is any OpenAI-compatible endpoint: whether
it has the API is found out by asking (a 404 sends its calls live). A price table entry's
``batch`` share overrides this."""
DEFAULT_BATCH_FACTOR = 0.5
"""The batch share for a provider this table does not name."""


@dataclass(frozen=True, slots=True)
class Preset:
    """A vendor's OpenAI-compatible endpoint."""

    name: str
    """The provider prefix, e.g. ``anthropic``."""
    base_url: str
    """The vendor's documented OpenAI-compatible base URL."""
    api_key_env: str
    """The variable holding the key, e.g. ``ANTHROPIC_API_KEY``."""
    key_required: bool
    """Whether the vendor's own URL needs a key (local servers: no)."""
    docs: str
    """The vendor's compatibility documentation."""
    notes: str
    """What the vendor's compatibility layer does differently (for the README)."""


PRESETS: Mapping[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "anthropic",
            "https://api.anthropic.com/v1",
            "ANTHROPIC_API_KEY",
            True,
            "https://docs.anthropic.com/en/api/openai-sdk",
            "temperature is capped at 1; response_format, seed and penalties are ignored; "
            "Claude Opus 4.1 and the 4.5 models refuse temperature and top_p together",
        ),
        Preset(
            "gemini",
            "https://generativelanguage.googleapis.com/v1beta/openai",
            "GEMINI_API_KEY",
            True,
            "https://ai.google.dev/gemini-api/docs/openai",
            "reasoning_effort sets the thinking budget of the 2.5 models",
        ),
        Preset(
            "mistral",
            "https://api.mistral.ai/v1",
            "MISTRAL_API_KEY",
            True,
            "https://docs.mistral.ai/api",
            "unknown fields are refused (HTTP 422): the seed is sent as random_seed, the "
            "limit as max_tokens",
        ),
        Preset(
            "xai",
            "https://api.x.ai/v1",
            "XAI_API_KEY",
            True,
            "https://docs.x.ai/docs/guides/reasoning",
            "reasoning models refuse penalties and stop; only grok-3-mini takes "
            "reasoning_effort (the others answer it with an error)",
        ),
        Preset(
            "openrouter",
            "https://openrouter.ai/api/v1",
            "OPENROUTER_API_KEY",
            True,
            "https://openrouter.ai/docs/quick-start",
            "model names carry the upstream vendor (openrouter/anthropic/claude-sonnet-4); "
            "parameters an upstream does not support are dropped by OpenRouter",
        ),
        Preset(
            "together",
            "https://api.together.ai/v1",
            "TOGETHER_API_KEY",
            True,
            "https://docs.together.ai/docs/inference/openai-compatibility",
            "model names are namespaced (together/meta-llama/Llama-3.3-70B-Instruct-Turbo)",
        ),
        Preset(
            "groq",
            "https://api.groq.com/openai/v1",
            "GROQ_API_KEY",
            True,
            "https://console.groq.com/docs/openai",
            "logprobs, logit_bias and n > 1 are refused; temperature 0 becomes 1e-8",
        ),
        Preset(
            "deepseek",
            "https://api.deepseek.com/v1",
            "DEEPSEEK_API_KEY",
            True,
            "https://api-docs.deepseek.com/guides/reasoning_model",
            "deepseek-reasoner ignores temperature and top_p (not sent)",
        ),
        Preset(
            "ollama",
            "http://localhost:11434/v1",
            "OLLAMA_API_KEY",
            False,
            "https://github.com/ollama/ollama/blob/main/docs/openai.md",
            "a local server: no key needed (one is sent when OLLAMA_API_KEY is set)",
        ),
        Preset(
            "vllm",
            "http://localhost:8000/v1",
            "VLLM_API_KEY",
            False,
            "https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html",
            "a local server: a key only when it was started with --api-key",
        ),
    )
}
"""The presets by provider prefix."""


@dataclass(frozen=True, slots=True)
class ParamRule:
    """How one vendor's models take the request parameters (a row of :data:`RULES`)."""

    providers: tuple[str, ...]
    """Provider prefixes the row applies to."""
    pattern: str
    """Regular expression matched at the start of the model name (after the prefix)."""
    max_tokens_field: str | None = None
    """``max_tokens`` or ``max_completion_tokens``; ``None``: the provider's default."""
    refused: frozenset[str] = frozenset()
    """Parameters never sent (the vendor refuses them, or ignores them)."""
    exclusive: tuple[str, ...] = ()
    """Parameters of which only the first one set is sent."""
    seed_field: str = "seed"
    """The wire name of the seed."""
    reasoning_effort: bool = True
    """Whether ``reasoning_effort`` may be sent (``False``: a configuration error)."""
    source: str = ""
    """The vendor documentation the row follows."""


_OPENAI_REASONING = ParamRule(
    ("openai",),
    # o1, o3, o4-mini … and the gpt-5 family (gpt-5-chat is not a reasoning model).
    r"(?:o\d|gpt-5(?!-chat))",
    max_tokens_field="max_completion_tokens",
    refused=frozenset({"temperature", "top_p"}),
    source="https://platform.openai.com/docs/guides/reasoning",
)

RULES: tuple[ParamRule, ...] = (
    _OPENAI_REASONING,
    ParamRule(
        ("anthropic",),
        r"claude-(?:opus-4-1|(?:opus|sonnet|haiku)-4-[5-9]|(?:opus|sonnet|haiku)-[5-9])",
        exclusive=("temperature", "top_p"),
        # "temperature and top_p cannot both be specified for this model" (HTTP 400).
        source="https://docs.aws.amazon.com/bedrock/latest/userguide/"
        "model-parameters-anthropic-claude-messages-request-response.html",
    ),
    ParamRule(
        ("xai",),
        r"grok-3-mini",
        max_tokens_field="max_completion_tokens",
        source="https://docs.x.ai/docs/guides/reasoning",
    ),
    ParamRule(
        ("xai",),
        r"grok-(?:3|4|code)",
        max_tokens_field="max_completion_tokens",
        reasoning_effort=False,
        source="https://docs.x.ai/docs/guides/reasoning",
    ),
    ParamRule(
        ("deepseek",),
        r"deepseek-reasoner",
        refused=frozenset({"temperature", "top_p"}),
        source="https://api-docs.deepseek.com/guides/reasoning_model",
    ),
    ParamRule(
        ("mistral",),
        r"",
        max_tokens_field="max_tokens",
        seed_field="random_seed",
        source="https://docs.mistral.ai/api",
    ),
)
"""Per-provider, per-model-pattern parameter rules, first match wins."""

_COMPILED = tuple((rule, re.compile(rule.pattern)) for rule in RULES)
_DEFAULT = ParamRule((), "")


def param_rule(provider: str, name: str) -> ParamRule:
    """The row of :data:`RULES` for ``provider/name`` (a neutral row when none matches)."""
    for rule, pattern in _COMPILED:
        if provider in rule.providers and pattern.match(name):
            return rule
    return _DEFAULT


def base_url_variable(preset: str) -> str:
    """The variable that moves a whole preset, e.g. ``LEGALEVAL_ANTHROPIC_BASE_URL``."""
    return f"LEGALEVAL_{preset.upper()}_BASE_URL"


@dataclass(frozen=True, slots=True)
class Route:
    """Where one model's calls go and with which key."""

    provider: str
    base_url: str
    api_key_env: str
    vendor_endpoint: bool
    """The vendor's own URL (nothing overrode it)."""
    key_required: bool
    """A call cannot go without the key (the vendor's own URL of a provider that needs one)."""
    rule: ParamRule = field(default=_DEFAULT)

    @property
    def max_tokens_field(self) -> str:
        """The wire name of the token limit."""
        if self.rule.max_tokens_field is not None:
            return self.rule.max_tokens_field
        # OpenAI's own API wants max_completion_tokens (reasoning models reject
        # max_tokens); compatible servers (vLLM, llama.cpp, Ollama) all read max_tokens.
        if self.provider == "openai" and self.vendor_endpoint:
            return "max_completion_tokens"
        return "max_tokens"


def resolve_route(
    provider: str,
    name: str,
    entry: Mapping[str, Any],
    *,
    base_url: str | None,
    api_key_env: str,
) -> Route:
    """The route of ``provider/name`` (``openai`` or a preset).

    Args:
        provider: the prefix.
        name: the model name after the prefix.
        entry: the model's overrides (``base_url``, ``api_key_env``).
        base_url: the session's ``--base-url`` (``openai/`` only; else ``OPENAI_BASE_URL``).
        api_key_env: the session's ``--api-key-env`` (``openai/`` only).

    """
    rule = param_rule(provider, name)
    override = entry.get("base_url") or None
    key_env = entry.get("api_key_env") or None
    preset = PRESETS.get(provider)
    if preset is None:  # openai
        url = override or base_url or os.environ.get("OPENAI_BASE_URL") or None
        return Route(
            provider,
            str(url or OPENAI_DEFAULT_BASE_URL).rstrip("/"),
            str(key_env or api_key_env),
            vendor_endpoint=url is None,
            key_required=url is None,
            rule=rule,
        )
    url = override or os.environ.get(base_url_variable(provider)) or None
    return Route(
        provider,
        str(url or preset.base_url).rstrip("/"),
        str(key_env or preset.api_key_env),
        vendor_endpoint=url is None,
        key_required=url is None and preset.key_required,
        rule=rule,
    )
