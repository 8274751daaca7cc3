"""Small text helpers shared by the graders."""

from __future__ import annotations

import re

__all__ = ["REASONING_TAG_RE", "split_reasoning", "strip_reasoning"]

REASONING_TAG_RE = re.compile(
    r"<(?P<close>/?)(?:think|thinking|reasoning|reflection|scratchpad)\b[^<>]{0,200}>",
    re.IGNORECASE,
)
"""An opening or closing reasoning tag (``<think>``, ``</reasoning>`` …)."""


def split_reasoning(text: str) -> tuple[str, bool]:
    """The text outside ``<think>…</think>``-style blocks, and whether any tag was found.

    One linear pass over the tags (no regex spanning a block, which is quadratic on replies
    full of unclosed tags). Blocks may nest; an unclosed block runs to the end. A closing
    tag without an opening one (the opening tag was part of the prompt template) makes
    everything before it reasoning. Kept parts are joined with a space.
    """
    if "<" not in text:
        return text, False
    kept: list[str] = []
    depth = 0
    pos = 0
    for tag in REASONING_TAG_RE.finditer(text):
        if depth == 0:
            kept.append(text[pos : tag.start()])
        if not tag.group("close"):
            depth += 1
        elif depth:
            depth -= 1
        else:
            kept.clear()
        pos = tag.end()
    if depth == 0:
        kept.append(text[pos:])
    return " ".join(kept), pos != 0


def strip_reasoning(text: str) -> str:
    """The answer without its reasoning blocks, stripped (empty if it is all reasoning)."""
    return split_reasoning(text)[0].strip()
