"""How an option's text becomes its value: the converters of :mod:`pipeline.options`.

A converter takes the text of one value (from the command line, an ini key or YAML) and
returns the value the settings hold, or raises ``ValueError`` with a message that
:func:`pipeline.settings.resolve_settings` prefixes with the flag and where the value came
from. :func:`parse_shard` raises ``ConfigError`` itself: its message names the flag.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytest_legaleval.errors import ConfigError, InvalidValue

__all__ = [
    "MAX_DELAY_S",
    "Shard",
    "boolean",
    "bounded",
    "choice",
    "delays",
    "dotted_field",
    "name_token",
    "number",
    "parse_shard",
    "usd",
]

MAX_DELAY_S = 3600.0
"""The longest backoff ``--retry-delays`` accepts, in seconds."""

_DOTTED_FIELD_RE = re.compile(r"[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*", re.ASCII)
_NAME_TOKEN_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*", re.ASCII)
_MAX_NAME = 128


@dataclass(frozen=True, slots=True)
class Shard:
    """``--shard K/N``: this run evaluates the K-th of N disjoint parts (1-based)."""

    index: int
    count: int
    auto: bool = False
    """Read from the scheduler's environment (``--shard auto``, ``pipeline.shards``)."""
    prefix: str | None = None
    """``auto``: the run id prefix the scheduler gives all shards (its job id), if any."""
    source: str | None = None
    """``auto``: which scheduler's variables said it."""

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """Parse ``K/N`` with ``1 <= K <= N``, or ``auto`` / ``auto/N`` (``pipeline.shards``)."""
    if text.strip().lower().startswith("auto"):
        import os

        from pytest_legaleval.pipeline.shards import auto_shard

        return auto_shard(text, os.environ)
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match:
        raise ConfigError(f"--shard expects K/N such as 1/4, got {text!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ConfigError(f"--shard {text}: K must be between 1 and N (N >= 1)")
    return Shard(index, count)


def number(text: str, kind: type[int] | type[float]) -> float:
    """``text`` as a finite ``kind`` (a whole number for ``int``).

    Raises:
        ValueError: not a number of that kind, or not finite.

    """
    try:
        value = float(text) if kind is float else int(str(text).strip())
    except ValueError:
        raise InvalidValue(
            f"expects {'a number' if kind is float else 'a whole number'}, got {text!r}"
        ) from None
    if not math.isfinite(value):
        raise InvalidValue(f"expects a finite number, got {text!r}")
    return value


def bounded(
    kind: type[int] | type[float], low: float, high: float, *, low_open: bool = False
) -> Callable[[str], Any]:
    """A converter to ``kind`` that accepts finite values in [low, high] (``(low, high]``)."""

    def convert(text: str) -> Any:
        value = number(text, kind)
        if (value <= low if low_open else value < low) or value > high:
            bracket = "(" if low_open else "["
            raise InvalidValue(f"must be in {bracket}{low:g}, {high:g}], got {text}")
        return value

    return convert


def usd(text: str) -> float:
    """A finite amount of USD above zero (``--max-cost``)."""
    value = float(text)
    if not 0 < value < float("inf"):
        raise InvalidValue(f"expects a finite amount of USD > 0, got {text!r}")
    return value


def delays(text: str) -> tuple[float, ...]:
    """Comma-separated seconds in ``[0, MAX_DELAY_S]`` (``--retry-delays``)."""
    values = []
    for part in str(text).split(","):
        if not part.strip():
            continue
        value = number(part, float)
        if not 0 <= value <= MAX_DELAY_S:
            raise InvalidValue(
                f"expects comma-separated seconds in [0, {MAX_DELAY_S:g}], got {text!r}"
            )
        values.append(value)
    if not values:
        raise InvalidValue(f"expects comma-separated seconds >= 0, got {text!r}")
    return tuple(values)


def boolean(text: str) -> bool:
    """``1/true/yes/on`` or ``0/false/no/off`` (or empty), in any case."""
    value = str(text).strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise InvalidValue(f"expects true or false, got {text!r}")


def choice(*names: str) -> Callable[[str], str]:
    """A converter that accepts one of ``names`` (case and surrounding blanks ignored)."""

    def convert(text: str) -> str:
        value = str(text).strip().lower()
        if value not in names:
            raise InvalidValue(f"expects one of {', '.join(names)}, got {text!r}")
        return value

    return convert


def dotted_field(text: str) -> str:
    """A record field as a dotted path: ``metadata.exam``, ``metadata.task``, ``dataset``.

    Names of ASCII letters, digits, ``_`` and ``-`` (not starting with a digit or ``-``),
    joined by single dots; no leading or trailing dot, at most 128 characters.
    """
    value = str(text).strip()
    if len(value) > _MAX_NAME or not _DOTTED_FIELD_RE.fullmatch(value):
        raise InvalidValue(
            "expects a record field such as metadata.exam, metadata.task or dataset (names of "
            f"letters, digits, '_' or '-' joined by single dots), got {text!r}"
        )
    return value


def name_token(text: str) -> str:
    """A name such as a policy or protocol id: ``legalbench_official``, ``lexam_mcq_v1``.

    ASCII letters, digits, ``_``, ``.`` and ``-``, starting with a letter or digit, at most
    128 characters.
    """
    value = str(text).strip()
    if len(value) > _MAX_NAME or not _NAME_TOKEN_RE.fullmatch(value):
        raise InvalidValue(
            "expects a name of letters, digits, '_', '.' or '-' (such as "
            f"contract_review_v1), got {text!r}"
        )
    return value
