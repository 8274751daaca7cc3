"""``legaleval report``, ``compare`` and ``merge``: tools that read finished run directories."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_legaleval.cli.exit_codes import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics.artifacts import RUN_MANIFEST

__all__ = ["register"]


def _cmd_report(args: argparse.Namespace) -> int:
    from pytest_legaleval.report import write_comparison, write_report

    if len(args.run_dir) > 2:
        print("legaleval report: give one run directory, or two to compare", file=sys.stderr)
        return EXIT_USAGE
    if len(args.run_dir) == 2:
        if args.human_labels is not None:
            print("legaleval report: --human-labels takes one run directory", file=sys.stderr)
            return 2
        target = write_comparison(args.run_dir[0], args.run_dir[1], args.out)
    else:
        target = write_report(args.run_dir[0], args.out, human_labels=args.human_labels)
    print(target)
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from pytest_legaleval.metrics.compare import comparison
    from pytest_legaleval.metrics.runfiles import load_run
    from pytest_legaleval.run.compare_render import render

    data = comparison(
        load_run(args.run_a),
        load_run(args.run_b),
        alpha=args.alpha,
        allow_scoring_mismatch=args.allow_scoring_mismatch,
        cluster_by=args.cluster_by,
        reducer=args.epoch_reducer,
    )
    text = render(data, args.format)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
    paired = data["paired"]
    if not _in_common(paired):
        # Nothing in common proves nothing: a renamed dataset or another model must not
        # read as "no regression".
        print(
            f"legaleval compare: error: the runs have no item in common (A "
            f"{paired['only_in_baseline']} items, B {paired['only_in_current']}; an item is "
            "one dataset, record id and model): compare runs of the same dataset and model",
            file=sys.stderr,
        )
        return EXIT_FINDINGS
    return EXIT_OK


def _in_common(paired: dict[str, Any]) -> bool:
    """Whether the runs share an item (paired, or without a verdict in one of them)."""
    return bool(paired.get("paired") or paired.get("unverdicted"))


def _cmd_merge(args: argparse.Namespace) -> int:
    from pytest_legaleval.run.merge import MergeError, merge_runs

    if args.prefix is not None:
        from pytest_legaleval.pipeline.shards import find_shards

        if args.run_dirs:
            print("legaleval merge: error: give RUN_DIRs or --prefix, not both", file=sys.stderr)
            return EXIT_USAGE
        try:
            args.run_dirs = [str(p) for p in find_shards(Path(args.runs), args.prefix)]
        except ConfigError as exc:
            print(f"legaleval merge: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    elif not args.run_dirs:
        print("legaleval merge: error: give the shards' RUN_DIRs or --prefix", file=sys.stderr)
        return EXIT_USAGE
    for path in args.run_dirs:  # a path that is no run: a usage error, not a misfit
        if not (Path(path) / RUN_MANIFEST).is_file():
            print(
                f"legaleval merge: error: {path}: not a run directory (no {RUN_MANIFEST})",
                file=sys.stderr,
            )
            return EXIT_USAGE
    try:
        result = merge_runs(args.run_dirs, args.out, run_id=args.run_id)
    except MergeError as exc:
        print(f"legaleval merge: {exc}", file=sys.stderr)
        return EXIT_FINDINGS
    print(result)
    return EXIT_OK


def register(subparsers: Any) -> None:
    """Add the ``report``, ``compare`` and ``merge`` subcommands."""
    report = subparsers.add_parser(
        "report",
        help="write a self-contained HTML report of a run directory",
        description="One HTML file with inline CSS, JS and SVG (opens offline): summary, "
        "slices, score and latency histograms, a filterable per-record table whose item "
        "view shows the question, choices, references, the grader's and the judge's "
        "reasons, the response and the transcript; the official benchmark figures, epochs "
        "and the run's interval, and the judge calibration view where the run has them. "
        "With two run directories (RUN_A, then RUN_B), the items of both side by side, the "
        "changed verdicts first.",
    )
    report.add_argument("run_dir", nargs="+", metavar="RUN_DIR", help="RUN_DIR or RUN_A RUN_B")
    report.add_argument(
        "--out",
        metavar="FILE",
        help="output file (default: RUN_DIR.html, or RUN_B-vs-RUN_A.html, beside the run)",
    )
    report.add_argument(
        "--human-labels",
        metavar="FILE",
        help="human labels (as pytest's --human-labels takes them) for the judge calibration "
        "view: confusion tables per policy and criterion, the disagreeing items (default: "
        "the run's own label file, when it is still there)",
    )
    report.set_defaults(func=_cmd_report)

    compare = subparsers.add_parser(
        "compare",
        help="compare two runs: metric deltas, per-slice deltas, flipped records",
        description="RUN_A is the reference (e.g. main), RUN_B the candidate; deltas are "
        "B - A. Paired items give McNemar's exact p-value and a paired bootstrap interval "
        "of the mean-score difference. Exit 0: compared; 1: the runs share no item (the "
        "comparison is still written); 2: usage error.",
    )
    compare.add_argument("run_a", metavar="RUN_A")
    compare.add_argument("run_b", metavar="RUN_B")
    compare.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    compare.add_argument(
        "--alpha", type=float, default=0.05, help="1 - confidence of the intervals (0.05)"
    )
    compare.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    compare.add_argument(
        "--allow-scoring-mismatch",
        action="store_true",
        help="compare runs whose rubric items were scored under different rules (minmax, "
        "clipped); refused by default: their scores are not comparable",
    )
    compare.add_argument(
        "--cluster-by",
        metavar="FIELD",
        help="dotted record field whose values cluster the records (metadata.exam); default: "
        "the runs' own --cluster-by. Epochs or clusters compare record means with clustered "
        "standard errors instead of McNemar",
    )
    compare.add_argument(
        "--epoch-reducer",
        choices=("mean", "majority", "all", "any"),
        help="one verdict per item from its epochs (default: RUN_B's own, else mean)",
    )
    compare.set_defaults(func=_cmd_compare)

    merge = subparsers.add_parser(
        "merge",
        help="join the run directories of --shard K/N runs into one run",
        description="Checks that the shards share dataset and configuration, do not "
        "overlap and cover the dataset (else lists what is missing), then writes a merged "
        "run directory whose metrics equal an unsharded run's. Exit 0: merged; 1: the shards "
        "do not fit together; 2: usage error (not a run directory).",
    )
    merge.add_argument("run_dirs", nargs="*", metavar="RUN_DIR")
    merge.add_argument(
        "--prefix",
        metavar="PREFIX",
        help="merge every PREFIX-shard-K-of-N run under --runs (what --shard auto writes)",
    )
    merge.add_argument(
        "--runs",
        default="legaleval-runs",
        metavar="DIR",
        help="where --prefix looks for the shards (legaleval-runs)",
    )
    merge.add_argument(
        "--out", required=True, metavar="DIR", help="the merged run directory to create"
    )
    merge.add_argument("--run-id", help="run id of the merged run (default: DIR's name)")
    merge.set_defaults(func=_cmd_merge)
