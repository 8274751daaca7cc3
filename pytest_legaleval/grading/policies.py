"""Policies: dataset-specific prompting and judging, selected by ``metadata.policy_id``.

A policy is a YAML file (built-in ones live next to this module in ``policies/``; users add
theirs with ``--policy-dir``). It sets the generation system prompt (or none), the user-turn
scaffold, the MCQ answer contract, the judge templates and scales, and the pass threshold.
Templates use ``string.Template`` placeholders (``$prompt``), so JSON examples in them need
no escaping; unknown placeholders are refused when the policy is loaded.

A record without ``policy_id``, or naming an unknown one, gets ``default`` with a warning
(never fatal). Every result records the policy id and the sha256 of its content.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import yaml

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.perf import load_yaml
from pytest_legaleval.records import Record

__all__ = [
    "CRITERION_FORMATS",
    "JudgeSettings",
    "Policy",
    "PolicyBook",
    "PolicyWarning",
    "load_policy_file",
    "parse_policy",
]

CRITERION_FORMATS: tuple[str, ...] = ("met", "result")
"""How a criterion verdict is asked for: ``{"met": bool, …}`` or ``{"result": 0|1, …}``."""

_USER_FIELDS = frozenset(
    {
        "prompt",
        "context",
        "context_block",
        "choices",
        "attachments",
        "choices_block",
        "attachments_block",
        "answer_instructions",
        "task_domain",
    }
)
_JUDGE_FIELDS = frozenset(
    {
        "question",
        "context",
        "references",
        "answer",
        "criterion_title",
        "criterion_description",
        "criteria",
        "scale_min",
        "scale_max",
        "choices",
    }
)


class PolicyWarning(UserWarning):
    """A record named a policy that does not exist; ``default`` was used."""


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    """The judging part of a policy."""

    reference_template: str
    """Judge prompt for reference records (score in [0, 1] against the references)."""
    criterion_template: str
    """Judge prompt for one rubric criterion."""
    criteria_template: str
    """Judge prompt rating every required criterion of a criteria record on the scale."""
    criterion_format: str = "met"
    """``met`` or ``result`` (see ``CRITERION_FORMATS``)."""
    reference_step: float | None = None
    """Reference scores are rounded to this step (LEXam: 0.1); ``None`` keeps them."""
    scale_min: int = 1
    """Lowest rating of the criteria scale."""
    scale_max: int = 5
    """Highest rating of the criteria scale."""
    strip_reasoning: bool = True
    """Remove ``<think>…</think>`` reasoning from the answer before judging."""


@dataclass(frozen=True, slots=True)
class Policy:
    """One policy; ``sha256`` identifies its content (canonical JSON of every field)."""

    id: str
    description: str
    system_prompt: str | None
    user_template: str
    mcq_instructions: str
    answer_contract: str
    """``letters`` (an ``Answer: B`` line) or ``json`` (``{"answer": ["B"]}``)."""
    judge: JudgeSettings
    pass_threshold: float
    inject_attachments: bool = True
    """Attachment text goes into the user turn (``$attachments_block``)."""
    source: str = "built-in"
    sha256: str = field(default="", compare=False)

    def template_version(self) -> str:
        """Part of every generation cache key: a changed policy never hits old answers."""
        return f"{self.id}:{self.sha256[:16]}"


def _content_hash(data: Mapping[str, Any]) -> str:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _check_template(text: object, allowed: frozenset[str], where: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"{where}: expected a non-empty template string")
    template = Template(text)
    if not template.is_valid():
        raise ConfigError(f"{where}: invalid placeholder syntax (write $$ for a literal $)")
    unknown = set(template.get_identifiers()) - allowed
    if unknown:
        raise ConfigError(
            f"{where}: unknown placeholders {sorted(unknown)}; accepted: {sorted(allowed)}"
        )
    return text


def parse_policy(data: Mapping[str, Any], *, source: str, base: Policy | None = None) -> Policy:
    """Build a policy from its YAML mapping; fields it leaves out come from ``base``.

    Raises:
        ConfigError: unknown keys, bad templates or values (the message names the file).

    """
    known = {
        "id",
        "description",
        "extends",
        "system_prompt",
        "user_template",
        "mcq_instructions",
        "answer_contract",
        "judge",
        "pass_threshold",
        "inject_attachments",
    }
    unknown = set(data) - known
    if unknown:
        raise ConfigError(
            f"{source}: unknown policy keys {sorted(unknown)}; known: {sorted(known)}"
        )
    policy_id = data.get("id")
    if not isinstance(policy_id, str) or not policy_id:
        raise ConfigError(f"{source}: a policy needs a non-empty string 'id'")

    def pick(key: str, default: Any) -> Any:
        if key in data:
            return data[key]
        return getattr(base, key) if base is not None else default

    judge_data = data.get("judge") or {}
    if not isinstance(judge_data, Mapping):
        raise ConfigError(f"{source}: 'judge' must be a mapping")
    judge_known = {f for f in JudgeSettings.__dataclass_fields__}
    unknown = set(judge_data) - judge_known
    if unknown:
        raise ConfigError(
            f"{source}: unknown judge keys {sorted(unknown)}; known: {sorted(judge_known)}"
        )
    judge_values: dict[str, Any] = {}
    for name in JudgeSettings.__dataclass_fields__:
        if name in judge_data:
            judge_values[name] = judge_data[name]
        elif base is not None:
            judge_values[name] = getattr(base.judge, name)
    for name in ("reference_template", "criterion_template", "criteria_template"):
        if name not in judge_values:
            raise ConfigError(f"{source}: judge.{name} is missing")
        judge_values[name] = _check_template(
            judge_values[name], _JUDGE_FIELDS, f"{source}: judge.{name}"
        )
    judge = JudgeSettings(**judge_values)
    if judge.criterion_format not in CRITERION_FORMATS:
        raise ConfigError(
            f"{source}: judge.criterion_format must be one of {CRITERION_FORMATS}, "
            f"got {judge.criterion_format!r}"
        )
    if not (isinstance(judge.scale_min, int) and isinstance(judge.scale_max, int)) or (
        judge.scale_min >= judge.scale_max
    ):
        raise ConfigError(f"{source}: judge.scale_min must be an integer below judge.scale_max")
    if judge.reference_step is not None and not 0 < float(judge.reference_step) <= 1:
        raise ConfigError(f"{source}: judge.reference_step must be in (0, 1]")

    system_prompt = pick("system_prompt", None)
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise ConfigError(f"{source}: system_prompt must be a string or null")
    answer_contract = pick("answer_contract", "letters")
    if answer_contract not in ("letters", "json"):
        raise ConfigError(f"{source}: answer_contract must be 'letters' or 'json'")
    threshold = pick("pass_threshold", 0.5)
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not (0.0 <= float(threshold) <= 1.0)
    ):
        raise ConfigError(f"{source}: pass_threshold must be a number in [0, 1]")
    values: dict[str, Any] = {
        "id": policy_id,
        "description": str(data.get("description", "")),
        "system_prompt": system_prompt,
        "user_template": _check_template(
            pick("user_template", None), _USER_FIELDS, f"{source}: user_template"
        ),
        "mcq_instructions": str(pick("mcq_instructions", "")),
        "answer_contract": answer_contract,
        "judge": judge,
        "pass_threshold": float(threshold),
        "inject_attachments": bool(pick("inject_attachments", True)),
    }
    content = {k: v for k, v in values.items() if k != "judge"}
    content["judge"] = {name: getattr(judge, name) for name in JudgeSettings.__dataclass_fields__}
    return Policy(**values, source=source, sha256=_content_hash(content))


def _read_yaml(text: str, source: str) -> Mapping[str, Any]:
    try:
        # libyaml when available: every process reads the built-in policies at start-up
        # (about 10 ms with the pure-Python loader, 1 ms with libyaml).
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: a policy file holds a mapping")
    return data


def load_policy_file(path: Path, base: Policy | None = None) -> Policy:
    """Read one user policy file."""
    return parse_policy(
        _read_yaml(path.read_text(encoding="utf-8"), str(path)), source=str(path), base=base
    )


def _builtin_texts() -> Iterable[tuple[str, str]]:
    folder = resources.files("pytest_legaleval.grading").joinpath("policies")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            yield entry.name, entry.read_text(encoding="utf-8")


class PolicyBook:
    """Every policy of a session: the built-in ones, then ``--policy-dir`` files.

    A user file may name ``extends: ID`` to start from another policy; without it, missing
    fields come from ``default``.
    """

    def __init__(self, policy_dir: str | None = None) -> None:
        raw: dict[str, tuple[Mapping[str, Any], str]] = {}
        for name, text in _builtin_texts():
            data = _read_yaml(text, f"built-in policy {name}")
            raw[str(data.get("id"))] = (data, f"built-in:{name}")
        if policy_dir is not None:
            folder = Path(policy_dir)
            if not folder.is_dir():
                raise ConfigError(f"--policy-dir {policy_dir}: no such directory")
            for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
                data = _read_yaml(path.read_text(encoding="utf-8"), str(path))
                raw[str(data.get("id"))] = (data, str(path))
        if "default" not in raw:
            raise ConfigError("the built-in policy 'default' is missing from the package")
        self._policies: dict[str, Policy] = {}
        self._raw = raw
        for policy_id in raw:
            self._build(policy_id, ())
        self._warned: set[str] = set()

    def _build(self, policy_id: str, chain: tuple[str, ...]) -> Policy:
        done = self._policies.get(policy_id)
        if done is not None:
            return done
        data, source = self._raw[policy_id]
        parent_id = data.get("extends", None if policy_id == "default" else "default")
        base = None
        if parent_id is not None:
            if parent_id not in self._raw:
                raise ConfigError(f"{source}: extends unknown policy {parent_id!r}")
            if parent_id in chain:
                raise ConfigError(f"{source}: 'extends' forms a cycle: {' -> '.join(chain)}")
            base = self._build(str(parent_id), (*chain, policy_id))
        policy = parse_policy(data, source=source, base=base)
        self._policies[policy_id] = policy
        return policy

    @property
    def ids(self) -> tuple[str, ...]:
        """Every known policy id."""
        return tuple(sorted(self._policies))

    def get(self, policy_id: str) -> Policy:
        """The policy ``policy_id``; ``KeyError`` when unknown."""
        return self._policies[policy_id]

    def for_record(self, record: Record) -> Policy:
        """The record's policy, or ``default`` (warning once per unknown id)."""
        wanted = record.policy_id
        if wanted is None:
            return self._policies["default"]
        policy = self._policies.get(wanted)
        if policy is None:
            if wanted not in self._warned:
                self._warned.add(wanted)
                warnings.warn(
                    PolicyWarning(
                        f"unknown policy_id {wanted!r} (record {record.id!r} and others): "
                        f"using 'default'; known: {', '.join(self.ids)}"
                    ),
                    stacklevel=2,
                )
            return self._policies["default"]
        return policy
