"""Rate limits: token buckets for rpm/tpm and an adaptive concurrency limit for 429 storms.

All objects here are used from the engine's event-loop thread only, so they take no locks.
Budgets across xdist workers are split statically: each of ``share`` processes gets
``1/share`` of the rpm and tpm, and its part of the concurrency (the remainder goes to the
first workers: 50 over 3 is 17, 17, 16). No cross-process coordination is needed and the
total never exceeds the budget, except that every worker keeps one call in flight (the
plugin warns when ``--concurrency`` is below the worker count); the cost is that an idle
worker's share is unused.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "DEFAULT_OUTPUT_TOKENS",
    "AdaptiveConcurrency",
    "TokenBucket",
    "estimate_prompt_tokens",
    "estimate_tokens",
]

DEFAULT_OUTPUT_TOKENS = 256
"""Output tokens a call is assumed to produce when ``max_new_tokens`` is not set."""


def estimate_prompt_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    """A prompt's tokens, cheaply: about 4 characters per token plus 4 per message."""
    chars = sum(len(m.get("content", "")) for m in messages)
    return chars // 4 + 4 * len(messages)


def estimate_tokens(messages: Sequence[Mapping[str, str]], max_new_tokens: int | None) -> int:
    """Estimate a call's tokens cheaply (charged before the call, corrected after).

    The prompt's (:func:`estimate_prompt_tokens`); the output is charged at
    ``max_new_tokens`` (or :data:`DEFAULT_OUTPUT_TOKENS`) and corrected after the call.
    """
    output = max_new_tokens if max_new_tokens is not None else DEFAULT_OUTPUT_TOKENS
    return estimate_prompt_tokens(messages) + output


class TokenBucket:
    """A token bucket refilled continuously at ``per_minute / 60`` tokens per second.

    The capacity is one second of budget (at least 1) so a run starts with a small burst and
    then settles at the rate, instead of firing a whole minute's budget at once. A single
    charge larger than the capacity is allowed once the bucket is full (the level goes
    negative and the debt is repaid by waiting), so huge prompts are slowed, not starved.
    """

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate_per_s = per_minute / 60.0
        self.capacity = max(1.0, self.rate_per_s)
        self._level = self.capacity
        self._clock = clock
        self._updated = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._level = min(self.capacity, self._level + (now - self._updated) * self.rate_per_s)
        self._updated = now

    def wait_time(self, amount: float) -> float:
        """Seconds until ``amount`` can be taken (0 when it can be taken now)."""
        self._refill()
        needed = min(amount, self.capacity)
        if self._level >= needed:
            return 0.0
        return (needed - self._level) / self.rate_per_s

    def take(self, amount: float) -> None:
        """Charge ``amount`` (call after ``wait_time`` returned 0)."""
        self._refill()
        self._level -= amount

    def adjust(self, delta: float) -> None:
        """Give back (positive) or charge more (negative) after the real usage is known."""
        self._refill()
        self._level = min(self.capacity, self._level + delta)


class AdaptiveConcurrency:
    """An in-flight limit that halves on a 429 and creeps back up (+1 per M successes).

    Only the first 429 of each "generation" shrinks the limit: calls that were already in
    flight when the limit last shrank carry an older epoch and their 429s are ignored, so a
    burst of 32 simultaneous 429s halves the limit once rather than collapsing it to 1.
    """

    def __init__(self, maximum: int, recover_after: int = 8) -> None:
        self.maximum = max(1, maximum)
        self.limit = self.maximum
        self.lowest = self.maximum
        self.recover_after = max(1, recover_after)
        self.epoch = 0
        self.shrinks = 0
        self._streak = 0

    def on_rate_limited(self, started_epoch: int) -> bool:
        """Record a 429 of a call started at ``started_epoch``; True if the limit shrank."""
        self._streak = 0
        if started_epoch < self.epoch:
            return False
        self.limit = max(1, self.limit // 2)
        self.lowest = min(self.lowest, self.limit)
        self.epoch += 1
        self.shrinks += 1
        return True

    def on_success(self) -> None:
        """Record a call that was not rate limited; grows the limit after M in a row."""
        if self.limit >= self.maximum:
            return
        self._streak += 1
        if self._streak >= self.recover_after:
            self._streak = 0
            self.limit += 1
