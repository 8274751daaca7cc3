"""Dataset Contract v1: document-level and record-level validation.

Decisions where the contract leaves room (also in the docstrings below):

- KB and MB are binary: 8 KB = 8,192 bytes, 16 KB = 16,384, 256 KB = 262,144,
  100 MB = 104,857,600. "Serialized size" is compact UTF-8 JSON (``separators=(",", ":")``,
  ``ensure_ascii=False``).
- Depth counts objects and arrays; the ``metadata`` object itself is depth 1.
- An empty string where the contract says ``1..N`` is ``value_out_of_range``; a string over
  its maximum is ``string_too_long``; too many items, numbers out of range, metadata over
  its size or depth limit are ``value_out_of_range``; only the whole record over 256 KB is
  ``record_too_large``.
- Top-level ``metadata`` limits, the ``created_at`` timestamp (RFC 3339, UTC) and the
  encoding of top-level strings are dataset-level (HTTP 400): they are top-level fields.
- Unknown fields are allowed at every level (the contract lists none as forbidden).
- ``duplicate_record_id`` goes on every later record that repeats an earlier ``record_id``,
  whether or not the earlier record is valid.
"""

from __future__ import annotations

import sys
from typing import Any

from pytest_legaleval.errors import DatasetRejected
from pytest_legaleval.validation.checks import (
    Issue,
    canonicalize,
    container_depth,
    dedupe_issues,
    format_path,
    json_type,
    scan_values,
    serialized_size,
    show,
    usable_id,
)
from pytest_legaleval.validation.record_error import (
    AllRecordsRejected,
    RecordError,
    issues_to_errors,
)
from pytest_legaleval.validation.schemas import schema_issues

__all__ = [
    "MAX_DATASET_METADATA_BYTES",
    "MAX_METADATA_DEPTH",
    "MAX_PAYLOAD_BYTES",
    "MAX_RECORDS",
    "MAX_RECORD_BYTES",
    "MAX_RECORD_METADATA_BYTES",
    "SCHEMA_VERSION",
    "check_contract_document",
    "check_contract_record",
    "check_payload_size",
    "upload_limit_errors",
    "validate_contract_document",
    "validate_contract_record",
]

SCHEMA_VERSION = "1.0"
MAX_PAYLOAD_BYTES = 100 * 1024 * 1024
MAX_RECORDS = 50_000
MAX_RECORD_BYTES = 256 * 1024
MAX_RECORD_METADATA_BYTES = 8 * 1024
MAX_DATASET_METADATA_BYTES = 16 * 1024
MAX_METADATA_DEPTH = 5

_DOCUMENT_SCHEMA = "contract_v1_document"
_RECORD_SCHEMA = "contract_v1_record"
_UTC_SUFFIXES = ("Z", "z", "+00:00", "-00:00")


def _metadata_issues(metadata: object, parts: tuple[str, ...], max_bytes: int) -> list[Issue]:
    if not isinstance(metadata, dict):
        return []  # the schema reports the wrong type
    issues = []
    depth = container_depth(metadata, MAX_METADATA_DEPTH)
    if depth > MAX_METADATA_DEPTH:
        issues.append(
            Issue(
                "value_out_of_range",
                parts,
                f"is nested more than {MAX_METADATA_DEPTH} levels deep "
                f"(objects and arrays, {parts[-1]} itself is level 1)",
            )
        )
    size = serialized_size(metadata)
    if size > max_bytes:
        issues.append(
            Issue(
                "value_out_of_range",
                parts,
                f"is {size:,} bytes serialized, at most {max_bytes:,} "
                f"({max_bytes // 1024} KB) allowed",
            )
        )
    return issues


def check_contract_record(
    rec: object, index: int, *, where: str = ""
) -> tuple[list[RecordError], str]:
    """Validate a record like :func:`validate_contract_record` and also return its hash.

    Returns:
        ``(errors, sha256)``: the record's errors and ``record_sha256(rec)``, both from one
        canonical serialization.

    """
    canonical = canonicalize(rec)
    issues = schema_issues(_RECORD_SCHEMA, rec)
    if isinstance(rec, dict):
        issues.extend(
            _metadata_issues(rec.get("metadata"), ("metadata",), MAX_RECORD_METADATA_BYTES)
        )
        # Key order does not change the byte count, so the canonical size is the size.
        if canonical.size > MAX_RECORD_BYTES:
            size = (
                "an unmeasurable number of"
                if canonical.size == sys.maxsize
                else f"{canonical.size:,}"
            )
            issues.append(
                Issue(
                    "record_too_large",
                    (),
                    f"is {size} bytes serialized, at most {MAX_RECORD_BYTES:,} (256 KB) allowed",
                )
            )
    if not canonical.clean:
        issues.extend(scan_values(rec))
    if not issues:
        return [], canonical.sha256
    record_id = usable_id(rec.get("record_id")) if isinstance(rec, dict) else None
    return issues_to_errors(issues, index, record_id, where), canonical.sha256


def upload_limit_errors(row: object, index: int, *, where: str = "") -> list[RecordError]:
    """The contract's per-record limits on a row that is not a contract record.

    The service holds ``legal_eval_v1`` rows uploaded as JSONL to the limits the contract
    sets on its own records: the row at most 256 KB serialized (``record_too_large``) and
    its ``metadata`` at most 8 KB serialized and 5 levels deep (``value_out_of_range``).
    A pytest run reads such rows without them (long legal documents are common there).

    Args:
        row: the parsed row.
        index: its zero-based position among the upload's rows.
        where: a location such as ``"upload.jsonl line 3"``, appended to every message.

    Returns:
        The row's errors under those limits; empty when it keeps them.

    """
    if not isinstance(row, dict):
        return []  # the row's own validation says what it is
    issues = _metadata_issues(row.get("metadata"), ("metadata",), MAX_RECORD_METADATA_BYTES)
    size = canonicalize(row).size
    if size > MAX_RECORD_BYTES:
        shown = "an unmeasurable number of" if size == sys.maxsize else f"{size:,}"
        issues.append(
            Issue(
                "record_too_large",
                (),
                f"is {shown} bytes serialized, at most {MAX_RECORD_BYTES:,} (256 KB) allowed",
            )
        )
    if not issues:
        return []
    return issues_to_errors(issues, index, usable_id(row.get("id")), where)


def validate_contract_record(rec: object, index: int, *, where: str = "") -> list[RecordError]:
    """Validate one ``records[index]`` item of a contract document.

    The schema (``schemas/contract_v1_record.schema.json``) covers required fields, types,
    lengths, ranges, ``tags`` and the ``required_criteria`` enum. On top of it: the encoding
    rules (U+0000, unpaired surrogates, NFC) on every string and key, finite numbers,
    ``metadata`` at most 8 KB serialized and 5 levels deep, and the whole record at most
    256 KB serialized (``record_too_large``). Duplicate ids need the whole document: see
    :func:`validate_contract_document`.

    Args:
        rec: the record value.
        index: its zero-based position in ``records``.
        where: a location such as the file name, appended to every message.

    Returns:
        The record's errors; empty when it is valid.

    """
    return check_contract_record(rec, index, where=where)[0]


def _document_issues(doc: dict[str, Any]) -> list[Issue]:
    records = doc.get("records")
    # The document schema never looks inside records (each record is validated on its
    # own), so hand it placeholders: counting them is all it needs, and converting 50,000
    # real records for the Rust validator would be wasted work.
    shallow = dict(doc)
    if isinstance(records, list):
        shallow["records"] = [None] * len(records)
    issues = schema_issues(_DOCUMENT_SCHEMA, shallow)
    for position, issue in enumerate(issues):
        if issue.parts == ("schema_version",) and issue.code == "invalid_enum_value":
            got, expected = show(doc.get("schema_version")), show(SCHEMA_VERSION)
            text = f"is not supported: got {got}, expected {expected}"
            issues[position] = Issue(issue.code, issue.parts, text)
    top = {key: value for key, value in doc.items() if key != "records"}
    issues.extend(scan_values(top))
    issues.extend(_metadata_issues(doc.get("metadata"), ("metadata",), MAX_DATASET_METADATA_BYTES))
    created_at = doc.get("created_at")
    if isinstance(created_at, str) and not created_at.endswith(_UTC_SUFFIXES):
        issues.append(
            Issue(
                "value_out_of_range",
                ("created_at",),
                f"must be a UTC timestamp (ending in Z or +00:00), got {show(created_at)}",
            )
        )
    return issues


def _reject(issues: list[Issue], suffix: str) -> DatasetRejected:
    first_per_path: dict[tuple[str | int, ...], Issue] = {}
    for issue in dedupe_issues(issues):
        first_per_path.setdefault(issue.parts, issue)
    problems = []
    for issue in first_per_path.values():
        subject = format_path("", issue.parts)
        problems.append(
            {"path": subject or "$", "message": f"{subject or 'document'} {issue.text}"}
        )
    message = problems[0]["message"]
    if len(problems) > 1:
        message += f" (and {len(problems) - 1} more)"
    return DatasetRejected(message + suffix, details={"errors": problems})


def check_payload_size(payload_bytes: int, *, where: str = "") -> None:
    """Reject a payload over 100 MB (HTTP 413, ``payload_too_large``).

    Raises:
        DatasetRejected: ``payload_bytes`` exceeds :data:`MAX_PAYLOAD_BYTES`.

    """
    if payload_bytes > MAX_PAYLOAD_BYTES:
        suffix = f" ({where})" if where else ""
        raise DatasetRejected(
            f"payload is {payload_bytes:,} bytes, over the limit of {MAX_PAYLOAD_BYTES:,} "
            f"bytes (100 MB){suffix}",
            code="payload_too_large",
            status=413,
            details={"payload_bytes": payload_bytes, "max_payload_bytes": MAX_PAYLOAD_BYTES},
        )


def check_contract_document(
    doc: object, *, payload_bytes: int, where: str = ""
) -> list[tuple[list[RecordError], str]]:
    """Validate a document like :func:`validate_contract_document`, record by record.

    Returns:
        One ``(errors, sha256)`` pair per record, in ``records`` order.

    Raises:
        DatasetRejected: as :func:`validate_contract_document`.

    """
    suffix = f" ({where})" if where else ""
    check_payload_size(payload_bytes, where=where)
    if not isinstance(doc, dict):
        raise DatasetRejected(
            f"the top-level JSON value must be an object, got {json_type(doc)}{suffix}"
        )
    issues = _document_issues(doc)
    if issues:
        raise _reject(issues, suffix)
    checked: list[tuple[list[RecordError], str]] = []
    first_index: dict[str, int] = {}
    for index, rec in enumerate(doc["records"]):
        record_errors, sha256 = check_contract_record(rec, index, where=where)
        record_id = rec.get("record_id") if isinstance(rec, dict) else None
        if isinstance(record_id, str):
            if record_id in first_index:
                record_errors.append(
                    RecordError(
                        index=index,
                        record_id=usable_id(record_id),
                        code="duplicate_record_id",
                        message=f"record_id {show(record_id)} duplicates "
                        f"records[{first_index[record_id]}].record_id{suffix}",
                        path=f"records[{index}].record_id",
                    )
                )
            else:
                first_index[record_id] = index
        checked.append((record_errors, sha256))
    if all(record_errors for record_errors, _ in checked):
        raise AllRecordsRejected(
            dataset=where or None,
            record_errors=tuple(e for record_errors, _ in checked for e in record_errors),
            rejected_records=len(checked),
        )
    return checked


def validate_contract_document(
    doc: object, *, payload_bytes: int, where: str = ""
) -> list[RecordError]:
    """Validate a parsed contract document: dataset level first, then every record.

    Args:
        doc: the parsed JSON document.
        payload_bytes: size of the uploaded payload in bytes (checked against 100 MB).
        where: a location such as the file name, appended to every message.

    Returns:
        The record errors of all records (a record may have several), including
        ``duplicate_record_id`` on each later record that repeats a ``record_id``.

    Raises:
        DatasetRejected: a dataset-level failure: payload over 100 MB (413,
            ``payload_too_large``); top level not an object; a missing or invalid top-level
            field; unsupported ``schema_version``; ``records`` not an array, empty or over
            50,000 items; top-level ``metadata`` over 16 KB or 5 levels; or every record
            invalid (:class:`AllRecordsRejected`, "All records failed validation", details
            ``{rejected_records, accepted_records}``). All 400 ``invalid_request`` unless
            noted.

    """
    checked = check_contract_document(doc, payload_bytes=payload_bytes, where=where)
    return [error for record_errors, _ in checked for error in record_errors]
