"""Inline SVG bar charts (no library, nothing fetched)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

__all__ = ["bar_chart", "bins_for"]


def bins_for(
    values: Sequence[float], count: int = 10, low: float | None = None, high: float | None = None
) -> tuple[list[float], list[int]]:
    """Equal-width bin edges and counts over ``[low, high]`` (data range by default)."""
    if not values:
        return [], []
    lo = min(values) if low is None else low
    hi = max(values) if high is None else high
    if not hi > lo:
        hi = lo + 1.0
    width = (hi - lo) / count
    counts = [0] * count
    for value in values:
        counts[min(count - 1, max(0, int((value - lo) / width)))] += 1
    return [lo + i * width for i in range(count + 1)], counts


def _label(value: float) -> str:
    if value == 0 or abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 1:
        return f"{value:.1f}"
    return f"{value:.2f}"


def bar_chart(edges: Sequence[float], counts: Sequence[int], title: str, unit: str = "") -> str:
    """An accessible SVG histogram: one bar per bin, with counts and edge labels."""
    if not counts:
        return f'<p class="empty">{escape(title)}: no values</p>'
    width, height, pad, bottom = 480, 200, 30, 34
    top = max(counts) or 1
    bar_w = (width - 2 * pad) / len(counts)
    parts = [
        f'<svg class="chart" role="img" aria-label="{escape(title)}" '
        f'viewBox="0 0 {width} {height + bottom}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    for i, count in enumerate(counts):
        bar_h = (height - pad) * count / top
        x = pad + i * bar_w
        y = height - bar_h
        label = f"{_label(edges[i])}–{_label(edges[i + 1])}{unit}: {count}"
        parts.append(
            f'<rect class="bar" x="{x + 1:.1f}" y="{y:.1f}" width="{max(bar_w - 2, 1):.1f}" '
            f'height="{bar_h:.1f}" data-count="{count}"><title>{escape(label)}</title></rect>'
        )
        if count:
            parts.append(
                f'<text x="{x + bar_w / 2:.1f}" y="{y - 4:.1f}" text-anchor="middle">{count}</text>'
            )
    step = max(1, math.ceil(len(counts) / 5))
    for i in range(0, len(edges), step):
        x = pad + i * bar_w
        parts.append(
            f'<text x="{x:.1f}" y="{height + 16}" text-anchor="middle">'
            f"{escape(_label(edges[i]))}</text>"
        )
    parts.append(
        f'<line x1="{pad}" y1="{height}" x2="{width - pad}" y2="{height}" class="axis"/></svg>'
    )
    return "".join(parts)
