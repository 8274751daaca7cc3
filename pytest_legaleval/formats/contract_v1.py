"""The Dataset Contract v1 format: one JSON document ``{dataset_id, …, records: [...]}``."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import DatasetRejected
from pytest_legaleval.formats.base import (
    UTF8_BOM,
    DatasetInfo,
    FileScan,
    LoadContext,
    RejectedRecord,
    decode_document,
    display_name,
)
from pytest_legaleval.records import Record, SourceRef
from pytest_legaleval.validation import check_contract_document, check_payload_size
from pytest_legaleval.validation import contract as limits
from pytest_legaleval.validation.checks import usable_id

__all__ = ["NAME", "SUFFIXES", "scan", "sniff"]

NAME = "contract_v1"
SUFFIXES: tuple[str, ...] = (".json",)

_DOCUMENT_KEY = re.compile(r'"(?:records|dataset_id)"\s*:')


def sniff(first_line: object, head: str) -> bool:
    """Say whether the file looks like a contract document (see ``DatasetFormat``)."""
    if isinstance(first_line, dict):
        return "records" in first_line
    # Pretty-printed: the first line is "{" alone, the keys follow on later lines.
    return head.startswith("{") and _DOCUMENT_KEY.search(head) is not None


def _read_document(path: Path) -> tuple[object, int, str]:
    """Return ``(document, payload_bytes, sha256)``; every failure is a 400 or 413."""
    name = display_name(path)
    with path.open("rb") as handle:
        # A regular file's size is known before reading; anything else (a pipe) is read at
        # most one byte past the limit. Either way an oversized payload is never held.
        check_payload_size(os.fstat(handle.fileno()).st_size, where=name)
        data = handle.read(limits.MAX_PAYLOAD_BYTES + 1)
    check_payload_size(len(data), where=name)
    sha256 = hashlib.sha256(data).hexdigest()
    skip = len(UTF8_BOM) if data.startswith(UTF8_BOM) else 0
    try:
        # str(memoryview) decodes without copying the payload first.
        text = str(memoryview(data)[skip:], "utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetRejected(
            f"payload is not valid UTF-8 ({exc.reason} at byte {exc.start + skip}) ({name})",
            details={"byte_offset": exc.start + skip},
        ) from None
    payload_bytes = len(data)
    del data
    try:
        document = decode_document(text, where=name)
    except DatasetRejected:
        raise  # a repeated key: already the 400 it should be
    except json.JSONDecodeError as exc:
        raise DatasetRejected(
            f"payload is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno} "
            f"({name})",
            details={"line": exc.lineno, "column": exc.colno},
        ) from None
    except ValueError as exc:
        raise DatasetRejected(f"payload is not valid JSON: {exc} ({name})") from None
    except RecursionError:
        raise DatasetRejected(
            f"payload is not valid JSON: nested too deeply to parse ({name})"
        ) from None
    return document, payload_bytes, sha256


def _record(
    rec: Mapping[str, Any], doc: Mapping[str, Any], source: SourceRef, sha256: str
) -> Record:
    prompt_input = rec["input"]
    reference = rec.get("reference")
    answer = reference.get("answer") if isinstance(reference, dict) else None
    expected = rec.get("expected", {})
    criteria = tuple(expected.get("required_criteria", ()))
    context = prompt_input.get("context")
    common: dict[str, Any] = {
        "id": rec["record_id"],
        "dataset": doc["dataset_id"],
        "prompt": prompt_input["prompt"],
        "dataset_version": doc["dataset_version"],
        "schema_version": limits.SCHEMA_VERSION,
        "context": context if isinstance(context, str) else "",
        "tags": tuple(rec.get("tags", ())),
        "expected": expected,
        # Only the record's own metadata: the document's top-level metadata describes the
        # dataset, not this record.
        "metadata": rec.get("metadata", {}),
        "source": source,
        "sha256": sha256,
    }
    if isinstance(answer, str) and answer:
        return Record(
            task_type="reference_qa",
            reference_answers=(answer,),
            required_criteria=criteria,
            **common,
        )
    return Record(task_type="criteria", required_criteria=criteria or ("overall",), **common)


def scan(path: Path, context: LoadContext) -> FileScan:
    """Read one contract document: size, UTF-8, JSON, then the contract's two phases.

    A key repeated in any object of the document makes the whole document a 400: it is
    one request, and which value it means is ambiguous.

    A UTF-8 BOM is accepted. ``record_id`` uniqueness is the contract's: within the
    document (two documents may both have a ``q_0001``). The document is one JSON value,
    so it is parsed whole and checked before the first entry is yielded.

    Raises:
        DatasetRejected: any dataset-level failure (400, or 413 over 100 MB).

    """
    document, payload_bytes, file_sha256 = _read_document(path)
    checked = check_contract_document(
        document, payload_bytes=payload_bytes, where=display_name(path)
    )
    # check_contract_document has rejected anything but an object with a records array.
    assert isinstance(document, dict)
    records: list[Any] = document["records"]
    accepted = 0
    for index, (rec, (errors, sha256)) in enumerate(zip(records, checked, strict=True)):
        source = SourceRef(str(path), index, None, NAME)
        if errors:
            record_id = rec.get("record_id") if isinstance(rec, dict) else None
            yield RejectedRecord(
                source=source,
                record_id=usable_id(record_id),
                dataset=document["dataset_id"],
                errors=tuple(errors),
            )
        else:
            accepted += 1
            yield _record(rec, document, source, sha256)
    return DatasetInfo(
        path=str(path),
        format=NAME,
        dataset_id=document["dataset_id"],
        dataset_version=document["dataset_version"],
        schema_version=limits.SCHEMA_VERSION,
        total_records=len(records),
        accepted_records=accepted,
        sha256=file_sha256,
    )
