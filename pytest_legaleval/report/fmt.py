"""How the page writes a figure: numbers, shares, intervals, as escaped HTML text.

Figures come from run files anyone can edit, so every helper takes ``Any`` and writes a
dash for what is not a finite number (a string, ``True``, ``NaN``), never raises.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pytest_legaleval.report.page import e

__all__ = ["DASH", "card", "finite", "interval", "num", "pair", "pct"]

DASH = "–"


def finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite number (not a bool), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def pct(value: Any) -> str:
    """A share as a percentage with one decimal (``–`` when it is not a number)."""
    found = finite(value)
    if found is None:
        return DASH
    shown = f"{found:.1%}"
    return shown[1:] if shown.startswith("-") and not shown.strip("-0.%") else shown


def num(value: Any, digits: int = 3) -> str:
    """An integer with thousands separators, a float with ``digits`` decimals, else text."""
    if isinstance(value, bool) or value is None:
        return DASH
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return DASH
        shown = f"{value:,.{digits}f}"
        # -0.000: a value that rounds to zero is zero, whatever its sign
        return shown[1:] if shown.startswith("-") and not shown.strip("-0.,") else shown
    return e(value)


def pair(value: Any) -> tuple[float, float] | None:
    """A ``[low, high]`` list of two finite numbers, else ``None``."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    low, high = finite(value[0]), finite(value[1])
    return None if low is None or high is None else (low, high)


def interval(value: Any, *, as_pct: bool = False, digits: int = 3) -> str:
    """``[low, high]`` (a list, or a mapping with ``low`` and ``high``) as ``[a, b]``."""
    if isinstance(value, Mapping):
        value = [value.get("low"), value.get("high")]
    found = pair(value)
    if found is None:
        return ""
    low, high = found
    if as_pct:
        return f"[{pct(low)}, {pct(high)}]"
    return f"[{num(low, digits)}, {num(high, digits)}]"


def card(label: str, value: str, key: str, note: str = "", help_text: str = "") -> str:
    """A summary card: ``value`` and ``note`` are markup already escaped, the rest text."""
    title = f' title="{e(help_text)}"' if help_text else ""
    extra = f'<div class="note">{note}</div>' if note else ""
    return (
        f'<div class="card" data-metric="{e(key)}"{title}><div class="label">{e(label)}</div>'
        f'<div class="value">{value}</div>{extra}</div>'
    )
