"""Small text helpers shared by the graders."""

from __future__ import annotations

import re

__all__ = ["strip_reasoning"]

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"^.*?</(think|thinking|reasoning)>", re.DOTALL | re.IGNORECASE)


def strip_reasoning(text: str) -> str:
    """Remove ``<think>…</think>`` blocks (and an unclosed head ending in ``</think>``)."""
    text = _THINK.sub("", text)
    return _OPEN_THINK.sub("", text).strip()
