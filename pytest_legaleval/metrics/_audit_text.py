"""The judge audit as terminal lines: judge, human and PPI++ estimates side by side.

Pure formatting of the JSON-safe blocks of :mod:`._audit` and :mod:`._judge_consistency`;
``legaleval audit`` prints them, and the run's terminal summary can print
:func:`summary_lines` of ``metrics_summary.json``'s ``judge_audit``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_legaleval.metrics._audit import NO_LABELS, NO_SCORE_LABELS

__all__ = [
    "block_table",
    "consistency_lines",
    "expert_lines",
    "labels_line",
    "side_by_side",
    "summary_lines",
]


def _num(value: Any, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _ci(interval: Any) -> str:
    if not interval:
        return ""
    return f" [{interval[0]:.4f}, {interval[1]:.4f}]"


def _ppi(block: Any) -> str:
    if not block:
        return "n/a"
    text = f"{block['estimate']:.4f}{_ci(block['ci95'])} (λ {block['lambda']:.2f})"
    if block.get("note"):  # an estimate outside [0, 1]: said, not hidden
        text += " (outside [0, 1]: unbiased, not bounded)"
    return text


def side_by_side(block: Mapping[str, Any], indent: str = "  ") -> list[str]:
    """Pass rate (and mean score) by judge, humans and PPI++, then agreement, κ and α.

    The notes of figures that are undefined follow (not those that only lack labels).
    """
    lines = [
        f"{indent}{'':<12}{'judge':<10}{'humans (labels alone)':<32}PPI++ (labels + judge)",
        f"{indent}{'pass rate':<12}{_num(block['judge_pass_rate']):<10}"
        f"{(_num(block['human_pass_rate']) + _ci(block['human_pass_rate_ci95'])):<32}"
        f"{_ppi(block['ppi_pass_rate'])}",
    ]
    if block["score_labelled"]:
        lines.append(
            f"{indent}{'mean score':<12}{_num(block['judge_mean_score']):<10}"
            f"{(_num(block['human_mean_score']) + _ci(block['human_mean_score_ci95'])):<32}"
            f"{_ppi(block['ppi_mean_score'])}"
        )
    alpha = ""
    if block["score_labelled"]:
        alpha = (
            f" · Krippendorff's α (scores) {_num(block['krippendorff_alpha'], 3)}"
            f"{_ci(block['krippendorff_alpha_ci95'])}"
        )
    lines.append(
        f"{indent}agreement {_num(block['agreement'], 3)}{_ci(block['agreement_ci95'])} · "
        f"Cohen's κ {_num(block['cohen_kappa'], 3)}{_ci(block['cohen_kappa_ci95'])}{alpha}"
    )
    for name, note in (block.get("notes") or {}).items():
        if note not in (NO_LABELS, NO_SCORE_LABELS):  # "n/a" already says that
            lines.append(f"{indent}{name}: {note}")
    return lines


def expert_lines(block: Mapping[str, Any], indent: str = "  ") -> list[str]:
    """The judge's κ beside the experts' on the shared items, and the labels' population."""
    lines = []
    sample = block.get("sample")
    if sample:
        lines.append(
            f"{indent}labels drawn at random from {sample.get('population')} of run "
            f"{sample.get('run_id')} ({sample.get('population_items')} items; "
            f"{sample.get('size')} drawn, stratified by {','.join(sample.get('strata') or [])}, "
            f"seed {sample.get('seed')})"
        )
    experts = block.get("expert_agreement") or {}
    for scope, found in (("items", experts.get("items")), ("criteria", experts.get("criteria"))):
        if not found:
            continue
        method = "Cohen's κ" if found["method"] == "cohen_kappa" else "Fleiss' κ"
        lines.append(
            f"{indent}{scope}: judge {_num(found['judge_kappa'], 2)} vs experts "
            f"{_num(found['kappa'], 2)}{_ci(found['kappa_ci95'])} ({method}; Krippendorff's α "
            f"{_num(found['krippendorff_alpha'], 2)}) on {found['shared_items']} shared items "
            f"({', '.join(found['raters'])})"
        )
    for name in ("ppi_pass_rate",):
        note = (block.get("notes") or {}).get(name)
        if sample and note and note not in (NO_LABELS,):
            lines.append(f"{indent}{name}: {note}")
    return lines


def labels_line(counts: Mapping[str, Any], indent: str = "  ") -> str:
    """What became of the label rows."""
    return (
        f"{indent}labels: {counts.get('rows', 0)} rows, {counts.get('used', 0)} used, "
        f"{counts.get('rejected', 0)} rejected, {counts.get('without_verdict', 0)} on items "
        f"without a verdict, {counts.get('not_judge_graded', 0)} on items graded without a "
        f"judge, {counts.get('ties', 0)} tied, {counts.get('raters', 0)} rater(s)"
    )


def block_table(title: str, blocks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One row per labelled block (per model, per policy): n, κ, judge, humans, PPI++."""
    rows = [(name, b) for name, b in blocks.items() if b["labelled"]]
    if not rows:
        return []
    width = max(12, *(len(name) for name, _ in rows)) + 2
    out = [
        f"{title}:",
        f"  {'':<{width}}{'n':>5}  {'κ':>7}  {'judge':>7}  {'humans':>7}  PPI++ pass rate",
    ]
    for name, b in rows:
        out.append(
            f"  {name:<{width}}{b['labelled']:>5}  {_num(b['cohen_kappa'], 3):>7}  "
            f"{_num(b['judge_pass_rate'], 3):>7}  {_num(b['human_pass_rate'], 3):>7}  "
            f"{_ppi(b['ppi_pass_rate'])}"
        )
    return out


def consistency_lines(consistency: Mapping[str, Any] | None) -> list[str]:
    """Re-judging flip rates and the panel's effective number of judges, where present."""
    if not consistency:
        return []
    lines = []
    flips = consistency.get("flips")
    if flips:
        unstable = ", ".join(flips["unstable_criteria"][:10]) or "none"
        lines.append(
            f"judge consistency ({consistency['judge_epochs']} judgings per answer): flip rate "
            f"{_num(flips['flip_rate'], 3)} over {flips['answers']} answer verdicts; unstable "
            f"(flip rate > {flips['max_flip_rate']:g}): {unstable}"
        )
    panel = (consistency.get("panel") or {}).get("items")
    if panel:
        lines.append(
            f"judge panel: {len(panel['judges'])} judges, mean pairwise agreement "
            f"{_num(panel['mean_agreement'], 3)}, mean correlation "
            f"{_num(panel['mean_correlation'], 3)}, effective independent judges "
            f"{_num(panel['effective_judges'], 2)}"
        )
    return lines


def summary_lines(
    judge_audit: Mapping[str, Any], consistency: Mapping[str, Any] | None = None
) -> list[str]:
    """The terminal summary of a run's ``judge_audit`` (and ``judge_consistency``)."""
    lines = [
        f"judge audit: {judge_audit['labelled']} labelled and {judge_audit['unlabelled']} "
        "unlabelled judge-graded items",
        *side_by_side(judge_audit),
    ]
    if judge_audit.get("labels"):
        lines.append(labels_line(judge_audit["labels"]))
    return lines + expert_lines(judge_audit) + consistency_lines(consistency)
