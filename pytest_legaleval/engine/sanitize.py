r"""What the engine accepts from an endpoint: replies are data, never trusted.

Every successful reply passes :func:`checked_completion` before anyone sees it, whatever
provider produced it:

* text that cannot be written as UTF-8 is repaired: a lone surrogate (``"\ud83d"`` in a
  JSON reply, e.g. an emoji cut at a token boundary) becomes U+FFFD, because every sink
  downstream (the cache, ``predictions.jsonl``, the JUnit XML, the terminal) encodes
  UTF-8 and would otherwise fail on it;
* a token count must be an integer in ``[0, MAX_TOKEN_COUNT]``; anything else (negative,
  fractional, ``NaN``, a string, a bool, 10**30) is dropped to ``None`` so it is never
  summed into tokens or cost.

Each repair leaves a short warning on the attempt (``Attempt.warnings``, written to the
attempt log). Warnings name the field and the rule, and quote only numbers: a reply may
carry secrets, so its strings are never copied into a warning.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Final

from pytest_legaleval.engine.types import RawCompletion
from pytest_legaleval.errors import InvalidValue

__all__ = ["MAX_TOKEN_COUNT", "checked_completion", "clean_text", "token_count"]

MAX_TOKEN_COUNT: Final = 10**9
"""Largest token count taken from a ``usage`` block; no single call is anywhere near it."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> tuple[str, int]:
    """``text`` with every lone surrogate replaced by U+FFFD, and how many there were.

    A valid pair never reaches here as two code points (``json.loads`` joins escaped pairs),
    so every surrogate in a ``str`` is a lone one.
    """
    if _SURROGATE.search(text) is None:
        return text, 0
    return _SURROGATE.subn("\ufffd", text)


def token_count(value: object, name: str, warnings: list[str]) -> int | None:
    """``value`` as a token count, or ``None`` (with a warning) when it is not a sane one.

    Args:
        value: what the endpoint sent; ``None`` (absent) is ``None`` without a warning.
        name: the field, e.g. ``usage.prompt_tokens``, for the warning.
        warnings: where the warning is appended.

    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        warnings.append(f"{name} dropped: not a number ({type(value).__name__})")
        return None
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            warnings.append(f"{name} dropped: not an integer ({value!r})")
            return None
        value = int(value)
    if value < 0:
        warnings.append(f"{name} dropped: negative ({value})")
        return None
    if value > MAX_TOKEN_COUNT:
        # float() of a 400-digit count overflows, str() of a 5,000-digit one is refused:
        # quote its size in digits instead.
        shown = (
            value
            if value < 10**15
            else f"about {math.floor(value.bit_length() * 0.30103) + 1} digits"
        )
        warnings.append(f"{name} dropped: above {MAX_TOKEN_COUNT} ({shown})")
        return None
    return value


def checked_completion(raw: RawCompletion) -> RawCompletion:
    """``raw`` with its text repaired and its token counts checked (see the module).

    Raises:
        ValueError: ``raw.text`` is not a string (a provider bug): the attempt fails as
            ``invalid_response``.

    """
    if not isinstance(raw.text, str):
        raise InvalidValue(f"reply text is {type(raw.text).__name__}, not a string")
    warnings = list(raw.warnings)
    text, repaired = clean_text(raw.text)
    if repaired:
        warnings.append(f"reply text: {repaired} lone surrogate(s) replaced by U+FFFD")
    finish_reason = raw.finish_reason
    if finish_reason is not None:
        if not isinstance(finish_reason, str):
            warnings.append("finish_reason dropped: not a string")
            finish_reason = None
        else:
            finish_reason = clean_text(finish_reason)[0]
    input_tokens = token_count(raw.input_tokens, "usage.prompt_tokens", warnings)
    output_tokens = token_count(raw.output_tokens, "usage.completion_tokens", warnings)
    cached = token_count(raw.cached_input_tokens, "usage cached tokens", warnings)
    if cached is not None and input_tokens is not None and cached > input_tokens:
        # More cached than sent cannot be billed: keep the bill at most the prompt's.
        warnings.append(f"cached tokens {cached} capped at prompt tokens {input_tokens}")
        cached = input_tokens
    if (
        text is raw.text
        and finish_reason is raw.finish_reason
        and input_tokens is raw.input_tokens
        and output_tokens is raw.output_tokens
        and cached is raw.cached_input_tokens
        and len(warnings) == len(raw.warnings)
    ):
        return raw
    return replace(
        raw,
        text=text,
        finish_reason=finish_reason,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_input_tokens=cached,
        warnings=tuple(warnings),
    )
