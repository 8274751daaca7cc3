"""The configuration and observation methods every mock server handle shares."""

from __future__ import annotations

import collections
import dataclasses
import random
from typing import Any, cast

from pytest_legaleval.errors import InvalidState, InvalidType
from pytest_legaleval.testing.mock_openai.batches import BatchKnobs
from pytest_legaleval.testing.mock_openai.config import (
    Latency,
    MockConfig,
    check_latency,
    copy_config,
)
from pytest_legaleval.testing.mock_openai.core import Core
from pytest_legaleval.testing.mock_openai.faults import FaultKind, FaultRule
from pytest_legaleval.testing.mock_openai.rules import (
    ReplyFunction,
    ReplyRule,
    ReplyValue,
    prompt_hash,
)

__all__ = ["ServerHandle"]


class ServerHandle:
    """Addresses, live configuration and counters of a mock server (thread-safe).

    Args:
        config: The behaviour; copied, so the caller's object is left alone.
        host: Interface to bind.
        port: Port to bind; 0 picks a free one.
        overrides: :class:`MockConfig` fields that replace those of ``config``.

    """

    def __init__(
        self, config: MockConfig | None, host: str, port: int, overrides: dict[str, Any]
    ) -> None:
        base = config if config is not None else MockConfig()
        if overrides:
            base = dataclasses.replace(base, **overrides)
        self._core = Core(copy_config(base))
        self._host = host
        self._requested_port = port
        self._port: int | None = None

    @property
    def running(self) -> bool:
        """Whether the server is serving."""
        raise NotImplementedError  # abstract: each server class defines it

    # -- addresses --------------------------------------------------------------------------

    @property
    def host(self) -> str:
        """The bound interface, ``127.0.0.1`` by default."""
        return self._host

    @property
    def port(self) -> int:
        """The bound port (known once started)."""
        if self._port is None:
            raise InvalidState("the mock server has not been started")
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
            updated = copy_config(dataclasses.replace(core.config, **changes))
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
        check_latency(latency)
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
                raise InvalidType("add_reply(pattern, reply): the reply is missing")
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

    # -- batches ----------------------------------------------------------------------------

    def batch_knobs(self, **changes: Any) -> BatchKnobs:
        """Change how batches behave (see :class:`~.batches.BatchKnobs`); the new knobs."""
        return self._core.batches.set_knobs(**changes)

    def release_batches(self) -> None:
        """End the batches' hold: held batches finalize at their next poll."""
        self._core.batches.set_knobs(hold=False)

    def batch_stats(self) -> dict[str, Any]:
        """The Files and Batches API's counters (``batches_created``, ``lines`` …)."""
        return self._core.batches.stats()

    def batch_prompt_count(self, substring: str) -> int:
        """Batch lines answered whose prompt contains ``substring``."""
        return self._core.batches.prompt_count(substring)

    def __repr__(self) -> str:
        where = self.base_url if self._port is not None and self.running else "stopped"
        return f"<{type(self).__name__} {where}>"
