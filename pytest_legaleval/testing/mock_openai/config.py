"""The mock's configuration: models, latency, seeds and the rule lists."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pytest_legaleval.errors import InvalidValue
from pytest_legaleval.testing.mock_openai.faults import FaultRule
from pytest_legaleval.testing.mock_openai.hostile import HostileRule
from pytest_legaleval.testing.mock_openai.rules import ReplyRule

__all__ = ["Latency", "MockConfig", "check_latency", "copy_config"]

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
        hostile: Hostile rules (:class:`~.hostile.HostileRule`), tried before the faults;
            only :class:`~.hostile_server.HostileOpenAIServer` can send them.
        judge_replies: Answer pytest-legaleval's judge questions with a valid verdict of
            their shape by default (:mod:`~.judge`); ``False``: the plain default reply.

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
    hostile: list[HostileRule] = dataclasses.field(default_factory=list)
    judge_replies: bool = True

    def __post_init__(self) -> None:
        check_latency(self.latency)
        if not self.models:
            raise InvalidValue("models must name at least one model")
        if self.max_recorded_requests < 0:
            raise InvalidValue("max_recorded_requests must be >= 0")

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
            raise InvalidValue(f"unknown config keys {sorted(unknown)}; known: {sorted(fields)}")
        kwargs: dict[str, Any] = dict(data)
        if isinstance(kwargs.get("latency"), list):
            kwargs["latency"] = tuple(kwargs["latency"])
        if "models" in kwargs and isinstance(kwargs["models"], str):
            kwargs["models"] = [kwargs["models"]]
        kwargs["replies"] = [_rule_from(ReplyRule, item) for item in kwargs.get("replies") or []]
        kwargs["faults"] = [_rule_from(FaultRule, item) for item in kwargs.get("faults") or []]
        kwargs["hostile"] = [_rule_from(HostileRule, item) for item in kwargs.get("hostile") or []]
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
            raise InvalidValue(f"{path}: expected a mapping or a list of replies")
        return cls.from_dict(data)


_R = TypeVar("_R", ReplyRule, FaultRule, HostileRule)


def _rule_from(rule_type: type[_R], item: object) -> _R:
    if isinstance(item, rule_type):
        return dataclasses.replace(item)
    if not isinstance(item, Mapping):
        raise InvalidValue(f"a {rule_type.__name__} must be a mapping, got {item!r}")
    data = dict(item)
    if rule_type is FaultRule and isinstance(data.get("calls"), list):
        data["calls"] = frozenset(data["calls"])
    return rule_type(**data)


def check_latency(latency: Latency) -> None:
    """Raise ``ValueError`` unless ``latency`` is >= 0 or a ``(min, max)`` range."""
    if isinstance(latency, tuple):
        if len(latency) != 2 or not 0 <= latency[0] <= latency[1]:
            raise InvalidValue(f"latency range must be (min, max) with 0 <= min <= max: {latency}")
    elif latency < 0:
        raise InvalidValue(f"latency must be >= 0, got {latency}")


def copy_config(config: MockConfig) -> MockConfig:
    """Return ``config`` with fresh rule objects (their ``fired`` counts start at 0)."""
    # Fresh rule objects: the server counts `fired` on them, and a config reused for another
    # server must not share those counts. Callables are shared, not copied: they may hold state.
    return dataclasses.replace(
        config,
        models=list(config.models),
        replies=[dataclasses.replace(rule) for rule in config.replies],
        faults=[dataclasses.replace(rule) for rule in config.faults],
        hostile=[dataclasses.replace(rule) for rule in config.hostile],
    )
