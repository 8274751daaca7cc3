"""Two runs in one page: the same items side by side, the changed verdicts first.

Items are paired by dataset, record id and model when the runs share a model; two runs of
one model each (a model against its successor) are paired by record. Each run's texts get
half of the page's budget, so the page stays one self-contained file under 10 MB. The
pairs are ordered: regressed (A passed, B did not), fixed (A did not pass, B did), other
changes of verdict, the same verdict, then items only one run has.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pytest_legaleval.metrics._baseline import pair_by_model
from pytest_legaleval.metrics._counts import counts_of
from pytest_legaleval.metrics._runfiles import RunData
from pytest_legaleval.report.data import ORDER, PAGE_BYTES, ReportData, collect
from pytest_legaleval.report.items import CAT, DS, M, R
from pytest_legaleval.report.page import document, e, payload, questions_markup

__all__ = ["CHANGES", "pair_items", "pairing_text", "render_comparison"]

CHANGES = ("regressed", "fixed", "changed", "same", "only in A", "only in B")
"""How a pair's verdict moved from run A to run B, in the order the page lists them."""
_BAD = frozenset({"failed", "error", "invalid"})
KEYS_HELP_PAIRS = (
    "Keys: j or ↓ opens the next item whose verdict changed, k or ↑ the previous one, Esc "
    "closes it, / goes to the search box."
)


def _change(a: str, b: str) -> int:
    if a == b:
        return CHANGES.index("same")
    if a == "passed" and b in _BAD:
        return CHANGES.index("regressed")
    if a in _BAD and b == "passed":
        return CHANGES.index("fixed")
    return CHANGES.index("changed")


def _key(data: ReportData, row: list[Any], by_model: bool) -> tuple[str, ...]:
    record = (data.datasets[row[DS]], data.records[row[R]])
    return (*record, data.models[row[M]]) if by_model else record


def pairing_text(a: ReportData, b: ReportData, pairs: list[list[int]]) -> str:
    """How many items were paired and by which rule (the same words as ``compare``)."""
    by_model = pair_by_model(
        {a.models[row[M]] for row in a.rows}, {b.models[row[M]] for row in b.rows}
    )
    rule = "(record, model, epoch)" if by_model else "(record, epoch): one model each"
    paired = sum(1 for p in pairs if p[0] >= 0 and p[1] >= 0)
    return f"paired {paired:,} items by {rule}"


def pair_items(a: ReportData, b: ReportData) -> list[list[int]]:
    """``[row in A or -1, row in B or -1, change]`` per item, the changed verdicts first.

    Paired by the rule of ``legaleval compare`` and ``--baseline``
    (:func:`~pytest_legaleval.metrics._baseline.pair_by_model`).

    Raises:
        ConfigError: the runs share no model and one of them has several.

    """
    by_model = pair_by_model(
        {a.models[row[M]] for row in a.rows}, {b.models[row[M]] for row in b.rows}
    )
    in_b: dict[tuple[str, ...], int] = {}
    for index, row in enumerate(b.rows):
        in_b.setdefault(_key(b, row, by_model), index)
    pairs, matched = [], set()
    for index, row in enumerate(a.rows):
        other = in_b.get(_key(a, row, by_model))
        if other is None or other in matched:
            pairs.append([index, -1, CHANGES.index("only in A")])
            continue
        matched.add(other)
        pairs.append([index, other, _change(ORDER[row[CAT]], ORDER[b.rows[other][CAT]])])
    only_b = CHANGES.index("only in B")
    pairs.extend([-1, index, only_b] for index in range(len(b.rows)) if index not in matched)
    pairs.sort(key=lambda pair: pair[2])  # stable: each group keeps run A's order
    return pairs


def _counts_table(runs: tuple[RunData, RunData], data: tuple[ReportData, ReportData]) -> str:
    fields = ("items", "passed", "failed", "errors", "invalid", "skipped")
    head = "".join(f"<th>{f}</th>" for f in fields)
    rows = []
    for name, run, block in zip("AB", runs, data, strict=True):
        counts = counts_of(block.summary)
        rate = block.summary.get("pass_rate")
        shown = f"{rate:.1%}" if isinstance(rate, int | float) else "–"
        cells = "".join(f"<td class=num>{getattr(counts, f):,}</td>" for f in fields)
        rows.append(
            f'<tr data-run="{name}"><th>{name}</th><td><code>{e(run.run_id)}</code></td>'
            f"{cells}<td class=num>{shown}</td></tr>"
        )
    return (
        '<table id="run-counts"><thead><tr><th>run</th><th>run id</th>'
        f"{head}<th>pass rate</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def render_comparison(run_a: RunData, run_b: RunData) -> str:
    """The complete HTML document comparing run B (the candidate) with run A."""
    data = (
        collect(run_a, PAGE_BYTES // 2, prefix="a-"),
        collect(run_b, PAGE_BYTES // 2, prefix="b-"),
    )
    pairs = pair_items(*data)
    tally = Counter(CHANGES[p[2]] for p in pairs)
    changes = " · ".join(
        f'<span data-change="{e(c)}">{e(c)}: {tally.get(c, 0):,}</span>' for c in CHANGES
    )
    options = "".join(
        f'<option value="{e(c)}">{e(c)}</option>' for c in ("changed verdicts", *CHANGES)
    )
    body = (
        f"<header><h1>legaleval: run B against run A</h1>"
        f"<dl class=meta><dt>A</dt><dd><code>{e(run_a.path)}</code></dd>"
        f"<dt>B</dt><dd><code>{e(run_b.path)}</code></dd></dl></header>"
        f"<section id=summary><h2>summary</h2>{_counts_table((run_a, run_b), data)}"
        f'<p id="pairing">{e(pairing_text(*data, pairs))}</p>'
        f'<p id="change-counts">{changes}</p></section>'
        f'<section id="compare"><h2>items of both runs ({len(pairs):,})</h2>'
        '<p class="hint">The items whose verdict changed come first (regressed, then fixed, '
        "then other changes), then the same verdicts, then items only one run has. Click a "
        "row for the question and both runs' item views side by side: answer, grader's and "
        "judge's reasons, transcript. Texts are previews; the full texts are in each run "
        f'directory.</p><p class="hint" id="keys-help">{e(KEYS_HELP_PAIRS)}</p>'
        '<div class="filters"><label>filter <input id="pair-filter" type="search" '
        'placeholder="record id, dataset or model"></label> <label>search <input '
        'id="text-search" type="search" placeholder="words of the question or an answer">'
        f'</label> <label>change <select id="change-filter"><option value="">all</option>'
        f'{options}</select></label> <span id="pair-count" aria-live="polite"></span></div>'
        '<table id="pairs"><thead><tr><th>record</th><th>question</th><th>model</th>'
        "<th>A</th><th>B</th><th>change</th></tr></thead><tbody></tbody></table>"
        '<button type="button" class="more" id="pairs-more" hidden>show more</button>'
        "</section>"
    )
    return document(
        f"legaleval: {run_b.run_id} against {run_a.run_id}",
        body,
        {
            "report-data-a": payload(data[0], "a-"),
            "report-data-b": payload(data[1], "b-"),
            "compare-data": {
                "pairs": pairs,
                "changes": list(CHANGES),
                "runs": [run_a.run_id, run_b.run_id],
            },
        },
        "compare.js",
        [questions_markup(data[0], "questions-a"), questions_markup(data[1], "questions-b")],
    )
