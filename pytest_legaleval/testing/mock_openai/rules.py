"""Prompt helpers and reply rules: what the mock answers when no fault fires."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from pytest_legaleval.errors import InvalidType, InvalidValue

__all__ = [
    "ReplyFunction",
    "ReplyRule",
    "ReplyValue",
    "check_reply",
    "compile_pattern",
    "count_tokens",
    "default_reply",
    "prompt_hash",
    "prompt_text",
]

ReplyValue = str | Mapping[str, Any]
"""A scripted reply: the content text, or a dict (see :class:`ReplyRule`)."""

ReplyFunction = Callable[[dict[str, Any]], ReplyValue | None]
"""A reply computed from the request body; returning ``None`` means "no match, try the next"."""

REPLY_KEYS: Final = frozenset(
    {"content", "finish_reason", "usage", "status", "delay", "headers", "error_type", "error_code"}
)


def prompt_text(messages: object) -> str:
    r"""Concatenate the text of all message contents, the string that rules match against.

    Args:
        messages: The ``messages`` list of a chat completion request. Contents may be strings,
            ``None`` or lists of content parts, of which the ``{"type": "text"}`` parts count.

    Returns:
        The contents joined by ``"\n"``, in message order.

    """
    if not isinstance(messages, list):
        return ""
    texts: list[str] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(
                part["text"]
                for part in content
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
    return "\n".join(texts)


def prompt_hash(messages: object) -> str:
    """Return the key of a prompt in ``stats()["per_prompt"]``.

    Args:
        messages: The ``messages`` list exactly as sent.

    Returns:
        The first 16 hex digits of the SHA-256 of the messages as canonical JSON (sorted keys,
        no whitespace, non-ASCII kept).

    """
    canonical = json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def count_tokens(text: str | None) -> int:
    """Count tokens the way the mock does: ``ceil(len(text) / 4)``.

    Args:
        text: Any text; ``None`` counts as empty.

    Returns:
        The deterministic token count.

    """
    return math.ceil(len(text) / 4) if text else 0


# One option per line: "A) text", "A. text" or "(A) text". "A: text" is left out on purpose:
# "Q: ..." and "A: ..." lines of question/answer prompts would look like options.
_OPTION_RE: Final = re.compile(r"^[ \t]*(?:\(([A-Z])\)|([A-Z])[.)])[ \t]+\S", re.MULTILINE)


def _mcq_letters(prompt: str) -> str:
    found = {a or b for a, b in _OPTION_RE.findall(prompt)}
    # Only the run A, B, C, ... counts: headings such as "I. Facts" or "V. Remedies" are
    # not options and must not turn a question into a multiple-choice one.
    letters = ""
    for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        if letter not in found:
            break
        letters += letter
    return letters if len(letters) >= 2 else ""


def default_reply(prompt: str, request: Mapping[str, Any] | None = None) -> str:
    """Return the deterministic reply the server gives when no rule matches.

    With the ``request`` body given, a pytest-legaleval judge question (a JSON schema in its
    ``response_format``, or a judge prompt's reply format) gets a valid verdict of its shape
    (:func:`~.judge.judge_reply`). A prompt that looks like a multiple-choice question -- at
    least two option lines ``A) ...``,
    ``A. ...`` or ``(A) ...`` starting with A and consecutive -- is answered ``"Answer: X"``,
    where X is one of the offered letters chosen by the prompt's SHA-256. Any other prompt gets
    ``"Mock response <12 hex digits of the prompt's SHA-256>."``. The same prompt always gets the
    same reply, on every run and machine.

    Args:
        prompt: The concatenated prompt, see :func:`prompt_text`.
        request: The chat completion request body (judge questions are told by it).

    Returns:
        The reply text.

    """
    if request is not None:
        from pytest_legaleval.testing.mock_openai.judge import judge_reply

        verdict = judge_reply(request)
        if verdict is not None:
            return verdict
    digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
    letters = _mcq_letters(prompt)
    if letters:
        return f"Answer: {letters[int(digest[:8], 16) % len(letters)]}"
    return f"Mock response {digest[:12]}."


def compile_pattern(pattern: str | None) -> re.Pattern[str] | None:
    """Compile a rule's regular expression; an invalid one is a ``ValueError``."""
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:  # re.error is no ValueError; config errors should all be
        raise InvalidValue(f"invalid regular expression {pattern!r}: {exc}") from exc


@dataclasses.dataclass
class ReplyRule:
    """A scripted reply; the first rule that matches a request answers it.

    Attributes:
        match: Regular expression searched (``re.search``) in the concatenated prompt (see
            :func:`prompt_text`); ``None`` matches every request. Ignored when ``reply`` is a
            callable, which decides for itself.
        reply: The content text; or a dict with any of ``content`` (text or ``None``),
            ``finish_reason`` (default ``"stop"``), ``usage`` (``prompt_tokens`` and/or
            ``completion_tokens``), ``status`` (an HTTP status; 400 or more answers with an
            OpenAI error whose message is ``content``, typed by ``error_type``/``error_code``),
            ``delay`` (seconds, replaces the configured latency) and ``headers``; or a callable
            taking the request body and returning either of those, or ``None`` to pass.
        times: Answer only the first ``times`` matching requests, then stop matching.
        fired: How many requests this rule answered (maintained by the server).

    """

    match: str | None = None
    reply: ReplyValue | ReplyFunction = ""
    times: int | None = None
    fired: int = dataclasses.field(default=0, init=False, compare=False)
    _pattern: re.Pattern[str] | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.times is not None and self.times < 0:
            raise InvalidValue(f"times must be >= 0, got {self.times}")
        if isinstance(self.reply, Mapping):
            unknown = set(self.reply) - REPLY_KEYS
            if unknown:
                raise InvalidValue(
                    f"unknown reply keys {sorted(unknown)}; known: {sorted(REPLY_KEYS)}"
                )
        elif not isinstance(self.reply, str) and not callable(self.reply):
            raise InvalidType(f"reply must be a str, a dict or a callable, got {self.reply!r}")
        self._pattern = compile_pattern(self.match)


def check_reply(value: object) -> None:
    """Reject what a reply callable returned unless it is a text or a known reply dict."""
    if isinstance(value, Mapping):
        unknown = set(value) - REPLY_KEYS
        if unknown:
            raise InvalidValue(f"unknown reply keys {sorted(unknown)}")
    elif not isinstance(value, str):
        raise InvalidType(f"a reply callable must return str, dict or None, not {value!r}")
