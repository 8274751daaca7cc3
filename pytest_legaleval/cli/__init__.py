"""The ``legaleval`` command: data contract checks and run tooling outside pytest."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any

from pytest_legaleval.errors import ConfigError, DatasetRejected
from pytest_legaleval.formats import FORMATS, load_dataset
from pytest_legaleval.run.console import printable_json
from pytest_legaleval.run.ids import new_request_id, new_run_id

__all__ = ["main", "validation_body"]

EXIT_OK, EXIT_RECORD_ERRORS, EXIT_REJECTED = 0, 1, 2

_COMMAND_MODULES: tuple[str, ...] = (
    "pytest_legaleval.cli.runs",
    "pytest_legaleval.cli.datasets",
    "pytest_legaleval.importers.command",
    "pytest_legaleval.cli.serve",
    "pytest_legaleval.cli.submit",
    "pytest_legaleval.cli.plan",
    "pytest_legaleval.cli.audit",
    "pytest_legaleval.cli.review",
    "pytest_legaleval.cli.batches",
)
"""Modules that add subcommands: each has ``register(subparsers)`` and sets ``func``."""


def validation_body(paths: Sequence[str], fmt: str = "auto") -> tuple[int, dict[str, Any], int]:
    """Validate datasets as the contract's API would answer.

    Returns:
        ``(http_status, body, exit_code)``: 202 with the run object (exit 0 when every
        record is accepted, 1 when some are rejected), or 400/413 with the error envelope
        (exit 2).

    """
    request_id = new_request_id()
    try:
        from pytest_legaleval.pipeline.sources import dataset_paths

        loaded = load_dataset(dataset_paths(paths), fmt)
    except DatasetRejected as exc:
        return exc.status, exc.envelope(request_id), EXIT_REJECTED
    errors = [error.to_dict() for error in loaded.errors]
    rejected = len(loaded.rejected)
    # Totals come from the files, not from the evaluable entries: a Turing answers or
    # evaluation file validates entries that never become records.
    total = sum(info.total_records for info in loaded.datasets)
    accepted = sum(info.accepted_records for info in loaded.datasets)
    body = {
        "run_id": new_run_id(),
        "status": "accepted_with_record_errors" if rejected else "accepted",
        "summary": {
            "total_records": total,
            "accepted_records": accepted,
            "rejected_records": total - accepted,
        },
        "record_errors": errors,
        "request_id": request_id,
    }
    return 202, body, EXIT_RECORD_ERRORS if rejected else EXIT_OK


def _cmd_validate(args: argparse.Namespace) -> int:
    status, body, code = validation_body(args.paths, args.dataset_format)
    if not args.quiet:
        print(f"HTTP {status}", file=sys.stderr)
    print(printable_json(body))  # record ids and messages from data reach the terminal
    return code


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="legaleval", description="pytest-legaleval tools: validate datasets, inspect runs."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    validate = sub.add_parser(
        "validate",
        help="check datasets against their contract and print the contract's response body",
        description="Print the Dataset Contract's body: the 202 run object with record_errors, "
        "or the 400/413 error envelope. Exit 0: all records valid; 1: some rejected; "
        "2: the dataset is rejected.",
    )
    validate.add_argument("paths", nargs="+", metavar="PATH", help="dataset file or directory")
    validate.add_argument("--dataset-format", default="auto", choices=("auto", *FORMATS))
    validate.add_argument("-q", "--quiet", action="store_true", help="print only the body")
    validate.set_defaults(func=_cmd_validate)
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``legaleval`` console script."""
    args = build_parser().parse_args(argv)
    try:
        result: int = args.func(args)
    except ConfigError as exc:
        print(f"legaleval: error: {exc}", file=sys.stderr)
        return EXIT_REJECTED
    return result


if __name__ == "__main__":
    sys.exit(main())
