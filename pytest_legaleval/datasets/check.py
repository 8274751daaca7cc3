"""``legaleval check-dataset``: split counts against the manifest and a baseline manifest.

Three checks, as the dataset spec's "Validation & Regression Checks" ask:
- every split file exists, its row count equals the manifest's ``count``, and its rows
  pass the split's schema (the ``rag_qa`` / ``rag_summaries`` validation); a split with
  count 0 has no file (the builder writes none), and a split file without rows is an
  alert, since ``pytest --dataset`` rejects it;
- against a baseline manifest (an earlier build), no split lost more than ``max_drop``
  (10 % by default) of its records, and no split disappeared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError, DatasetRejected
from pytest_legaleval.formats.base import JSON_WHITESPACE, RejectedRecord, read_file
from pytest_legaleval.formats.rag import (
    RAG_QA,
    RAG_SUMMARIES,
    RagFormat,
    manifest_file,
    read_manifest,
)
from pytest_legaleval.util.paths import PathRefused

__all__ = ["DEFAULT_MAX_DROP", "DatasetCheck", "check_dataset", "count_rows"]

DEFAULT_MAX_DROP = 0.10
_FORMATS: dict[str, RagFormat] = {"qa": RAG_QA, "summaries": RAG_SUMMARIES}


@dataclass
class DatasetCheck:
    """The outcome of :func:`check_dataset`."""

    lines: list[str] = field(default_factory=list)
    """One line per split and comparison, ``ok`` or ``ALERT``."""
    alerts: list[str] = field(default_factory=list)
    """The problems (a subset of ``lines``)."""

    def ok(self, text: str) -> None:
        """Record a passing check."""
        self.lines.append(f"ok     {text}")

    def alert(self, text: str) -> None:
        """Record a failed check."""
        self.lines.append(f"ALERT  {text}")
        self.alerts.append(text)


def count_rows(path: Path) -> int:
    """Count the non-blank lines of a JSONL file without holding it."""
    with path.open("rb") as handle:
        return sum(1 for raw in handle if raw.strip(JSON_WHITESPACE))


def _manifest(path: Path, what: str) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"{what} {path}: no such file")
    try:
        return read_manifest(path)
    except DatasetRejected as exc:
        raise ConfigError(f"{what}: {exc.message}") from None


def _invalid_rows(split: str, path: Path) -> int | None:
    fmt = _FORMATS.get(split)
    if fmt is None:
        return None
    try:
        loaded = read_file(fmt, path)
    except DatasetRejected as exc:
        # Every row invalid, or a manifest next to the file that disagrees: count them all.
        rejected = exc.details.get("rejected_records")
        return int(rejected) if isinstance(rejected, int) else count_rows(path)
    return sum(isinstance(entry, RejectedRecord) for entry in loaded.entries)


def _check_split(
    result: DatasetCheck, split: str, entry: dict[str, Any], manifest_path: Path, root: Path
) -> None:
    try:
        path = manifest_file(manifest_path, entry["path"], extra_roots=(root,))
    except PathRefused as exc:
        result.alert(f"{split}: {exc}")
        return
    expected = entry["count"]
    if not path.is_file():
        if expected == 0:
            result.ok(f"{split}: 0 rows and no file, as the manifest says")
        else:
            result.alert(f"{split}: {path} is missing")
        return
    rows = count_rows(path)
    if rows == 0:
        # What pytest --dataset rejects must not pass here (the builder writes no such file).
        result.alert(
            f"{split}: {path} has no rows, and `pytest --dataset` rejects a split file "
            "without rows; delete it or rebuild with `legaleval build-dataset --force`"
        )
        return
    if rows != expected:
        result.alert(f"{split}: {rows} rows in {path}, manifest says {expected}")
    else:
        result.ok(f"{split}: {rows} rows, as the manifest says")
    invalid = _invalid_rows(split, path)
    if invalid:
        result.alert(f"{split}: {invalid} invalid row(s); run legaleval validate {path}")


def check_dataset(
    manifest_path: Path,
    root: Path,
    *,
    baseline_path: Path | None = None,
    max_drop: float = DEFAULT_MAX_DROP,
) -> DatasetCheck:
    """Compare the splits with their manifest and, optionally, a baseline manifest.

    Args:
        manifest_path: the current ``manifest.json``.
        root: the project root. Split paths resolve from the manifest's folder and the
            folders above it first (see :func:`~pytest_legaleval.formats.rag.manifest_file`),
            so the working directory does not matter; ``root`` is searched after them and is
            the one folder besides the manifest's that a split may lie in.
        baseline_path: an earlier manifest to compare counts with.
        max_drop: the largest tolerated relative drop of a split's count (0.10 = 10 %).

    Raises:
        ConfigError: a manifest is missing or invalid.

    """
    if not 0 <= max_drop < 1:
        raise ConfigError(f"--max-drop must be in [0, 1), got {max_drop}")
    manifest = _manifest(manifest_path, "manifest")
    result = DatasetCheck()
    for split, entry in manifest["splits"].items():
        _check_split(result, split, entry, manifest_path, root)
    if baseline_path is not None:
        baseline = _manifest(baseline_path, "baseline manifest")
        for split, entry in baseline["splits"].items():
            before = entry["count"]
            current = manifest["splits"].get(split)
            if current is None:
                result.alert(f"{split}: in the baseline ({before}) but not in the manifest")
                continue
            after = current["count"]
            change = (after - before) / before if before else 0.0
            text = f"{split}: {before} -> {after} ({change:+.1%}) against the baseline"
            if before and -change > max_drop:
                result.alert(f"{text}, a drop of more than {max_drop:.0%}")
            else:
                result.ok(text)
    return result
