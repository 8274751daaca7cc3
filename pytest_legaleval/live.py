"""Live generation: a process submits all of its items up front; each test waits for its own."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from pytest_legaleval.engine import (
    Engine,
    EngineSettings,
    GenerationParams,
    GenerationRequest,
    GenerationResult,
    RetryPolicy,
)
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.evaluation import EvalResult, grade_response
from pytest_legaleval.grading.prompts import TEMPLATE_VERSION, build_messages
from pytest_legaleval.records import Record
from pytest_legaleval.responses import ResponseTable
from pytest_legaleval.settings import Settings

__all__ = ["LiveEvaluator", "engine_settings", "result_from_generation"]

_PARAM_KEYS = ("temperature", "top_p", "max_new_tokens", "seed")
_MODEL_KEYS = frozenset({"base_url", "api_key_env", *_PARAM_KEYS})


def _per_model(settings: Settings) -> dict[str, dict[str, Any]]:
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
    return out


def engine_settings(settings: Settings, share: int) -> EngineSettings:
    """Engine configuration of one process out of ``share``."""
    return EngineSettings(
        base_url=settings.base_url,
        api_key_env=settings.api_key_env,
        concurrency=settings.concurrency,
        rpm=settings.rpm,
        tpm=settings.tpm,
        request_timeout_s=settings.request_timeout,
        retry=RetryPolicy(max_attempts=settings.max_attempts, delays_s=settings.retry_delays),
        cache_path=settings.cache,
        share=share,
        transport=settings.transport,
        per_model=_per_model(settings),
    )


def result_from_generation(
    record: Record, model: str, generation: GenerationResult, max_latency_ms: int | None
) -> EvalResult:
    """Grade a generation, or turn its error into the item's outcome."""
    if generation.ok:
        assert generation.text is not None
        result = grade_response(record, model, generation.text, "live")
        if generation.latency_exceeded:
            result.update(
                {
                    "outcome": "failed",
                    "passed": False,
                    "reason": "latency_exceeded",
                    "explanation": f"answer took {generation.latency_ms:.0f} ms, more than "
                    f"expected.max_latency_ms={max_latency_ms} "
                    f"(graded: {result['reason']})",
                }
            )
    else:
        code = generation.error_code or "unknown"
        reason = code if code in ("timeout", "cancelled") else f"generation_error:{code}"
        result = grade_response(record, model, "", "live")
        tries = len(generation.attempts)
        result.update(
            {
                "outcome": "error",
                "passed": None,
                "score": None,
                "reason": reason,
                "response": None,
                "grader": "none",
                "details": {},
                "explanation": f"{generation.error_message or code} after {tries} "
                f"attempt{'s' if tries != 1 else ''}",
            }
        )
    result.update(
        {
            "latency_ms": generation.latency_ms,
            "input_tokens": generation.input_tokens,
            "output_tokens": generation.output_tokens,
            "total_tokens": generation.total_tokens,
            "first_attempt_at": generation.first_attempt_at,
            "last_attempt_at": generation.last_attempt_at,
            "attempts": [dataclasses.asdict(a) for a in generation.attempts],
        }
    )
    result["details"] = {
        **result["details"],
        "cached": generation.cached,
        "cache_key": generation.cache_key,
        "finish_reason": generation.finish_reason,
        "template_version": TEMPLATE_VERSION,
    }
    return result


class LiveEvaluator:
    """Builds requests, submits them in bulk, and grades results as tests ask for them."""

    def __init__(
        self, settings: Settings, *, share: int = 1, conversation: ResponseTable | None = None
    ) -> None:
        self.settings = settings
        self.conversation = conversation
        self.engine = Engine(engine_settings(settings, share))
        for model in settings.model:
            self.engine.check_model(model)
        self.params = GenerationParams(
            temperature=settings.temperature,
            top_p=settings.top_p,
            max_new_tokens=settings.max_new_tokens,
            seed=settings.seed,
        )
        self._futures: dict[tuple[str, str], Future[GenerationResult]] = {}

    def request(self, record: Record, model: str) -> GenerationRequest:
        """The generation request of one item."""
        previous = self.conversation.get(record.id, model) if self.conversation else None
        if self.conversation is not None and previous is None and self.conversation.models:
            previous = self.conversation.get(record.id, self.conversation.models[0])
        max_latency = record.expected.get("max_latency_ms")
        return GenerationRequest(
            model=model,
            messages=tuple(build_messages(record, previous_response=previous)),
            params=self.params,
            template_version=TEMPLATE_VERSION,
            max_latency_ms=max_latency if isinstance(max_latency, int) else None,
        )

    def prefetch(self, pairs: Sequence[tuple[Record, str]]) -> None:
        """Submit every item of this process at once (FIFO: earlier items start first)."""
        todo = [(r, m) for r, m in pairs if (r.id, m) not in self._futures]
        futures = self.engine.submit_many([self.request(r, m) for r, m in todo])
        for (record, model), future in zip(todo, futures, strict=True):
            self._futures[(record.id, model)] = future

    def evaluate(self, record: Record, model: str) -> EvalResult:
        """Wait for this item's generation and grade it."""
        future = self._futures.pop((record.id, model), None)
        if future is None:
            future = self.engine.submit(self.request(record, model))
        generation = future.result()
        max_latency = record.expected.get("max_latency_ms")
        return result_from_generation(
            record, model, generation, max_latency if isinstance(max_latency, int) else None
        )

    def stats(self) -> Mapping[str, Any]:
        """The engine's counters."""
        return self.engine.stats()

    def cancel(self) -> None:
        """Cancel everything pending (Ctrl-C)."""
        self.engine.cancel_all()

    def close(self) -> None:
        """Stop the engine."""
        self.engine.close()
