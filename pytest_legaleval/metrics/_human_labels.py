"""Human labels (``--human-labels PATH``): read and check them, one row at a time.

Two layouts, told apart by content:

* JSONL, one label per line (``schemas/human_label.schema.json``): ``record_id``,
  ``model`` (may be left out when the run has one model for the record), ``passed``
  and/or ``score`` (in [0, 1]), optional ``criterion_id`` (the label is on that criterion
  of the record, not on the item) and ``rater``;
* the Turing pipeline's human evaluation files (``evaluations/{username}.json``,
  ``{"decisions": [...]}``): a ``critique`` decision's ``verdict`` is the label —
  ``correct`` a pass, ``incorrect`` or ``insufficient`` a fail — on the answer of
  ``answer_model`` to the record the decision ``id`` names (``record_id`` or
  ``record_id@model``, as ``legaleval agreement`` exports them). The rater is the file's
  name. Decisions about ill-posed questions judge no answer: skipped and counted.

A directory reads every ``*.jsonl`` and ``*.json`` file in it, in name order. Every bad row
is reported in the Dataset Contract's ``record_errors`` shape (``labels[i]`` or
``decisions[i]``, the file and line in the message) and left out; the rest is read. Only a
file that cannot be read at all raises. Matching labels to a run's items (unknown ids,
duplicates, several raters) is :mod:`._audit_items`' job.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError, DatasetRejected
from pytest_legaleval.formats.base import UTF8_BOM, display_name
from pytest_legaleval.formats.legal_eval_v1 import parse_json_line
from pytest_legaleval.formats.turing import detect_kind, read_turing_file
from pytest_legaleval.validation import MAX_PAYLOAD_BYTES, MAX_RECORD_BYTES, RecordError
from pytest_legaleval.validation.checks import Issue, scan_values, show, usable_id
from pytest_legaleval.validation.duplicates import colon_count, duplicate_key_issues
from pytest_legaleval.validation.record_error import issues_to_errors
from pytest_legaleval.validation.schemas import schema_issues

__all__ = [
    "FAIL_VERDICTS",
    "PASS_VERDICTS",
    "HumanLabel",
    "LabelFile",
    "labels_from_rows",
    "read_human_labels",
]

SCHEMA = "human_label"
PASS_VERDICTS = frozenset({"correct", "pass", "passed"})
"""Turing decision verdicts read as a pass (compared case-insensitively)."""
FAIL_VERDICTS = frozenset({"incorrect", "insufficient", "fail", "failed"})
"""Turing decision verdicts read as a fail: an insufficient answer is not a correct one."""
_ANSWER_TYPES = frozenset({"critique", "critique_debate"})
_JSON_WHITESPACE = b" \t\r\n"


@dataclass(frozen=True, slots=True)
class HumanLabel:
    """One person's verdict on one item (record × model) or on one criterion of it."""

    record_id: str
    model: str | None
    """``None``: the row left it out (resolved against the run when it has one model)."""
    criterion_id: str | None
    """``None``: the label is on the item as a whole."""
    passed: bool | None
    score: float | None
    rater: str | None
    """``None``: an anonymous rater (two anonymous labels of one item are duplicates)."""
    file: str
    """The file's name, for messages."""
    index: int
    """Zero-based row index in its file (the ``record_errors`` ``index``)."""
    path: str
    """JSONPath-like place of the row: ``labels[3]`` or ``decisions[3]``."""
    where: str
    """``file line N`` (JSONL) or ``file decisions[i]`` (Turing), for messages."""


@dataclass(slots=True)
class LabelFile:
    """Everything read from ``--human-labels``."""

    labels: list[HumanLabel] = field(default_factory=list)
    errors: list[RecordError] = field(default_factory=list)
    """Rows left out, in the contract's ``record_errors`` shape."""
    files: list[str] = field(default_factory=list)
    rows: int = 0
    """Rows read (labels, bad rows and skipped decisions; blank lines and ``{}``
    placeholders not counted)."""
    skipped: int = 0
    """Turing decisions that judge no answer (ill-posed claims)."""
    rejected: int = 0
    """Rows left out for their errors."""
    sample: Mapping[str, Any] | None = None
    """The ``legaleval review`` sample the labels were drawn from (its ``sample.json``
    beside them), or ``None``: the audit states its population (:mod:`._labelled_population`)."""


def _label_row(
    row: object, index: int, name: str, where: str, out: LabelFile, raw: bytes | None = None
) -> HumanLabel | None:
    """Check one JSONL row; a good one becomes a label, a bad one errors in ``out``.

    With ``raw`` (the line's JSON text), a key repeated in it is an error too.
    """
    base = f"labels[{index}]"
    record_id = usable_id(row.get("record_id")) if isinstance(row, dict) else None
    if not isinstance(row, dict):
        out.rejected += 1
        out.errors.extend(
            issues_to_errors(
                [Issue("invalid_field_type", (), f"must be an object, got {show(row)}")],
                index,
                None,
                where,
                base=base,
                whole="row",
            )
        )
        return None
    issues = [*schema_issues(SCHEMA, row), *scan_values(row)]
    if raw is not None:
        issues.extend(duplicate_key_issues(raw, colon_count(row)))
    if not issues and "passed" not in row and "score" not in row:
        issues.append(Issue("missing_required_field", ("passed",), "or score is required"))
    if issues:
        out.rejected += 1
        out.errors.extend(issues_to_errors(issues, index, record_id, where, base=base, whole="row"))
        return None
    score = row.get("score")
    return HumanLabel(
        record_id=row["record_id"],
        model=row.get("model"),
        criterion_id=row.get("criterion_id"),
        passed=row.get("passed"),
        score=float(score) if score is not None else None,
        rater=row.get("rater"),
        file=name,
        index=index,
        path=base,
        where=where,
    )


def labels_from_rows(rows: Iterable[object], *, file: str = "labels") -> LabelFile:
    """Check already-parsed JSONL rows (e.g. from a request body) as a label file."""
    out = LabelFile(files=[file])
    for index, row in enumerate(rows):
        out.rows += 1
        label = _label_row(row, index, file, f"{file} row {index + 1}", out)
        if label is not None:
            out.labels.append(label)
    return out


def _read_jsonl(path: Path, out: LabelFile) -> None:
    name = display_name(path)
    index = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            line = raw[len(UTF8_BOM) :] if number == 1 and raw.startswith(UTF8_BOM) else raw
            line = line.strip(_JSON_WHITESPACE)
            if not line:
                continue
            where = f"{name} line {number}"
            out.rows += 1
            if len(line) > MAX_RECORD_BYTES:
                out.rejected += 1
                message = f"row is {len(line)} bytes, over the {MAX_RECORD_BYTES} limit ({where})"
                out.errors.append(
                    RecordError(index, None, "record_too_large", message, f"labels[{index}]")
                )
            else:
                row, unreadable = parse_json_line(line)
                if unreadable is not None:
                    out.rejected += 1
                    message = f"line is {unreadable} ({where})"
                    out.errors.append(
                        RecordError(index, None, "invalid_encoding", message, f"labels[{index}]")
                    )
                else:
                    label = _label_row(row, index, name, where, out, line)
                    if label is not None:
                        out.labels.append(label)
            index += 1


def _turing_label(
    entry: Mapping[str, Any], index: int, name: str, rater: str, out: LabelFile
) -> HumanLabel | None:
    base = f"decisions[{index}]"
    where = f"{name} {base}"
    decision_id = str(entry["id"])
    verdict = str(entry["verdict"]).strip().casefold()
    if verdict in PASS_VERDICTS or verdict in FAIL_VERDICTS:
        passed = verdict in PASS_VERDICTS
    else:
        message = (
            f"verdict {show(entry['verdict'])} is not a pass/fail verdict (correct, incorrect "
            f"or insufficient) ({where})"
        )
        out.rejected += 1
        out.errors.append(
            RecordError(index, decision_id, "invalid_enum_value", message, f"{base}.verdict")
        )
        return None
    model = entry.get("answer_model") or None
    record_id = decision_id
    if model is not None and decision_id.endswith(f"@{model}"):
        record_id = decision_id[: -len(model) - 1]
    return HumanLabel(record_id, model, None, passed, None, rater, name, index, base, where)


def _read_turing(path: Path, out: LabelFile) -> None:
    try:
        file = read_turing_file(path, "human_evaluation")
    except DatasetRejected as exc:
        raise ConfigError(f"--human-labels {display_name(path)}: {exc.message}") from None
    name = display_name(path)
    for errors in file.errors.values():
        out.errors.extend(errors)
    out.rows += len(file.entries) + len(file.errors)
    out.rejected += len(file.errors)
    for index, entry in file.entries:
        if entry["type"] not in _ANSWER_TYPES:
            out.skipped += 1
            continue
        label = _turing_label(entry, index, name, path.stem, out)
        if label is not None:
            out.labels.append(label)


def _read_one(path: Path, out: LabelFile) -> None:
    name = display_name(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError as exc:
        raise ConfigError(f"--human-labels {name}: cannot read it ({exc.strerror})") from None
    if size > MAX_PAYLOAD_BYTES:
        raise ConfigError(
            f"--human-labels {name}: {size} bytes, over the {MAX_PAYLOAD_BYTES} byte limit"
        )
    text = head.removeprefix(UTF8_BOM).decode("utf-8", errors="replace")
    kind = detect_kind(text)
    out.files.append(name)
    if kind == "human_evaluation":
        _read_turing(path, out)
    elif kind is not None:
        raise ConfigError(
            f"--human-labels {name}: this is a Turing {kind.replace('_', ' ')} file, not "
            "human labels; pass a labels JSONL file or a Turing human evaluation file "
            "(evaluations/<username>.json)"
        )
    else:
        _read_jsonl(path, out)


def read_human_labels(path: str | os.PathLike[str]) -> LabelFile:
    """Read a label file, or every ``*.jsonl``/``*.json`` file of a directory.

    Raises:
        ConfigError: the path does not exist, a directory holds no label file, or a file
            cannot be read at all (unreadable, over the contract's payload limit, a
            Turing file of another kind, a Turing file whose top level is wrong).

    """
    root = Path(path)
    out = LabelFile()
    if root.is_dir():
        files = sorted(
            p for p in root.iterdir() if p.is_file() and p.suffix.lower() in (".jsonl", ".json")
        )
        if not files:
            raise ConfigError(f"--human-labels {root}: the directory has no .jsonl or .json file")
    elif root.is_file():
        files = [root]
    else:
        raise ConfigError(f"--human-labels {root}: no such file or directory")
    for file in files:
        _read_one(file, out)
    from pytest_legaleval.metrics._labelled_population import find_sample

    out.sample = find_sample(root)
    return out
