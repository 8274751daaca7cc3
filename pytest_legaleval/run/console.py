"""What the terminal shows: the one sanitizer, and the run's summary table.

:func:`printable` is the one function every string from data or a model goes through
before it reaches a terminal (failure texts, ``-rA`` lines, the short summary, warnings,
the summary table, gate and regression lines, the command line's output).

The table is a compact view of the run and its slices, with intervals. Its columns use the
count vocabulary of ``metrics/counts.py`` (the metrics files' and the HTML report's):
records, items (record × model), passed, failed, errors, skipped, invalid.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pytest_legaleval.grading.protocols import protocol_for_benchmark
from pytest_legaleval.metrics.artifacts import METRICS_BY_SLICE, METRICS_SUMMARY, PREDICTIONS
from pytest_legaleval.metrics.counts import counts_of

__all__ = [
    "MAX_ROWS_PER_DIMENSION",
    "MAX_WARNING_LINES",
    "benchmark_lines",
    "printable",
    "printable_json",
    "summary_lines",
]

# C0 controls (ESC starts every CSI/OSC sequence, BEL ends an OSC, NUL, CR rewrites the
# line), DEL, C1 controls (U+009B is a one-character CSI), and the characters that reorder
# or hide text: the Arabic letter mark, LRM/RLM, the line and paragraph separators, the
# bidirectional embeddings, overrides and isolates (Trojan Source).
_REORDERING = r"\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
_UNSAFE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f" + _REORDERING + "]")
_UNSAFE_TEXT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f" + _REORDERING + "]")
"""The same, tab and newline excepted (a multi-line text)."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: object, *, multiline: bool = False, limit: int | None = None) -> str:
    r"""``value`` as text a terminal shows as it is: control characters escaped.

    Every control character (C0, DEL, C1: ESC, OSC's BEL, NUL, CR, CSI …) and every
    character that reorders or hides text (bidirectional overrides and isolates, LRM/RLM,
    the line separators) is written as pytest writes it in a node id: ``\x1b``, ``\x07``,
    ``\u202e``. ``multiline`` keeps tab and newline (a failure's body; ``\r\n`` becomes
    ``\n``); otherwise they are escaped too. ``limit`` cuts the text first, an ellipsis
    marking the cut. Everything else (accents, CJK, emoji, backslashes) is kept.
    """
    text = value if isinstance(value, str) else str(value)
    if limit is not None and len(text) > limit:
        text = text[:limit] + "…"
    if multiline:
        if "\r" in text:
            text = text.replace("\r\n", "\n")
        return _UNSAFE_TEXT.sub(_escape, text)
    return _UNSAFE_LINE.sub(_escape, text)


_JSON_UNSAFE = re.compile(r"[\x7f-\x9f" + _REORDERING + "]")


def printable_json(value: object, *, indent: int | None = 2) -> str:
    r"""``value`` as JSON that stays JSON and is safe for a terminal (the sanitizer's JSON form).

    JSON escapes C0 controls itself; DEL, C1 controls and the reordering characters, which
    it leaves as they are with ``ensure_ascii=False``, are written as ``\u`` escapes (they
    occur only inside strings). Other non-ASCII text is kept.
    """
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    return _JSON_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


MAX_ROWS_PER_DIMENSION = 8
"""Slices shown per dimension; the rest are in ``metrics_by_slice.json``."""
MAX_WARNING_LINES = 5
"""Attachment warnings quoted under the table; all are counted."""

_HEADER = ("slice", "records", "items", "passed", "failed", "errors", "skipped", "invalid",
           "pass rate [Wilson 95% CI]", "mean score [95% CI]", "p95 ms")  # fmt: skip


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _ci(block: Mapping[str, Any], key: str, fmt: str) -> str:
    value = block.get(key)
    if value is None:
        return "-"
    low, high = block.get(f"{key}_ci_low"), block.get(f"{key}_ci_high")
    shown = _pct(value) if fmt == "%" else f"{value:.3f}"
    if low is None or high is None:
        return shown
    bounds = f"{_pct(low)}–{_pct(high)}" if fmt == "%" else f"{low:.3f}–{high:.3f}"
    return f"{shown} [{bounds}]"


def _row(name: str, block: Mapping[str, Any]) -> tuple[str, ...]:
    p95 = block.get("p95_latency_ms")
    counts = counts_of(block)
    return (
        name,
        "-" if counts.records is None else str(counts.records),
        str(counts.items),
        str(counts.passed),
        str(counts.failed),
        str(counts.errors),
        str(counts.skipped),
        str(counts.invalid),
        _ci(block, "pass_rate", "%"),
        _ci(block, "mean_score", "f"),
        "-" if p95 is None else f"{p95:.0f}",
    )


def _warning_lines(summary: Mapping[str, Any]) -> list[str]:
    count = counts_of(summary).attachment_warnings
    if not count:
        return []
    examples = summary.get("attachment_warnings") or []
    lines = [f"attachment warnings: {count} item{'s' if count != 1 else ''}"]
    for example in examples[:MAX_WARNING_LINES]:
        text = "; ".join(str(w) for w in example.get("warnings") or [])
        lines.append(
            f"  {example.get('dataset')}/{example.get('record_id')} ({example.get('model')}): "
            f"{text}"
        )
    if count > len(lines) - 1:
        lines.append(f"  ({count - len(lines) + 1} more in {PREDICTIONS})")
    return lines


def summary_lines(summary: Mapping[str, Any], by_slice: Mapping[str, Any] | None) -> list[str]:
    """Lines of the table: the whole run, then slices of dimensions with several values.

    Attachment warnings follow the table: their count and the first few, quoted.
    """
    rows = [_HEADER, _row("all", summary)]
    hidden = 0
    for dimension, values in ((by_slice or {}).get("slices") or {}).items():
        if len(values) < 2:
            continue
        ranked = sorted(values.items(), key=lambda kv: (-counts_of(kv[1]).items, kv[0]))
        for value, block in ranked[:MAX_ROWS_PER_DIMENSION]:
            rows.append(_row(printable(f"{dimension}={value}"), block))
        hidden += max(0, len(ranked) - MAX_ROWS_PER_DIMENSION)
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADER))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
    if hidden:
        lines.append(f"({hidden} more slices in {METRICS_BY_SLICE})")
    return lines + [printable(line) for line in _warning_lines(summary)]


_BLOCK_KEYS = frozenset(("protocol", "protocol_version", "upstream", "models", "other_protocols"))
"""The keys every ``benchmarks`` block has; the rest are a one-model run's figures."""


def benchmark_lines(benchmarks: Mapping[str, Any]) -> list[str]:
    """The official figures of ``metrics_summary.json``'s ``benchmarks`` block, labelled.

    Each registered protocol (``grading.protocols``) words its own figures; a block of a
    benchmark no protocol knows is named with a pointer to the file.
    """
    lines = []
    for name, block in benchmarks.items():
        if not isinstance(block, Mapping):
            continue
        protocol = protocol_for_benchmark(name)
        label = f"official {name} ({block.get('protocol')})"
        if protocol is None:
            lines.append(f"{label}: figures in {METRICS_SUMMARY}")
            continue
        models = block.get("models") or {}
        if len(models) <= 1 and set(block) - _BLOCK_KEYS:
            lines.append(f"{label}: {protocol.terminal_line(block)}")
            continue
        for model, figures in models.items():
            if isinstance(figures, Mapping):
                lines.append(f"{label} [{model}]: {protocol.terminal_line(figures)}")
    return [printable(line) for line in lines]
