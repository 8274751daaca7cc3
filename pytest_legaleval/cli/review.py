"""``legaleval review RUN_DIR``: experts label a blind, random sample of a run in the browser.

``legaleval review RUN_DIR --rater NAME [--sample N | --half-width H] [--double F]`` draws
the sample on first use (seeded, stratified by model and policy or ``--strata``; written
once to ``sample.json`` in the review folder, ``<RUN_DIR>.review/`` by default) and serves
the page for that rater on 127.0.0.1 (``--port``). A second rater runs the same command
with their own name (another port): they join the same sample. ``--prepare`` only draws
the sample. Labels go to ``labels/<rater>.jsonl`` in the review folder (``--labels FILE``
to choose), in the ``--human-labels`` format: ``legaleval audit RUN_DIR --human-labels
<RUN_DIR>.review/labels`` reads them, with the expert–expert agreement.

``legaleval review export RUN_DIR --format turing --out DIR`` writes
``DIR/evaluations/<rater>.json`` per rater (the Turing pipeline's human evaluation
schema), checked by reading it back with our own reader.

Exit 0: served, prepared or exported; 2: a usage error (bad option, not a run directory,
a sample of another run, a seat that cannot be taken).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError

__all__ = ["register"]

EXIT_OK, EXIT_USAGE = 0, 2


def _strata(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a fraction in [0, 1], got {text}")
    return value


def _sample_options(args: argparse.Namespace) -> dict[str, Any]:
    from pytest_legaleval.datasets.review import DEFAULT_STRATA

    if args.sample is not None and args.half_width is not None:
        raise ConfigError("give --sample N or --half-width H, not both")
    draw: dict[str, Any] = {
        "strata": args.strata or DEFAULT_STRATA,
        "double": args.double,
        "seed": args.seed,
    }
    if args.half_width is not None:
        draw["half_width"] = args.half_width
    else:
        draw["size"] = args.sample if args.sample is not None else 100
    return draw


def _review(args: argparse.Namespace, run_dir: Path) -> int:
    from pytest_legaleval.datasets.review import ReviewDesk, open_sample, review_folder

    folder = args.review_dir or review_folder(run_dir)
    sample, created = open_sample(folder, run_dir, **_sample_options(args))
    shared = sum(item.shared for item in sample.items)
    verb = "drew" if created else "joined"
    print(
        f"legaleval review: {verb} the sample {sample.path} ({len(sample.items)} items of "
        f"{sample.population}, {shared} shared, seed {sample.seed}, strata "
        f"{','.join(sample.strata)})",
        file=sys.stderr,
    )
    if args.prepare:
        return EXIT_OK
    if not args.rater:
        raise ConfigError("--rater NAME is required to label (or --prepare to only draw)")
    from pytest_legaleval.service.review.local import serve_review

    roots = tuple(args.attachments_root or ())
    desk = ReviewDesk(folder, sample, run_dir, labels=args.labels, attachments_roots=roots)
    progress = desk.progress(args.rater)  # takes the rater's seat now: a full sample says so
    print(
        f"legaleval review: rater {args.rater}: {progress['done']} of {progress['total']} "
        f"labelled; labels go to {desk.labels_file(args.rater)}",
        file=sys.stderr,
    )
    return serve_review(desk, args.rater, args.port)


def _export(args: argparse.Namespace, run_dir: Path) -> int:
    from pytest_legaleval.datasets.review import review_folder
    from pytest_legaleval.datasets.turing_export import write_human_evaluations

    if args.format != "turing":
        raise ConfigError(f"--format must be turing, got {args.format!r}")
    if args.out is None:
        raise ConfigError("--out DIR is required: the folder that gets evaluations/<rater>.json")
    labels = args.labels or (args.review_dir or review_folder(run_dir)) / "labels"
    written = write_human_evaluations(labels, args.out)
    for path, count in written.items():
        print(json.dumps({"file": str(path), "decisions": count}))
    return EXIT_OK


def _cmd_review(args: argparse.Namespace) -> int:
    if args.target == "export":
        if args.run_dir is None:
            raise ConfigError("legaleval review export RUN_DIR --format turing --out DIR")
        run_dir = args.run_dir
    else:
        if args.run_dir is not None:
            raise ConfigError(f"unexpected argument {str(args.run_dir)!r}")
        run_dir = Path(args.target)
    try:
        return _export(args, run_dir) if args.target == "export" else _review(args, run_dir)
    except (ConfigError, OSError) as exc:
        print(f"legaleval review: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_USAGE


def register(subparsers: Any) -> None:
    """Add the ``review`` subcommand."""
    review = subparsers.add_parser(
        "review",
        help="experts label a blind, random, stratified sample of a run in the browser",
        description="Serve a blind labelling page for one rater (the question, the answer, "
        "the rubric; never the judge's verdict) over a seeded stratified sample of the run's "
        "judged items, written once and joined by later raters. `legaleval review export "
        "RUN_DIR --format turing --out DIR` writes the Turing human evaluation files.",
    )
    review.add_argument("target", metavar="RUN_DIR", help="the run directory (or `export`)")
    review.add_argument("run_dir", nargs="?", type=Path, help=argparse.SUPPRESS)
    review.add_argument("--rater", metavar="NAME", help="who labels (written on every label)")
    review.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (8765; 0: any)")
    review.add_argument(
        "--labels", type=Path, metavar="FILE", help="labels file (default: "
        "<review dir>/labels/<rater>.jsonl); for export: a labels file or folder"
    )  # fmt: skip
    review.add_argument(
        "--review-dir", type=Path, metavar="DIR", help="review folder (default <RUN_DIR>.review)"
    )
    size = review.add_argument_group("the sample (drawn once; later raters join it)")
    size.add_argument("--sample", type=int, metavar="N", help="items to draw (default 100)")
    size.add_argument(
        "--half-width", type=float, metavar="H",
        help="draw as many items as a ±H interval of the human pass rate needs",
    )  # fmt: skip
    size.add_argument(
        "--strata", type=_strata, metavar="FIELDS",
        help="prediction fields to stratify by, comma-separated (default model,policy_id)",
    )  # fmt: skip
    size.add_argument(
        "--double", type=_fraction, default=0.0, metavar="F",
        help="share of the sample a second rater labels too (default 0)",
    )  # fmt: skip
    size.add_argument("--seed", type=int, help="the draw's seed (default: a fresh one, recorded)")
    size.add_argument("--prepare", action="store_true", help="draw the sample and exit")
    review.add_argument(
        "--attachments-root", action="append", metavar="DIR",
        help="a folder attachments may be read from (repeatable)",
    )  # fmt: skip
    review.add_argument("--format", default="turing", help="export format (turing)")
    review.add_argument("--out", type=Path, metavar="DIR", help="export folder")
    review.set_defaults(func=_cmd_review)
