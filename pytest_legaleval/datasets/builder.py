"""``legaleval build-dataset``: stream the offline dataset into the RAG splits and manifest.

The offline dataset (JSONL, one generator record per line) is read one line at a time and
every kept record is written as soon as it is read, so memory does not grow with the
input. ``qa`` records go to the QA split, ``summaries`` to the summaries split; any other
task type stays in the offline dataset and is counted in the manifest's
``excluded_task_types`` (with a warning). Contexts are renumbered ``[1] …`` by position.

Splits are written to temporary files next to their targets and renamed only when the
whole input was read without an invalid record: a failed build leaves no partial output.
A split that receives no record is not written at all (an empty file would be a dataset
without rows, which ``pytest --dataset`` rejects): the manifest lists it with count 0, the
build warns, and ``check-dataset`` accepts a count of 0 without a file.
Duplicate ``task_id`` values are not looked for here (that would hold every id in memory);
the ``rag_qa`` / ``rag_summaries`` formats report them when the splits are loaded.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.formats.base import JSON_WHITESPACE, UTF8_BOM
from pytest_legaleval.formats.legal_eval_v1 import parse_json_line
from pytest_legaleval.formats.rag import RAG_QA, RAG_SUMMARIES, RagFormat, number_contexts
from pytest_legaleval.validation.checks import Issue, canonicalize, format_path, scan_values
from pytest_legaleval.validation.duplicates import colon_count, duplicate_key_issues

__all__ = [
    "SPLIT_FIELDS",
    "BuildFailed",
    "BuildPaths",
    "BuildResult",
    "build_dataset",
    "manifest_path_text",
    "split_row",
]

SPLIT_FIELDS: dict[str, tuple[str, ...]] = {
    "qa": ("task_id", "task_type", "question", "reference_answer", "rag_prompt", "contexts",
           "sources", "retrieved", "citations", "answer_citations", "metadata"),
    "summaries": ("task_id", "task_type", "instruction", "reference_summary", "rag_prompt",
                  "contexts", "sources", "retrieved", "citations", "metadata"),
}  # fmt: skip
"""Each split's fields in the spec's order (``answer_citations`` only when present)."""
_FORMATS: dict[str, RagFormat] = {"qa": RAG_QA, "summaries": RAG_SUMMARIES}
_LIST_DEFAULTS = ("sources", "retrieved", "citations")
_MAX_ERRORS_KEPT = 100


class BuildFailed(ConfigError):
    """The offline dataset has invalid records; nothing was written."""

    def __init__(self, message: str, problems: list[str], invalid: int) -> None:
        super().__init__(message)
        self.problems = problems
        self.invalid = invalid


@dataclass(frozen=True, slots=True)
class BuildPaths:
    """Where the builder reads and writes."""

    offline_dataset: Path
    qa_output: Path
    summary_output: Path
    manifest_output: Path
    root: Path
    """The project root: manifest paths are written relative to it when inside it."""

    def outputs(self) -> dict[str, Path]:
        """Split name -> output path."""
        return {"qa": self.qa_output, "summaries": self.summary_output}


@dataclass
class BuildResult:
    """What one build wrote."""

    manifest: dict[str, Any]
    counts: dict[str, int]
    """Records written per split."""
    excluded: dict[str, int]
    """Offline records of unsupported task types, by task type."""
    read: int
    """Offline records read (stops early once ``--limit`` fills every split)."""
    warnings: list[str] = field(default_factory=list)


def manifest_path_text(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` (POSIX separators) when inside it, else absolute."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(resolved)


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.removeprefix(UTF8_BOM) if number == 1 else raw
            line = line.strip(JSON_WHITESPACE)
            if line:
                yield number, line


def split_row(split: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """Project an offline record onto its split's fields, contexts renumbered."""
    row: dict[str, Any] = {}
    for key in SPLIT_FIELDS[split]:
        if key in raw:
            row[key] = raw[key]
        elif key in _LIST_DEFAULTS:
            row[key] = []
        elif key == "metadata":
            row[key] = {}
    contexts = row.get("contexts")
    if isinstance(contexts, list) and all(isinstance(c, str) for c in contexts):
        row["contexts"] = number_contexts(contexts)
    return row


def _describe(issue: Issue) -> str:
    return f"{format_path('', issue.parts) or 'record'} {issue.text}"


def _problems(split: str, row: dict[str, Any], where: str) -> list[str]:
    issues = _FORMATS[split].row_issues(row)
    if not canonicalize(row).clean:
        issues.extend(scan_values(row))
    return [f"{where}: {_describe(issue)}" for issue in issues]


def _temporary(target: Path) -> Path:
    return target.with_name(f".{target.name}.tmp-{os.getpid()}")


def _check_targets(paths: BuildPaths, force: bool) -> None:
    if not paths.offline_dataset.is_file():
        raise ConfigError(f"offline dataset {paths.offline_dataset} does not exist")
    targets = [*paths.outputs().values(), paths.manifest_output]
    if len(set(targets)) != len(targets):
        raise ConfigError("--qa-output, --summary-output and --manifest-output must differ")
    existing = [str(p) for p in targets if p.exists()]
    if existing and not force:
        raise ConfigError(f"{', '.join(existing)} already exist; pass --force to overwrite")


def build_dataset(
    paths: BuildPaths,
    *,
    version: str = "v1",
    limit: int | None = None,
    force: bool = False,
    now: datetime | None = None,
) -> BuildResult:
    """Build the QA and summaries splits and the manifest from the offline dataset.

    Args:
        paths: input, outputs and project root.
        version: the manifest's ``version`` (``vN``).
        limit: at most this many records per split; reading stops once every split is full.
        force: overwrite existing outputs.
        now: the build time (tests pin it).

    Raises:
        ConfigError: a missing input, outputs that exist without ``force``, a bad version.
        BuildFailed: invalid offline records; the message lists every problem (all rows,
            all fields; the first 100, and how many more).

    """
    if not version.startswith("v") or not version[1:2].isdigit():
        raise ConfigError(f"--version must look like v1, v2 …, got {version!r}")
    if limit is not None and limit < 0:
        raise ConfigError(f"--limit must be 0 or more, got {limit}")
    _check_targets(paths, force)
    counts = dict.fromkeys(SPLIT_FIELDS, 0)
    excluded: Counter[str] = Counter()
    problems: list[str] = []
    invalid = read = found_total = 0
    temps = {split: _temporary(target) for split, target in paths.outputs().items()}
    name = paths.offline_dataset.name
    try:
        with ExitStack() as stack:
            handles: dict[str, IO[str]] = {}
            for split, temp in temps.items():
                temp.parent.mkdir(parents=True, exist_ok=True)
                handles[split] = stack.enter_context(temp.open("w", encoding="utf-8"))
            for number, line in _lines(paths.offline_dataset):
                if limit is not None and all(n >= limit for n in counts.values()):
                    break
                read += 1
                where = f"{name} line {number}"
                raw, unreadable = parse_json_line(line)
                task_type = raw.get("task_type") if isinstance(raw, dict) else None
                found: list[str] = []
                repeated = [] if unreadable else duplicate_key_issues(line, colon_count(raw))
                if unreadable is not None:
                    found = [f"{where}: line is {unreadable}"]
                elif repeated:
                    # Even task_type may be the repeated key: the row cannot be routed.
                    found = [f"{where}: {_describe(issue)}" for issue in repeated]
                elif not isinstance(task_type, str) or not task_type:
                    found = [f"{where}: task_type must be a non-empty string"]
                elif task_type not in SPLIT_FIELDS:
                    excluded[task_type] += 1
                    continue
                else:
                    assert isinstance(raw, dict)
                    if limit is not None and counts[task_type] >= limit:
                        continue
                    row = split_row(task_type, raw)
                    found = _problems(task_type, row, where)
                    if not found:
                        handles[task_type].write(json.dumps(row, ensure_ascii=False) + "\n")
                        counts[task_type] += 1
                if found:
                    invalid += 1
                    found_total += len(found)
                    problems.extend(found[: max(0, _MAX_ERRORS_KEPT - len(problems))])
        if invalid:
            raise BuildFailed(_failure(paths.offline_dataset, invalid, found_total, problems),
                              problems, invalid)  # fmt: skip
        warnings = []
        for split, temp in temps.items():
            target = paths.outputs()[split]
            if counts[split]:
                os.replace(temp, target)
                continue
            # An empty split file is a dataset `pytest --dataset DIR` must reject (a file
            # without rows); none is written, and one left by an earlier build goes.
            target.unlink(missing_ok=True)
            warnings.append(
                f"no {split} records: {manifest_path_text(target, paths.root)} was not written "
                "(its manifest count is 0)"
            )
    finally:
        for temp in temps.values():
            temp.unlink(missing_ok=True)
    manifest = _manifest(paths, version, limit, counts, dict(sorted(excluded.items())), now)
    _write_json(paths.manifest_output, manifest)
    warnings.extend(
        f"unsupported task type {task_type!r}: {n} record(s) left in the offline dataset"
        for task_type, n in sorted(excluded.items())
    )
    return BuildResult(manifest, counts, dict(sorted(excluded.items())), read, warnings)


def _failure(offline: Path, invalid: int, total: int, problems: list[str]) -> str:
    """Every problem found (up to the kept ones), so one run shows what to fix."""
    more = f"; … and {total - len(problems)} more" if total > len(problems) else ""
    return (
        f"{invalid} invalid record(s) in {offline}; nothing was written. "
        f"{total} problem(s): {'; '.join(problems)}{more}"
    )


def _manifest(
    paths: BuildPaths,
    version: str,
    limit: int | None,
    counts: dict[str, int],
    excluded: dict[str, int],
    now: datetime | None,
) -> dict[str, Any]:
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "version": version,
        "generated_at_utc": stamp,
        "source_offline_dataset": manifest_path_text(paths.offline_dataset, paths.root),
        "filters": {} if limit is None else {"limit": limit},
        "splits": {
            split: {"path": manifest_path_text(target, paths.root), "count": counts[split]}
            for split, target in paths.outputs().items()
        },
        "excluded_task_types": excluded,
    }


def _write_json(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = _temporary(path)
    try:
        temp.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
