"""``legaleval audit RUN_DIR --human-labels PATH``: the judge audit of a finished run.

Prints the judge's, the humans' and the PPI++ estimates side by side (or, with ``--json``,
the whole audit: the pooled block, per model, per policy, per criterion, the calibration
view's data, judge consistency and the labels left out). A label row that cannot be used
is a warning on stderr in the contract's ``record_errors`` shape. Exit 0: audited, every
label row used or counted; 1: some label rows were rejected, or no label matched a
judge-graded item with a verdict; 2: the run directory or the label file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError

__all__ = ["audit_body", "register", "render_text"]

EXIT_OK, EXIT_INCOMPLETE, EXIT_USAGE = 0, 1, 2
PREDICTIONS = "predictions.jsonl"


def audit_body(
    run_dir: Path,
    labels_path: Path | None,
    *,
    seed: int | None = None,
    resamples: int | None = None,
    max_flip_rate: float | None = None,
    disagreements: int = 200,
) -> dict[str, Any]:
    """The audit of a run directory as one JSON-safe object.

    Raises:
        ConfigError: not a run directory, no ``predictions.jsonl``, an unreadable line,
            or a label file that cannot be read at all.

    """
    from pytest_legaleval.metrics.audit import AuditSettings, audit_from_items
    from pytest_legaleval.metrics.audit_items import collect_items, match_labels
    from pytest_legaleval.metrics.calibration import calibration_view
    from pytest_legaleval.metrics.human_labels import LabelFile, read_human_labels
    from pytest_legaleval.metrics.judge_consistency import MAX_FLIP_RATE, consistency_from_lines
    from pytest_legaleval.metrics.runfiles import iter_jsonl, load_run

    run = load_run(run_dir, with_predictions=False)
    predictions = run.path / PREDICTIONS
    if not predictions.is_file():
        raise ConfigError(f"{run.path}: the run has no {PREDICTIONS} to audit")
    labels = read_human_labels(labels_path) if labels_path is not None else LabelFile()
    defaults = AuditSettings()
    settings = AuditSettings(
        seed=defaults.seed if seed is None else seed,
        resamples=defaults.resamples if resamples is None else resamples,
    )
    items = collect_items(iter_jsonl(predictions))
    matched = match_labels(labels, items)
    audit = audit_from_items(items, matched, settings)
    flip_limit = MAX_FLIP_RATE if max_flip_rate is None else max_flip_rate
    return {
        "run_id": run.run_id,
        "run_dir": str(run.path),
        "human_labels": str(labels_path) if labels_path is not None else None,
        "judged_items": len(items.verdicts),
        **audit.to_dict(),
        "calibration": calibration_view(items, matched, limit=disagreements),
        "judge_consistency": consistency_from_lines(
            iter_jsonl(predictions), max_flip_rate=flip_limit
        ),
    }


def _num(value: Any, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _ci(interval: Any) -> str:
    if not interval:
        return ""
    return f" [{interval[0]:.4f}, {interval[1]:.4f}]"


def _ppi(block: Any) -> str:
    if not block:
        return "n/a"
    return f"{block['estimate']:.4f}{_ci(block['ci95'])} (λ {block['lambda']:.2f})"


def _side_by_side(block: dict[str, Any], indent: str = "  ") -> list[str]:
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
    lines.append(
        f"{indent}agreement {_num(block['agreement'], 3)}{_ci(block['agreement_ci95'])} · "
        f"Cohen's κ {_num(block['cohen_kappa'], 3)}{_ci(block['cohen_kappa_ci95'])}"
        + (
            f" · Krippendorff's α (scores) {_num(block['krippendorff_alpha'], 3)}"
            f"{_ci(block['krippendorff_alpha_ci95'])}"
            if block["score_labelled"]
            else ""
        )
    )
    from pytest_legaleval.metrics.audit import NO_LABELS, NO_SCORE_LABELS

    for name, note in block.get("notes", {}).items():
        if note not in (NO_LABELS, NO_SCORE_LABELS):  # "n/a" already says that
            lines.append(f"{indent}{name}: {note}")
    return lines


def _table(title: str, blocks: dict[str, dict[str, Any]]) -> list[str]:
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


def render_text(body: dict[str, Any]) -> str:
    """The terminal form of :func:`audit_body`'s result."""
    audit = body["judge_audit"]
    counts = audit["labels"]
    lines = [
        f"judge audit of {body['run_id']}: {audit['labelled']} labelled and "
        f"{audit['unlabelled']} unlabelled judge-graded items"
        + (f" (labels: {body['human_labels']})" if body["human_labels"] else ""),
        *_side_by_side(audit),
    ]
    if body["human_labels"]:
        lines.append(
            f"  labels: {counts.get('rows', 0)} rows, {counts.get('used', 0)} used, "
            f"{counts.get('rejected', 0)} rejected, {counts.get('without_verdict', 0)} on items "
            f"without a verdict, {counts.get('not_judge_graded', 0)} on items graded without "
            f"a judge, {counts.get('ties', 0)} tied, {counts.get('raters', 0)} rater(s)"
        )
    lines += _table("per model", body["by_model"])
    lines += _table("per policy", body["by_policy"])
    if audit.get("criteria"):
        lines.append("criteria (every criterion verdict pooled):")
        lines += _side_by_side(audit["criteria"], indent="    ")
    consistency = body["judge_consistency"]
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
    return "\n".join(lines) + "\n"


def _check_args(args: argparse.Namespace) -> str | None:
    if args.resamples is not None and args.resamples < 1:
        return f"--resamples must be at least 1, got {args.resamples}"
    if args.max_flip_rate is not None and not 0.0 <= args.max_flip_rate <= 1.0:
        return f"--max-flip-rate must be a share in [0, 1], got {args.max_flip_rate}"
    if args.disagreements < 0:
        return f"--disagreements must not be negative, got {args.disagreements}"
    return None


def _cmd_audit(args: argparse.Namespace) -> int:
    problem = _check_args(args)
    if problem is not None:
        print(f"legaleval audit: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        body = audit_body(
            args.run_dir,
            args.human_labels,
            seed=args.seed,
            resamples=args.resamples,
            max_flip_rate=args.max_flip_rate,
            disagreements=args.disagreements,
        )
    except (ConfigError, OSError) as exc:
        text = " ".join(str(exc).split())
        print(f"legaleval audit: error: {text}", file=sys.stderr)
        return EXIT_USAGE
    for error in body["record_errors"]:
        line = json.dumps(error, ensure_ascii=False)
        print(f"legaleval audit: warning: label left out: {line}", file=sys.stderr)
    text = json.dumps(body, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    sys.stdout.write(text if args.json else render_text(body))
    audit = body["judge_audit"]
    used = audit["labelled"] or (audit.get("criteria") or {}).get("labelled")
    if args.human_labels is not None and (body["record_errors"] or not used):
        if not used:
            print("legaleval audit: error: no label matched a judged item", file=sys.stderr)
        return EXIT_INCOMPLETE
    return EXIT_OK


def register(subparsers: Any) -> None:
    """Add the ``audit`` subcommand."""
    audit = subparsers.add_parser(
        "audit",
        help="judge vs human labels: agreement, Cohen's kappa, PPI++ corrected pass rate",
        description="Audit a run's LLM judge against human labels: agreement, Cohen's κ, "
        "Krippendorff's α on scores (bootstrap intervals), and the PPI++ estimate of the "
        "human pass rate and mean score with its 95 % interval, pooled, per model, per "
        "policy and per criterion; plus judge consistency (re-judging flips, panel "
        "agreement) where the run has it. Exit 0: audited; 1: label rows were rejected or "
        "none matched a judged item; 2: the run or the labels cannot be read.",
    )
    audit.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    audit.add_argument(
        "--human-labels",
        type=Path,
        metavar="PATH",
        help="labels JSONL (record_id, model, passed and/or score, criterion_id?, rater?), "
        "a Turing human evaluation file, or a directory of them",
    )
    audit.add_argument("--json", action="store_true", help="print the whole audit as JSON")
    audit.add_argument("--out", type=Path, metavar="FILE", help="also write the JSON to FILE")
    audit.add_argument("--seed", type=int, help="bootstrap seed (default: the run's default)")
    audit.add_argument("--resamples", type=int, help="bootstrap resamples (default 2000)")
    audit.add_argument(
        "--max-flip-rate",
        type=float,
        help="list criteria whose re-judged verdict flips on more than this share (0.1)",
    )
    audit.add_argument(
        "--disagreements",
        type=int,
        default=200,
        metavar="N",
        help="list at most N disagreeing items in the JSON calibration view (200)",
    )
    audit.set_defaults(func=_cmd_audit)
