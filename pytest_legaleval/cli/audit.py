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
from pytest_legaleval.metrics._artifacts import PREDICTIONS

__all__ = ["audit_body", "register", "render_text"]

EXIT_OK, EXIT_INCOMPLETE, EXIT_USAGE = 0, 1, 2


def audit_body(
    run_dir: Path,
    labels_path: Path | None,
    *,
    seed: int | None = None,
    resamples: int | None = None,
    max_flip_rate: float | None = None,
    disagreements: int = 200,
    sample_path: Path | None = None,
) -> dict[str, Any]:
    """The audit of a run directory as one JSON-safe object.

    ``sample_path`` names the ``legaleval review`` sample the labels were drawn from
    (default: a ``sample.json`` beside the labels); the audit then states its population
    and gives no PPI estimate for a population the labels were not drawn from.

    Raises:
        ConfigError: not a run directory, no ``predictions.jsonl``, an unreadable line,
            or a label file that cannot be read at all.

    """
    from pytest_legaleval.metrics._audit import AuditSettings, audit_from_items
    from pytest_legaleval.metrics._audit_items import collect_items, epoch_reducer, match_labels
    from pytest_legaleval.metrics._calibration import calibration_view
    from pytest_legaleval.metrics._human_labels import LabelFile, read_human_labels
    from pytest_legaleval.metrics._judge_consistency import MAX_FLIP_RATE, consistency_from_lines
    from pytest_legaleval.metrics._labelled_population import find_sample
    from pytest_legaleval.metrics._runfiles import load_run, prediction_lines, run_reducer

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
    items = collect_items(prediction_lines(predictions), epoch_reducer(run_reducer(run)))
    matched = match_labels(labels, items)
    sample = labels.sample if sample_path is None else find_sample(sample_path)
    if sample_path is not None and sample is None:
        raise ConfigError(f"--review-sample {sample_path}: not a legaleval review sample")
    audit = audit_from_items(
        items, matched, settings, labels=labels, sample=sample, run_id=run.run_id
    )
    flip_limit = MAX_FLIP_RATE if max_flip_rate is None else max_flip_rate
    return {
        "run_id": run.run_id,
        "run_dir": str(run.path),
        "human_labels": str(labels_path) if labels_path is not None else None,
        "judged_items": len(items.verdicts),
        **audit.to_dict(),
        "calibration": calibration_view(items, matched, limit=disagreements),
        "judge_consistency": consistency_from_lines(
            prediction_lines(predictions), max_flip_rate=flip_limit
        ),
    }


def render_text(body: dict[str, Any]) -> str:
    """The terminal form of :func:`audit_body`'s result."""
    from pytest_legaleval.metrics._audit_text import (
        block_table,
        consistency_lines,
        expert_lines,
        labels_line,
        side_by_side,
    )

    audit = body["judge_audit"]
    lines = [
        f"judge audit of {body['run_id']}: {audit['labelled']} labelled and "
        f"{audit['unlabelled']} unlabelled judge-graded items"
        + (f" (labels: {body['human_labels']})" if body["human_labels"] else ""),
        *side_by_side(audit),
    ]
    if body["human_labels"]:
        lines.append(labels_line(audit["labels"]))
    lines += expert_lines(audit)
    lines += block_table("per model", body["by_model"])
    lines += block_table("per policy", body["by_policy"])
    if audit.get("criteria"):
        lines.append("criteria (every criterion verdict pooled):")
        lines += side_by_side(audit["criteria"], indent="    ")
    lines += consistency_lines(body["judge_consistency"])
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
            sample_path=args.review_sample,
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
    audit.add_argument(
        "--review-sample",
        type=Path,
        metavar="FILE",
        help="the legaleval review sample the labels were drawn from (default: the "
        "sample.json beside the labels, if any): the audit states its population",
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
