"""What ``legaleval submit`` uploads: a Dataset Contract v1 document, made from JSONL if need be.

The service takes Dataset Contract documents and ``legal_eval_v1`` JSONL rows. ``submit``
reads a ``legal_eval_v1`` file with the same loader a pytest run uses
(``formats.load_dataset``) and, when every row fits the contract, makes each a contract
record — ``id`` the ``record_id``, ``prompt`` and ``context`` the ``input``, the one
reference answer the ``reference``, tags and metadata as they are. A row the contract
cannot carry (an ``mcq`` or ``rubric_qa`` row, several reference answers, conversation
turns, attachments), rows of several datasets, or invalid rows raise :class:`NotUploadable`
saying why; ``submit`` then uploads the file as it is, as JSONL (``application/x-ndjson``),
and the service validates it. Nothing is dropped silently.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError

__all__ = ["NotUploadable", "contract_document", "document_format", "write_document"]

_DATASET_ID = re.compile(r"[^A-Za-z0-9_.-]+")
_SHOWN = 10
_HOW = (
    "the Dataset Contract (what the service takes) carries a prompt, an optional context and "
    "one reference answer per record; evaluate other rows locally with "
    "`pytest --dataset {path} --model PROVIDER/NAME`"
)


class NotUploadable(ConfigError):
    """The file cannot be sent to the service as it is; the message says what to do.

    ``errors`` holds the record errors (the contract's ``record_errors`` shape) of invalid
    rows, if that is why.
    """

    def __init__(self, message: str, errors: Sequence[dict[str, Any]] = ()) -> None:
        super().__init__(message)
        self.errors = list(errors)


def document_format(path: Path) -> str:
    """``contract_v1`` or ``legal_eval_v1``, told from the file's content.

    Raises:
        ConfigError: another format, or one that cannot be told.

    """
    from pytest_legaleval.formats.detect import detect_format

    try:
        found = detect_format(path)
    except ConfigError:
        found = "unknown"
    if found not in ("contract_v1", "legal_eval_v1"):
        raise ConfigError(
            f"{path} is not a dataset submit can upload ({found} content); it takes a Dataset "
            "Contract v1 document (one JSON object with dataset_id, schema_version and "
            'records) or legal_eval_v1 rows (JSONL, each with "schema_version": '
            '"legal_eval_v1")'
        )
    return found


def _record(row: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"record_id": row.id, "input": {"prompt": row.prompt}}
    if row.context:
        record["input"]["context"] = row.context
    record["reference"] = {"answer": row.reference_answers[0]}
    if row.tags:
        record["tags"] = list(row.tags)
    if row.required_criteria:
        record["expected"] = {"required_criteria": list(row.required_criteria)}
    if row.metadata:
        record["metadata"] = dict(row.metadata)
    return record


def _why_not(row: Any) -> str | None:
    """Why a valid row cannot be a contract record, or ``None`` when it can."""
    if row.task_type != "reference_qa":
        return f"task_type {row.task_type}"
    if len(row.reference_answers) != 1:
        return f"{len(row.reference_answers)} reference answers"
    if row.messages:
        return "conversation turns (messages)"
    if row.attachments:
        return "attachments"
    return None


def contract_document(path: Path) -> dict[str, Any]:
    """The ``legal_eval_v1`` rows of ``path`` as one Dataset Contract v1 document.

    Raises:
        NotUploadable: invalid rows (their errors attached), a row the contract cannot
            carry, or rows of several datasets.
        DatasetRejected: the file itself is unreadable (not UTF-8, not JSONL).
        ConfigError: the file cannot be read.

    """
    from pytest_legaleval.formats import load_dataset

    loaded = load_dataset([path], "legal_eval_v1")
    if loaded.rejected:
        errors = [error.to_dict() for error in loaded.errors]
        raise NotUploadable(
            f"{path}: {len(loaded.rejected)} row(s) are not valid legal_eval_v1; fix them "
            f"(`legaleval validate {path}` lists every error) and submit again",
            errors,
        )
    rows = loaded.records
    if not rows:
        raise NotUploadable(f"{path} has no rows to evaluate")
    refused = [(row.source.line, why) for row in rows if (why := _why_not(row)) is not None]
    if refused:
        shown = "; ".join(f"line {line}: {why}" for line, why in refused[:_SHOWN])
        more = f" (+{len(refused) - _SHOWN} more)" if len(refused) > _SHOWN else ""
        raise NotUploadable(
            f"{path}: {len(refused)} row(s) cannot be uploaded ({shown}{more}): "
            + _HOW.format(path=path)
        )
    names = sorted({row.dataset for row in rows})
    if len(names) > 1:
        raise NotUploadable(
            f"{path} holds rows of {len(names)} datasets ({', '.join(names[:5])}); a contract "
            "document is one dataset: submit one file per dataset"
        )
    versions = {row.dataset_version for row in rows}
    version = versions.pop() if len(versions) == 1 else None
    return {
        "dataset_id": _DATASET_ID.sub("_", names[0])[:128] or "dataset",
        "dataset_version": (version or "unversioned")[:64],
        "schema_version": "1.0",
        "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "metadata": {"converted_from": "legal_eval_v1", "source_file": path.name[:200]},
        "records": [_record(row) for row in rows],
    }


def _nfc(value: Any) -> Any:
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, dict):
        return {_nfc(k): _nfc(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nfc(v) for v in value]
    return value


def write_document(document: dict[str, Any], target: Path) -> Path:
    """Write ``document`` as UTF-8 JSON, every string in NFC (the contract asks clients to)."""
    text = json.dumps(_nfc(document), ensure_ascii=False, allow_nan=False)
    target.write_text(text, encoding="utf-8")
    return target
