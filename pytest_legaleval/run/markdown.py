"""Markdown for CI pages: the one escaping function, and the run's job summary.

Whatever a run reports in Markdown — the GitHub Actions job summary a pytest run appends
(``pytest/job_summary.py``), ``legaleval compare --format markdown`` posted as a
pull-request comment — puts strings from data in it: record ids, dataset and model names,
reasons, judge replies. :func:`md_text` is the one function they all go through. Its
output is plain text under CommonMark, GitHub-flavoured Markdown and HTML:

- every ASCII punctuation character is backslash-escaped, so no emphasis, code span, link
  or image (``[x](y)``, ``![x](y)``), raw HTML (``<img>``, ``</details>``), entity
  (``&amp;``), table cell break (``|``) or heading can start inside it;
- a zero-width space follows ``@``, ``#`` and ``:``, and splits ``www.`` and ``GH-123``,
  and every word of 7 or more hex digits is cut into pieces of 6: GitHub's ``@mentions``,
  issue references (``#123``, ``GH-123``), commit SHAs and autolinks (``https://…``,
  ``www.…``, e-mail addresses), which are found in the rendered text, find nothing — a
  backslash alone would not do, GitHub strips it before it looks;
- newlines and other whitespace runs become one space (a table row stays one row),
  control characters are shown escaped (``run.console.printable``), and the text is cut.

Structure (headings, tables, ``<details>`` blocks) is written here and never holds data
but through :func:`md_text`.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_legaleval.metrics.artifacts import FAILURES, PREDICTIONS, REGRESSIONS
from pytest_legaleval.metrics.counts import counts_of
from pytest_legaleval.metrics.items import item_category
from pytest_legaleval.run.console import printable
from pytest_legaleval.run.reasons import one_line, reason_line

__all__ = [
    "CELL_LIMIT",
    "SHOWN_ROWS",
    "job_summary",
    "md_table",
    "md_text",
    "worst_items",
]

CELL_LIMIT = 200
"""Characters of data shown in one table cell or line."""
SHOWN_ROWS = 20
"""Rows of the failures and regressions tables; the run directory has all of them."""

ZWSP = "\u200b"
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
_BREAK_AFTER = re.compile(r"(\\[@#:])")
_WWW = re.compile(r"(?i)(www)(\\\.)")
_GH_REF = re.compile(r"(?i)(?<![0-9a-z])(gh)(\\-)(?=[0-9])")
"""``GH-123`` after escaping (``GH\\-123``): GitHub strips the backslash, then links it."""
_HEX_RUN = re.compile(r"(?i)(?<![0-9a-z])[0-9a-f]{7,}(?![0-9a-z])")
"""A word of 7 or more hex digits: GitHub links it as a commit SHA."""
_SHA_PIECE = 6


def md_text(value: object, limit: int = CELL_LIMIT) -> str:
    """``value`` as inline Markdown that renders as exactly its text (see the module doc)."""
    text = printable(one_line(str(value), limit))
    text = _PUNCTUATION.sub(r"\\\1", text)
    text = _BREAK_AFTER.sub(lambda m: m.group(1) + ZWSP, text)
    text = _WWW.sub(lambda m: m.group(1) + ZWSP + m.group(2), text)
    text = _GH_REF.sub(lambda m: m.group(1) + ZWSP + m.group(2), text)
    return _HEX_RUN.sub(_split_hex, text)


def _split_hex(match: re.Match[str]) -> str:
    run = match.group(0)
    return ZWSP.join(run[i : i + _SHA_PIECE] for i in range(0, len(run), _SHA_PIECE))


def md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A GFM table; ``header`` and the cells are Markdown already (data through md_text)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


# -- the job summary ----------------------------------------------------------------------------

_RANK = {"invalid": 0, "error": 1, "failed": 2}
"""Which items the failures table shows first: broken data, then no verdict, then wrong."""


def worst_items(
    rows: Iterable[Mapping[str, Any]], limit: int = SHOWN_ROWS
) -> tuple[list[dict[str, Any]], int]:
    """The ``limit`` worst items of ``rows`` and how many did not pass, in one pass.

    ``rows`` are ``predictions.jsonl`` lines and the invalid items of ``failures.jsonl``.
    Invalid records first, then items without a verdict, then failed items by score
    (lowest first); file order on ties. Only ``limit`` rows are held at any time.
    """
    heap: list[tuple[tuple[int, float, int], dict[str, Any]]] = []
    total = 0
    for order, row in enumerate(rows):
        category = "invalid" if row.get("failure_type") == "invalid_record" else None
        category = category or item_category(row)
        if category not in _RANK:
            continue
        total += 1
        score = row.get("score")
        value = float(score) if isinstance(score, int | float) and category == "failed" else 0.0
        key = (-_RANK[category], -value, -order)  # a max-heap of the best of the worst
        entry = (key, {**row, "category": category})
        if len(heap) < limit:
            heapq.heappush(heap, entry)
        elif key > heap[0][0]:
            heapq.heapreplace(heap, entry)
    ranked = [row for _, row in sorted(heap, key=lambda e: e[0], reverse=True)]
    return ranked, total


def _pct(value: Any) -> str:
    return f"{value:.1%}" if isinstance(value, int | float) else "–"


def _num(value: Any, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "–"


def _headline(summary: Mapping[str, Any], status: str | None) -> list[str]:
    counts = counts_of(summary)
    rate = summary.get("pass_rate")
    low, high = summary.get("pass_rate_ci_low"), summary.get("pass_rate_ci_high")
    interval = f" (95% CI {_pct(low)}–{_pct(high)})" if low is not None else ""
    graded = counts.passed + counts.failed
    lines = [
        f"## legaleval: {_pct(rate)} passed{interval}",
        "",
        f"{counts.passed} of {graded} graded items passed · status {md_text(status or 'unknown')}",
        "",
    ]
    mean = summary.get("mean_score")
    score = _num(mean)
    if mean is not None and summary.get("mean_score_ci_low") is not None:
        score += f" [{_num(summary['mean_score_ci_low'])}–{_num(summary['mean_score_ci_high'])}]"
    cost = summary.get("cost_usd")
    header = ["records", "items", "passed", "failed", "errors", "skipped", "invalid",
              "mean score [95% CI]", "cost"]  # fmt: skip
    row = [
        "–" if counts.records is None else str(counts.records), str(counts.items),
        str(counts.passed), str(counts.failed), str(counts.errors), str(counts.skipped),
        str(counts.invalid), score, f"${cost:.4f}" if isinstance(cost, int | float) else "–",
    ]  # fmt: skip
    return [*lines, *md_table(header, [row]), ""]


def _gate_lines(gates: Sequence[Mapping[str, Any]]) -> list[str]:
    if not gates:
        return []
    rows = []
    for gate in gates:
        interval = gate.get("interval")
        rows.append(
            [
                "passed" if gate.get("passed") else "**FAILED**",
                md_text(str(gate.get("gate")) + (" (default)" if gate.get("default") else "")),
                md_text(gate.get("note") or "no value")
                if gate.get("value") is None
                else _num(gate["value"], 4),
                f"{_num(interval[0], 4)}–{_num(interval[1], 4)}" if interval else "–",
                str(gate.get("n", "–")),
            ]
        )
    return ["### Gates", "", *md_table(["", "gate", "value", "95% CI", "n"], rows), ""]


def _baseline_lines(baseline: Mapping[str, Any] | None) -> list[str]:
    if not baseline:
        return []
    lines = ["### Regressions against the baseline", ""]
    if baseline.get("error"):
        return [*lines, f"**FAILED**: {md_text(baseline['error'], 500)}", ""]
    delta = baseline.get("pass_rate_delta")
    lines.append(
        f"baseline {md_text(baseline.get('run_id'))}: {baseline.get('paired', 0)} paired items, "
        f"{baseline.get('regressions', 0)} pass→fail, {baseline.get('improvements', 0)} "
        f"fail→pass"
        + (f", pass rate {delta:+.1%}" if isinstance(delta, int | float) else "")
        + (" · **regression gate FAILED**" if baseline.get("regressed") else " · passed")
    )
    lines.append("")
    changes = list(baseline.get("changes") or ())
    if changes:
        rows = [
            [md_text(c.get("dataset")), md_text(c.get("record_id")), md_text(c.get("model")),
             md_text(c.get("change")), md_text((c.get("baseline") or {}).get("reason", "–")),
             md_text((c.get("current") or {}).get("reason", "–"))]
            for c in changes[:SHOWN_ROWS]
        ]  # fmt: skip
        header = ["dataset", "record", "model", "change", "before", "now"]
        lines += md_table(header, rows)
        if len(changes) > SHOWN_ROWS:
            lines.append(f"\n… {len(changes) - SHOWN_ROWS} more in {REGRESSIONS}")
        lines.append("")
    return lines


def _failure_lines(worst: Sequence[Mapping[str, Any]], total: int) -> list[str]:
    if not worst:
        return []
    rows = []
    for row in worst:
        if row["category"] == "invalid":
            line = reason_line(
                {"reason": "invalid_record", "details": {"record_errors": row.get("errors")}}
            )
        else:
            line = reason_line(row)
        score = row.get("score") if row["category"] == "failed" else None
        rows.append(
            [
                md_text(row.get("dataset", row.get("dataset_id"))),
                md_text(row.get("record_id")),
                md_text(row.get("model")),
                row["category"],
                _num(score, 2),
                md_text(line, 300),
            ]
        )
    header = ["dataset", "record", "model", "outcome", "score", "why"]
    lines = [f"### Worst failures ({len(worst)} of {total})", "", *md_table(header, rows)]
    if total > len(worst):
        lines.append(f"\n… {total - len(worst)} more in {PREDICTIONS} and {FAILURES}")
    return [*lines, ""]


def job_summary(
    summary: Mapping[str, Any],
    *,
    run_id: str,
    status: str | None,
    benchmarks: Sequence[str] = (),
    gates: Sequence[Mapping[str, Any]] = (),
    baseline: Mapping[str, Any] | None = None,
    worst: Sequence[Mapping[str, Any]] = (),
    not_passed: int = 0,
    run_path: str | None = None,
) -> str:
    """The run as a GitHub job summary: headline, benchmarks, gates, regressions, failures.

    ``gates`` are ``GateResult.to_dict()`` forms; ``baseline`` holds the comparison's
    figures (``run_id``, ``paired``, ``regressions``, ``improvements``, ``pass_rate_delta``,
    ``regressed``, ``changes``: ``regressions.jsonl`` lines, or ``error``); ``worst`` and
    ``not_passed`` come from :func:`worst_items`. Every string from data is escaped.
    """
    lines = _headline(summary, status)
    lines.append(f"run {md_text(run_id)}" + (f" in {md_text(run_path)}" if run_path else ""))
    lines.append("")
    if benchmarks:
        lines += ["### Official benchmark figures", ""]
        lines += [f"- {md_text(line, 600)}" for line in benchmarks]
        lines.append("")
    lines += _gate_lines(gates)
    lines += _baseline_lines(baseline)
    lines += _failure_lines(worst, not_passed)
    return "\n".join(lines).rstrip() + "\n"
