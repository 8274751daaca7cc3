"""One self-contained HTML file per run: inline CSS, JS, SVG and data; every value escaped.

The summary, the per-model columns, the slices and the charts are rendered here as escaped
HTML; so are the sections a run may add (:mod:`~pytest_legaleval.report.official`,
:mod:`~pytest_legaleval.report.uncertainty`, :mod:`~pytest_legaleval.report.calibration`),
written first so that the items' previews get the room they leave. The items (one row per
record × model, with their text previews) travel as JSON, the records' texts (question,
choices, references) as escaped hidden markup
(:mod:`~pytest_legaleval.report.page`); the script builds the rows and the item view with
``textContent`` only, never as markup.

Every count on the page comes from one computation (:func:`~pytest_legaleval.report.data.
collect`), with the names of the metrics files: records, items, passed, failed, errors,
skipped, invalid.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_legaleval.engine.batch_store import format_age
from pytest_legaleval.metrics.artifacts import (
    FAILURES,
    INPUT_DATASET,
    METRICS_BY_SLICE,
    METRICS_SUMMARY,
    PREDICTIONS,
    TRANSCRIPTS,
)
from pytest_legaleval.metrics.counts import Counts, counts_of
from pytest_legaleval.metrics.runfiles import RunData, slice_entries
from pytest_legaleval.report.audit import audit_view
from pytest_legaleval.report.calibration import calibration_section
from pytest_legaleval.report.data import ORDER, PAGE_BYTES, ReportData, collect
from pytest_legaleval.report.fmt import card as _card
from pytest_legaleval.report.fmt import num as _num
from pytest_legaleval.report.fmt import pct as _pct
from pytest_legaleval.report.official import official_cards, official_section
from pytest_legaleval.report.page import (
    KEYS_HELP,
    LABELS,
    document,
    payload,
    questions_markup,
    run_files,
)
from pytest_legaleval.report.page import e as _e
from pytest_legaleval.report.svg import bar_chart, bins_for
from pytest_legaleval.report.uncertainty import (
    epochs_of,
    flaky_rows,
    read_flaky,
    same_number,
    uncertainty_card,
    uncertainty_section,
)

__all__ = ["LABELS", "MAX_SLICE_ROWS", "render_report"]

_NAV = {
    "summary": "summary", "official": "official benchmark figures",
    "uncertainty": "epochs and uncertainty", "items": "items",
    "models": "models side by side", "calibration": "judge calibration", "slices": "slices",
    "distributions": "distributions",
}  # fmt: skip
MAX_SLICE_ROWS = 100
"""Values shown per slice dimension (a tag or metadata key can have thousands)."""

_HELP = {
    "records": "distinct records, however many models answered them",
    "items": "one record asked of one model",
    "failed": "graded wrong: a wrong answer, a score below the threshold, or no answer found",
    "errors": "no verdict because of the engine or the judge (judge_error, generation_error, "
    "timeout, cancelled, missing_response, evaluation_error)",
    "invalid": "the record cannot be asked (failed validation, attachment missing)",
    "skipped": "not evaluated on purpose (a skip mark, no judge)",
    "passed": "graded at or above the pass rule",
}


def _interval(block: Mapping[str, Any], key: str, pct: bool) -> str:
    ci = block.get(key)
    if not isinstance(ci, Mapping):
        return ""
    fmt = _pct if pct else _num
    return f"{fmt(ci.get('low'))}–{fmt(ci.get('high'))}"


def _summary_cards(data: ReportData, run: RunData) -> str:
    block = data.summary
    counts = counts_of(block)
    pass_ci, score_ci = (
        _interval(block, "pass_rate_ci", True),
        _interval(block, "mean_score_ci", False),
    )
    records_note = (
        f"{_num(block.get('evaluated_records'))} evaluated · "
        f"{_num(block.get('failed_records'))} failed · {_num(block.get('skipped_records'))} "
        "skipped"
    )
    # One interval per number: with one epoch the run's own interval is of the pass rate
    # itself (and the honest one: clustered, t), so the Wilson interval is not shown too.
    own = uncertainty_card(run.summary)
    pass_card = _card("pass rate (items' verdicts)" if own else "pass rate",
                      _pct(block.get("pass_rate")), "pass_rate",
                      f"Wilson 95% CI {pass_ci}, items independent" if pass_ci else "",
                      "passed / (passed + failed) items; the Wilson score interval, computed "
                      "here, counts every item as independent")  # fmt: skip
    cards = [
        *(
            [uncertainty_card(run.summary, value=block.get("pass_rate"), metric="pass_rate")]
            if own and same_number(run.summary)
            else [pass_card, *([own] if own else [])]
        ),
        *official_cards(run.summary),
        _card("mean score", _num(block.get("mean_score")), "mean_score",
              f"95% CI {score_ci}" if score_ci else ""),
        _card("records", _num(counts.records), "records", records_note,
              _HELP["records"] + "; a record failed when any of its items is an error or "
              "invalid (Dataset Contract §3.3)"),
        _card("items", _num(counts.items), "items", "", _HELP["items"]),
    ]  # fmt: skip
    for category in ORDER:
        label = LABELS[category]
        cards.append(_card(label, _num(_count(counts, category)), label, "", _HELP[label]))
    if counts.attachment_warnings:
        cards.append(
            _card("attachment warnings", _num(counts.attachment_warnings), "attachment_warnings",
                  "items whose attachment gave no or cut text")
        )  # fmt: skip
    latency = block.get("latency_ms")
    if isinstance(latency, Mapping):
        cards.append(
            _card("p50 / p95 latency (ms)",
                  f"{_num(latency.get('p50'), 0)} / {_num(latency.get('p95'), 0)}", "latency")
        )  # fmt: skip
    if block.get("total_tokens") is not None:
        cards.append(_card("tokens", _num(block.get("total_tokens")), "total_tokens"))
    cost = (run.summary or {}).get("cost_usd")
    note = _batch_note(run.summary or {}, run.manifest.get("batches"))
    if cost is not None or block.get("total_tokens") is not None or note:
        shown = _num(cost, 4) if isinstance(cost, int | float) else "unknown"
        cards.append(_card("cost (USD)", shown, "cost_usd", note))
    return '<div class="cards">' + "".join(cards) + "</div>" + _mismatch(data, run)


def _batch_note(summary: Mapping[str, Any], batches: Any) -> str:
    """What ``--batch`` saved, and the batches the run left pending (the manifest's)."""
    notes = []
    cost = summary.get("cost")
    if isinstance(cost, Mapping):
        batch, saved = cost.get("batch_usd"), cost.get("saved_usd")
        if isinstance(batch, int | float) and batch and isinstance(saved, int | float):
            notes.append(f"{_num(batch, 4)} at the batch price, {_num(saved, 4)} saved")
    pending = batches.get("batches_pending") if isinstance(batches, Mapping) else None
    if isinstance(pending, int) and pending > 0:
        oldest = batches.get("batch_oldest_pending_s")
        age = f", the oldest {format_age(oldest)} old" if isinstance(oldest, int | float) else ""
        notes.append(
            f"{pending} batch{'es' if pending != 1 else ''} still pending{age}: the same "
            "command with the same --cache collects them"
        )
    return "; ".join(_e(n) for n in notes)


def _mismatch(data: ReportData, run: RunData) -> str:
    """A visible note when metrics_summary.json counts otherwise than the items here."""
    if not run.summary:
        return ""
    written, here = counts_of(run.summary), counts_of(data.summary)
    fields = ("items", "passed", "failed", "errors", "skipped", "invalid")
    differ = [f for f in fields if getattr(written, f) != getattr(here, f)]
    if not differ:
        return ""
    said = ", ".join(f"{f} {getattr(written, f)}" for f in differ)
    return (
        f'<p class="warning" id="count-mismatch">{METRICS_SUMMARY} says {_e(said)}; this page '
        f"counts the items of {PREDICTIONS} and {FAILURES}.</p>"
    )


def _blocks_by(data: ReportData, dimension: str) -> dict[str, Mapping[str, Any]]:
    found = data.slices.get("slices", {}).get(dimension, {})
    return found if isinstance(found, dict) else {}


def _model_columns(data: ReportData) -> str:
    """The per-model summary rows of the matrix head: one column per model."""
    blocks = _blocks_by(data, "model")
    rows: list[tuple[str, str, list[str]]] = []
    pass_cells, score_cells, count_cells, warn_cells, p95_cells = [], [], [], [], []
    for model in data.models:
        block = blocks.get(model, {})
        counts = counts_of(block) if block else None
        ci = _interval(block, "pass_rate_ci", True)
        pass_cells.append(
            f"{_pct(block.get('pass_rate'))}" + (f' <span class="ci">[{ci}]</span>' if ci else "")
        )
        score_cells.append(_num(block.get("mean_score")))
        count_cells.append(
            " · ".join(
                f'<span class="c-{c}" title="{LABELS[c]}">{_num(_count(counts, c))}</span>'
                for c in ORDER
            )
            if counts
            else "–"
        )
        warn_cells.append(_num(counts.attachment_warnings) if counts else "–")
        p95_cells.append(_num(block.get("p95_latency_ms"), 0))
    rows.append(("pass rate [Wilson 95% CI]", "pass_rate", pass_cells))
    rows.append(("mean score", "mean_score", score_cells))
    order = " · ".join(LABELS[c] for c in ORDER)
    rows.append((order, "counts", count_cells))
    if any(c not in ("–", "0") for c in warn_cells):
        rows.append(("attachment warnings", "attachment_warnings", warn_cells))
    if data.has_latency:
        rows.append(("p95 latency (ms)", "p95_latency_ms", p95_cells))
    return "".join(
        f'<tr class="model-summary" data-metric="{key}"><th colspan="3">{_e(label)}</th>'
        + "".join(f'<td data-model="{i}">{cell}</td>' for i, cell in enumerate(cells))
        + "</tr>"
        for label, key, cells in rows
    )


def _count(counts: Counts, category: str) -> int:
    return int(getattr(counts, {"error": "errors"}.get(category, category)))


def _matrix(data: ReportData) -> str:
    if len(data.models) < 2:
        return ""
    heads = "".join(f'<th data-model="{i}">{_e(m)}</th>' for i, m in enumerate(data.models))
    return (
        '<section id="models"><h2>models side by side</h2>'
        '<p class="hint">One row per record, one column per model: ✓ passed or ✗ failed with '
        "the score, or why there is no verdict; click a cell for the item. Rows where the "
        "models disagree (one passes, another fails) are highlighted and come first.</p>"
        '<div class="filters"><label>record <input id="matrix-filter" type="search" '
        'placeholder="record id or dataset"></label> <label><input id="matrix-disagree" '
        'type="checkbox"> only disagreements</label> <span id="matrix-count" '
        'aria-live="polite"></span></div>'
        '<div class="scroll"><table id="matrix"><thead><tr><th>record</th><th>dataset</th>'
        f'<th title="models that disagree">≠</th>{heads}</tr>{_model_columns(data)}</thead>'
        '<tbody></tbody></table></div><button type="button" class="more" id="matrix-more" '
        "hidden>show more</button></section>"
    )


def _notes(data: ReportData) -> str:
    said = [f"{what}: {note}" for what, note in sorted(data.notes.items())]
    return "".join(f'<p class="hint note" data-note="{_e(n)}">{_e(n)}</p>' for n in said)


def _items(data: ReportData, run: RunData, flaky: list[int] | None = None) -> str:
    flaky_box = (
        f'<label id="flaky-label"><input id="flaky-filter" type="checkbox"> only flaky items '
        f"({len(flaky):,})</label> "
        if flaky is not None
        else ""
    )
    options = "".join(f'<option value="{c}">{LABELS[c]}</option>' for c in ORDER)
    models = "".join(f'<option value="{i}">{_e(m)}</option>' for i, m in enumerate(data.models))
    where = run.path / PREDICTIONS
    return (
        f'<section id="items"><h2>items ({len(data.rows):,})</h2>'
        '<p class="hint">Failures and errors first, then the rest; click a column to sort, '
        "a row to open its item view (question, choices, references, the grader's and the "
        "judge's reasons per criterion, response, transcript). "
        f"Texts are previews (up to {data.preview:,} characters for failures and errors, "
        f"{data.preview // 4:,} for the rest); the full texts are in the run directory "
        f'(<code id="predictions-path">{_e(where)}</code> and its {INPUT_DATASET} and '
        f"{TRANSCRIPTS}), at the line each item names.</p>"
        f'<p class="hint" id="keys-help">{_e(KEYS_HELP)}</p>{_notes(data)}'
        '<div class="filters"><label>filter <input id="record-filter" type="search" '
        'placeholder="record id, dataset, model or reason"></label> '
        '<label>search <input id="text-search" type="search" '
        'placeholder="words of the question or the answer"></label> '
        f'<label>outcome <select id="outcome-filter"><option value="">all</option>{options}'
        "</select></label> "
        f'<label>model <select id="model-filter"><option value="">all</option>{models}'
        f"</select></label> {flaky_box}"
        '<span id="shown-count" aria-live="polite"></span> '
        '<span id="outcome-counts"></span></div>'
        '<table id="records"><thead><tr><th data-key="record">record</th>'
        '<th data-key="question">question</th>'
        '<th data-key="dataset">dataset</th><th data-key="model">model</th>'
        '<th data-key="outcome">outcome</th><th data-key="score">score</th>'
        '<th data-key="reason">reason</th>'
        + ('<th data-key="latency">latency ms</th>' if data.has_latency else "")
        + (
            '<th data-key="warnings" title="attachment warnings">attachments</th>'
            if data.has_warnings
            else ""
        )
        + '<th data-key="summary">explanation</th></tr></thead><tbody></tbody></table>'
        '<button type="button" class="more" id="records-more" hidden>show more</button>'
        "</section>"
    )


def _slice_table(data: ReportData) -> str:
    head = (
        "<tr><th>slice</th><th>value</th><th>records</th><th>items</th>"
        + "".join(f"<th>{LABELS[c]}</th>" for c in ORDER)
        + "<th>pass rate [Wilson 95% CI]</th><th>mean score</th>"
        + ("<th>p95 ms</th>" if data.has_latency else "")
        + "</tr>"
    )
    body, shown, hidden = [], dict[str, int](), 0
    for dimension, value, block in slice_entries(data.slices):
        shown[dimension] = shown.get(dimension, 0) + 1
        if shown[dimension] > MAX_SLICE_ROWS:
            hidden += 1
            continue
        counts = counts_of(block)
        ci = _interval(block, "pass_rate_ci", True)
        body.append(
            f'<tr data-slice="{_e(dimension)}"><td>{_e(dimension)}</td><td>{_e(value)}</td>'
            f"<td class=num>{_num(counts.records)}</td><td class=num>{_num(counts.items)}</td>"
            + "".join(f"<td class=num>{_num(_count(counts, c))}</td>" for c in ORDER)
            + f"<td>{_pct(block.get('pass_rate'))}{f' [{ci}]' if ci else ''}</td>"
            f"<td class=num>{_num(block.get('mean_score'))}</td>"
            + (
                f"<td class=num>{_num(block.get('p95_latency_ms'), 0)}</td>"
                if data.has_latency
                else ""
            )
            + "</tr>"
        )
    if not body:
        return '<p class="empty">no slices</p>'
    more = (
        f'<p class="hint">{hidden:,} more slice values are in {METRICS_BY_SLICE}.</p>'
        if hidden
        else ""
    )
    return (
        f'<table class="slices"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>' + more
    )


def _charts(data: ReportData) -> str:
    """Histograms of what the run has; a chart without values is left out with its caption."""
    figures = []
    if data.has_scores:
        edges, counts = bins_for(list(data.scores), 10, 0.0, 1.0)
        figures.append(
            f'<figure id="score-histogram">{bar_chart(edges, counts, "score distribution")}'
            "<figcaption>scores of graded items</figcaption></figure>"
        )
    if data.has_latency:
        edges, counts = bins_for(list(data.latencies), 12, 0.0)
        svg = bar_chart(edges, counts, "latency distribution (ms)")
        figures.append(
            f'<figure id="latency-histogram">{svg}'
            "<figcaption>latency per item (ms)</figcaption></figure>"
        )
    if not figures:
        return ""
    return (
        '<section id="distributions"><h2>distributions</h2>'
        f'<div class="charts">{"".join(figures)}</div></section>'
    )


def render_report(run: RunData, human_labels: str | Path | None = None) -> str:
    """The complete HTML document of one run.

    ``human_labels`` (a label file or directory) gives the calibration view its confusion
    tables and disagreeing items; without it, the run's own label file is read again when it
    is still where the run found it.

    Raises:
        ConfigError: ``human_labels`` cannot be read.

    """
    audit = audit_view(run, human_labels)
    several = epochs_of(run.summary) > 1
    flaky = read_flaky(run.path) if several else None
    # The sections besides the items are written first: the items' previews get the room
    # they leave (each flaky row index takes at most 8 bytes of the page's data).
    official = official_section(run.summary)
    calibration = calibration_section(audit)
    known = len(flaky.keys) if flaky is not None and flaky.keys is not None else 0
    estimate = uncertainty_section(run.summary, known if several else None)
    reserved = sum(len(part.encode()) for part in (official, calibration, estimate)) + 8 * known
    data = collect(run, PAGE_BYTES - reserved)
    rows: list[int] | None = None
    note = ""
    if flaky is not None:
        rows, note = flaky_rows(data, flaky)
    repeats = uncertainty_section(run.summary, len(rows) if rows is not None else None, note)
    manifest = run.manifest
    datasets = ", ".join(
        f"{d.get('dataset_id')} {d.get('dataset_version') or ''}".strip()
        for d in manifest.get("datasets") or []
        if isinstance(d, Mapping)
    )
    meta = (
        f"<dl class=meta><dt>status</dt><dd id=run-status>{_e(manifest.get('status'))}</dd>"
        f"<dt>datasets</dt><dd>{_e(datasets)}</dd>"
        f"<dt>models</dt><dd>{_e(', '.join(data.models))}</dd>"
        f"<dt>created</dt><dd>{_e(manifest.get('created_at'))}</dd>"
        f"<dt>completed</dt><dd>{_e(manifest.get('completed_at'))}</dd>"
        f"<dt>run directory</dt><dd><code>{_e(run.path)}</code></dd>{run_files(run.path)}</dl>"
    )
    charts = _charts(data)
    links = [
        ("summary", True), ("official", bool(official)), ("uncertainty", bool(repeats)),
        ("items", True), ("models", len(data.models) > 1), ("calibration", bool(calibration)),
        ("slices", True), ("distributions", bool(charts)),
    ]  # fmt: skip
    names = {**_NAV, "uncertainty": "epochs and uncertainty" if several else "uncertainty"}
    nav = " · ".join(f'<a href="#{k}">{names[k]}</a>' for k, shown in links if shown)
    body = (
        f"<header><h1>legaleval run <code id=run-id>{_e(run.run_id)}</code></h1>{meta}"
        f"<nav>{nav}</nav></header>"
        f"<section id=summary><h2>summary</h2>{_summary_cards(data, run)}</section>"
        f"{official}{repeats}{_items(data, run, rows)}{_matrix(data)}{calibration}"
        f"<section id=slices><h2>slices</h2>{_slice_table(data)}</section>{charts}"
    )
    return document(
        f"legaleval report {run.run_id}",
        body,
        {"report-data": {**payload(data), "flaky": rows}},
        "report.js",
        [questions_markup(data)],
    )
