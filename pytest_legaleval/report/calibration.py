"""The calibration view: the judge beside the humans and PPI++, table by table, item by item.

Rendered from :class:`~pytest_legaleval.report.audit.AuditView`: the judge's pass rate, the
labels' and the PPI++ estimate side by side (pooled, per model, per policy, criteria
pooled), the confusion table of judge verdict by human verdict per policy and criterion,
and the items where judge and humans disagree, with both verdicts and the judge's reason.
A disagreeing item's row opens its item view (``report.js``). Every text is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_legaleval.metrics.artifacts import METRICS_SUMMARY
from pytest_legaleval.report.audit import MAX_DISAGREEMENTS, AuditView
from pytest_legaleval.report.fmt import DASH, finite, interval, num, pct
from pytest_legaleval.report.page import e

__all__ = ["MAX_TABLES", "REASON_CHARS", "calibration_section"]

MAX_TABLES = 200
"""Confusion tables shown (one per policy and labelled criterion)."""
REASON_CHARS = 600
"""A judge's reason is cut to this in the list (the item view has the rest)."""
_CELLS = (
    ("pass", "judge_pass_human_pass", "judge_pass_human_fail"),
    ("fail", "judge_fail_human_pass", "judge_fail_human_fail"),
)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _with_ci(value: Any, ci: Any, *, as_pct: bool = True) -> str:
    shown = pct(value) if as_pct else num(finite(value))
    found = interval(ci, as_pct=as_pct)
    return shown + (f' <span class="ci">{found}</span>' if found and shown != DASH else "")


def _estimate(block: Mapping[str, Any], key: str, *, as_pct: bool = True) -> str:
    found = _mapping(block.get(key))
    return _with_ci(found.get("estimate"), found.get("ci95"), as_pct=as_pct)


def _side_row(scope: str, block: Mapping[str, Any], attrs: str) -> str:
    human = _with_ci(block.get("human_pass_rate"), block.get("human_pass_rate_ci95"))
    agreement = _with_ci(block.get("agreement"), block.get("agreement_ci95"))
    kappa = _with_ci(block.get("cohen_kappa"), block.get("cohen_kappa_ci95"), as_pct=False)
    return (
        f"<tr {attrs}><td>{e(scope)}</td><td class=num>{num(block.get('labelled'))}</td>"
        f"<td class=num>{num(block.get('unlabelled'))}</td>"
        f'<td class="num judge">{pct(block.get("judge_pass_rate"))}</td>'
        f'<td class="num human">{human}</td>'
        f'<td class="num ppi">{_estimate(block, "ppi_pass_rate")}</td>'
        f"<td class=num>{agreement}</td><td class=num>{kappa}</td></tr>"
    )


def _score_row(scope: str, block: Mapping[str, Any], attrs: str) -> str:
    human = _with_ci(block.get("human_mean_score"), block.get("human_mean_score_ci95"),
                     as_pct=False)  # fmt: skip
    alpha = _with_ci(block.get("krippendorff_alpha"), block.get("krippendorff_alpha_ci95"),
                     as_pct=False)  # fmt: skip
    return (
        f"<tr {attrs}><td>{e(scope)}</td><td class=num>{num(block.get('score_labelled'))}</td>"
        f'<td class="num judge">{num(finite(block.get("judge_mean_score")))}</td>'
        f'<td class="num human">{human}</td>'
        f'<td class="num ppi">{_estimate(block, "ppi_mean_score", as_pct=False)}</td>'
        f"<td class=num>{alpha}</td></tr>"
    )


def _scopes(view: AuditView) -> list[tuple[str, Mapping[str, Any], str]]:
    scopes = [("all judge-graded items", view.block, 'data-scope="all"')]
    if len(view.by_model) > 1:
        scopes += [(f"model {m}", b, f'data-model="{e(m)}"') for m, b in view.by_model.items()]
    scopes += [(f"policy {p}", b, f'data-policy="{e(p)}"') for p, b in view.by_policy.items()]
    criteria = view.block.get("criteria")
    if isinstance(criteria, Mapping):
        scopes.append(("criteria (every criterion verdict pooled)", criteria,
                       'data-scope="criteria"'))  # fmt: skip
    return scopes


def _expert_row(scope: str, block: Mapping[str, Any]) -> str:
    kappa = _with_ci(block.get("kappa"), block.get("kappa_ci95"), as_pct=False)
    alpha = _with_ci(block.get("krippendorff_alpha"), block.get("krippendorff_alpha_ci95"),
                     as_pct=False)  # fmt: skip
    method = "Cohen's κ" if block.get("method") == "cohen_kappa" else "Fleiss' κ"
    return (
        f"<tr><td>{e(scope)}</td><td class=num>{num(block.get('shared_items'))}</td>"
        f"<td>{e(', '.join(str(r) for r in block.get('raters') or []))}</td>"
        f'<td class="num judge">{num(finite(block.get("judge_kappa")))}</td>'
        f'<td class="num human">{kappa} ({method})</td><td class=num>{alpha}</td></tr>'
    )


def _experts(view: AuditView) -> str:
    """The judge's κ beside the experts' κ on the items two raters labelled; the sample."""
    out = ""
    sample = _mapping(view.block.get("sample"))
    if sample:
        out += (
            f'<p class="hint" id="audit-sample">The labels are a random sample of '
            f"{e(str(sample.get('population')))} of run {e(str(sample.get('run_id')))} "
            f"({num(sample.get('population_items'))} items; {num(sample.get('size'))} drawn, "
            f"stratified by {e(', '.join(sample.get('strata') or []))}, seed "
            f"{e(str(sample.get('seed')))}).</p>"
        )
    experts = _mapping(view.block.get("expert_agreement"))
    scopes = [("items", experts.get("items")), ("criteria pooled", experts.get("criteria"))]
    scopes += [(f"criterion {c}", b) for c, b in _mapping(experts.get("by_criterion")).items()]
    rows = "".join(_expert_row(s, b) for s, b in scopes[:MAX_TABLES] if isinstance(b, Mapping))
    if rows:
        out += (
            '<div class="scroll"><table id="audit-experts"><thead><tr><th>experts</th>'
            "<th>shared items</th><th>raters</th><th>judge κ with each rater (mean)</th>"
            "<th>experts' κ [95% CI]</th><th>Krippendorff's α [95% CI]</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>"
        )
    return out


def _side_by_side(view: AuditView) -> str:
    scopes = _scopes(view)
    rows = "".join(_side_row(s, b, a) for s, b, a in scopes if isinstance(b, Mapping))
    scores = "".join(
        _score_row(s, b, a)
        for s, b, a in scopes
        if isinstance(b, Mapping)
        and isinstance(b.get("score_labelled"), int)
        and b["score_labelled"] > 0
    )
    table = (
        '<div class="scroll"><table id="audit-side-by-side"><thead><tr><th></th>'
        "<th>labelled</th><th>unlabelled</th><th>judge pass rate</th>"
        "<th>human pass rate [95% CI, labels alone]</th><th>PPI++ pass rate [95% CI]</th>"
        "<th>agreement [95% CI]</th><th>Cohen's κ [95% CI]</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></div>"
    )
    if scores:
        table += (
            '<div class="scroll"><table id="audit-scores"><thead><tr><th>scores</th>'
            "<th>labelled</th><th>judge mean score</th><th>human mean score [95% CI]</th>"
            "<th>PPI++ mean score [95% CI]</th><th>Krippendorff's α [95% CI]</th></tr>"
            f"</thead><tbody>{scores}</tbody></table></div>"
        )
    return table


def _confusion(caption: str, table: Mapping[str, Any], attrs: str) -> str:  # one 2 × 2 table
    cells = _mapping(table.get("confusion"))
    body = "".join(
        f"<tr><th>judge {judge}</th>"
        f'<td class="{"agree" if judge == "pass" else "disagree"}">{num(cells.get(a))}</td>'
        f'<td class="{"disagree" if judge == "pass" else "agree"}">{num(cells.get(b))}</td></tr>'
        for judge, a, b in _CELLS
    )
    kappa = finite(table.get("cohen_kappa"))
    return (
        f'<table class="confusion" {attrs}><caption>{caption}<br><span class="ci">'
        f"{num(table.get('labelled'))} labelled · agreement {pct(table.get('agreement'))} · "
        f"κ {DASH if kappa is None else f'{kappa:.3f}'}</span></caption><thead><tr><th></th>"
        f"<th>human pass</th><th>human fail</th></tr></thead><tbody>{body}</tbody></table>"
    )


def _criterion_label(view: AuditView, cid: Any, record_id: Any = None) -> str:
    title = view.record_titles.get((record_id, cid)) or view.titles.get(str(cid))
    return f"{e(title)} <code>{e(cid)}</code>" if title else f"<code>{e(cid)}</code>"


def _confusion_tables(view: AuditView) -> str:
    calibration = view.calibration
    if calibration is None:
        pooled = _confusion("all labelled items", view.block, 'data-level="item"')
        return f'<div class="confusions" id="confusion-tables">{pooled}</div>'
    tables = [t for t in calibration.get("tables", ()) if isinstance(t, Mapping)]
    out = []
    for table in tables[:MAX_TABLES]:
        policy, cid = table.get("policy_id"), table.get("criterion_id")
        if cid is not None:
            caption = f"policy <code>{e(policy)}</code> · criterion {_criterion_label(view, cid)}"
        elif policy is not None:
            caption = f"policy <code>{e(policy)}</code>"
        else:
            caption = "all labelled items"
        attrs = (
            f'data-level="{e(table.get("level"))}" data-policy="{e(policy)}" '
            f'data-criterion="{e(cid)}"'
        )
        out.append(_confusion(caption, table, attrs))
    more = (
        f'<p class="hint">{len(tables) - MAX_TABLES:,} more tables: legaleval audit --json.</p>'
        if len(tables) > MAX_TABLES
        else ""
    )
    return (
        "<h3>judge verdict by human verdict</h3>"
        f'<div class="confusions" id="confusion-tables">{"".join(out)}</div>{more}'
    )


def _verdict(passed: Any, score: Any) -> str:
    mark = {True: "✓ pass", False: "✗ fail"}.get(passed, "tie") if isinstance(passed, bool) \
        else "no verdict"  # fmt: skip
    found = finite(score)
    return mark + (f" {found:.2f}" if found is not None else "")


def _disagreements(view: AuditView) -> str:
    calibration = view.calibration
    if calibration is None:
        return ""
    rows = []
    for d in calibration.get("disagreements", ()):
        if not isinstance(d, Mapping):
            continue
        reason = str(d.get("judge_reason") or "")
        if len(reason) > REASON_CHARS:
            reason = reason[: REASON_CHARS - 1] + "…"
        cid = d.get("criterion_id")
        votes = f"{num(d.get('pass_votes'))} pass · {num(d.get('fail_votes'))} fail"
        criterion = (
            _criterion_label(view, cid, d.get("record_id")) if cid is not None else "the item"
        )
        rows.append(
            f'<tr class="disagreement" data-record="{e(d.get("record_id"))}" '
            f'data-model="{e(d.get("model"))}" tabindex="0"><td class="id">'
            f"{e(d.get('record_id'))}</td><td>{e(d.get('model'))}</td>"
            f"<td>{e(d.get('policy_id'))}</td>"
            f"<td>{criterion}</td>"
            f'<td class="judge">{_verdict(d.get("judge_passed"), d.get("judge_score"))}</td>'
            f'<td class="human">{_verdict(d.get("human_passed"), d.get("human_score"))}'
            f'<br><span class="ci">{num(d.get("raters"))} rater(s): {votes}</span></td>'
            f'<td class="reason">{e(reason) if reason else "<i>no reason recorded</i>"}</td></tr>'
        )  # fmt: skip
    total = calibration.get("disagreements_total")
    total = total if isinstance(total, int) else len(rows)
    listed = (
        f"the {len(rows):,} with the largest score gap are listed"
        if total > len(rows)
        else "all are listed, the largest score gap first"
    )
    if not rows:
        return '<h3>disagreements</h3><p class="empty" id="no-disagreements">The judge and ' \
            "the humans agree on every labelled item and criterion.</p>"  # fmt: skip
    return (
        f'<h3>disagreements</h3><p class="hint" id="disagreements-count" data-total="{total}">'
        f"{total:,} labelled items and criteria where the judge and the humans disagree; "
        f"{listed} (at most {MAX_DISAGREEMENTS}). Click one for its item view.</p>"
        '<div class="scroll"><table id="disagreements"><thead><tr><th>record</th>'
        "<th>model</th><th>policy</th><th>criterion</th><th>judge</th><th>humans</th>"
        f"<th>judge's reason</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _labels_line(view: AuditView) -> str:
    source = view.labels
    counts = _mapping(view.block.get("labels"))
    names = ("rows", "used", "rejected", "ties", "not_judge_graded", "without_verdict",
             "skipped", "raters")  # fmt: skip
    said = " · ".join(
        f"{e(k.replace('_', ' '))} {num(counts.get(k))}" for k in names if k in counts
    )
    where = (
        f"Human labels: <code>{e(source.path)}</code>, {e(source.origin)}"
        if source.path is not None
        else f"Figures as {METRICS_SUMMARY} has them"
    )
    return f'<p class="hint" id="labels-source">{where}.{f" Labels: {said}." if said else ""}</p>'


def calibration_section(view: AuditView | None) -> str:
    """The section (empty without an audit)."""
    if view is None:
        return ""
    notes = dict(_mapping(view.block.get("notes")))
    note_lines = [f"{k}: {v}" for k, v in sorted(notes.items())] + view.notes
    return (
        '<section id="calibration"><h2>judge calibration</h2><p class="hint">How far the LLM '
        "judge is from the human labels: the judge's pass rate over every judge-graded item "
        "with a verdict, the labels' own rate, and the PPI++ estimate of the human pass rate "
        "from both (labels plus the judge's verdicts on the unlabelled items, with power "
        "tuning). Agreement and Cohen's κ compare judge and humans on the labelled items.</p>"
        f"{_labels_line(view)}{_side_by_side(view)}{_experts(view)}"
        + "".join(f'<p class="hint note">{e(n)}</p>' for n in note_lines)
        + f"{_confusion_tables(view)}{_disagreements(view)}</section>"
    )
