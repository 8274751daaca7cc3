"""The shared streaming writer: every importer's rows are validated, counted and written here.

Each :class:`~pytest_legaleval.importers.base.SourceRow` ends in exactly one bucket:

- **written**: its record passed :func:`~pytest_legaleval.validation.check_legal_eval_row`
  (the very check ``--dataset`` applies) and its id is new;
- **failed**: the importer could not build a record, the record is invalid, or its id
  repeats an earlier record with other content; each failure keeps its reason;
- **skipped**: not wanted (another ``--split``, not drawn by ``--limit``) or an exact
  repeat of an earlier record; each skip is counted under its reason.

Every string is put in Unicode NFC first (the contract requires it; NFC changes no
meaning). Nothing is dropped silently: ``read == written + failed + skipped`` always. Rows stream to
a temporary file next to the output, renamed into place at the end, so an interrupted
import leaves no half-written dataset. With ``--limit N`` and no seed the first N records
are kept and reading stops there; with a seed, N records are drawn uniformly from all of
them (a reservoir, so only N lines are held) and written in source order.
"""

from __future__ import annotations

import json
import os
import random
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError, InvalidValue
from pytest_legaleval.importers.base import SourceRow
from pytest_legaleval.validation import check_legal_eval_row

__all__ = ["Failure", "ImportSummary", "write_records"]

MAX_FAILURES_KEPT = 50
"""Failures kept with their full reason; the rest are only counted (by reason)."""


@dataclass(frozen=True)
class Failure:
    """One row that did not become a record."""

    where: str
    reason: str
    record_id: str | None = None


@dataclass
class ImportSummary:
    """What one import read and wrote."""

    output: Path
    read: int = 0
    written: int = 0
    failed: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    failure_kinds: Counter[str] = field(default_factory=Counter)
    per_file: dict[str, Counter[str]] = field(default_factory=dict)
    stopped_at_limit: bool = False

    @property
    def skipped_total(self) -> int:
        """Rows skipped, whatever the reason."""
        return sum(self.skipped.values())

    def _count(self, row: SourceRow, outcome: str) -> None:
        self.per_file.setdefault(row.where.split(" row ")[0], Counter())[outcome] += 1

    def fail(self, row: SourceRow, kind: str, reason: str, record_id: str | None) -> None:
        """Count a failed row and keep its reason (the first :data:`MAX_FAILURES_KEPT`)."""
        self.failed += 1
        self.failure_kinds[kind] += 1
        self._count(row, "failed")
        if len(self.failures) < MAX_FAILURES_KEPT:
            self.failures.append(Failure(row.where, reason, record_id))

    def to_dict(self) -> dict[str, object]:
        """The summary as JSON-ready data (the CLI's ``--summary`` file)."""
        return {
            "output": str(self.output),
            "read": self.read,
            "written": self.written,
            "failed": self.failed,
            "skipped": dict(sorted(self.skipped.items())),
            "failure_kinds": dict(sorted(self.failure_kinds.items())),
            "failures": [f.__dict__ for f in self.failures],
            "per_file": {k: dict(sorted(v.items())) for k, v in self.per_file.items()},
            "stopped_at_limit": self.stopped_at_limit,
        }


def write_records(
    rows: Iterable[SourceRow],
    output: Path,
    *,
    split: str | None = None,
    limit: int | None = None,
    seed: int | None = None,
    force: bool = False,
) -> ImportSummary:
    """Validate ``rows`` and write their records to ``output`` as ``legal_eval_v1`` JSONL.

    Args:
        rows: an importer's rows, in order.
        output: the JSONL file to write (replaced atomically when done).
        split: keep only rows of this split (rows whose split is unknown are kept).
        limit: keep at most this many records.
        seed: with ``limit``, draw the records at random with this seed instead of
            keeping the first ones.
        force: overwrite an existing ``output``.

    Returns:
        The counts; the valid records are written even when some rows failed.

    Raises:
        ConfigError: ``output`` exists without ``force``, or a negative ``limit``; also
            whatever the importer raises for an unreadable file.

    """
    if output.exists() and not force:
        raise ConfigError(f"--out {output} already exists; pass --force to overwrite")
    if limit is not None and limit < 0:
        raise ConfigError(f"--limit must be 0 or more, not {limit}")
    summary = ImportSummary(output)
    seen: dict[str, tuple[str, str]] = {}
    sampler = random.Random(seed) if seed is not None and limit is not None else None
    reservoir: list[tuple[int, str]] = []
    output.parent.mkdir(parents=True, exist_ok=True)
    temp = output.with_name(f".{output.name}.tmp-{os.getpid()}")
    try:
        with temp.open("w", encoding="utf-8") as handle:
            valid = 0
            for row in rows:
                if sampler is None and limit is not None and summary.written >= limit:
                    summary.stopped_at_limit = True
                    break
                summary.read += 1
                line = _checked_line(row, summary, seen, split)
                if line is None:
                    continue
                if sampler is None:
                    handle.write(line)
                    summary.written += 1
                    summary._count(row, "written")
                    continue
                assert limit is not None
                # Algorithm R: after n valid records each is in the reservoir with
                # probability limit / n.
                if len(reservoir) < limit:
                    reservoir.append((valid, line))
                else:
                    slot = sampler.randrange(valid + 1)
                    if slot < limit:
                        reservoir[slot] = (valid, line)
                valid += 1
            if sampler is not None:
                for _, line in sorted(reservoir):
                    handle.write(line)
                summary.written = len(reservoir)
                if valid > len(reservoir):
                    summary.skipped["not drawn by --limit/--seed"] += valid - len(reservoir)
        os.replace(temp, output)
    finally:
        temp.unlink(missing_ok=True)
    return summary


def _checked_line(
    row: SourceRow, summary: ImportSummary, seen: dict[str, tuple[str, str]], split: str | None
) -> str | None:
    """The row's JSONL line, or ``None`` after counting it as failed or skipped."""
    if row.skip is not None and row.record is None and row.error is None:
        summary.skipped[row.skip] += 1
        summary._count(row, "skipped")
        return None
    if split is not None and row.split is not None and row.split != split:
        summary.skipped[f"split {row.split} (not --split {split})"] += 1
        summary._count(row, "skipped")
        return None
    if row.record is None:
        summary.fail(row, "conversion", row.error or "no record was built", None)
        return None
    record_id = row.record.get("id")
    shown_id = record_id if isinstance(record_id, str) else None
    try:
        record = _nfc(row.record)
        errors, sha256 = check_legal_eval_row(record, summary.read - 1)
        line = json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n"
    except (TypeError, ValueError, RecursionError) as exc:
        # A value JSON cannot hold (a date from a spreadsheet, a NaN) or keys that merge in
        # NFC: the importer's bug or the data's, but a row like any other, not a crash.
        summary.fail(row, "invalid_field_type", f"not JSON data: {exc}", shown_id)
        return None
    if errors:
        reason = "; ".join(e.message for e in errors[:3])
        if len(errors) > 3:
            reason += f"; and {len(errors) - 3} more"
        summary.fail(row, errors[0].code, reason, shown_id)
        return None
    assert isinstance(record_id, str)
    first = seen.get(record_id)
    if first is not None:
        if first[1] == sha256:
            summary.skipped["exact repeat of an earlier record"] += 1
            summary._count(row, "skipped")
        else:
            summary.fail(
                row,
                "duplicate_record_id",
                f"id {record_id!r} is already used by {first[0]} for another record",
                record_id,
            )
        return None
    seen[record_id] = (row.where, sha256)
    return line


def _nfc(value: Any) -> Any:
    """``value`` with every string in Unicode NFC, as the contract requires.

    NFC only merges canonically equivalent sequences (``u`` + combining diaeresis is
    ``ü``), so no text changes meaning; LEXam has rows in decomposed form.

    Raises:
        ValueError: two keys of one object become equal.

    """
    if isinstance(value, str):
        if unicodedata.is_normalized("NFC", value):
            return value
        return unicodedata.normalize("NFC", value)
    if isinstance(value, dict):
        normalized = {_nfc(k): _nfc(v) for k, v in value.items()}
        if len(normalized) < len(value):
            # Two keys that differ only in normalization would merge into one: a loss.
            raise InvalidValue("two keys of one object are the same text once in NFC")
        return normalized
    if isinstance(value, list):
        return [_nfc(v) for v in value]
    return value
