"""The default generation prompt: everything the record has reaches the model.

All message turns are kept in order, ``context`` is kept also when ``messages`` is present,
and MCQ choices are listed with their ids. Dataset-specific policies will build on this.
"""

from __future__ import annotations

import hashlib

from pytest_legaleval.records import Record

__all__ = ["MCQ_INSTRUCTION", "TEMPLATE_VERSION", "build_messages"]

MCQ_INSTRUCTION = (
    "Answer with the id of the correct option. If several options are correct, give all of "
    "their ids separated by commas. End your reply with a line of the form 'Answer: <ids>'."
)

CONTEXT_HEADER = "Context:"
CHOICES_HEADER = "Options:"

TEMPLATE_VERSION = (
    "default-v1:"
    + hashlib.sha256(
        "\x1f".join((MCQ_INSTRUCTION, CONTEXT_HEADER, CHOICES_HEADER)).encode()
    ).hexdigest()[:16]
)
"""Changes whenever the template text changes; part of every cache key."""


def _user_turn(record: Record) -> str:
    parts: list[str] = []
    if record.context:
        parts.append(f"{CONTEXT_HEADER}\n{record.context}")
    parts.append(record.prompt)
    if record.choices:
        listed = "\n".join(f"{choice.id}) {choice.text}" for choice in record.choices)
        parts.append(f"{CHOICES_HEADER}\n{listed}")
        parts.append(MCQ_INSTRUCTION)
    return "\n\n".join(parts)


def build_messages(record: Record, *, previous_response: str | None = None) -> list[dict[str, str]]:
    """The chat messages for one record.

    Args:
        record: the record to ask.
        previous_response: an earlier answer (``--conversation-from``), inserted as the
            assistant turn before the record's follow-up.

    Returns:
        ``messages`` turns as given, then (when given) the earlier assistant answer, then
        the final user turn with context, prompt and choices. A last given user turn that
        holds exactly the prompt is not sent twice.

    """
    messages = [{"role": m.role, "content": m.content} for m in record.messages]
    if messages and messages[-1]["role"] == "user" and messages[-1]["content"] == record.prompt:
        messages.pop()  # rebuilt below with its context and choices
    if previous_response is not None:
        messages.append({"role": "assistant", "content": previous_response})
    messages.append({"role": "user", "content": _user_turn(record)})
    return messages
