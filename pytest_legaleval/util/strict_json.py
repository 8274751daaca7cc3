"""Standard JSON only: no ``NaN``, ``Infinity`` or ``-Infinity``, read or written (pure).

Python's ``json`` reads ``NaN``, ``Infinity`` and ``-Infinity`` and writes them back by
default, and reads ``1e999`` as ``inf``; none of them is JSON (RFC 8259 §6), and strict
parsers (JavaScript's ``JSON.parse``, jq, Go, serde, PostgreSQL) reject a file that holds
one. A judge's ``NaN`` is no verdict, a ``NaN`` in a row is no value, and an artifact with
one is unreadable elsewhere. So:

* :data:`STRICT_DECODER` / :func:`loads` refuse the three names and any number that
  overflows a double, raising :class:`~pytest_legaleval.errors.NonFiniteNumber` (a
  ``ValueError``) that says which;
* :func:`dumps` writes with ``allow_nan=False`` (a non-finite number raises);
* :func:`non_finite_paths` finds them in a parsed value, :func:`without_non_finite`
  replaces them with ``null`` for a writer that must not lose its line.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pytest_legaleval.errors import NonFiniteNumber

__all__ = [
    "STRICT_DECODER",
    "dumps",
    "loads",
    "non_finite_paths",
    "without_non_finite",
]


def _reject_constant(name: str) -> object:
    raise NonFiniteNumber(f"{name} is not a number JSON allows (it has no NaN or Infinity)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        shown = text if len(text) <= 24 else text[:21] + "..."
        raise NonFiniteNumber(f"{shown} is beyond the range of a number (it reads as infinity)")
    return value


STRICT_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
"""One shared decoder (``json.loads`` with arguments builds a new one per call)."""


def loads(text: str) -> Any:
    """Parse standard JSON; ``NaN``, ``Infinity`` and overflowing numbers are refused.

    Raises:
        NonFiniteNumber: the text holds a non-finite number (a ``ValueError``).
        json.JSONDecodeError: the text is not JSON.
        RecursionError: nested too deeply to parse.

    """
    return STRICT_DECODER.decode(text)


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` that never writes ``NaN``/``Infinity`` (it raises ``ValueError``)."""
    return json.dumps(value, allow_nan=False, **kwargs)


def _is_non_finite(value: object) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def non_finite_paths(value: Any, *, limit: int = 5) -> list[str]:
    """JSONPath-like locations (``$.judge.verdicts[0].score``) of non-finite floats.

    At most ``limit`` are returned, in document order; walked without recursion, so a
    deeply nested value costs no stack.
    """
    found: list[str] = []
    stack: list[tuple[Any, str]] = [(value, "$")]
    while stack and len(found) < limit:
        item, path = stack.pop()
        if _is_non_finite(item):
            found.append(path)
        elif isinstance(item, dict):
            stack.extend((v, f"{path}.{k}") for k, v in reversed(list(item.items())))
        elif isinstance(item, list | tuple):
            stack.extend((v, f"{path}[{i}]") for i, v in reversed(list(enumerate(item))))
    return found


def _replaced(value: Any) -> Any:
    if _is_non_finite(value):
        return None
    if isinstance(value, dict):
        return {k: _replaced(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_replaced(v) for v in value]
    return value


def without_non_finite(value: Any) -> tuple[Any, list[str]]:
    """``value`` with every non-finite float replaced by ``None``, and where they were.

    ``value`` itself is returned (not copied) when it holds none.
    """
    paths = non_finite_paths(value, limit=5)
    if not paths:
        return value, []
    return _replaced(value), paths
