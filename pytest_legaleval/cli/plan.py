"""``legaleval plan``: how small a difference a paired comparison of the planned run can detect.

Reads the dataset (no call is made), clusters its records by ``--cluster-by``, and prints
the power planner's figures (``metrics.power``): the minimum detectable difference at the
planned records and epochs, the model behind it (measured on ``--baseline`` when given,
else stated defaults) and a small table of records × epochs.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pytest_legaleval.errors import ConfigError, DatasetRejected
from pytest_legaleval.metrics.artifacts import PREDICTIONS
from pytest_legaleval.metrics.power import ALPHA_RANGE, POWER_RANGE, TARGET_RANGE

__all__ = ["register"]


def _within(low: float, high: float) -> Any:
    """A converter to a number in ``[low, high]`` (an absurd one is a usage error, exit 2)."""

    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not low <= value <= high:  # NaN fails too
            raise argparse.ArgumentTypeError(
                f"expected a number in [{low:g}, {high:g}], got {text!r}"
            )
        return value

    return convert


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def _correlation(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not -1.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [-1, 1], got {text!r}")
    return value


def _cmd_plan(args: argparse.Namespace) -> int:
    from pytest_legaleval.formats import load_dataset
    from pytest_legaleval.metrics.power import plan, record_fields
    from pytest_legaleval.metrics.runfiles import load_run
    from pytest_legaleval.pipeline.sources import dataset_paths

    try:
        loaded = load_dataset(dataset_paths(args.dataset), args.dataset_format)
    except DatasetRejected as exc:
        print(f"legaleval plan: the dataset is rejected: {exc.message}", file=sys.stderr)
        return 2
    records = [record_fields(record) for record in loaded.records]
    if not records:
        raise ConfigError("the dataset has no valid record to plan for")
    if args.cluster_by:
        from pytest_legaleval.metrics.run_checks import RecordFields

        fields = RecordFields(args.cluster_by)
        fields.extend(records)
        lacking = fields.check_cluster_field()  # no record has it: a usage error
        if lacking:
            print(
                f"legaleval plan: --cluster-by {args.cluster_by}: {lacking} of {len(records)} "
                "records lack the field; each is a cluster of its own",
                file=sys.stderr,
            )
    baseline_rows = baseline_id = None
    if args.baseline:
        run = load_run(args.baseline)
        baseline_rows, baseline_id = run.predictions, run.run_id
        if not baseline_rows:
            raise ConfigError(f"--baseline {args.baseline}: the run has no {PREDICTIONS} lines")
    try:
        result = plan(
            records,
            epochs=args.epochs,
            cluster_by=args.cluster_by,
            baseline_rows=baseline_rows,
            baseline_id=baseline_id,
            correlation=args.correlation,
            alpha=args.alpha,
            power=args.power,
            target=args.target,
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if args.format == "json":
        sys.stdout.write(json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        rejected = len(loaded.rejected)
        if rejected:
            print(f"({rejected} invalid record(s) left out of the plan)")
        sys.stdout.write(result.render())
    return 0


def register(subparsers: Any) -> None:
    """Add the ``plan`` subcommand."""
    command = subparsers.add_parser(
        "plan",
        help="the smallest difference a paired comparison of the planned run can detect",
        description="Before paying for a run: the minimum detectable difference (alpha 0.05 "
        "two-sided, 80%% power) of a paired comparison of two runs over the dataset's "
        "records, with their clusters and the epochs planned, and how it changes with more "
        "records or epochs. Variance figures come from --baseline when given, else from "
        "stated defaults (p = 0.5).",
    )
    command.add_argument(
        "--dataset", action="append", required=True, metavar="PATH", help="dataset file or dir"
    )
    command.add_argument("--dataset-format", default="auto", metavar="NAME")
    command.add_argument(
        "--epochs", type=_positive, default=1, metavar="K", help="answers per record (1)"
    )
    command.add_argument(
        "--cluster-by", metavar="FIELD", help="dotted record field: metadata.exam, dataset, …"
    )
    command.add_argument(
        "--baseline", metavar="RUN_DIR", help="a run to measure pass rate and variances on"
    )
    command.add_argument(
        "--correlation",
        type=_correlation,
        metavar="R",
        help="correlation of the two systems' per-record pass rates (default 0.5, assumed)",
    )
    command.add_argument(
        "--target",
        type=_within(*TARGET_RANGE),
        metavar="D",
        help="also print the records needed to detect this difference (0.03 = 3 points)",
    )
    command.add_argument(
        "--alpha", type=_within(*ALPHA_RANGE), default=0.05, help="two-sided level (0.05)"
    )
    command.add_argument("--power", type=_within(*POWER_RANGE), default=0.80, help="power (0.80)")
    command.add_argument("--format", choices=("text", "json"), default="text")
    command.set_defaults(func=_cmd_plan)
