"""A real HTTP server on 127.0.0.1 that speaks the OpenAI Chat Completions API.

The server exists so that the evaluation engine, the benchmarks and users' own suites can talk to
an "OpenAI-compatible endpoint" through the real ``openai`` SDK (or any HTTP client) without a
network, a key or a model, while scripting exactly what the endpoint answers and which faults it
injects.

Quick start::

    from pytest_legaleval.testing.mock_openai import MockOpenAIServer

    with MockOpenAIServer(latency=0.05) as server:
        server.add_reply(r"capital of France", "Paris")
        server.add_fault("500", match="record-7", times=2)  # record-7 fails twice, then succeeds
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        ...
        assert server.count_for("record-7") == 3

Standalone (a parent process reads the ``MOCK_OPENAI_URL=...`` line from stdout)::

    python -m pytest_legaleval.testing.mock_openai --port 0 --latency 0.1 --fault 429=0.05

Endpoints:

* ``POST /v1/chat/completions`` -- non-streaming ``chat.completion`` objects.
* ``GET /v1/models`` and ``GET /v1/models/{id}`` -- the configured model names.
* ``GET /stats`` -- the counters of :meth:`MockOpenAIServer.stats` as JSON.
* ``POST /reset`` -- :meth:`MockOpenAIServer.reset`.

The ``/v1`` prefix is optional, so a client whose base URL is the server root works as well.

How a chat completion request is answered, in order:

1. The request is validated like OpenAI does (JSON object, ``model`` string, non-empty
   ``messages`` list, no ``stream``); a bad request gets a 400 in OpenAI's error format.
2. Fault rules (:class:`FaultRule`) are tried in order; the first one that fires decides the
   outcome (an error status, a hang, a connection reset, a malformed body, or a 200 whose
   ``finish_reason`` is ``content_filter`` or ``length``).
3. Otherwise reply rules (:class:`ReplyRule`) are tried in order; the first that matches gives the
   reply (text, or a dict with ``content``, ``finish_reason``, ``usage``, ``status``, ``delay``,
   ``headers``).
4. Otherwise the deterministic default reply, see :func:`default_reply`.

Token usage is deterministic: a text of ``n`` characters counts as ``ceil(n / 4)`` tokens; the
prompt's tokens are those of all message contents joined by newlines (at least 1). A scripted
``usage`` overrides either number. When ``max_completion_tokens`` (or ``max_tokens``) is smaller
than the reply's tokens the reply is cut to ``4 * limit`` characters with ``finish_reason``
``"length"``, as OpenAI does (switch off with ``MockConfig.honor_max_tokens``).

The HTTP layer is a small HTTP/1.1 implementation on :mod:`asyncio` protocols (keep-alive,
pipelining, ``Content-Length`` and chunked request bodies, ``Expect: 100-continue``). It needs
nothing outside the standard library, which matters because the fixture ships with the plugin.
Measured against an ``aiohttp.web`` server on the same request logic (2 cores, raw aiohttp client,
concurrency 50): about as fast in a separate process (~5,000 requests/s, client-bound) and about
40 % faster in the test's own process (~2,600 against ~1,850 requests/s), where both share the GIL.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import hashlib
import http
import json
import math
import random
import re
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, TypeVar, cast, get_args

__all__ = [
    "FAULT_KINDS",
    "FaultKind",
    "FaultRule",
    "MockConfig",
    "MockOpenAIServer",
    "ReplyFunction",
    "ReplyRule",
    "ReplyValue",
    "count_tokens",
    "default_reply",
    "main",
    "prompt_hash",
    "prompt_text",
]

FaultKind = Literal[
    "429", "500", "502", "503", "400", "hang", "reset", "malformed", "content_filter", "length"
]
"""The faults the server can inject, see :class:`FaultRule`."""

FAULT_KINDS: Final[tuple[str, ...]] = get_args(FaultKind)

ReplyValue = str | Mapping[str, Any]
"""A scripted reply: the content text, or a dict (see :class:`ReplyRule`)."""

ReplyFunction = Callable[[dict[str, Any]], ReplyValue | None]
"""A reply computed from the request body; returning ``None`` means "no match, try the next"."""

_REPLY_KEYS: Final = frozenset(
    {"content", "finish_reason", "usage", "status", "delay", "headers", "error_type", "error_code"}
)

# Bounds that keep a misbehaving client from making the server buffer without limit.
_MAX_HEAD_BYTES: Final = 64 * 1024
_MAX_BODY_BYTES: Final = 64 * 1024 * 1024


# --------------------------------------------------------------------------------------------
# Prompt helpers (public so tests can compute what the server will do with a prompt)
# --------------------------------------------------------------------------------------------


def prompt_text(messages: object) -> str:
    r"""Concatenate the text of all message contents, the string that rules match against.

    Args:
        messages: The ``messages`` list of a chat completion request. Contents may be strings,
            ``None`` or lists of content parts, of which the ``{"type": "text"}`` parts count.

    Returns:
        The contents joined by ``"\n"``, in message order.

    """
    if not isinstance(messages, list):
        return ""
    texts: list[str] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(
                part["text"]
                for part in content
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
    return "\n".join(texts)


def prompt_hash(messages: object) -> str:
    """Return the key of a prompt in ``stats()["per_prompt"]``.

    Args:
        messages: The ``messages`` list exactly as sent.

    Returns:
        The first 16 hex digits of the SHA-256 of the messages as canonical JSON (sorted keys,
        no whitespace, non-ASCII kept).

    """
    canonical = json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def count_tokens(text: str | None) -> int:
    """Count tokens the way the mock does: ``ceil(len(text) / 4)``.

    Args:
        text: Any text; ``None`` counts as empty.

    Returns:
        The deterministic token count.

    """
    return math.ceil(len(text) / 4) if text else 0


# One option per line: "A) text", "A. text" or "(A) text". "A: text" is left out on purpose:
# "Q: ..." and "A: ..." lines of question/answer prompts would look like options.
_OPTION_RE: Final = re.compile(r"^[ \t]*(?:\(([A-Z])\)|([A-Z])[.)])[ \t]+\S", re.MULTILINE)


def _mcq_letters(prompt: str) -> str:
    found = {a or b for a, b in _OPTION_RE.findall(prompt)}
    # Only the run A, B, C, ... counts: headings such as "I. Facts" or "V. Remedies" are
    # not options and must not turn a question into a multiple-choice one.
    letters = ""
    for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        if letter not in found:
            break
        letters += letter
    return letters if len(letters) >= 2 else ""


def default_reply(prompt: str) -> str:
    """Return the deterministic reply the server gives when no rule matches.

    A prompt that looks like a multiple-choice question -- at least two option lines ``A) ...``,
    ``A. ...`` or ``(A) ...`` starting with A and consecutive -- is answered ``"Answer: X"``,
    where X is one of the offered letters chosen by the prompt's SHA-256. Any other prompt gets
    ``"Mock response <12 hex digits of the prompt's SHA-256>."``. The same prompt always gets the
    same reply, on every run and machine.

    Args:
        prompt: The concatenated prompt, see :func:`prompt_text`.

    Returns:
        The reply text.

    """
    digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
    letters = _mcq_letters(prompt)
    if letters:
        return f"Answer: {letters[int(digest[:8], 16) % len(letters)]}"
    return f"Mock response {digest[:12]}."


def _compile(pattern: str | None) -> re.Pattern[str] | None:
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:  # re.error is no ValueError; config errors should all be
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from exc


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class ReplyRule:
    """A scripted reply; the first rule that matches a request answers it.

    Attributes:
        match: Regular expression searched (``re.search``) in the concatenated prompt (see
            :func:`prompt_text`); ``None`` matches every request. Ignored when ``reply`` is a
            callable, which decides for itself.
        reply: The content text; or a dict with any of ``content`` (text or ``None``),
            ``finish_reason`` (default ``"stop"``), ``usage`` (``prompt_tokens`` and/or
            ``completion_tokens``), ``status`` (an HTTP status; 400 or more answers with an
            OpenAI error whose message is ``content``, typed by ``error_type``/``error_code``),
            ``delay`` (seconds, replaces the configured latency) and ``headers``; or a callable
            taking the request body and returning either of those, or ``None`` to pass.
        times: Answer only the first ``times`` matching requests, then stop matching.
        fired: How many requests this rule answered (maintained by the server).

    """

    match: str | None = None
    reply: ReplyValue | ReplyFunction = ""
    times: int | None = None
    fired: int = dataclasses.field(default=0, init=False, compare=False)
    _pattern: re.Pattern[str] | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.times is not None and self.times < 0:
            raise ValueError(f"times must be >= 0, got {self.times}")
        if isinstance(self.reply, Mapping):
            unknown = set(self.reply) - _REPLY_KEYS
            if unknown:
                raise ValueError(
                    f"unknown reply keys {sorted(unknown)}; known: {sorted(_REPLY_KEYS)}"
                )
        elif not isinstance(self.reply, str) and not callable(self.reply):
            raise TypeError(f"reply must be a str, a dict or a callable, got {self.reply!r}")
        self._pattern = _compile(self.match)


@dataclasses.dataclass
class FaultRule:
    """An injected fault; rules are tried in order and the first that fires decides.

    A rule fires for a request when every selector it sets agrees; a rule with no selector fires
    for every request:

    * ``match``: the regular expression is found in the concatenated prompt;
    * ``calls``: the request's global call number (1-based, counting chat completion requests
      since start or the last reset) is this number or in this set;
    * ``times``: the rule has fired fewer than ``times`` times -- so ``match="record-7", times=2``
      fails the first two attempts for record-7 and lets the third through;
    * ``rate``: a draw of the seeded fault RNG is below ``rate`` (drawn last, only when the
      other selectors agree).

    Kinds: ``"429"`` (with ``Retry-After``), ``"500"``, ``"502"``, ``"503"``, ``"400"`` (a
    permanent error) answer with OpenAI's error format; ``"hang"`` sends nothing until the client
    disconnects or ``hang_seconds`` pass, then closes the connection; ``"reset"`` aborts the TCP
    connection (RST) without a response; ``"malformed"`` answers 200 with a body that is not
    JSON; ``"content_filter"`` answers 200 with empty content and that finish reason;
    ``"length"`` answers 200 with the reply cut in half and finish reason ``"length"``.

    Attributes:
        kind: One of :data:`FAULT_KINDS` (an int such as 429 is accepted).
        rate: Probability per request, 0..1.
        calls: Global call number(s) to fail.
        match: Regular expression on the prompt.
        times: Fire at most this many times.
        retry_after: ``Retry-After`` value of a 429, in seconds (fractions allowed, e.g. 0.05).
        hang_seconds: How long a hang lasts; ``None`` uses ``MockConfig.hang_seconds``.
        message: Error message instead of the default one.
        delay: Seconds before the fault is delivered; ``None`` uses the configured latency.
        fired: How many times this rule fired (maintained by the server).

    """

    kind: FaultKind
    rate: float | None = None
    calls: int | Collection[int] | None = None
    match: str | None = None
    times: int | None = None
    retry_after: float | str = 1.0
    hang_seconds: float | None = None
    message: str | None = None
    delay: float | None = None
    fired: int = dataclasses.field(default=0, init=False, compare=False)
    _pattern: re.Pattern[str] | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False
    )
    _calls: frozenset[int] | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        kind = str(self.kind)
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; known: {', '.join(FAULT_KINDS)}")
        self.kind = cast(FaultKind, kind)
        if self.rate is not None and not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"rate must be within 0..1, got {self.rate}")
        if self.times is not None and self.times < 0:
            raise ValueError(f"times must be >= 0, got {self.times}")
        if self.calls is not None:
            calls = (self.calls,) if isinstance(self.calls, int) else tuple(self.calls)
            if any(not isinstance(n, int) or n < 1 for n in calls):
                raise ValueError(f"calls are 1-based call numbers, got {self.calls!r}")
            self._calls = frozenset(calls)
        self._pattern = _compile(self.match)

    @property
    def retry_after_header(self) -> str:
        """The ``Retry-After`` header value, e.g. ``"0.05"`` or ``"1"``."""
        if isinstance(self.retry_after, str):
            return self.retry_after
        return f"{self.retry_after:g}"


Latency = float | tuple[float, float]


@dataclasses.dataclass
class MockConfig:
    """Behaviour of a :class:`MockOpenAIServer`.

    Change a running server through the handle's methods (``set_latency``, ``add_reply``,
    ``add_fault``, ``update_config``), which take the server's lock.

    Attributes:
        models: Model names listed by ``/v1/models``; the first is the default.
        latency: Seconds before each chat completion is answered: a fixed number, or
            ``(min, max)`` drawn uniformly from an RNG seeded with ``seed``.
        seed: Seed of the latency RNG and of the (separate) fault-rate RNG.
        replies: Reply rules, first match wins.
        faults: Fault rules, first to fire wins; tried before the replies.
        hang_seconds: How long a ``hang`` fault lasts at most.
        max_recorded_requests: How many request bodies ``requests()`` keeps (the latest).
        prompt_index_chars: Budget, in characters, of distinct prompt texts kept for
            ``count_for``; past it ``count_for`` raises instead of undercounting.
        honor_max_tokens: Cut replies longer than ``max_completion_tokens``/``max_tokens``.
        strict_models: Answer 404 ``model_not_found`` for models not in ``models`` (by
            default any model name is accepted and echoed).
        api_key: If set, requests must carry ``Authorization: Bearer <api_key>`` (else 401).
        response_formats: The ``response_format.type`` values the server accepts (``None``:
            any); another type is refused with ``response_format_status`` — e.g.
            ``["json_object"]`` and 500 imitate the llama.cpp server, which refuses
            ``json_schema``.
        response_format_status: Status of that refusal (400 or 500).

    """

    models: list[str] = dataclasses.field(default_factory=lambda: ["mock-model"])
    latency: Latency = 0.0
    seed: int = 0
    replies: list[ReplyRule] = dataclasses.field(default_factory=list)
    faults: list[FaultRule] = dataclasses.field(default_factory=list)
    hang_seconds: float = 600.0
    max_recorded_requests: int = 1000
    prompt_index_chars: int = 32_000_000
    honor_max_tokens: bool = True
    strict_models: bool = False
    api_key: str | None = None
    response_formats: list[str] | None = None
    response_format_status: int = 400

    def __post_init__(self) -> None:
        _check_latency(self.latency)
        if not self.models:
            raise ValueError("models must name at least one model")
        if self.max_recorded_requests < 0:
            raise ValueError("max_recorded_requests must be >= 0")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MockConfig:
        """Build a config from plain data, as loaded from a YAML or JSON script file.

        The keys are the attribute names; ``replies`` items are mappings with ``match``,
        ``reply`` and ``times``; ``faults`` items are mappings of :class:`FaultRule` fields;
        ``latency`` may be a number or a two-item list.

        Args:
            data: The mapping.

        Returns:
            The config.

        Raises:
            ValueError: On unknown keys or invalid values.

        """
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - fields
        if unknown:
            raise ValueError(f"unknown config keys {sorted(unknown)}; known: {sorted(fields)}")
        kwargs: dict[str, Any] = dict(data)
        if isinstance(kwargs.get("latency"), list):
            kwargs["latency"] = tuple(kwargs["latency"])
        if "models" in kwargs and isinstance(kwargs["models"], str):
            kwargs["models"] = [kwargs["models"]]
        kwargs["replies"] = [_rule_from(ReplyRule, item) for item in kwargs.get("replies") or []]
        kwargs["faults"] = [_rule_from(FaultRule, item) for item in kwargs.get("faults") or []]
        return cls(**kwargs)

    @classmethod
    def from_file(cls, path: str | Path) -> MockConfig:
        """Load a config from a YAML (``.yaml``/``.yml``) or JSON file.

        The file holds a mapping for :meth:`from_dict`, or just a list of reply rules.

        Args:
            path: The file.

        Returns:
            The config.

        """
        text = Path(path).read_text(encoding="utf-8")
        data: Any
        if Path(path).suffix.lower() in {".yaml", ".yml"}:
            import yaml  # a project dependency, imported lazily to keep startup lean

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
        if data is None:
            data = {}
        if isinstance(data, list):
            data = {"replies": data}
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a mapping or a list of replies")
        return cls.from_dict(data)


_R = TypeVar("_R", ReplyRule, FaultRule)


def _rule_from(rule_type: type[_R], item: object) -> _R:
    if isinstance(item, rule_type):
        return dataclasses.replace(item)
    if not isinstance(item, Mapping):
        raise ValueError(f"a {rule_type.__name__} must be a mapping, got {item!r}")
    data = dict(item)
    if rule_type is FaultRule and isinstance(data.get("calls"), list):
        data["calls"] = frozenset(data["calls"])
    return rule_type(**data)


def _check_latency(latency: Latency) -> None:
    if isinstance(latency, tuple):
        if len(latency) != 2 or not 0 <= latency[0] <= latency[1]:
            raise ValueError(f"latency range must be (min, max) with 0 <= min <= max: {latency}")
    elif latency < 0:
        raise ValueError(f"latency must be >= 0, got {latency}")


def _copy_config(config: MockConfig) -> MockConfig:
    # Fresh rule objects: the server counts `fired` on them, and a config reused for another
    # server must not share those counts. Callables are shared, not copied: they may hold state.
    return dataclasses.replace(
        config,
        models=list(config.models),
        replies=[dataclasses.replace(rule) for rule in config.replies],
        faults=[dataclasses.replace(rule) for rule in config.faults],
    )


# --------------------------------------------------------------------------------------------
# The request logic, independent of HTTP
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(slots=True)
class _Outcome:
    """What to do with one request: respond, hang or reset, after ``delay`` seconds."""

    action: Literal["respond", "hang", "reset"]
    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0
    hang_seconds: float = 0.0
    counts: bool = False  # a chat completion: in_flight/completed/cancelled track it
    completion: bool = False  # the body is a well-formed chat.completion


_ERROR_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    409: "conflict_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}

_FAULT_ERRORS: Final = {
    "429": (
        429,
        "Rate limit reached for requests (mock fault).",
        "requests",
        "rate_limit_exceeded",
    ),
    "500": (
        500,
        "The server had an error while processing your request (mock fault).",
        "server_error",
        None,
    ),
    "502": (502, "Bad gateway (mock fault).", "server_error", None),
    "503": (
        503,
        "The engine is currently overloaded, please try again later (mock fault).",
        "server_error",
        "service_unavailable",
    ),
    "400": (
        400,
        "Invalid request (mock permanent fault).",
        "invalid_request_error",
        "mock_bad_request",
    ),
}

_MALFORMED_BODY: Final = b'{"id": "chatcmpl-mock", "object": "chat.completion", "choices": [{"ind'
_JSON: Final = ("Content-Type", "application/json")


def _json_bytes(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _error(
    status: int,
    message: str,
    error_type: str | None = None,
    code: str | None = None,
    headers: Iterable[tuple[str, str]] = (),
) -> _Outcome:
    if error_type is None:
        error_type = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "api_error")
    body = {"error": {"message": message, "type": error_type, "param": None, "code": code}}
    return _Outcome("respond", status, _json_bytes(body), (_JSON, *headers))


class _Core:
    """Config, counters and request decisions, shared by the HTTP layer and the handle.

    Everything runs on the server's event loop except the handle's methods, so the state is
    guarded by ``lock``; user callables are never called while holding it, so they may call
    back into the handle.
    """

    def __init__(self, config: MockConfig) -> None:
        self.lock = threading.Lock()
        self.config = config
        self.in_flight = 0
        self._reset_locked()

    # -- state ------------------------------------------------------------------------------

    def _reset_locked(self) -> None:
        config = self.config
        self.calls = 0
        self.completed = 0
        self.errors = 0
        self.cancelled = 0
        # in_flight is a gauge, not a counter: requests still being served will settle later.
        self.peak_in_flight = self.in_flight
        self.faults_by_kind: collections.Counter[str] = collections.Counter()
        self.per_prompt: collections.Counter[str] = collections.Counter()
        self.models: collections.Counter[str] = collections.Counter()
        self.endpoints: collections.Counter[str] = collections.Counter()
        self.recorded: collections.deque[dict[str, Any]] = collections.deque(
            maxlen=config.max_recorded_requests
        )
        self.prompt_index: dict[str, int] = {}
        self.prompt_index_size = 0
        self.prompt_index_overflow = False
        self.latency_rng = random.Random(f"latency-{config.seed}")
        self.fault_rng = random.Random(f"faults-{config.seed}")
        for reply_rule in config.replies:
            reply_rule.fired = 0
        for fault_rule in config.faults:
            fault_rule.fired = 0

    def reset(self) -> None:
        with self.lock:
            self._reset_locked()

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {
                "requests": self.calls,
                "completed": self.completed,
                "errors": self.errors,
                "cancelled": self.cancelled,
                "faults": sum(self.faults_by_kind.values()),
                "faults_by_kind": dict(self.faults_by_kind),
                "in_flight": self.in_flight,
                "peak_in_flight": self.peak_in_flight,
                "per_prompt": dict(self.per_prompt),
                "models": dict(self.models),
                "endpoints": dict(self.endpoints),
                "recorded_requests": len(self.recorded),
                "prompt_index_overflow": self.prompt_index_overflow,
            }

    def count_for(self, substring: str) -> int:
        with self.lock:
            if self.prompt_index_overflow:
                raise RuntimeError(
                    "count_for is unavailable: the distinct prompts exceeded "
                    f"MockConfig.prompt_index_chars ({self.config.prompt_index_chars}); "
                    "raise it or use stats()['per_prompt']"
                )
            return sum(n for text, n in self.prompt_index.items() if substring in text)

    def finished(self, outcome: _Outcome, *, delivered: bool) -> None:
        """Account for the end of a counted request."""
        with self.lock:
            self.in_flight -= 1
            if not delivered:
                self.cancelled += 1
            elif outcome.completion:
                self.completed += 1
            elif outcome.action == "respond" and outcome.status >= 400:
                self.errors += 1

    # -- routing ----------------------------------------------------------------------------

    def route(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> _Outcome:
        path = target.split("?", 1)[0]
        if path.startswith("/v1/") or path == "/v1":
            path = path[3:]
        path = path.rstrip("/") or "/"
        with self.lock:
            self.endpoints[f"{method} {path}"] += 1
        if path == "/chat/completions":
            if method != "POST":
                return _error(405, f"Method {method} not allowed for {target}.")
            return self._chat(headers, body)
        if path == "/models" and method == "GET":
            data = [_model_object(name) for name in self.config.models]
            return _Outcome("respond", 200, _json_bytes({"object": "list", "data": data}), (_JSON,))
        if path.startswith("/models/") and method == "GET":
            name = path[len("/models/") :]
            if name in self.config.models:
                return _Outcome("respond", 200, _json_bytes(_model_object(name)), (_JSON,))
            return _error(404, f"The model '{name}' does not exist", code="model_not_found")
        if path == "/stats" and method == "GET":
            return _Outcome("respond", 200, _json_bytes(self.stats()), (_JSON,))
        if path == "/reset" and method == "POST":
            self.reset()
            return _Outcome("respond", 200, b'{"ok":true}', (_JSON,))
        return _error(404, f"Unknown request URL: {method} {target}.", code="unknown_url")

    # -- chat completions -------------------------------------------------------------------

    def _chat(self, headers: Mapping[str, str], raw: bytes) -> _Outcome:
        with self.lock:
            # Every request counts, valid or not: a client that sends garbage should see it in
            # the stats, and call numbers must be those the client would count.
            self.calls += 1
            call = self.calls
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            outcome = self._chat_outcome(call, headers, raw)
        except Exception as exc:  # a bug of the mock: answer, so the request still settles
            outcome = _error(500, f"mock server failed: {type(exc).__name__}: {exc}")
        outcome.counts = True
        outcome.headers = (*outcome.headers, ("x-request-id", f"req_mock_{call}"))
        return outcome

    def _chat_outcome(self, call: int, headers: Mapping[str, str], raw: bytes) -> _Outcome:
        config = self.config
        if (
            config.api_key is not None
            and headers.get("authorization") != f"Bearer {config.api_key}"
        ):
            return _error(401, "Incorrect API key provided (mock).", code="invalid_api_key")
        try:
            request = json.loads(raw)
        except (UnicodeDecodeError, ValueError) as exc:
            return _error(400, f"We could not parse the JSON body of your request: {exc}")
        problem = _validate(request, config)
        if problem is not None:
            return problem
        messages = request["messages"]
        model: str = request["model"]
        prompt = prompt_text(messages)
        key = prompt_hash(messages)
        with self.lock:
            self.per_prompt[key] += 1
            self.models[model] += 1
            if self.recorded.maxlen:
                self.recorded.append(request)
            self._index_prompt(prompt)
            fault = self._pick_fault(call, prompt)
            latency = self._draw_latency()
            replies = list(self.config.replies)
        try:
            return self._answer(request, prompt, call, model, fault, latency, replies)
        except Exception as exc:
            outcome = _error(
                500, f"mock reply raised {type(exc).__name__}: {exc}", "mock_reply_error"
            )
            outcome.delay = latency
            return outcome

    def _index_prompt(self, prompt: str) -> None:
        if prompt in self.prompt_index:
            self.prompt_index[prompt] += 1
        elif self.prompt_index_size + len(prompt) <= self.config.prompt_index_chars:
            self.prompt_index[prompt] = 1
            self.prompt_index_size += len(prompt)
        else:
            self.prompt_index_overflow = True

    def _pick_fault(self, call: int, prompt: str) -> FaultRule | None:
        for rule in self.config.faults:
            if rule._calls is not None and call not in rule._calls:
                continue
            if rule.times is not None and rule.fired >= rule.times:
                continue
            if rule._pattern is not None and rule._pattern.search(prompt) is None:
                continue
            if rule.rate is not None and self.fault_rng.random() >= rule.rate:
                continue
            rule.fired += 1
            self.faults_by_kind[rule.kind] += 1
            return rule
        return None

    def _draw_latency(self) -> float:
        latency = self.config.latency
        if isinstance(latency, tuple):
            return self.latency_rng.uniform(*latency)
        return float(latency)

    def _take(self, rule: ReplyRule) -> bool:
        with self.lock:
            if rule.times is not None and rule.fired >= rule.times:
                return False
            rule.fired += 1
            return True

    def _answer(
        self,
        request: dict[str, Any],
        prompt: str,
        call: int,
        model: str,
        fault: FaultRule | None,
        latency: float,
        replies: Sequence[ReplyRule],
    ) -> _Outcome:
        delay = latency
        if fault is not None:
            delay = latency if fault.delay is None else fault.delay
            kind = fault.kind
            if kind in _FAULT_ERRORS:
                status, message, error_type, code = _FAULT_ERRORS[kind]
                extra = (("Retry-After", fault.retry_after_header),) if kind == "429" else ()
                outcome = _error(status, fault.message or message, error_type, code, extra)
            elif kind == "hang":
                hang = (
                    self.config.hang_seconds if fault.hang_seconds is None else fault.hang_seconds
                )
                return _Outcome("hang", hang_seconds=hang)
            elif kind == "reset":
                return _Outcome("reset", delay=delay)
            elif kind == "malformed":
                outcome = _Outcome("respond", 200, _MALFORMED_BODY, (_JSON,))
            else:
                outcome = None
            if outcome is not None:
                outcome.delay = delay
                return outcome

        reply = self._scripted(request, prompt, replies)
        spec: Mapping[str, Any] = {"content": reply} if isinstance(reply, str) else reply or {}
        if "delay" in spec and (fault is None or fault.delay is None):
            delay = float(spec["delay"])
        extra_headers = tuple((str(k), str(v)) for k, v in (spec.get("headers") or {}).items())
        status = int(spec.get("status", 200))
        content: str | None = spec["content"] if "content" in spec else default_reply(prompt)
        if status >= 400:
            outcome = _error(
                status,
                content or f"Scripted error {status}.",
                spec.get("error_type"),
                spec.get("error_code"),
                extra_headers,
            )
            outcome.delay = delay
            return outcome
        finish_reason: str = spec.get("finish_reason", "stop")
        if fault is not None and fault.kind == "content_filter":
            content, finish_reason = "", "content_filter"
        elif fault is not None and fault.kind == "length":
            text = content or ""
            content, finish_reason = text[: len(text) // 2], "length"
        elif self.config.honor_max_tokens and content:
            limit = request.get("max_completion_tokens", request.get("max_tokens"))
            if isinstance(limit, int) and count_tokens(content) > limit:
                content, finish_reason = content[: max(limit, 0) * 4], "length"

        usage = spec.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens", max(1, count_tokens(prompt))))
        n_field = request.get("n")
        n = n_field if isinstance(n_field, int) and n_field > 0 else 1
        completion_tokens = int(usage.get("completion_tokens", n * count_tokens(content)))
        body = {
            "id": f"chatcmpl-mock{call:08d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": "fp_mock",
            "choices": [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
                for i in range(n)
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": int(usage.get("total_tokens", prompt_tokens + completion_tokens)),
            },
        }
        return _Outcome(
            "respond", status, _json_bytes(body), (_JSON, *extra_headers), delay, completion=True
        )

    def _scripted(
        self, request: dict[str, Any], prompt: str, replies: Sequence[ReplyRule]
    ) -> ReplyValue | None:
        for rule in replies:
            if callable(rule.reply):
                if rule.times is not None and rule.fired >= rule.times:
                    continue
                value = rule.reply(request)
                if value is not None and self._take(rule):
                    _check_reply(value)
                    return value
            elif rule._pattern is None or rule._pattern.search(prompt) is not None:
                if self._take(rule):
                    return rule.reply
        return None


def _check_reply(value: object) -> None:
    if isinstance(value, Mapping):
        unknown = set(value) - _REPLY_KEYS
        if unknown:
            raise ValueError(f"unknown reply keys {sorted(unknown)}")
    elif not isinstance(value, str):
        raise TypeError(f"a reply callable must return str, dict or None, not {value!r}")


def _model_object(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "pytest-legaleval-mock"}


def _validate(request: object, config: MockConfig) -> _Outcome | None:
    if not isinstance(request, dict):
        return _error(400, "The request body must be a JSON object.")
    model = request.get("model")
    if not isinstance(model, str) or not model:
        return _error(400, "you must provide a model parameter", code="missing_required_parameter")
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        return _error(400, "'messages' must be a non-empty array.", code="invalid_value")
    if request.get("stream"):
        return _error(400, "Streaming is not supported by the mock server.", code="unsupported")
    if config.strict_models and model not in config.models:
        return _error(404, f"The model '{model}' does not exist", code="model_not_found")
    response_format = request.get("response_format")
    if config.response_formats is not None and response_format is not None:
        kind = response_format.get("type") if isinstance(response_format, dict) else None
        if kind not in config.response_formats:
            return _error(
                config.response_format_status,
                f"response_format type {kind!r} is not supported",
                code="invalid_value",
            )
    return None


# --------------------------------------------------------------------------------------------
# HTTP/1.1
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(slots=True)
class _Head:
    method: str
    target: str
    headers: dict[str, str]
    keep_alive: bool
    length: int  # -1: chunked
    continue_sent: bool = False


class _HTTPError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


_REASONS: Final = {s.value: s.phrase for s in http.HTTPStatus}


def _response_bytes(
    status: int, headers: Iterable[tuple[str, str]], body: bytes, close: bool
) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}"]
    lines.extend(f"{name}: {value}" for name, value in headers)
    lines.append(f"Content-Length: {len(body)}")
    lines.append("Connection: close" if close else "Connection: keep-alive")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _parse_head(raw: bytes) -> _Head:
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.1", "HTTP/1.0") or not parts[1]:
        raise _HTTPError(400, "bad request line")
    method, target, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise _HTTPError(400, "bad header line")
        key = name.lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    connection = {t.strip().lower() for t in headers.get("connection", "").split(",")}
    keep_alive = "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
    if "transfer-encoding" in headers:
        codings = [t.strip().lower() for t in headers["transfer-encoding"].split(",")]
        if codings != ["chunked"]:
            raise _HTTPError(501, "only chunked transfer coding is supported")
        length = -1
    elif "content-length" in headers:
        value = headers["content-length"]
        if not value.isdigit():  # rejects "+5", "-1", "5, 5" and friends
            raise _HTTPError(400, "bad Content-Length")
        length = int(value)
    else:
        length = 0
    if length > _MAX_BODY_BYTES:
        raise _HTTPError(413, "request body too large")
    return _Head(method, target, headers, keep_alive, length)


def _parse_chunked(buf: bytearray) -> tuple[bytes, int] | None:
    """Decode a complete chunked body at the start of ``buf``; ``None`` if more is needed."""
    out = bytearray()
    pos = 0
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return None
        size_field = bytes(buf[pos:eol]).split(b";", 1)[0].strip()
        if not size_field or any(c not in b"0123456789abcdefABCDEF" for c in size_field):
            raise _HTTPError(400, "bad chunk size")
        size = int(size_field, 16)
        pos = eol + 2
        if size == 0:
            while True:  # trailer fields, ignored, up to the empty line
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    return None
                if eol == pos:
                    return bytes(out), eol + 2
                pos = eol + 2
        if len(buf) < pos + size + 2:
            return None
        if buf[pos + size : pos + size + 2] != b"\r\n":
            raise _HTTPError(400, "bad chunk terminator")
        out += buf[pos : pos + size]
        pos += size + 2
        if len(out) > _MAX_BODY_BYTES:
            raise _HTTPError(413, "request body too large")


class _Connection(asyncio.Protocol):
    """One client connection; requests are answered in order, one at a time."""

    def __init__(self, core: _Core, connections: set[_Connection]) -> None:
        self._core = core
        self._connections = connections
        self._transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._head: _Head | None = None
        self._pending: collections.deque[tuple[_Head, bytes]] = collections.deque()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    # -- asyncio.Protocol -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        self._connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._connections.discard(self)
        self._pending.clear()
        if self._task is not None:
            # The client went away (e.g. its timeout fired): stop sleeping on its behalf.
            self._task.cancel()

    def data_received(self, data: bytes) -> None:
        self._buf += data
        try:
            self._parse()
        except _HTTPError as exc:
            self._pending.clear()
            self._fail(exc.status, str(exc))
            return
        if self._pending and self._task is None and not self._closed:
            self._respond_ready()

    # -- parsing ----------------------------------------------------------------------------

    def _parse(self) -> None:
        buf = self._buf
        while not self._closed:
            if self._head is None:
                while buf[:2] == b"\r\n":  # RFC 9112: ignore empty lines before a request
                    del buf[:2]
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    if len(buf) > _MAX_HEAD_BYTES:
                        raise _HTTPError(431, "request head too large")
                    return
                self._head = _parse_head(bytes(buf[:end]))
                del buf[: end + 4]
            head = self._head
            if head.length >= 0:
                if len(buf) < head.length:
                    self._maybe_continue(head)
                    return
                body = bytes(buf[: head.length])
                del buf[: head.length]
            else:
                parsed = _parse_chunked(buf)
                if parsed is None:
                    self._maybe_continue(head)
                    return
                body, used = parsed
                del buf[:used]
            self._head = None
            self._pending.append((head, body))

    def _maybe_continue(self, head: _Head) -> None:
        # curl and others wait (about a second) for this before sending a large body. Not
        # while earlier responses are still owed: the 100 would overtake them.
        expect = head.headers.get("expect", "").lower()
        busy = self._pending or self._task is not None
        if expect == "100-continue" and not head.continue_sent and not busy and self._transport:
            head.continue_sent = True
            self._transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    # -- answering --------------------------------------------------------------------------

    def _respond_ready(self) -> None:
        # Answer synchronously while no request needs to wait: that is the hot path at zero
        # latency, and it saves a task per request. The first one that waits gets a task,
        # which then drains the queue in order.
        while self._pending and not self._closed:
            head, body = self._pending[0]
            outcome = self._core.route(head.method, head.target, head.headers, body)
            if outcome.action != "respond" or outcome.delay > 0:
                self._pending.popleft()
                self._task = asyncio.get_running_loop().create_task(self._drain(head, outcome))
                return
            self._pending.popleft()
            self._deliver(head, outcome)

    async def _drain(self, head: _Head, outcome: _Outcome) -> None:
        try:
            while True:
                await self._perform(head, outcome)
                if not self._pending or self._closed:
                    return
                head, body = self._pending.popleft()
                outcome = self._core.route(head.method, head.target, head.headers, body)
        finally:
            self._task = None

    async def _perform(self, head: _Head, outcome: _Outcome) -> None:
        settled = False
        try:
            if outcome.action == "hang":
                await asyncio.sleep(outcome.hang_seconds)
                # The hang ran its course; it was not cut short by the client.
                settled = self._settle(outcome, delivered=True)
                self._abort(reset=False)
                return
            if outcome.delay > 0:
                await asyncio.sleep(outcome.delay)
            if outcome.action == "reset":
                settled = self._settle(outcome, delivered=True)
                self._abort(reset=True)
                return
            self._deliver(head, outcome)
            settled = True
        finally:
            if not settled:  # cancelled: the client left, or the server is stopping
                self._settle(outcome, delivered=False)

    def _settle(self, outcome: _Outcome, *, delivered: bool) -> bool:
        # Counters are settled *before* the client can see the outcome, so that a client
        # reading stats() right after its response never finds its own request in flight.
        if outcome.counts:
            self._core.finished(outcome, delivered=delivered)
        return True

    def _deliver(self, head: _Head, outcome: _Outcome) -> None:
        transport = self._transport
        if transport is None or self._closed or transport.is_closing():
            self._settle(outcome, delivered=False)
            return
        self._settle(outcome, delivered=True)
        close = not head.keep_alive
        transport.write(_response_bytes(outcome.status, outcome.headers, outcome.body, close))
        if close:
            self._closed = True
            transport.close()

    def _fail(self, status: int, message: str) -> None:
        outcome = _error(status, message)
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(_response_bytes(status, outcome.headers, outcome.body, True))
            self._transport.close()
        self._closed = True

    def _abort(self, *, reset: bool) -> None:
        transport = self._transport
        self._closed = True
        if transport is None:
            return
        sock = transport.get_extra_info("socket")
        if reset and sock is not None:
            # SO_LINGER with a zero timeout turns close() into a TCP RST, i.e. "connection
            # reset by peer" for the client rather than a polite end of stream.
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
        transport.abort()

    def shutdown(self) -> None:
        self._closed = True
        if self._task is not None:
            self._task.cancel()
        if self._transport is not None:
            self._transport.abort()


# --------------------------------------------------------------------------------------------
# The handle
# --------------------------------------------------------------------------------------------


class MockOpenAIServer:
    """A mock OpenAI endpoint served from a background thread with its own event loop.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`::

        with MockOpenAIServer(latency=0.1, seed=7) as server:
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)

    All methods are thread-safe and may be called while requests are being served, including
    from a reply callable.

    Args:
        config: The behaviour; copied, so the caller's object is left alone. Defaults to
            ``MockConfig()``.
        host: Interface to bind; keep the loopback default.
        port: Port to bind; 0 picks a free one (see :attr:`port` after :meth:`start`).
        **overrides: :class:`MockConfig` fields that replace those of ``config``.

    """

    def __init__(
        self,
        config: MockConfig | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        **overrides: Any,
    ) -> None:
        base = config if config is not None else MockConfig()
        if overrides:
            base = dataclasses.replace(base, **overrides)
        self._core = _Core(_copy_config(base))
        self._host = host
        self._requested_port = port
        self._port: int | None = None
        self._state_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._connections: set[_Connection] = set()

    # -- lifecycle --------------------------------------------------------------------------

    def start(self, timeout: float = 10.0) -> MockOpenAIServer:
        """Bind the socket and start serving; returns once the port is open.

        Args:
            timeout: Seconds to wait for the server thread to come up.

        Returns:
            ``self``, for chaining.

        Raises:
            RuntimeError: If the server is already running or fails to start.

        """
        with self._state_lock:
            if self._thread is not None:
                raise RuntimeError("the mock server is already running")
            ready = threading.Event()
            failure: list[BaseException] = []
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=self._run, args=(loop, ready, failure), name="mock-openai", daemon=True
            )
            thread.start()
            if not ready.wait(timeout) or failure:
                loop.call_soon_threadsafe(loop.stop)
                thread.join(timeout)
                cause = failure[0] if failure else None
                raise RuntimeError(f"the mock server did not start: {cause!r}") from cause
            self._loop, self._thread = loop, thread
            return self

    def _run(
        self, loop: asyncio.AbstractEventLoop, ready: threading.Event, failure: list[BaseException]
    ) -> None:
        asyncio.set_event_loop(loop)
        try:
            try:
                server = loop.run_until_complete(
                    loop.create_server(
                        lambda: _Connection(self._core, self._connections),
                        self._host,
                        self._requested_port,
                        # The default backlog (100) drops SYNs when hundreds of clients connect
                        # at once, and a dropped SYN costs the client a 1 s retransmit.
                        backlog=4096,
                    )
                )
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            self._server = server
            self._port = server.sockets[0].getsockname()[1]
            ready.set()
            loop.run_forever()
            # Like asyncio.run: let what is left finish its cleanup before the loop closes.
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        finally:
            loop.close()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections):
            connection.shutdown()
        # Let the cancelled tasks run their `finally` blocks before the loop stops.
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    def stop(self, timeout: float = 5.0) -> None:
        """Close the listening socket and all connections; idempotent and quick.

        Requests still waiting (latency, hangs) are dropped without a response.

        Args:
            timeout: Seconds to wait for the server thread to finish.

        """
        with self._state_lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
            if loop is None or thread is None:
                return
            if threading.current_thread() is thread:
                # Called from a reply callable: cannot wait for our own thread to finish.
                loop.create_task(self._shutdown()).add_done_callback(lambda _: loop.stop())
                return
            try:
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout)
            except (TimeoutError, RuntimeError):
                pass  # already stopping or wedged: stop the loop regardless
            finally:
                loop.call_soon_threadsafe(loop.stop)
                thread.join(timeout)
            self._server = None

    def __enter__(self) -> MockOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the server is serving."""
        return self._thread is not None

    # -- addresses --------------------------------------------------------------------------

    @property
    def host(self) -> str:
        """The bound interface, ``127.0.0.1`` by default."""
        return self._host

    @property
    def port(self) -> int:
        """The bound port (known once started)."""
        if self._port is None:
            raise RuntimeError("the mock server has not been started")
        return self._port

    @property
    def url(self) -> str:
        """The server root, e.g. ``http://127.0.0.1:43123``."""
        return f"http://{self._host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL to give a client, e.g. ``http://127.0.0.1:43123/v1``."""
        return f"{self.url}/v1"

    # -- configuration ----------------------------------------------------------------------

    @property
    def config(self) -> MockConfig:
        """The live config. Read freely; change it through the methods below."""
        return self._core.config

    def update_config(self, **changes: Any) -> None:
        """Replace :class:`MockConfig` fields at runtime, e.g. ``update_config(models=[...])``.

        Args:
            **changes: Field names and new values (rules given here are copied).

        """
        core = self._core
        with core.lock:
            updated = _copy_config(dataclasses.replace(core.config, **changes))
            if "seed" in changes:
                core.latency_rng = random.Random(f"latency-{updated.seed}")
                core.fault_rng = random.Random(f"faults-{updated.seed}")
            if "max_recorded_requests" in changes:
                core.recorded = collections.deque(
                    core.recorded, maxlen=updated.max_recorded_requests
                )
            if "replies" not in changes:
                updated.replies = core.config.replies  # keep the live rules and their counts
            if "faults" not in changes:
                updated.faults = core.config.faults
            core.config = updated

    def set_latency(self, latency: Latency, *, seed: int | None = None) -> None:
        """Set the latency: fixed seconds, or a ``(min, max)`` uniform range.

        Args:
            latency: Seconds, or ``(min, max)``.
            seed: Reseed the latency RNG (and the fault RNG) with this seed.

        """
        _check_latency(latency)
        if seed is None:
            self.update_config(latency=latency)
        else:
            self.update_config(latency=latency, seed=seed)

    def add_reply(
        self,
        match: str | ReplyFunction | ReplyRule | None,
        reply: ReplyValue | None = None,
        *,
        times: int | None = None,
    ) -> ReplyRule:
        """Append a reply rule (tried after the existing ones).

        ``add_reply(r"regex", "text")``, ``add_reply(r"regex", {"content": ..., ...})``,
        ``add_reply(callable)`` or ``add_reply(ReplyRule(...))``.

        Args:
            match: A regular expression (``None``: every request), a reply callable, or a rule.
            reply: The reply when ``match`` is a pattern.
            times: Answer only this many requests.

        Returns:
            The live rule; its ``fired`` attribute counts the requests it answered.

        """
        if isinstance(match, ReplyRule):
            rule = dataclasses.replace(match)
        elif callable(match):
            rule = ReplyRule(None, match, times)
        else:
            if reply is None:
                raise TypeError("add_reply(pattern, reply): the reply is missing")
            rule = ReplyRule(match, reply, times)
        with self._core.lock:
            self._core.config.replies.append(rule)
        return rule

    def add_fault(self, kind: FaultKind | int | FaultRule, **fields: Any) -> FaultRule:
        """Append a fault rule (tried after the existing ones).

        ``add_fault("500", match="record-7", times=2)``, ``add_fault("429", rate=0.1,
        retry_after=0.05)``, ``add_fault("reset", calls={3, 5})`` or ``add_fault(FaultRule(...))``.

        Args:
            kind: The fault kind, or a complete rule.
            **fields: Other :class:`FaultRule` fields.

        Returns:
            The live rule; its ``fired`` attribute counts how often it fired.

        """
        if isinstance(kind, FaultRule):
            rule = dataclasses.replace(kind, **fields)
        else:
            rule = FaultRule(cast(FaultKind, str(kind)), **fields)
        with self._core.lock:
            self._core.config.faults.append(rule)
        return rule

    def clear_replies(self) -> None:
        """Remove all reply rules."""
        with self._core.lock:
            self._core.config.replies = []

    def clear_faults(self) -> None:
        """Remove all fault rules."""
        with self._core.lock:
            self._core.config.faults = []

    def reset(self) -> None:
        """Zero the counters, forget recorded requests, restart call numbering at 1.

        Rules stay, with their ``fired`` counts zeroed; the RNGs are reseeded.
        """
        self._core.reset()

    # -- observation ------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Return the counters (the same JSON as ``GET /stats``).

        Returns:
            ``requests`` (chat completion requests received), ``completed`` (answered 200
            with a chat.completion, whatever its finish reason), ``errors`` (answered with an
            error status), ``cancelled`` (client left before the answer), ``faults`` and
            ``faults_by_kind``, ``in_flight``, ``peak_in_flight``, ``per_prompt`` (count per
            :func:`prompt_hash`), ``models`` (count per requested model), ``endpoints`` (count
            per ``"METHOD /path"``), ``recorded_requests`` and ``prompt_index_overflow``.

        """
        return self._core.stats()

    def requests(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Return the bodies of the latest chat completion requests, oldest first.

        At most ``MockConfig.max_recorded_requests`` are kept. The dicts are the server's own:
        read them, do not change them.

        Args:
            limit: Return only the last ``limit`` bodies.

        Returns:
            The parsed JSON bodies.

        """
        with self._core.lock:
            bodies = list(self._core.recorded)
        return bodies if limit is None else bodies[max(len(bodies) - limit, 0) :]

    def last_request(self) -> dict[str, Any] | None:
        """Return the body of the latest chat completion request, if any."""
        bodies = self.requests(limit=1)
        return bodies[0] if bodies else None

    def count_for(self, substring: str) -> int:
        """Count the chat completion requests whose prompt contains ``substring``.

        Args:
            substring: Text searched in the concatenated prompt (see :func:`prompt_text`).

        Returns:
            The number of requests since start or the last reset.

        Raises:
            RuntimeError: If the distinct prompts outgrew ``MockConfig.prompt_index_chars``.

        """
        return self._core.count_for(substring)

    def count_for_messages(self, messages: object) -> int:
        """Count the requests whose ``messages`` were exactly these (by :func:`prompt_hash`)."""
        return int(self.stats()["per_prompt"].get(prompt_hash(messages), 0))

    def __repr__(self) -> str:
        where = self.base_url if self._port is not None and self.running else "stopped"
        return f"<MockOpenAIServer {where}>"


# --------------------------------------------------------------------------------------------
# Standalone
# --------------------------------------------------------------------------------------------


def _latency_arg(value: str) -> Latency:
    if "," in value:
        low, high = (float(part) for part in value.split(",", 1))
        return (low, high)
    return float(value)


def _fault_arg(value: str) -> tuple[str, float]:
    kind, sep, rate = value.partition("=")
    if not sep or kind not in FAULT_KINDS:
        raise argparse.ArgumentTypeError(
            f"expected KIND=RATE with KIND in {', '.join(FAULT_KINDS)}"
        )
    return kind, float(rate)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_legaleval.testing.mock_openai",
        description="Serve a mock OpenAI Chat Completions endpoint until SIGTERM/SIGINT. "
        "Prints MOCK_OPENAI_URL=http://HOST:PORT/v1 on stdout once ready.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port; 0 picks a free one (default)")
    parser.add_argument("--latency", type=_latency_arg, help="seconds, or MIN,MAX for uniform")
    parser.add_argument("--seed", type=int, help="seed of the latency and fault RNGs")
    parser.add_argument("--model", action="append", dest="models", help="model name (repeat)")
    parser.add_argument(
        "--fault",
        action="append",
        type=_fault_arg,
        default=[],
        metavar="KIND=RATE",
        help=f"inject a fault at a rate, e.g. 429=0.05 (repeat); kinds: {', '.join(FAULT_KINDS)}",
    )
    parser.add_argument("--retry-after", default="1", help="Retry-After of 429 faults (seconds)")
    parser.add_argument("--hang-seconds", type=float, help="how long a hang fault lasts")
    parser.add_argument(
        "--script",
        type=Path,
        help="YAML/JSON file with a MockConfig mapping (replies, faults, latency, ...) "
        "or a list of reply rules; command-line flags override it",
    )
    parser.add_argument("--max-recorded", type=int, help="request bodies kept for inspection")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server as a process until SIGTERM or SIGINT.

    Args:
        argv: Command-line arguments (default ``sys.argv[1:]``).

    Returns:
        The exit status, 0 after a clean shutdown.

    """
    args = _parser().parse_args(argv)
    config = MockConfig.from_file(args.script) if args.script else MockConfig()
    changes: dict[str, Any] = {}
    if args.latency is not None:
        changes["latency"] = args.latency
    if args.seed is not None:
        changes["seed"] = args.seed
    if args.models:
        changes["models"] = args.models
    if args.hang_seconds is not None:
        changes["hang_seconds"] = args.hang_seconds
    if args.max_recorded is not None:
        changes["max_recorded_requests"] = args.max_recorded
    faults = list(config.faults)
    faults.extend(
        FaultRule(cast(FaultKind, kind), rate=rate, retry_after=args.retry_after)
        for kind, rate in args.fault
    )
    config = dataclasses.replace(config, faults=faults, **changes)

    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        with MockOpenAIServer(config, host=args.host, port=args.port) as server:
            print(f"MOCK_OPENAI_URL={server.base_url}", flush=True)
            # A timed wait: the main thread must wake up regularly for the handler to run.
            while not stop.wait(0.2):
                pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


if __name__ == "__main__":
    sys.exit(main())
