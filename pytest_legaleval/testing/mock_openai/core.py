"""The request logic, independent of HTTP: decisions, counters and OpenAI-shaped bodies."""

from __future__ import annotations

import collections
import json
import random
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_legaleval.errors import InvalidState
from pytest_legaleval.testing.mock_openai.batches import BatchAPI
from pytest_legaleval.testing.mock_openai.config import MockConfig
from pytest_legaleval.testing.mock_openai.faults import FaultRule
from pytest_legaleval.testing.mock_openai.hostile import (
    HostileRule,
    hostile_repeat,
    render_hostile,
)
from pytest_legaleval.testing.mock_openai.outcome import (
    FAULT_ERRORS,
    JSON_HEADER,
    MALFORMED_BODY,
    Outcome,
    error_outcome,
    json_bytes,
    model_object,
    validate_request,
)
from pytest_legaleval.testing.mock_openai.rules import (
    ReplyRule,
    ReplyValue,
    check_reply,
    count_tokens,
    default_reply,
    prompt_hash,
    prompt_text,
)

__all__ = ["Core", "Outcome", "error_outcome"]


class Core:
    """Config, counters and request decisions, shared by the HTTP layer and the handle.

    Everything runs on the server's event loop except the handle's methods, so the state is
    guarded by ``lock``; user callables are never called while holding it, so they may call
    back into the handle.
    """

    def __init__(self, config: MockConfig) -> None:
        self.lock = threading.Lock()
        self.config = config
        self.in_flight = 0
        self.batch_calls = 0
        self.batches = BatchAPI(config, self._batch_answer)
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
        self.hostile_by_kind: collections.Counter[str] = collections.Counter()
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
        for hostile_rule in config.hostile:
            hostile_rule.fired = 0
        for fault_rule in config.faults:
            fault_rule.fired = 0

    def reset(self) -> None:
        """Zero the counters (see ``MockOpenAIServer.reset``)."""
        with self.lock:
            self._reset_locked()
        self.batches.reset()

    def _batch_answer(self, raw: bytes) -> Outcome:
        """One batch line's body, answered as a live call would be (not counted as one)."""
        with self.lock:
            self.batch_calls += 1
            call = self.batch_calls
        headers = {}
        if self.config.api_key is not None:
            headers["authorization"] = f"Bearer {self.config.api_key}"
        try:
            return self._chat_outcome(
                call, ("POST", "/v1/chat/completions"), headers, raw, live=False
            )
        except Exception as exc:  # a bug of the mock: a failed line, never a lost one
            return error_outcome(500, f"mock server failed: {type(exc).__name__}: {exc}")

    def stats(self) -> dict[str, Any]:
        """The counters (see ``MockOpenAIServer.stats``)."""
        with self.lock:
            return {
                "requests": self.calls,
                "completed": self.completed,
                "errors": self.errors,
                "cancelled": self.cancelled,
                "faults": sum(self.faults_by_kind.values()),
                "faults_by_kind": dict(self.faults_by_kind),
                "hostile": sum(self.hostile_by_kind.values()),
                "hostile_by_kind": dict(self.hostile_by_kind),
                "in_flight": self.in_flight,
                "peak_in_flight": self.peak_in_flight,
                "per_prompt": dict(self.per_prompt),
                "models": dict(self.models),
                "endpoints": dict(self.endpoints),
                "recorded_requests": len(self.recorded),
                "prompt_index_overflow": self.prompt_index_overflow,
            }

    def count_for(self, substring: str) -> int:
        """Requests whose prompt contains ``substring`` (see ``MockOpenAIServer``)."""
        with self.lock:
            if self.prompt_index_overflow:
                raise InvalidState(
                    "count_for is unavailable: the distinct prompts exceeded "
                    f"MockConfig.prompt_index_chars ({self.config.prompt_index_chars}); "
                    "raise it or use stats()['per_prompt']"
                )
            return sum(n for text, n in self.prompt_index.items() if substring in text)

    def finished(self, outcome: Outcome, *, delivered: bool) -> None:
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

    def route(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Outcome:
        """Decide the outcome of one request (headers: case-insensitive or lower-case)."""
        path = target.split("?", 1)[0]
        if path.startswith("/v1/") or path == "/v1":
            path = path[3:]
        path = path.rstrip("/") or "/"
        with self.lock:
            self.endpoints[f"{method} {path}"] += 1
        if path == "/chat/completions":
            if method != "POST":
                return error_outcome(405, f"Method {method} not allowed for {target}.")
            return self._chat(method, target, headers, body)
        if path == "/models" and method == "GET":
            data = [model_object(name) for name in self.config.models]
            return Outcome(
                "respond", 200, json_bytes({"object": "list", "data": data}), (JSON_HEADER,)
            )
        if path.startswith("/models/") and method == "GET":
            name = path[len("/models/") :]
            if name in self.config.models:
                return Outcome("respond", 200, json_bytes(model_object(name)), (JSON_HEADER,))
            return error_outcome(404, f"The model '{name}' does not exist", code="model_not_found")
        if path.startswith(("/files", "/batches")):
            return self.batches.route(method, path, headers, body)
        if path == "/stats" and method == "GET":
            return Outcome("respond", 200, json_bytes(self.stats()), (JSON_HEADER,))
        if path == "/reset" and method == "POST":
            self.reset()
            return Outcome("respond", 200, b'{"ok":true}', (JSON_HEADER,))
        return error_outcome(404, f"Unknown request URL: {method} {target}.", code="unknown_url")

    # -- chat completions -------------------------------------------------------------------

    def _chat(self, method: str, target: str, headers: Mapping[str, str], raw: bytes) -> Outcome:
        with self.lock:
            # Every request counts, valid or not: a client that sends garbage should see it in
            # the stats, and call numbers must be those the client would count.
            self.calls += 1
            call = self.calls
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            outcome = self._chat_outcome(call, (method, target), headers, raw)
        except Exception as exc:  # a bug of the mock: answer, so the request still settles
            outcome = error_outcome(500, f"mock server failed: {type(exc).__name__}: {exc}")
        outcome.counts = True
        outcome.headers = (*outcome.headers, ("x-request-id", f"req_mock_{call}"))
        return outcome

    def _chat_outcome(
        self,
        call: int,
        line: tuple[str, str],
        headers: Mapping[str, str],
        raw: bytes,
        *,
        live: bool = True,
    ) -> Outcome:
        config = self.config
        if (
            config.api_key is not None
            and headers.get("authorization") != f"Bearer {config.api_key}"
        ):
            return error_outcome(401, "Incorrect API key provided (mock).", code="invalid_api_key")
        try:
            request = json.loads(raw)
        except (UnicodeDecodeError, ValueError) as exc:
            return error_outcome(400, f"We could not parse the JSON body of your request: {exc}")
        problem = validate_request(request, config)
        if problem is not None:
            return problem
        messages = request["messages"]
        model: str = request["model"]
        prompt = prompt_text(messages)
        key = prompt_hash(messages)
        with self.lock:
            # A batch line is no live request: the batch API counts its own lines.
            if live:
                self.per_prompt[key] += 1
                self.models[model] += 1
                if self.recorded.maxlen:
                    self.recorded.append(request)
                self._index_prompt(prompt)
            hostile = self._pick_hostile(prompt)
            fault = None if hostile is not None else self._pick_fault(call, prompt)
            latency = self._draw_latency()
            replies = list(self.config.replies)
        if hostile is not None:
            data = render_hostile(
                hostile, method=line[0], target=line[1], headers=headers, body=raw, model=model
            )
            delay = latency if hostile.delay is None else hostile.delay
            repeat = hostile_repeat(hostile)
            return Outcome("raw", 200, data, delay=delay, hold=hostile.hold, repeat=repeat)
        try:
            return self._answer(request, prompt, call, model, fault, latency, replies)
        except Exception as exc:
            outcome = error_outcome(
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

    def _pick_hostile(self, prompt: str) -> HostileRule | None:
        for rule in self.config.hostile:
            if rule.times is not None and rule.fired >= rule.times:
                continue
            if rule.matches(prompt):
                rule.fired += 1
                self.hostile_by_kind[rule.kind] += 1
                return rule
        return None

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
    ) -> Outcome:
        delay = latency
        if fault is not None:
            delay = latency if fault.delay is None else fault.delay
            kind = fault.kind
            if kind in FAULT_ERRORS:
                status, message, error_type, code = FAULT_ERRORS[kind]
                extra = (("Retry-After", fault.retry_after_header),) if kind == "429" else ()
                outcome = error_outcome(status, fault.message or message, error_type, code, extra)
            elif kind == "hang":
                hang = (
                    self.config.hang_seconds if fault.hang_seconds is None else fault.hang_seconds
                )
                return Outcome("hang", hang_seconds=hang)
            elif kind == "reset":
                return Outcome("reset", delay=delay)
            elif kind == "malformed":
                outcome = Outcome("respond", 200, MALFORMED_BODY, (JSON_HEADER,))
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
        content: str | None = (
            spec["content"]
            if "content" in spec
            else default_reply(prompt, request if self.config.judge_replies else None)
        )
        if status >= 400:
            outcome = error_outcome(
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
        body: dict[str, Any] = {
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
        if "cached_tokens" in usage:  # a scripted prompt-cache hit, as OpenAI reports it
            body["usage"]["prompt_tokens_details"] = {"cached_tokens": usage["cached_tokens"]}
        return Outcome(
            "respond",
            status,
            json_bytes(body),
            (JSON_HEADER, *extra_headers),
            delay,
            completion=True,
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
                    check_reply(value)
                    return value
            elif rule._pattern is None or rule._pattern.search(prompt) is not None:
                if self._take(rule):
                    return rule.reply
        return None
