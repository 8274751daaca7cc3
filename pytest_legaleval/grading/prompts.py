"""Generation prompts: everything the record has reaches the model, shaped by its policy.

All message turns are kept in order, ``context`` is kept also when ``messages`` is present,
MCQ choices are listed with their ids, and attachment text is injected where the policy's
scaffold says. The policy adds its system prompt (if any) before the record's own turns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from string import Template

from pytest_legaleval.grading.attachments import AttachmentText, record_attachments
from pytest_legaleval.grading.policies import Policy, PolicyBook
from pytest_legaleval.records import Record

__all__ = [
    "PROMPT_CODE_VERSION",
    "TEMPLATE_VERSION",
    "build_messages",
    "default_policy",
    "template_version",
    "user_fields",
]

PROMPT_CODE_VERSION = "p2"
"""Changes when the way prompts are assembled changes (not the policy texts)."""

CONTEXT_HEADER = "Context:"
CHOICES_HEADER = "Options:"
ATTACHMENTS_HEADER = "Attachments:"
NONE = "(none)"

_BLANK_RUNS = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")


@lru_cache(maxsize=1)
def default_policy() -> Policy:
    """The built-in ``default`` policy (immutable, loaded once)."""
    return PolicyBook().get("default")


def template_version(policy: Policy) -> str:
    """Part of every generation cache key: code version, policy id and content hash."""
    return f"{PROMPT_CODE_VERSION}:{policy.template_version()}"


TEMPLATE_VERSION = template_version(default_policy())
"""The default policy's template version (what records without ``policy_id`` use)."""


def _attachments_text(items: list[AttachmentText], inject: bool) -> str:
    parts = []
    for number, item in enumerate(items, 1):
        head = f"[{number}] {item.title}"
        parts.append(f"{head}\n{item.text}" if inject and item.text else head)
    return "\n\n".join(parts)


def _task_domain(metadata: Mapping[str, object]) -> str:
    for key in ("task_domain", "domain", "practice_area", "category"):
        value = metadata.get(key)
        if isinstance(value, str) and value:
            return value
    return "(not specified)"


def user_fields(record: Record, policy: Policy) -> dict[str, str]:
    """The values of the user template's placeholders for ``record``."""
    choices = "\n".join(f"{choice.id}) {choice.text}" for choice in record.choices)
    attachments = _attachments_text(record_attachments(record), policy.inject_attachments)
    instructions = policy.mcq_instructions if record.choices else ""
    return {
        "prompt": record.prompt,
        "context_block": f"{CONTEXT_HEADER}\n{record.context}" if record.context else "",
        "context": record.context or NONE,
        "choices_block": f"{CHOICES_HEADER}\n{choices}" if choices else "",
        "choices": choices or NONE,
        "attachments_block": f"{ATTACHMENTS_HEADER}\n{attachments}" if attachments else "",
        "attachments": attachments or NONE,
        "answer_instructions": instructions,
        "task_domain": _task_domain(record.metadata),
    }


def _user_turn(record: Record, policy: Policy) -> str:
    text = Template(policy.user_template).substitute(user_fields(record, policy))
    return _BLANK_RUNS.sub("\n\n", text).strip()


def build_messages(
    record: Record, policy: Policy | None = None, *, previous_response: str | None = None
) -> list[dict[str, str]]:
    """The chat messages for one record.

    Args:
        record: the record to ask.
        policy: its policy (``default`` when omitted).
        previous_response: an earlier answer (``--conversation-from``), inserted as the
            assistant turn before the record's follow-up.

    Returns:
        The policy's system prompt (if any), the ``messages`` turns as given, then (when
        given) the earlier assistant answer, then the final user turn built from the
        policy's scaffold with context, prompt, choices and attachments. A last given user
        turn that holds exactly the prompt is not sent twice.

    """
    policy = policy or default_policy()
    messages: list[dict[str, str]] = []
    if policy.system_prompt:
        messages.append({"role": "system", "content": policy.system_prompt.strip()})
    messages.extend({"role": m.role, "content": m.content} for m in record.messages)
    last = messages[-1] if messages else None
    if last is not None and last["role"] == "user" and last["content"] == record.prompt:
        messages.pop()  # rebuilt below with its context, choices and attachments
    if previous_response is not None:
        messages.append({"role": "assistant", "content": previous_response})
    messages.append({"role": "user", "content": _user_turn(record, policy)})
    return messages
