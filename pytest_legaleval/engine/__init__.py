"""The generation engine: pipelined, rate-limited, retrying, cached LLM calls.

Independent of pytest: the plugin submits every request up front and each test waits only
for its own future.
"""

from __future__ import annotations

from pytest_legaleval.engine.cache import CachedRow, ResultCache, cache_key
from pytest_legaleval.engine.providers import (
    OpenAIProvider,
    Provider,
    ProviderFactory,
    ProviderRegistry,
    default_registry,
    split_model,
)
from pytest_legaleval.engine.ratelimit import AdaptiveConcurrency, TokenBucket, estimate_tokens
from pytest_legaleval.engine.retry import (
    ErrorClassification,
    ProviderError,
    classify_error,
    parse_retry_after,
)
from pytest_legaleval.engine.runner import PURPOSES, Engine
from pytest_legaleval.engine.types import (
    ERROR_CODES,
    PERMANENT_ERROR_CODES,
    TRANSIENT_ERROR_CODES,
    TRANSPORTS,
    Attempt,
    EngineSettings,
    GenerationParams,
    GenerationRequest,
    GenerationResult,
    RawCompletion,
    RetryPolicy,
)

__all__ = [
    "ERROR_CODES",
    "PERMANENT_ERROR_CODES",
    "PURPOSES",
    "TRANSIENT_ERROR_CODES",
    "TRANSPORTS",
    "AdaptiveConcurrency",
    "Attempt",
    "CachedRow",
    "Engine",
    "EngineSettings",
    "ErrorClassification",
    "GenerationParams",
    "GenerationRequest",
    "GenerationResult",
    "OpenAIProvider",
    "Provider",
    "ProviderError",
    "ProviderFactory",
    "ProviderRegistry",
    "RawCompletion",
    "ResultCache",
    "RetryPolicy",
    "TokenBucket",
    "cache_key",
    "classify_error",
    "default_registry",
    "estimate_tokens",
    "parse_retry_after",
    "split_model",
]
