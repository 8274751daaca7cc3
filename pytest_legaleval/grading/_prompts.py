"""Generation prompts: everything the record has reaches the model, shaped by its policy.

All message turns are kept in order, ``context`` is kept also when ``messages`` is present,
MCQ choices are listed with their ids, and attachment text is injected where the policy's
scaffold says. The policy adds its system prompt (if any) before the record's own turns,
and its further user turns (``extra_user_turns``) after the user turn.

The record's own text reaches the model byte for byte: only the policy's framing is laid
out (a template line whose placeholders are all empty is dropped, runs of blank lines in
the framing become one, the framing is trimmed); values are put in afterwards, untouched.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from string import Template

from pytest_legaleval.errors import InvalidValue
from pytest_legaleval.grading._attachments import record_attachments
from pytest_legaleval.grading._policies import Policy, PolicyBook
from pytest_legaleval.records import Record

__all__ = [
    "PROMPT_CODE_VERSION",
    "TEMPLATE_VERSION",
    "build_messages",
    "default_policy",
    "render",
    "template_version",
    "user_fields",
    "user_turns",
]

PROMPT_CODE_VERSION = "p3"
"""Changes when the way prompts are assembled changes (not the policy texts)."""

CONTEXT_HEADER = "Context:"
CHOICES_HEADER = "Options:"
ATTACHMENTS_HEADER = "Attachments:"
NONE = "(none)"

FILES_HEADER = "==== Attached files content: ===="

_BLANK_RUNS = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")
_SLOT = re.compile("\x00([0-9]+)\x00")


@lru_cache(maxsize=1)
def default_policy() -> Policy:
    """The built-in ``default`` policy (immutable, loaded once)."""
    return PolicyBook().get("default")


def template_version(policy: Policy) -> str:
    """Part of every generation cache key: code version, policy id and content hash."""
    return f"{PROMPT_CODE_VERSION}:{policy.template_version()}"


TEMPLATE_VERSION = template_version(default_policy())
"""The default policy's template version (what records without ``policy_id`` use)."""


def _attachments_text(record: Record, policy: Policy, roots: Sequence[str]) -> str:
    items = record_attachments(record, roots)
    if not items:
        return ""
    parts = []
    for number, (given, item) in enumerate(zip(record.attachments, items, strict=True), 1):
        text = item.text if policy.inject_attachments else ""
        if policy.attachment_style == "sections":
            parts.append(f"=== {os.path.basename(given.path)} ===\n{text.strip()}")
            continue
        if policy.attachment_style == "files":
            head = f"File: {given.path} ({given.kind})" if given.kind else f"File: {given.path}"
        else:
            head = f"[{number}] {item.title}"
        parts.append(f"{head}\n{text}" if text else head)
    return "\n\n".join(parts)


def _task_domain(metadata: Mapping[str, object]) -> str:
    for key in ("task_domain", "domain", "practice_area", "category"):
        value = metadata.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def user_fields(
    record: Record, policy: Policy, *, attachment_roots: Sequence[str] = ()
) -> dict[str, str]:
    """The values of the user template's placeholders for ``record``.

    Attachments are read from the dataset's folder, or from ``attachment_roots``
    (``--attachments-root``).
    """
    choices = "\n".join(
        _fill_line(policy.choice_format, id=c.id, text=c.text) for c in record.choices
    )
    attachments = _attachments_text(record, policy, attachment_roots)
    if not attachments:
        attachments_block = ""
    elif policy.attachment_style in ("files", "sections"):
        attachments_block = f"{FILES_HEADER}\n\n{attachments}"
    else:
        attachments_block = f"{ATTACHMENTS_HEADER}\n{attachments}"
    domain = _task_domain(record.metadata)
    return {
        "prompt": record.prompt,
        "context_block": f"{CONTEXT_HEADER}\n{record.context}" if record.context else "",
        "context": record.context or NONE,
        "choices_block": f"{CHOICES_HEADER}\n{choices}" if choices else "",
        "choices": choices or NONE,
        "attachments_block": attachments_block,
        "attachments": attachments or NONE,
        "answer_instructions": policy.mcq_instructions if record.choices else "",
        "task_domain": domain or "(not specified)",
        "domain_block": f"Domain: {domain}" if domain else "",
    }


Line = tuple[tuple[str, ...], tuple[str, ...]]
"""A template line: its literal pieces and the placeholder after each but the last."""


@lru_cache(maxsize=256)
def _template_lines(template: str) -> tuple[Line, ...]:
    out = []
    for line in template.split("\n"):
        texts, names, pos = [""], [], 0
        for match in Template.pattern.finditer(line):
            texts[-1] += line[pos : match.start()]
            pos = match.end()
            if match.group("escaped") is not None:
                texts[-1] += "$"
                continue
            name = match.group("named") or match.group("braced")
            if name is None:  # policies are checked when loaded; a caller's template may not be
                raise InvalidValue(f"invalid placeholder in template line {line!r}")
            names.append(name)
            texts.append("")
        texts[-1] += line[pos:]
        out.append((tuple(texts), tuple(names)))
    return tuple(out)


def _fill_line(template: str, **values: str) -> str:
    """A one-line template filled in (choice lines: called per option, so compiled once)."""
    ((texts, names),) = _template_lines(template)
    parts = [texts[0]]
    for name, text in zip(names, texts[1:], strict=True):
        parts.append(values[name])
        parts.append(text)
    return "".join(parts)


@lru_cache(maxsize=1024)
def _frame(
    template: str, names: tuple[str, ...], filled: tuple[bool, ...]
) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The template laid out for values of which ``filled`` says which are non-empty.

    Returns the literal pieces and, between each two, the index of the value that goes
    there. The layout depends only on the template and on which values are empty, so it is
    done once per policy and record shape, not once per record.
    """
    slot = {name: f"\x00{i}\x00" if filled[i] else "" for i, name in enumerate(names)}
    kept = []
    for texts, placeholders in _template_lines(template):
        if not placeholders:
            kept.append(texts[0])
            continue
        parts = [texts[0]]
        for name, text in zip(placeholders, texts[1:], strict=True):
            parts.append(slot[name])
            parts.append(text)
        filled_line = "".join(parts)
        if filled_line.strip():
            kept.append(filled_line)
    pieces = _SLOT.split(_BLANK_RUNS.sub("\n\n", "\n".join(kept)).strip())
    return tuple(pieces[0::2]), tuple(int(index) for index in pieces[1::2])


def render(template: str, values: Mapping[str, str]) -> str:
    """Fill ``template``; lay out its own text only, never the values.

    A template line holding nothing but placeholders whose values are all empty is
    dropped; runs of blank lines in what remains become one; the result is trimmed. The
    values are put in last, as they are (a prompt's own blank lines stay).
    """
    names = tuple(values)
    given = [values[name] for name in names]
    texts, slots = _frame(template, names, tuple(bool(value) for value in given))
    parts = [texts[0]]
    for index, text in zip(slots, texts[1:], strict=True):
        parts.append(given[index])
        parts.append(text)
    return "".join(parts)


def user_turns(
    record: Record, policy: Policy, *, attachment_roots: Sequence[str] = ()
) -> list[str]:
    """The user messages the policy builds for ``record``.

    Its user turn, then the policy's further turns; turns that come out empty are left out.
    """
    fields = user_fields(record, policy, attachment_roots=attachment_roots)
    main = policy.mcq_user_template if record.choices and policy.mcq_user_template else None
    turns = [render(main or policy.user_template, fields)]
    turns.extend(render(t, fields) for t in policy.extra_user_turns)
    return [turn for turn in turns if turn]


def build_messages(
    record: Record,
    policy: Policy | None = None,
    *,
    previous_response: str | None = None,
    attachment_roots: Sequence[str] = (),
) -> list[dict[str, str]]:
    """The chat messages for one record.

    Args:
        record: the record to ask.
        policy: its policy (``default`` when omitted).
        previous_response: an earlier answer (``--conversation-from``), inserted as the
            assistant turn before the record's follow-up.
        attachment_roots: folders besides the dataset's that attachments may be read from.

    Returns:
        The policy's system prompt (if any), the ``messages`` turns as given, then (when
        given) the earlier assistant answer, then the user turn built from the policy's
        scaffold with context, prompt, choices and attachments, then the policy's further
        user turns. A last given user turn that holds exactly the prompt is not sent twice.

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
    turns = user_turns(record, policy, attachment_roots=attachment_roots)
    messages.extend({"role": "user", "content": turn} for turn in turns)
    return messages
