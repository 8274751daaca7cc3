"""``legaleval import SOURCE PATH... --out FILE.jsonl``: a public benchmark in one command.

Prints one line per input file (written / failed / skipped), the skip reasons, the first
failures with their reasons and a total on stdout; a usage problem is one line on stderr
(``legaleval import: error: …``). Exit 0: every row imported; 1: some rows failed (the
valid ones are written); 2: usage error (unknown source, missing path or extra, existing
output without ``--force``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers.base import ImportOptions
from pytest_legaleval.importers.protocols import PROTOCOLS, resolve_protocol
from pytest_legaleval.importers.registry import IMPORTER_NAMES, get_importer
from pytest_legaleval.importers.writer import ImportSummary, write_records

__all__ = ["register", "run_import"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
_SHOWN_FAILURES = 10


def run_import(
    source: str,
    paths: list[Path],
    output: Path,
    *,
    options: ImportOptions | None = None,
    limit: int | None = None,
    force: bool = False,
) -> ImportSummary:
    """Import ``paths`` with the ``source`` importer into ``output``.

    Raises:
        ConfigError: an unknown source, a missing path, an unreadable file, a missing
            reader extra, or an existing output without ``force``.

    """
    opts = options or ImportOptions()
    importer = get_importer(source)
    return write_records(
        importer.rows(paths, opts),
        output,
        split=opts.split,
        limit=limit,
        seed=opts.seed,
        force=force,
    )


def _print_summary(summary: ImportSummary) -> None:
    for file, counts in summary.per_file.items():
        parts = [f"{counts.get(k, 0)} {k}" for k in ("written", "failed", "skipped")]
        print(f"{file}: {', '.join(parts)}")
    for reason, count in sorted(summary.skipped.items()):
        print(f"skipped {count}: {reason}")
    for failure in summary.failures[:_SHOWN_FAILURES]:
        print(f"failed: {failure.where}: {failure.reason}")
    if summary.failed > _SHOWN_FAILURES:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(summary.failure_kinds.items()))
        print(f"... {summary.failed - _SHOWN_FAILURES} more failure(s) ({kinds})")
    if summary.stopped_at_limit:
        print("stopped reading at --limit")
    print(
        f"wrote {summary.written} legal_eval_v1 record(s) to {summary.output}; "
        f"{summary.failed} failed, {summary.skipped_total} skipped, {summary.read} read"
    )


def _cmd_import(args: argparse.Namespace) -> int:
    options = ImportOptions(
        split=args.split, few_shot=args.few_shot, seed=args.seed, protocol=args.protocol
    )
    try:
        if args.few_shot < 0:
            raise ConfigError(f"--few-shot must be 0 or more, not {args.few_shot}")
        resolve_protocol(args.source, args.protocol)
        summary = run_import(
            args.source, args.paths, args.out, options=options, limit=args.limit, force=args.force
        )
    except ConfigError as exc:
        print(f"legaleval import: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_USAGE
    _print_summary(summary)
    if args.summary:
        args.summary.write_text(
            json.dumps(summary.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    return EXIT_FAILED if summary.failed else EXIT_OK


def register(subparsers: Any) -> None:
    """Add the ``import`` command."""
    command = subparsers.add_parser(
        "import",
        help="import a public legal benchmark in its upstream layout as legal_eval_v1",
        description="Read a benchmark's upstream files (LEXam data/, LegalBench tasks/, "
        "PRBench, APEX, LAR-ECHR, INCLUDE, LBR's curated files) and write validated "
        "legal_eval_v1 JSONL with stable ids. Every row is written, or counted as skipped "
        "or failed with its reason. Exit 0: all rows imported; 1: some rows failed (the "
        "valid ones are written); 2: usage error.",
    )
    command.add_argument("source", choices=IMPORTER_NAMES, metavar="SOURCE",
                         help=f"one of: {', '.join(IMPORTER_NAMES)}")  # fmt: skip
    command.add_argument("paths", type=Path, nargs="+", metavar="PATH",
                         help="upstream files or folders (searched recursively)")  # fmt: skip
    command.add_argument("--out", type=Path, required=True, metavar="FILE.jsonl")
    command.add_argument("--force", action="store_true", help="overwrite an existing output")
    command.add_argument("--split", metavar="NAME", help="only rows of this split (test, train …)")
    command.add_argument("--limit", type=int, metavar="N", help="at most N records")
    command.add_argument("--seed", type=int, metavar="S",
                         help="with --limit: draw the N records at random with this seed; "
                         "also the seed of --few-shot draws")  # fmt: skip
    command.add_argument("--few-shot", type=int, default=0, metavar="K",
                         help="legalbench --protocol legalbench: K demonstrations from "
                         "train.tsv before each test question (default 0: zero-shot)")  # fmt: skip
    protocols = "; ".join(
        f"{source}: {', '.join(p.names)} (default {p.default})" for source, p in PROTOCOLS.items()
    )
    command.add_argument("--protocol", metavar="NAME",
                         help="how the records are prompted and graded (default: the "
                         f"benchmark's official protocol) — {protocols}")  # fmt: skip
    command.add_argument("--summary", type=Path, metavar="FILE",
                         help="also write the counts and failures as JSON")  # fmt: skip
    command.set_defaults(func=_cmd_import)
