"""The generation engine: pipelined, rate-limited, retrying, cached LLM calls.

Independent of pytest: the plugin submits every request up front and each test waits only
for its own future. Futures never raise; a failure is a ``GenerationResult`` with an
``error_code``. Decisions worth knowing:

* Retries (Dataset Contract §3.2): transient codes are ``timeout``, ``rate_limited``,
  ``service_unavailable``, ``internal_error`` and ``connection_error`` (a dropped or cut
  connection). ``invalid_response`` (a 200 that is no usable completion: malformed JSON,
  no choices, wrong types) is permanent. The wait before retry k is ``delays_s[k-1]``
  ±jitter, but never shorter than the server's ``Retry-After`` capped at
  ``retry_after_cap_s``. A waiting retry holds no concurrency slot.
* A cache hit has ``cached=True``, ``attempts=()`` and the original call's tokens and
  latency (cost accounting should skip it: nothing was paid this run).
* No reply can stop a run: whatever bytes an endpoint sends, the call ends with a result.
  Replies are data (``engine.sanitize``): lone surrogates become U+FFFD, insane token
  counts are dropped, each with a warning on the attempt.
* Results are committed to the cache before any caller sees them, so a SIGKILL never loses
  a result that was acted on; only successes are stored. A failed write (or a failing
  ``scrub``) leaves the result uncached but still delivered. ``Engine(scrub=...)`` is
  applied to the text written to the cache (the caller still gets the raw reply); the
  cache file is created with mode 0600.
* Limits are per process = total / ``share`` (static split across xdist workers; the
  first ``concurrency % share`` workers take one slot more, so the slots add up to the
  total, and each keeps at least one). A 429 halves the in-flight limit (once per burst)
  and it grows back by 1 per 8 successes.
* The API key is read from ``api_key_env`` only when a client is built; a missing key is a
  ``ConfigError`` (at ``submit``/``check_model``) only for the real OpenAI endpoint, local
  servers get a dummy key. Error texts are scrubbed of the key.
* ``EngineSettings(batch=True)``: requests that miss the cache go through the provider's
  Batch API (``engine.batch`` waits on them, ``engine.batch_client`` speaks the Files and
  Batches API, ``engine.batch_store`` keeps every batch and its requests in the cache file
  before anything waits on it, so another engine on the same cache resumes them). A batch
  answer is a result like a live one, with ``batch=True``; prompt-cache tokens are on
  every result (``cached_input_tokens``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_legaleval.util.lazy import lazy_getattr

if TYPE_CHECKING:
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

_LAZY: dict[str, str] = {
    "AdaptiveConcurrency": "pytest_legaleval.engine.ratelimit",
    "Attempt": "pytest_legaleval.engine.types",
    "CachedRow": "pytest_legaleval.engine.cache",
    "ERROR_CODES": "pytest_legaleval.engine.types",
    "Engine": "pytest_legaleval.engine.runner",
    "EngineSettings": "pytest_legaleval.engine.types",
    "ErrorClassification": "pytest_legaleval.engine.retry",
    "GenerationParams": "pytest_legaleval.engine.types",
    "GenerationRequest": "pytest_legaleval.engine.types",
    "GenerationResult": "pytest_legaleval.engine.types",
    "OpenAIProvider": "pytest_legaleval.engine.providers",
    "PERMANENT_ERROR_CODES": "pytest_legaleval.engine.types",
    "PURPOSES": "pytest_legaleval.engine.runner",
    "Provider": "pytest_legaleval.engine.providers",
    "ProviderError": "pytest_legaleval.engine.retry",
    "ProviderFactory": "pytest_legaleval.engine.providers",
    "ProviderRegistry": "pytest_legaleval.engine.providers",
    "RawCompletion": "pytest_legaleval.engine.types",
    "ResultCache": "pytest_legaleval.engine.cache",
    "RetryPolicy": "pytest_legaleval.engine.types",
    "TRANSIENT_ERROR_CODES": "pytest_legaleval.engine.types",
    "TRANSPORTS": "pytest_legaleval.engine.types",
    "TokenBucket": "pytest_legaleval.engine.ratelimit",
    "cache_key": "pytest_legaleval.engine.cache",
    "classify_error": "pytest_legaleval.engine.retry",
    "default_registry": "pytest_legaleval.engine.providers",
    "estimate_tokens": "pytest_legaleval.engine.ratelimit",
    "parse_retry_after": "pytest_legaleval.engine.retry",
    "split_model": "pytest_legaleval.engine.providers",
}
"""Where each public name lives: imported on first use, so that importing a light
submodule (``routing``, ``types``) does not import the ``openai`` SDK."""

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


# Not kept in this module's namespace: a name always comes from the submodule that is in
# sys.modules now (pytester's in-process runs drop and re-import submodules).
__getattr__ = lazy_getattr(__name__, _LAZY)
