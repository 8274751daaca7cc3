"""The ``legal_eval_v1`` JSONL format: one row per line, streamed.

The file is read line by line in binary mode, so a large dataset is never held twice.
Each row is decoded strictly as UTF-8 and parsed on its own: a broken row becomes a
``RejectedRecord`` and the other rows still load.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from pytest_legaleval.formats.base import (
    JSON_DECODER,
    JSON_WHITESPACE,
    UTF8_BOM,
    DatasetInfo,
    EntryTally,
    FileScan,
    LoadContext,
    RejectedRecord,
    display_name,
)
from pytest_legaleval.records import (
    Attachment,
    Choice,
    Criterion,
    Message,
    Record,
    SourceRef,
    TaskType,
)
from pytest_legaleval.validation import RecordError, check_legal_eval_row
from pytest_legaleval.validation.checks import show, usable_id
from pytest_legaleval.validation.contract import upload_limit_errors

__all__ = ["NAME", "SUFFIXES", "parse_json_line", "scan", "scan_rows", "sniff"]

NAME = "legal_eval_v1"
SUFFIXES: tuple[str, ...] = (".jsonl",)

_ROW_KEYS = frozenset({"task_type", "prompt"})
_SCHEMA_MARK = re.compile(r'"schema_version"\s*:\s*"legal_eval_v1"')


def sniff(first_line: object, head: str) -> bool:
    """Say whether the file looks like ``legal_eval_v1`` JSONL (see ``DatasetFormat``)."""
    if isinstance(first_line, dict):
        if first_line.get("schema_version") == NAME:
            return True
        return _ROW_KEYS <= first_line.keys() and "records" not in first_line
    # A first row longer than the head cannot be parsed; its schema_version still shows.
    first = head.split("\n", 1)[0]
    return first.startswith("{") and _SCHEMA_MARK.search(first) is not None


def parse_json_line(raw: bytes) -> tuple[object, str | None]:
    """Decode one line strictly as UTF-8 and parse it as JSON.

    Returns:
        ``(value, None)``, or ``(None, reason)`` with a reason that follows "line is".

    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.start + 1].hex()
        return None, f"not valid UTF-8 ({exc.reason}, byte 0x{bad} at offset {exc.start})"
    try:
        return JSON_DECODER.decode(text), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at column {exc.colno})"
    except ValueError as exc:
        return None, f"not valid JSON ({exc})"
    except RecursionError:
        return None, "not valid JSON (nested too deeply to parse)"


def _record(row: Mapping[str, Any], source: SourceRef, sha256: str) -> Record:
    # Called once per valid row, so it reads each optional field once and builds tuples
    # from lists (faster than from generators).
    metadata = row.get("metadata", {})
    version = metadata.get("dataset_version")
    messages = row.get("messages")
    attachments = row.get("attachments")
    choices = row.get("choices")
    rubric = row.get("rubric")
    return Record(
        id=row["id"],
        dataset=row["dataset"],
        task_type=cast(TaskType, row["task_type"]),
        prompt=row["prompt"],
        dataset_version=version if isinstance(version, str) else None,
        schema_version=NAME,
        context=row.get("context", ""),
        messages=tuple([Message(m["role"], m["content"]) for m in messages]) if messages else (),
        attachments=tuple(
            [Attachment(a["path"], a.get("kind"), a.get("title")) for a in attachments]
        )
        if attachments
        else (),
        choices=tuple([Choice(c["id"], c["text"]) for c in choices]) if choices else (),
        correct_choice_ids=tuple(row.get("correct_choice_ids", ())),
        rubric=tuple(
            [
                Criterion(c["id"], c["title"], c.get("description"), float(c.get("weight", 1.0)))
                for c in rubric
            ]
        )
        if rubric
        else (),
        reference_answers=tuple(row.get("reference_answers", ())),
        metadata=metadata,
        source=source,
        sha256=sha256,
    )


def scan(path: Path, context: LoadContext) -> FileScan:
    """Read one ``legal_eval_v1`` JSONL file, streamed row by row (see ``FileScan``).

    Blank lines are skipped but counted for line numbers; a UTF-8 BOM on line 1 and
    CRLF line ends are accepted. A row that is not UTF-8 or not JSON, or that repeats a
    key in any of its objects, is ``invalid_encoding``; row ids already seen in this load
    are ``duplicate_record_id``.

    Raises:
        DatasetRejected: the file has no rows, or every row failed validation.

    """
    return scan_rows(path, context, upload_limits=False)


def scan_rows(path: Path, context: LoadContext, *, upload_limits: bool) -> FileScan:
    """:func:`scan`, and with ``upload_limits`` the contract's per-record limits too.

    ``upload_limits`` is the service's reading of uploaded rows
    (:mod:`.legal_eval_v1_upload`): a row over 256 KB serialized or with metadata over
    8 KB or 5 levels deep is rejected as the contract rejects such a record.
    """
    name = display_name(path)
    hasher = hashlib.sha256()
    tally = EntryTally()
    datasets: set[str] = set()
    versions: set[str | None] = set()
    index = 0
    place = f"{name} line "
    with path.open("rb") as handle:
        for line_number, raw in enumerate(handle, start=1):
            hasher.update(raw)
            line = raw[len(UTF8_BOM) :] if line_number == 1 and raw.startswith(UTF8_BOM) else raw
            line = line.strip(JSON_WHITESPACE)
            if not line:
                continue
            where = f"{place}{line_number}"
            row, unreadable = parse_json_line(line)
            if unreadable is None:
                errors, sha256 = check_legal_eval_row(row, index, where=where, raw=line)
                if upload_limits:
                    errors.extend(upload_limit_errors(row, index, where=where))
            else:
                message = f"line is {unreadable} ({where})"
                errors, sha256 = (
                    [RecordError(index, None, "invalid_encoding", message, f"records[{index}]")],
                    "",
                )
            row_id = row.get("id") if isinstance(row, dict) else None
            if isinstance(row_id, str):
                first = context.first_seen(row_id, place, line_number)
                if first is not None:
                    errors.append(
                        RecordError(
                            index=index,
                            record_id=usable_id(row_id),
                            code="duplicate_record_id",
                            message=f"id {show(row_id)} duplicates the row at {first} ({where})",
                            path=f"records[{index}].id",
                        )
                    )
            source = SourceRef(str(path), index, line_number, NAME)
            if errors:
                dataset = row.get("dataset") if isinstance(row, dict) else None
                yield tally.add(
                    RejectedRecord(
                        source=source,
                        record_id=usable_id(row_id),
                        dataset=dataset if isinstance(dataset, str) else None,
                        errors=tuple(errors),
                    )
                )
            else:
                record = _record(cast(dict[str, Any], row), source, sha256)
                datasets.add(record.dataset)
                versions.add(record.dataset_version)
                yield tally.add(record)
            index += 1
    tally.verdict(name)
    return DatasetInfo(
        path=str(path),
        format=NAME,
        # Non-empty: a file without a single valid row was rejected above.
        dataset_id="+".join(sorted(datasets)),
        dataset_version=next(iter(versions)) if len(versions) == 1 else None,
        schema_version=NAME,
        total_records=tally.total,
        accepted_records=tally.accepted,
        sha256=hasher.hexdigest(),
    )
