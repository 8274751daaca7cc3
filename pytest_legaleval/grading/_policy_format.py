"""The policy file format: its keys, placeholders, choices of values and value checks.

Part of ``grading._policies`` (which re-exports the public names); nothing here knows a
``Policy``.
"""

from __future__ import annotations

from string import Template

from pytest_legaleval.errors import ConfigError

__all__ = [
    "ANSWER_CONTRACTS",
    "ATTACHMENT_STYLES",
    "CHOICE_FIELDS",
    "CRITERION_FORMATS",
    "GENERATION_FIELDS",
    "JUDGE_FIELDS",
    "REFERENCE_FORMATS",
    "TOP_KEYS",
    "USER_FIELDS",
    "check_template",
    "one_of",
    "optional_text",
    "threshold",
    "version",
]

CRITERION_FORMATS: tuple[str, ...] = ("met", "result", "grade", "criteria_met")
"""How a criterion verdict is asked for: ``{"met": bool, "rationale"}``, ``{"result": 0|1,
"reason"}``, ``{"grade": 0|1, "reasoning", "criterion_id"}`` (LBR) or ``{"explanation",
"criteria_met": bool}`` (PRBench)."""
REFERENCE_FORMATS: tuple[str, ...] = ("verdict", "score_pass")
"""How our judge asks for a reference verdict: ``{"score", "verdict", "rationale"}`` or
``{"score", "pass", "rationale", "criteria"}`` (LBR; the judge's ``pass`` is not used: an
item passes when its score reaches the policy's threshold). A benchmark protocol adds its
own judge by name (``grading._protocols.reference_formats``: LEXam's ``lexam``, its judge
prompt and free-text ``[[0.x]]`` reply; the policy's reference template is then unused)."""
ANSWER_CONTRACTS: tuple[str, ...] = ("letters", "json", "json_single")
"""MCQ answers: an ``Answer: B`` line, ``{"answer": ["B"]}``, or ``{"answer": "B",
"reasoning": "…"}`` (LBR)."""
ATTACHMENT_STYLES: tuple[str, ...] = ("numbered", "files", "sections")
"""Attachment block layout: ``Attachments:`` + ``[1] title``, or LBR's ``==== Attached files
content: ====`` + ``File: path (kind)``, or ``==== Attached files content: ====`` +
``=== <file name> ===`` and the file's text stripped (APEX's own generation prompt)."""

USER_FIELDS = frozenset(
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
        "domain_block",
    }
)
JUDGE_FIELDS = frozenset(
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
        "pass_threshold",
        "criterion_id",
        "criterion_id_json",
        "criterion_weight",
        "reference_lines",
        "conversation",
    }
)
CHOICE_FIELDS = frozenset({"id", "text"})


GENERATION_FIELDS = (
    "system_prompt",
    "user_template",
    "mcq_user_template",
    "extra_user_turns",
    "choice_format",
    "attachment_style",
    "mcq_instructions",
    "answer_contract",
    "inject_attachments",
)
TOP_KEYS = frozenset(
    {
        "id",
        "version",
        "description",
        "extends",
        "judge",
        "pass_threshold",
        "scoring",
        "on_partial_judge_failure",
        *GENERATION_FIELDS,
    }
)


def check_template(text: object, allowed: frozenset[str], where: str) -> str:
    """``text`` as a template whose placeholders are all in ``allowed``, or ``ConfigError``."""
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


def one_of(value: object, allowed: tuple[str, ...], where: str) -> str:
    """``value`` if it is one of ``allowed``, else ``ConfigError``."""
    if value not in allowed:
        raise ConfigError(f"{where} must be one of {list(allowed)}, got {value!r}")
    return str(value)


def optional_text(value: object, where: str) -> str | None:
    """A string or ``None``, else ``ConfigError``."""
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{where} must be a string or null")
    return value


def threshold(value: object, source: str) -> float:
    """A pass threshold: a number in [0, 1], else ``ConfigError``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ConfigError(f"{source}: pass_threshold must be a number in [0, 1]")
    return float(value)


def version(value: object, source: str) -> int:
    """A policy version: an integer of at least 1, else ``ConfigError``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{source}: version must be an integer of at least 1, got {value!r}")
    return value
