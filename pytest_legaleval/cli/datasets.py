"""``legaleval build-dataset``, ``check-dataset``, ``agreement`` and ``convert``.

Every command prints its result on stdout and a problem as one line on stderr
(``legaleval <command>: error: …``); exit codes are in each command's ``--help``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError, DatasetRejected

__all__ = ["register"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _error(command: str, message: object) -> None:
    text = " ".join(str(message).split())
    print(f"legaleval {command}: error: {text}", file=sys.stderr)


def _cmd_build(args: argparse.Namespace) -> int:
    from pytest_legaleval.datasets.builder import BuildFailed, BuildPaths, build_dataset
    from pytest_legaleval.datasets.config import load_dataset_config

    try:
        config = load_dataset_config(args.config)
        paths = BuildPaths(
            offline_dataset=args.offline_dataset or config.offline_dataset,
            qa_output=args.qa_output or config.qa_output,
            summary_output=args.summary_output or config.summary_output,
            manifest_output=args.manifest_output or config.manifest_output,
            root=config.root,
        )
        result = build_dataset(
            paths, version=args.version or config.version, limit=args.limit, force=args.force
        )
    except BuildFailed as exc:
        _error("build-dataset", exc)
        return EXIT_FAILED
    except ConfigError as exc:
        _error("build-dataset", exc)
        return EXIT_USAGE
    for warning in result.warnings:
        print(f"legaleval build-dataset: warning: {warning}", file=sys.stderr)
    manifest = result.manifest
    print(f"read {result.read} offline record(s) from {manifest['source_offline_dataset']}")
    for split, entry in manifest["splits"].items():
        print(f"{split}: {entry['count']} record(s) -> {entry['path']}")
    for task_type, count in result.excluded.items():
        print(f"excluded {task_type}: {count}")
    print(f"manifest {manifest['version']} -> {paths.manifest_output}")
    return EXIT_OK


def _cmd_check(args: argparse.Namespace) -> int:
    from pytest_legaleval.datasets.check import check_dataset
    from pytest_legaleval.datasets.config import find_project_root, load_dataset_config

    try:
        config = load_dataset_config(args.config)
        manifest = args.manifest or config.manifest_output
        root = config.root if args.manifest is None else find_project_root(args.manifest.parent)
        baseline = args.baseline or config.baseline_manifest
        result = check_dataset(manifest, root, baseline_path=baseline, max_drop=args.max_drop)
    except ConfigError as exc:
        _error("check-dataset", exc)
        return EXIT_USAGE
    for line in result.lines:
        print(line)
    if result.alerts:
        _error("check-dataset", f"{len(result.alerts)} alert(s); first: {result.alerts[0]}")
        return EXIT_FAILED
    return EXIT_OK


def _cmd_agreement(args: argparse.Namespace) -> int:
    from pytest_legaleval.datasets.agreement import compare_decisions, load_decisions
    from pytest_legaleval.datasets.turing_export import automated_evaluation_from_run

    try:
        problems: list[str] = []
        if args.automated.is_dir():
            exported = automated_evaluation_from_run(args.automated)
            automated = [d for d in exported["decisions"]]
            if args.write_automated:
                args.write_automated.write_text(
                    json.dumps(exported, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
                )
        else:
            automated, problems = load_decisions(args.automated, "automated_evaluation")
        human, human_problems = load_decisions(args.human, "human_evaluation")
    except (ConfigError, DatasetRejected) as exc:
        _error("agreement", exc)
        return EXIT_USAGE
    except OSError as exc:  # a missing or unreadable file: a usage error, no traceback
        _error("agreement", f"{exc.filename or args.automated}: {exc.strerror or exc}")
        return EXIT_USAGE
    for problem in [*problems, *human_problems]:
        print(
            f"legaleval agreement: warning: invalid decision left out: {problem}", file=sys.stderr
        )
    report = compare_decisions(automated, human).to_dict()
    print(json.dumps(report, indent=2, ensure_ascii=False))
    if report["overall"]["pairs"] == 0:
        _error("agreement", "no decision id appears in both files")
        return EXIT_FAILED
    return EXIT_OK


def _cmd_convert(args: argparse.Namespace) -> int:
    from pytest_legaleval.importers.convert import ConversionFailed, convert

    try:
        result = convert(args.map, args.inputs, args.out, force=args.force)
    except ConversionFailed as exc:
        if args.errors:
            args.errors.write_text(
                "".join(json.dumps(e.to_dict(), ensure_ascii=False) + "\n" for e in exc.errors),
                encoding="utf-8",
            )
        _error("convert", exc)
        return EXIT_FAILED
    except ConfigError as exc:
        _error("convert", exc)
        return EXIT_USAGE
    for path, count in result.per_input.items():
        print(f"{path}: {count} row(s)")
    print(f"wrote {result.rows} validated legal_eval_v1 row(s) to {result.output}")
    return EXIT_OK


def _build_parser(sub: Any) -> None:
    build = sub.add_parser(
        "build-dataset",
        help="build the RAG QA and summaries splits and manifest.json from the offline dataset",
        description="Stream the offline dataset into qa_pairs.jsonl and summaries.jsonl "
        "(contexts renumbered [1] ...) and write manifest.json. Config paths resolve "
        "relative to the project root; flag paths relative to the current directory. "
        "Unsupported task types are counted and warned about. Exit 0: built; 1: invalid "
        "offline records (nothing written); 2: usage error (missing input, outputs exist "
        "without --force, bad config).",
    )
    build.add_argument("--config", type=Path, metavar="FILE", help="YAML config (dataset: ...)")
    build.add_argument("--offline-dataset", type=Path, metavar="PATH")
    build.add_argument("--qa-output", type=Path, metavar="PATH")
    build.add_argument("--summary-output", type=Path, metavar="PATH")
    build.add_argument("--manifest-output", type=Path, metavar="PATH")
    build.add_argument("--version", help="manifest version, vN (default: the config's, else v1)")
    build.add_argument("--limit", type=int, metavar="N", help="at most N records per split")
    build.add_argument("--force", action="store_true", help="overwrite existing outputs")
    build.set_defaults(func=_cmd_build)


def _check_parser(sub: Any) -> None:
    check = sub.add_parser(
        "check-dataset",
        help="compare split counts with the manifest and a baseline manifest",
        description="Check that every split exists, has the manifest's count and valid rows, "
        "and did not drop more than --max-drop against a baseline manifest. Exit 0: all "
        "checks pass; 1: an alert; 2: usage error (missing or invalid manifest).",
    )
    check.add_argument("--config", type=Path, metavar="FILE")
    check.add_argument("--manifest", type=Path, metavar="PATH", help="default: the config's")
    check.add_argument("--baseline", type=Path, metavar="PATH", help="an earlier manifest.json")
    check.add_argument(
        "--max-drop", type=float, default=0.10, metavar="F", help="tolerated drop (0.10)"
    )
    check.set_defaults(func=_cmd_check)


def register(subparsers: Any) -> None:
    """Add the ``build-dataset``, ``check-dataset``, ``agreement`` and ``convert`` commands."""
    _build_parser(subparsers)
    _check_parser(subparsers)
    agreement = subparsers.add_parser(
        "agreement",
        help="judge agreement: accuracy, Cohen's kappa, confusion matrix per type and mode",
        description="Pair AUTOMATED and HUMAN decisions by id and print JSON: overall, per "
        "type and per (type, mode). AUTOMATED may be a run directory: its judged "
        "predictions are exported as an automated-evaluation file first. Exit 0: "
        "compared; 1: no decision in common; 2: usage error (unreadable file).",
    )
    agreement.add_argument("automated", type=Path, metavar="AUTOMATED")
    agreement.add_argument("human", type=Path, metavar="HUMAN")
    agreement.add_argument(
        "--write-automated",
        type=Path,
        metavar="FILE",
        help="with a run directory: also write the exported automated-evaluation file",
    )
    agreement.set_defaults(func=_cmd_agreement)
    conv = subparsers.add_parser(
        "convert",
        help="convert CSV, TSV, JSON, JSONL or XLSX files into legal_eval_v1 JSONL",
        description="Map source fields to legal_eval_v1 with a YAML mapping (stable ids "
        "from a hash of named fields); every row is validated before the output is "
        "written. Exit 0: written; 1: rows failed (nothing written); 2: usage error.",
    )
    conv.add_argument("--map", type=Path, required=True, metavar="MAPPING.yaml")
    conv.add_argument("inputs", type=Path, nargs="+", metavar="INPUT")
    conv.add_argument("--out", type=Path, required=True, metavar="FILE.jsonl")
    conv.add_argument("--force", action="store_true", help="overwrite an existing output")
    conv.add_argument(
        "--errors", type=Path, metavar="FILE", help="on failure, write the record_errors (JSONL)"
    )
    conv.set_defaults(func=_cmd_convert)
