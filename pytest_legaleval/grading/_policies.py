"""Policies: dataset-specific prompting and judging, selected by ``metadata.policy_id``.

A policy is a YAML file (built-in ones live next to this module in ``policies/``; users add
theirs with ``--policy-dir``). It sets the generation system prompt (or none), the user-turn
scaffold (one for MCQ records if it differs, and further user turns after it), the MCQ
answer contract, the judge templates, system prompts and reply formats, the rubric scoring
rule, what a partly failed rubric verdict means, and the pass threshold. Templates use
``string.Template`` placeholders (``$prompt``), so JSON examples in them need no escaping;
unknown placeholders are refused when the policy is loaded.

Every policy has an ``id``, a ``version`` (its revision: 1 unless the file says otherwise)
and a ``scoring`` (``minmax`` or ``clipped``, see ``grading._scoring``); results carry all
three (``Policy.provenance``) and the sha256 of the policy's content.

A record without ``policy_id``, or naming an unknown one, gets ``default`` with a warning
(never fatal).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError, LegalEvalWarning
from pytest_legaleval.grading._policy_format import (
    ANSWER_CONTRACTS,
    ATTACHMENT_STYLES,
    CHOICE_FIELDS,
    CRITERION_FORMATS,
    GENERATION_FIELDS,
    JUDGE_FIELDS,
    REFERENCE_FORMATS,
    TOP_KEYS,
    USER_FIELDS,
    check_template,
    one_of,
    optional_text,
    threshold,
    version,
)
from pytest_legaleval.grading._protocols import reference_formats
from pytest_legaleval.grading._scoring import PARTIAL_FAILURE_MODES, SCORINGS, scoring_rule
from pytest_legaleval.records import Record
from pytest_legaleval.util.safe_yaml import load_yaml

__all__ = [
    "ANSWER_CONTRACTS",
    "ATTACHMENT_STYLES",
    "CRITERION_FORMATS",
    "REFERENCE_FORMATS",
    "JudgeSettings",
    "Policy",
    "PolicyBook",
    "PolicyWarning",
    "load_policy_file",
    "parse_policy",
]


class PolicyWarning(LegalEvalWarning):
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
    empty_answer: str = "(empty answer)"
    """What the judge is shown in place of an empty answer (LBR: the empty text)."""
    reference_format: str = "verdict"
    """``verdict``, ``score_pass`` or a protocol's own
    (``grading._protocols.reference_formats``)."""
    reference_system_prompt: str | None = None
    """The judge's system prompt for reference records; ``None``: the panel's own."""
    criterion_system_prompt: str | None = None
    """The judge's system prompt for rubric criteria; ``None``: the panel's own."""
    criteria_system_prompt: str | None = None
    """The judge's system prompt for criteria records; ``None``: the panel's own."""


@dataclass(frozen=True, slots=True)
class Policy:
    """One policy; ``sha256`` identifies its content (canonical JSON of every field)."""

    id: str
    description: str
    system_prompt: str | None
    user_template: str
    mcq_instructions: str
    answer_contract: str
    """One of ``ANSWER_CONTRACTS``."""
    judge: JudgeSettings
    pass_threshold: float
    version: int = 1
    """The policy's revision (not inherited through ``extends``)."""
    scoring: str = "clipped"
    """The rubric scoring rule (``grading._scoring.SCORINGS``)."""
    on_partial_judge_failure: str = "error"
    """``error`` or ``score_judged`` (``grading._scoring.PARTIAL_FAILURE_MODES``)."""
    mcq_user_template: str | None = None
    """The user turn of records with choices; ``None``: ``user_template``."""
    extra_user_turns: tuple[str, ...] = ()
    """Templates of further user messages after the user turn (empty ones are not sent)."""
    choice_format: str = "$id) $text"
    """One option in ``$choices`` / ``$choices_block``."""
    attachment_style: str = "numbered"
    """One of ``ATTACHMENT_STYLES``."""
    inject_attachments: bool = True
    """Attachment text goes into the user turn (``$attachments_block``)."""
    source: str = "built-in"
    sha256: str = field(default="", compare=False)
    """sha256 of the whole policy's content."""
    prompt_sha256: str = field(default="", compare=False)
    """sha256 of what shapes the generation request only (judge settings, threshold and
    scoring excluded: changing those re-grades without re-generating)."""

    def template_version(self) -> str:
        """Part of every generation cache key: a changed prompt never hits old answers."""
        return f"{self.id}:{self.prompt_sha256[:16]}"

    def provenance(self) -> dict[str, Any]:
        """What every result graded under this policy records about it."""
        return {
            "policy_id": self.id,
            "policy_version": self.version,
            "policy_sha256": self.sha256,
            "scoring": self.scoring,
            "scoring_version": scoring_rule(self.scoring).version,
            "pass_threshold": self.pass_threshold,
        }


def _content_hash(data: Mapping[str, Any]) -> str:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_JUDGE_TEMPLATES = ("reference_template", "criterion_template", "criteria_template")
_JUDGE_SYSTEMS = ("reference_system_prompt", "criterion_system_prompt", "criteria_system_prompt")


def _judge_settings(data: Mapping[str, Any], base: Policy | None, source: str) -> JudgeSettings:
    judge_data = data.get("judge") or {}
    if not isinstance(judge_data, Mapping):
        raise ConfigError(f"{source}: 'judge' must be a mapping")
    known = set(JudgeSettings.__dataclass_fields__)
    unknown = set(judge_data) - known
    if unknown:
        raise ConfigError(f"{source}: unknown judge keys {sorted(unknown)}; known: {sorted(known)}")
    values: dict[str, Any] = {}
    for name in JudgeSettings.__dataclass_fields__:
        if name in judge_data:
            values[name] = judge_data[name]
        elif base is not None:
            values[name] = getattr(base.judge, name)
    for name in _JUDGE_TEMPLATES:
        if name not in values:
            raise ConfigError(f"{source}: judge.{name} is missing")
        values[name] = check_template(values[name], JUDGE_FIELDS, f"{source}: judge.{name}")
    for name in _JUDGE_SYSTEMS:
        values[name] = optional_text(values.get(name), f"{source}: judge.{name}")
    judge = JudgeSettings(**values)
    one_of(judge.criterion_format, CRITERION_FORMATS, f"{source}: judge.criterion_format")
    one_of(judge.reference_format, reference_formats(), f"{source}: judge.reference_format")
    if not (isinstance(judge.scale_min, int) and isinstance(judge.scale_max, int)) or (
        judge.scale_min >= judge.scale_max
    ):
        raise ConfigError(f"{source}: judge.scale_min must be an integer below judge.scale_max")
    if judge.reference_step is not None and not 0 < float(judge.reference_step) <= 1:
        raise ConfigError(f"{source}: judge.reference_step must be in (0, 1]")
    return judge


def parse_policy(data: Mapping[str, Any], *, source: str, base: Policy | None = None) -> Policy:
    """Build a policy from its YAML mapping; fields it leaves out come from ``base``.

    ``version`` is the file's own (1 when absent); every other field is inherited.

    Raises:
        ConfigError: unknown keys, bad templates or values (the message names the file).

    """
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise ConfigError(
            f"{source}: unknown policy keys {sorted(unknown)}; known: {sorted(TOP_KEYS)}"
        )
    policy_id = data.get("id")
    if not isinstance(policy_id, str) or not policy_id:
        raise ConfigError(f"{source}: a policy needs a non-empty string 'id'")

    def pick(key: str, default: Any) -> Any:
        if key in data:
            return data[key]
        return getattr(base, key) if base is not None else default

    mcq_template = pick("mcq_user_template", None)
    turns = pick("extra_user_turns", ())
    if not isinstance(turns, list | tuple):
        raise ConfigError(f"{source}: extra_user_turns must be a list of templates")
    choice_format = pick("choice_format", "$id) $text")
    values: dict[str, Any] = {
        "id": policy_id,
        "version": version(data.get("version", 1), source),
        "description": str(data.get("description", "")),
        "system_prompt": optional_text(pick("system_prompt", None), f"{source}: system_prompt"),
        "user_template": check_template(
            pick("user_template", None), USER_FIELDS, f"{source}: user_template"
        ),
        "mcq_user_template": None
        if mcq_template is None
        else check_template(mcq_template, USER_FIELDS, f"{source}: mcq_user_template"),
        "extra_user_turns": tuple(
            check_template(turn, USER_FIELDS, f"{source}: extra_user_turns[{i}]")
            for i, turn in enumerate(turns)
        ),
        "choice_format": check_template(choice_format, CHOICE_FIELDS, f"{source}: choice_format"),
        "attachment_style": one_of(
            pick("attachment_style", "numbered"), ATTACHMENT_STYLES, f"{source}: attachment_style"
        ),
        "mcq_instructions": str(pick("mcq_instructions", "")),
        "answer_contract": one_of(
            pick("answer_contract", "letters"), ANSWER_CONTRACTS, f"{source}: answer_contract"
        ),
        "judge": _judge_settings(data, base, source),
        "pass_threshold": threshold(pick("pass_threshold", 0.5), source),
        "scoring": one_of(pick("scoring", "clipped"), SCORINGS, f"{source}: scoring"),
        "on_partial_judge_failure": one_of(
            pick("on_partial_judge_failure", "error"),
            PARTIAL_FAILURE_MODES,
            f"{source}: on_partial_judge_failure",
        ),
        "inject_attachments": bool(pick("inject_attachments", True)),
    }
    content = {k: v for k, v in values.items() if k != "judge"}
    content["judge"] = {n: getattr(values["judge"], n) for n in JudgeSettings.__dataclass_fields__}
    prompt = {name: values[name] for name in GENERATION_FIELDS}
    return Policy(
        **values,
        source=source,
        sha256=_content_hash(content),
        prompt_sha256=_content_hash(prompt),
    )


def _read_yaml(text: str, source: str) -> Mapping[str, Any]:
    data = load_yaml(text, source=source)
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
