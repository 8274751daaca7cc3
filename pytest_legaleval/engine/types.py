"""Value types of the generation engine: requests, attempts, results and settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final

from pytest_legaleval.errors import ConfigError

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "ERROR_CODES",
    "PERMANENT_ERROR_CODES",
    "TRANSIENT_ERROR_CODES",
    "TRANSPORTS",
    "Attempt",
    "EngineSettings",
    "GenerationParams",
    "GenerationRequest",
    "GenerationResult",
    "RawCompletion",
    "RetryPolicy",
    "utc_timestamp",
]

DEFAULT_MAX_RESPONSE_BYTES: Final = 32 * 1024 * 1024
"""32 MiB of decoded reply: far above the longest legitimate completion (a 128k-token
answer is well under 1 MB), far below what hurts the machine (``engine.bounded``)."""

TRANSIENT_ERROR_CODES: frozenset[str] = frozenset(
    {
        "timeout",
        "rate_limited",
        "service_unavailable",
        "internal_error",
        "connection_error",
    }
)
"""Error codes the engine retries (Dataset Contract §3.2 plus dropped connections)."""

PERMANENT_ERROR_CODES: frozenset[str] = frozenset(
    {
        "bad_request",
        "auth_error",
        "not_found",
        "content_filter",
        "cancelled",
        "config_error",
        # A 200 whose body is not a usable completion (malformed JSON, no choices, wrong
        # types): §3.2 retries transient errors only, and the same server would most likely
        # send the same body again.
        "invalid_response",
    }
)
"""Error codes that end a request at once."""

ERROR_CODES: frozenset[str] = TRANSIENT_ERROR_CODES | PERMANENT_ERROR_CODES
"""Every error code an ``Attempt`` or ``GenerationResult`` can carry."""

TRANSPORTS: tuple[str, ...] = ("auto", "wire", "sdk", "aiohttp", "httpx")
"""Accepted values of ``EngineSettings.transport``: ``wire`` (the wire-format client on
aiohttp, what ``auto`` means), ``sdk`` (the openai SDK's public client); ``aiohttp`` and
``httpx`` are older names of the two."""


def utc_timestamp(epoch_s: float) -> str:
    """ISO-8601 UTC with milliseconds and a ``Z`` suffix, e.g. ``2025-01-02T03:04:05.678Z``."""
    moment = datetime.fromtimestamp(epoch_s, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass(frozen=True, slots=True)
class GenerationParams:
    """Sampling parameters sent with a chat completion; ``None`` means "server default"."""

    temperature: float | None = None
    """Sampling temperature."""
    top_p: float | None = None
    """Nucleus sampling mass."""
    max_new_tokens: int | None = None
    """Upper bound on generated tokens (``max_tokens`` on the wire)."""
    seed: int | None = None
    """Sampling seed, for servers that honour it."""
    response_format: Mapping[str, Any] | None = None
    """Passed through as ``response_format`` (e.g. a JSON schema)."""
    extra_body: Mapping[str, Any] | None = None
    """Extra JSON fields merged into the request body (e.g. llama.cpp ``grammar``)."""
    reasoning_effort: str | None = None
    """``reasoning_effort`` of reasoning models (``low``, ``medium``, ``high`` …), sent
    where the vendor takes it (``engine.presets.RULES``)."""

    def as_dict(self) -> dict[str, Any]:
        """Return the fields that are set as plain JSON values (stable under new fields)."""
        out: dict[str, Any] = {}
        for name in self.__slots__:
            value = getattr(self, name)
            if value is not None:
                out[name] = _plain(value)
        return out

    def merged_over(self, defaults: GenerationParams) -> GenerationParams:
        """Return these params with every unset field taken from ``defaults``."""
        changes = {
            name: getattr(defaults, name)
            for name in self.__slots__
            if getattr(self, name) is None and getattr(defaults, name) is not None
        }
        return replace(self, **changes) if changes else self


def _plain(value: Any) -> Any:
    """Convert mappings and sequences to dicts and lists so canonical JSON is defined."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """One chat completion to run."""

    model: str
    """``PROVIDER/NAME``, e.g. ``openai/gpt-4.1-mini``; only ``NAME`` is sent."""
    messages: tuple[Mapping[str, str], ...]
    """``{"role": ..., "content": ...}`` turns, exactly as they are sent."""
    params: GenerationParams = GenerationParams()
    """Sampling parameters."""
    template_version: str = ""
    """Prompt/policy version; part of the cache key so a new template never hits old rows."""
    max_latency_ms: int | None = None
    """Latency budget; a slower success is flagged ``latency_exceeded`` (never aborted)."""
    purpose: str = "generation"
    """``generation`` or ``judge``; judges can have their own concurrency pool."""
    max_attempts: int | None = None
    """Overrides the retry policy's attempts for this request (capability probes use 1)."""
    sample: int = 0
    """Which sample of this same request it is (``--epochs``: the epoch). Each sample is a
    call of its own: from 1 on it is part of the cache key, so samples are neither
    deduplicated in flight nor answered by each other's cache rows."""


@dataclass(frozen=True, slots=True)
class RawCompletion:
    """What a provider returns for one successful call."""

    text: str
    """The assistant message content (``""`` when the server sent none)."""
    finish_reason: str | None
    """``stop``, ``length`` … as reported."""
    input_tokens: int | None = None
    """Prompt tokens from the usage block."""
    output_tokens: int | None = None
    """Completion tokens from the usage block."""
    warnings: tuple[str, ...] = ()
    """What was repaired or dropped in the reply (see ``engine.sanitize``)."""
    cached_input_tokens: int | None = None
    """Prompt tokens the provider served from its prompt cache
    (``usage.prompt_tokens_details.cached_tokens`` or a vendor's equivalent), billed at
    the cached-input price; ``None`` when the reply does not say."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One network call made for a request (Dataset Contract §3.2: every attempt is kept)."""

    number: int
    """1-based attempt number."""
    started_at: str
    """ISO-8601 UTC start time with milliseconds and ``Z``."""
    latency_ms: float
    """Wall time of this attempt."""
    error_code: str | None
    """``None`` on success, else one of ``ERROR_CODES``."""
    status_code: int | None = None
    """HTTP status, when a response arrived."""
    input_tokens: int | None = None
    """Prompt tokens reported for this attempt."""
    output_tokens: int | None = None
    """Completion tokens reported for this attempt."""
    retry_after_s: float | None = None
    """Server-requested wait (``Retry-After``), uncapped, if any."""
    message: str = ""
    """Short error text without secrets; empty on success."""
    warnings: tuple[str, ...] = ()
    """What the engine repaired or dropped in this attempt's reply (a lone surrogate, an
    absurd token count …); written to the attempt log."""
    cached_input_tokens: int | None = None
    """Prompt tokens served from the provider's prompt cache, when the reply says."""
    batch_id: str | None = None
    """The provider batch this attempt went through (``--batch``); ``None`` for a live call."""


@dataclass(frozen=True, slots=True)
class GenerationResult:
    """The final outcome of a request: a response text or an error, never an exception."""

    text: str | None
    """The response text; ``None`` when the request failed."""
    finish_reason: str | None
    """The server's finish reason of the successful attempt."""
    error_code: str | None
    """``None`` on success, else the last attempt's error code (or ``cancelled``)."""
    error_message: str
    """Short error text; empty on success."""
    attempts: tuple[Attempt, ...]
    """Every network attempt of this run, in order; ``()`` for a cache hit."""
    input_tokens: int | None
    """Prompt tokens of the successful attempt (stored ones for a cache hit)."""
    output_tokens: int | None
    """Completion tokens of the successful attempt (stored ones for a cache hit)."""
    latency_ms: float | None
    """Latency of the successful attempt (the original one for a cache hit)."""
    cached: bool
    """``True`` when served from the cache without any network call."""
    cache_key: str
    """The request's cache key (see ``cache_key``)."""
    model: str
    """The requested ``PROVIDER/NAME``."""
    first_attempt_at: str | None
    """Start time of the first attempt; ``None`` for a cache hit or a request never started."""
    last_attempt_at: str | None
    """Start time of the last attempt."""
    latency_exceeded: bool = False
    """The successful attempt was slower than the request's ``max_latency_ms``."""
    cancel_reason: str | None = None
    """Why a ``cancelled`` request was cancelled: ``budget`` when ``--max-cost`` stopped it
    before it was sent (``engine.budget``); ``None`` otherwise."""
    cached_input_tokens: int | None = None
    """Prompt tokens of the successful attempt served from the provider's prompt cache."""
    batch: bool = False
    """The answer came through a provider Batch API (billed at the batch price); a cache
    hit keeps the flag of the call that paid for it."""

    @property
    def ok(self) -> bool:
        """The request produced a response text."""
        return self.error_code is None and self.text is not None

    @property
    def total_tokens(self) -> int | None:
        """Input plus output tokens, or ``None`` when neither is known."""
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When to retry a transient failure and how long to wait (Dataset Contract §3.2)."""

    max_attempts: int = 3
    """Attempts in total, the first one included."""
    delays_s: tuple[float, ...] = (2.0, 6.0, 14.0)
    """Base wait before retry k (k=1 after attempt 1); the last value repeats if needed."""
    jitter: float = 0.2
    """Relative jitter: each wait is scaled by ``uniform(1 - jitter, 1 + jitter)``."""
    retry_after_cap_s: float = 60.0
    """A server's ``Retry-After`` is honoured up to this many seconds."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError(f"RetryPolicy.max_attempts must be >= 1, got {self.max_attempts!r}")
        if not self.delays_s or any(d < 0 for d in self.delays_s):
            raise ConfigError(
                f"RetryPolicy.delays_s must be non-empty and >= 0, got {self.delays_s!r}"
            )
        if not 0.0 <= self.jitter < 1.0:
            raise ConfigError(f"RetryPolicy.jitter must be in [0, 1), got {self.jitter!r}")
        if self.retry_after_cap_s < 0:
            raise ConfigError(
                f"RetryPolicy.retry_after_cap_s must be >= 0, got {self.retry_after_cap_s!r}"
            )

    @classmethod
    def scaled(cls, factor: float, *, max_attempts: int = 3) -> RetryPolicy:
        """Return the default schedule with every wait (and the cap) multiplied by ``factor``.

        ``RetryPolicy.scaled(0.001)`` turns 2 s / 6 s / 14 s into milliseconds for tests.
        """
        base = cls()
        return cls(
            max_attempts=max_attempts,
            delays_s=tuple(d * factor for d in base.delays_s),
            jitter=base.jitter,
            retry_after_cap_s=base.retry_after_cap_s * factor,
        )

    def base_delay(self, retry_number: int) -> float:
        """Un-jittered wait before retry ``retry_number`` (1-based)."""
        index = min(max(retry_number, 1), len(self.delays_s)) - 1
        return self.delays_s[index]

    def delay(self, retry_number: int, retry_after_s: float | None, uniform01: float) -> float:
        """Wait before retry ``retry_number``.

        The jittered schedule, but never shorter than the server's ``Retry-After`` (capped at
        ``retry_after_cap_s``): the server knows its own recovery time better than we do, and
        the cap stops a hostile or buggy header from stalling the run.

        Args:
            retry_number: 1 for the retry after the first attempt.
            retry_after_s: the server's requested wait, if any.
            uniform01: a uniform random number in [0, 1) (injected for testability).

        """
        scheduled = self.base_delay(retry_number) * (1.0 + self.jitter * (2.0 * uniform01 - 1.0))
        if retry_after_s is None:
            return scheduled
        return max(scheduled, min(max(retry_after_s, 0.0), self.retry_after_cap_s))


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """Configuration of an ``Engine``; contains no secrets (only the key's env var name)."""

    base_url: str | None = None
    """OpenAI-compatible endpoint; else ``OPENAI_BASE_URL``, else the SDK default."""
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the env var holding the API key; the key itself is never stored."""
    concurrency: int = 32
    """In-flight calls in total over all ``share`` processes."""
    judge_concurrency: int | None = None
    """Separate in-flight limit for ``purpose="judge"``; ``None`` shares the main pool."""
    rpm: float | None = None
    """Requests per minute in total over all ``share`` processes."""
    tpm: float | None = None
    """Tokens per minute in total over all ``share`` processes."""
    request_timeout_s: float = 120.0
    """Per-attempt deadline, reading the reply's body included; a timeout is transient."""
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    """Most bytes of one reply, counted after decompression as they arrive
    (``engine.bounded``); a longer reply is ``invalid_response``, not retried."""
    retry: RetryPolicy = RetryPolicy()
    """Retry schedule."""
    cache_path: str | None = ".legaleval/cache.sqlite"
    """SQLite cache file; ``None`` disables caching."""
    share: int = 1
    """Processes sharing the limits (xdist workers); each gets 1/share of every budget."""
    position: int = 0
    """This process's place among the ``share`` (0-based, an xdist worker's number): the
    first ``concurrency % share`` processes take one slot more, so the slots add up to the
    total (50 over 3 workers: 17, 17, 16)."""
    transport: str = "auto"
    """``auto`` / ``wire``: the wire-format client on aiohttp; ``sdk``: the openai SDK's
    public client (see ``TRANSPORTS``)."""
    per_model: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per ``PROVIDER/NAME`` overrides: ``base_url``, ``api_key_env``, ``params`` (a mapping
    of ``GenerationParams`` fields used where the request leaves them unset)."""
    max_cost_usd: float | None = None
    """Spend cap in USD over all ``share`` processes (``engine.budget``); ``None``: none."""
    prices: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    """USD per million ``(input, output)`` tokens by ``PROVIDER/NAME``, for the spend cap;
    every model called must have one (``local/`` models are free)."""
    batch: bool = False
    """Send the requests through the provider's Batch API (``engine.batch``)."""
    batch_poll_s: float = 3.0
    """First wait before polling a batch; the waits grow to a minute (or this, if longer)."""
    batch_attempts: int = 2
    """Batches a request may go into before its retry goes live."""
    batch_max_wait_s: float | None = None
    """A batch still running after this many seconds is cancelled: what it answered is
    kept, the rest goes live. ``None``: wait for the provider's 24 h window."""
    batch_file_requests: int = 50_000
    """Requests per batch input file (the provider's limit)."""
    batch_file_bytes: int = 200 * 1024 * 1024
    """Bytes per batch input file (the provider's limit)."""

    def __post_init__(self) -> None:
        checks: list[tuple[str, bool]] = [
            ("concurrency", self.concurrency >= 1),
            ("share", self.share >= 1),
            ("position", 0 <= self.position < self.share),
            ("request_timeout_s", self.request_timeout_s > 0),
            ("max_response_bytes", self.max_response_bytes > 0),
            ("judge_concurrency", self.judge_concurrency is None or self.judge_concurrency >= 1),
            ("rpm", self.rpm is None or self.rpm > 0),
            ("tpm", self.tpm is None or self.tpm > 0),
            (
                "max_cost_usd",
                self.max_cost_usd is None or 0 < self.max_cost_usd < float("inf"),
            ),
            ("batch_poll_s", 0 < self.batch_poll_s < float("inf")),
            ("batch_attempts", self.batch_attempts >= 1),
            (
                "batch_max_wait_s",
                self.batch_max_wait_s is None or 0 < self.batch_max_wait_s < float("inf"),
            ),
            ("batch_file_requests", self.batch_file_requests >= 1),
            ("batch_file_bytes", self.batch_file_bytes >= 1),
        ]
        if self.batch and self.max_cost_usd is not None:
            raise ConfigError(
                "--max-cost and --batch cannot be combined: a batch is paid as a whole when "
                "it runs, so no call could be held back; drop one of them"
            )
        for name, ok in checks:
            if not ok:
                value = getattr(self, name)
                rule = "in [0, share)" if name == "position" else "positive"
                raise ConfigError(
                    f"EngineSettings.{name} must be {rule}, got {value!r} ({type(value).__name__})"
                )
        if self.transport not in TRANSPORTS:
            raise ConfigError(
                f"EngineSettings.transport must be one of {', '.join(TRANSPORTS)}, "
                f"got {self.transport!r}"
            )
        allowed = {"base_url", "api_key_env", "params"}
        for model, overrides in self.per_model.items():
            unknown = set(overrides) - allowed
            if unknown:
                raise ConfigError(
                    f"EngineSettings.per_model[{model!r}] has unknown keys {sorted(unknown)}; "
                    f"accepted: {sorted(allowed)}"
                )

    def _slots(self, total: int) -> int:
        """The part of ``total`` slots that is this process's (see ``position``), at least 1.

        Below one slot per process every process still keeps one call in flight: the
        total is then ``share``, not ``total`` (the plugin warns about it).
        """
        whole, extra = divmod(total, self.share)
        return max(1, whole + (self.position < extra))

    @property
    def process_concurrency(self) -> int:
        """In-flight limit of this process: its part of ``concurrency``, at least 1."""
        return self._slots(self.concurrency)

    @property
    def process_judge_concurrency(self) -> int | None:
        """Judge in-flight limit of this process, if judges have their own pool."""
        if self.judge_concurrency is None:
            return None
        return self._slots(self.judge_concurrency)

    @property
    def process_rpm(self) -> float | None:
        """Requests-per-minute budget of this process."""
        return None if self.rpm is None else self.rpm / self.share

    @property
    def process_tpm(self) -> float | None:
        """Tokens-per-minute budget of this process."""
        return None if self.tpm is None else self.tpm / self.share
