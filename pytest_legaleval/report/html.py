"""One self-contained HTML file per run: inline CSS, JS and SVG; every value escaped.

The page fetches nothing (a Content-Security-Policy forbids it), so it opens offline, from
a CI artifact or an e-mail attachment. Per-record rows are rendered as escaped HTML; the
script only reads ``data-`` attributes to filter and count them, so no record text ever
reaches a script context.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from importlib.resources import files
from typing import Any

from pytest_legaleval.metrics.gates import block_from_rows
from pytest_legaleval.metrics.runfiles import RunData, invalid_items, slice_entries
from pytest_legaleval.report.svg import bar_chart, bins_for

__all__ = ["MAX_TEXT", "render_report"]

MAX_TEXT = 1500
"""Characters of a response or explanation shown per record (the rest is cut, marked)."""

_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)
_SLICE_DIMENSIONS = ("dataset", "model", "task_type")


def _asset(name: str) -> str:
    return (files("pytest_legaleval.report") / name).read_text(encoding="utf-8")


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _cut(value: Any) -> str:
    text = "" if value is None else str(value)
    if len(text) > MAX_TEXT:
        return text[:MAX_TEXT] + f" … [{len(text) - MAX_TEXT} more characters]"
    return text


def _pct(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "–"
    return f"{float(value):.1%}"


def _num(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool) or value is None:
        return "–"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return _e(value)


def _interval(block: Mapping[str, Any], key: str, pct: bool) -> str:
    ci = block.get(key)
    if isinstance(ci, Mapping):
        low, high = ci.get("low"), ci.get("high")
    elif isinstance(ci, list | tuple) and len(ci) == 2:
        low, high = ci
    else:
        return ""
    fmt = _pct if pct else _num
    return f'<span class="ci">95% CI {fmt(low)}–{fmt(high)}</span>'


def _card(label: str, value: str, extra: str = "", key: str = "") -> str:
    return (
        f'<div class="card" data-metric="{_e(key or label)}"><div class="label">{_e(label)}</div>'
        f'<div class="value">{value}</div>{extra}</div>'
    )


def _summary_cards(block: Mapping[str, Any]) -> str:
    latency_block = block.get("latency_ms")
    latency: Mapping[str, Any] = latency_block if isinstance(latency_block, Mapping) else {}
    cost = block.get("cost_usd")
    cards = [
        _card(
            "pass rate",
            _pct(block.get("pass_rate")),
            _interval(block, "pass_rate_ci", True),
            "pass_rate",
        ),
        _card(
            "mean score",
            _num(block.get("mean_score")),
            _interval(block, "mean_score_ci", False),
            "mean_score",
        ),
        _card("evaluated", _num(block.get("evaluated_records")), key="evaluated_records"),
        _card("passed", _num(block.get("pass_count")), key="pass_count"),
        _card("failed", _num(block.get("fail_count")), key="fail_count"),
        _card("errors", _num(block.get("failed_records")), key="failed_records"),
        _card("skipped", _num(block.get("skipped_records")), key="skipped_records"),
        _card(
            "p50 / p95 latency (ms)",
            f"{_num(latency.get('p50'), 0)} / {_num(latency.get('p95'), 0)}",
            key="latency",
        ),
        _card("tokens", _num(block.get("total_tokens")), key="total_tokens"),
        _card("cost (USD)", _num(cost, 4) if cost is not None else "unknown", key="cost_usd"),
    ]
    return '<div class="cards">' + "".join(cards) + "</div>"


def _slice_rows(run: RunData) -> list[tuple[str, str, Mapping[str, Any]]]:
    entries = list(slice_entries(run.slices))
    if entries:
        return entries
    invalid = invalid_items(run)
    out: list[tuple[str, str, Mapping[str, Any]]] = []
    for dimension in _SLICE_DIMENSIONS:
        values = sorted({str(row.get(dimension)) for row in run.predictions})
        if len(values) < 2 and dimension != "dataset":
            continue
        for value in values:
            rows = [r for r in run.predictions if str(r.get(dimension)) == value]
            bad = sum(1 for r in invalid if str(r.get(dimension)) == value)
            out.append((dimension, value, block_from_rows(rows, bad)))
    return out


def _slice_table(run: RunData) -> str:
    head = (
        "<tr><th>slice</th><th>value</th><th>items</th><th>evaluated</th><th>pass rate</th>"
        "<th>95% CI</th><th>mean score</th><th>errors</th><th>p95 ms</th></tr>"
    )
    body = []
    for dimension, value, block in _slice_rows(run):
        ci = block.get("pass_rate_ci")
        ci_text = (
            f"{_pct(ci.get('low'))}–{_pct(ci.get('high'))}" if isinstance(ci, Mapping) else "–"
        )
        body.append(
            f'<tr data-slice="{_e(dimension)}"><td>{_e(dimension)}</td><td>{_e(value)}</td>'
            f"<td>{_num(block.get('total_records'))}</td>"
            f"<td>{_num(block.get('evaluated_records'))}</td>"
            f"<td>{_pct(block.get('pass_rate'))}</td><td>{ci_text}</td>"
            f"<td>{_num(block.get('mean_score'))}</td>"
            f"<td>{_num(block.get('failed_records'))}</td>"
            f"<td>{_num(block.get('p95_latency_ms'), 0)}</td></tr>"
        )
    if not body:
        return '<p class="empty">no slices</p>'
    return f'<table class="slices"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'


def _numbers(rows: Iterable[Mapping[str, Any]], key: str) -> list[float]:
    out = []
    for row in rows:
        value = row.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out.append(float(value))
    return out


def _charts(run: RunData) -> str:
    scores = _numbers(
        (r for r in run.predictions if r.get("outcome") in ("passed", "failed")), "score"
    )
    latencies = _numbers(run.predictions, "latency_ms")
    edges, counts = bins_for(scores, 10, 0.0, 1.0)
    score_svg = bar_chart(edges, counts, "score distribution")
    edges, counts = bins_for(latencies, 12, 0.0)
    latency_svg = bar_chart(edges, counts, "latency distribution (ms)")
    return (
        f'<div class="charts"><figure id="score-histogram">{score_svg}'
        "<figcaption>scores of graded items</figcaption></figure>"
        f'<figure id="latency-histogram">{latency_svg}'
        "<figcaption>latency per item (ms)</figcaption></figure></div>"
    )


def _record_rows(predictions: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for row in predictions:
        outcome = str(row.get("outcome") or "")
        reason = str(row.get("reason") or "")
        search = " ".join(
            str(row.get(k) or "") for k in ("record_id", "dataset", "model", "reason")
        ).lower()
        response = row.get("response") if "response" in row else row.get("model_response")
        rows.append(
            f'<tr class="rec {_e(outcome)}" data-outcome="{_e(outcome)}" '
            f'data-search="{_e(search)}">'
            f"<td class=id>{_e(row.get('record_id'))}</td><td>{_e(row.get('dataset'))}</td>"
            f"<td>{_e(row.get('model'))}</td><td class=outcome>{_e(outcome)}</td>"
            f"<td class=num>{_num(row.get('score'))}</td><td>{_e(reason)}</td>"
            f"<td class=num>{_num(row.get('latency_ms'), 0)}</td>"
            f'<td class=expl><div class="explanation">{_e(_cut(row.get("explanation")))}</div>'
            f"<details><summary>response</summary><pre>{_e(_cut(response))}</pre></details>"
            "</td></tr>"
        )
    return "".join(rows)


def _records(run: RunData) -> str:
    outcomes = sorted({str(r.get("outcome")) for r in run.predictions})
    options = "".join(f'<option value="{_e(o)}">{_e(o)}</option>' for o in outcomes)
    return (
        '<div class="filters"><label>filter <input id="record-filter" type="search" '
        'placeholder="record id, dataset, model or reason"></label> '
        f'<label>outcome <select id="outcome-filter"><option value="">all</option>{options}'
        '</select></label> <span id="shown-count" aria-live="polite"></span>'
        '<span id="outcome-counts"></span></div>'
        '<table id="records"><thead><tr><th>record</th><th>dataset</th><th>model</th>'
        "<th>outcome</th><th>score</th><th>reason</th><th>latency ms</th>"
        f"<th>grader's explanation</th></tr></thead><tbody>{_record_rows(run.predictions)}"
        "</tbody></table>"
    )


def _failures(run: RunData) -> str:
    graded = [r for r in run.predictions if r.get("outcome") == "failed"]
    parts = []
    if run.failures:
        rows = "".join(
            f"<tr><td>{_e(f.get('record_id'))}</td><td>{_e(f.get('model'))}</td>"
            f"<td>{_e(f.get('failure_type') or f.get('reason'))}</td>"
            f"<td>{_e(_cut(f.get('message') or f.get('explanation')))}</td></tr>"
            for f in run.failures
        )
        parts.append(
            f"<h3>permanent failures ({len(run.failures)})</h3><table id=failures><thead>"
            "<tr><th>record</th><th>model</th><th>type</th><th>message</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )
    parts.append(
        f"<h3>failed records ({len(graded)})</h3>"
        + (
            "<ul id=failed-records>"
            + "".join(
                f"<li><b>{_e(r.get('record_id'))}</b> ({_e(r.get('model'))}): "
                f"{_e(r.get('reason'))} — {_e(_cut(r.get('explanation')))}</li>"
                for r in graded
            )
            + "</ul>"
            if graded
            else '<p class="empty">none</p>'
        )
    )
    return "".join(parts)


def render_report(run: RunData) -> str:
    """The complete HTML document of one run."""
    manifest = run.manifest
    block = run.summary or block_from_rows(run.predictions, len(invalid_items(run)))
    datasets = ", ".join(
        f"{d.get('dataset_id')} {d.get('dataset_version') or ''}".strip()
        for d in manifest.get("datasets") or []
        if isinstance(d, Mapping)
    )
    models = ", ".join(str(m) for m in manifest.get("models") or [])
    meta = (
        f"<dl class=meta><dt>status</dt><dd id=run-status>{_e(manifest.get('status'))}</dd>"
        f"<dt>datasets</dt><dd>{_e(datasets)}</dd><dt>models</dt><dd>{_e(models)}</dd>"
        f"<dt>created</dt><dd>{_e(manifest.get('created_at'))}</dd>"
        f"<dt>completed</dt><dd>{_e(manifest.get('completed_at'))}</dd></dl>"
    )
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>legaleval report {_e(run.run_id)}</title>"
        f"<style>{_asset('report.css')}</style></head><body>"
        f"<header><h1>legaleval run <code id=run-id>{_e(run.run_id)}</code></h1>{meta}</header>"
        f"<section id=summary><h2>summary</h2>{_summary_cards(block)}</section>"
        f"<section id=slices><h2>slices</h2>{_slice_table(run)}</section>"
        f"<section id=distributions><h2>distributions</h2>{_charts(run)}</section>"
        f"<section id=per-record><h2>records ({len(run.predictions)})</h2>{_records(run)}"
        "</section>"
        f"<section id=failure-list><h2>failures</h2>{_failures(run)}</section>"
        f"<script>{_asset('report.js')}</script></body></html>\n"
    )
