"""The Dataset Contract's ``record_errors`` entry and its closed list of codes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, get_args

from pytest_legaleval.errors import DatasetRejected
from pytest_legaleval.validation.checks import Issue, dedupe_issues, format_path

__all__ = [
    "ERROR_CODES",
    "AllRecordsRejected",
    "ErrorCode",
    "RecordError",
    "issues_to_errors",
]

ErrorCode = Literal[
    "missing_required_field",
    "invalid_field_type",
    "value_out_of_range",
    "string_too_long",
    "invalid_enum_value",
    "duplicate_record_id",
    "record_too_large",
    "invalid_encoding",
    "unsupported_field",
]
"""The contract's nine ``code`` values, in the contract's order (Dataset Contract v1, §2.2)."""

ERROR_CODES: frozenset[str] = frozenset(get_args(ErrorCode))
"""The same codes as a set."""


@dataclass(frozen=True, slots=True)
class RecordError:
    """One record-level validation failure, in the contract's ``record_errors`` shape (§2.2)."""

    # The service's OpenAPI document describes this very class (pydantic reads a dataclass
    # and its field docstrings), so the schema and the entries sent cannot drift apart.
    __pydantic_config__: ClassVar[dict[str, Any]] = {
        "use_attribute_docstrings": True,
        "json_schema_serialization_defaults_required": True,
        "json_schema_extra": lambda schema, _cls: _closed_lists(schema),
    }

    index: int
    """Zero-based index of the record (``records[i]`` or the i-th row of a JSONL file)."""
    record_id: str | None
    """The record's id, or null when it has no usable one."""
    code: str
    """One of the contract's nine codes (:data:`ERROR_CODES`)."""
    message: str
    """Human-readable reason; names file and line where they are known."""
    path: str
    """JSONPath-like location such as ``records[1].input.prompt``."""
    severity: str = "error"
    """Always ``error`` in contract v1."""

    def to_dict(self) -> dict[str, Any]:
        """Return the contract's six keys, in the contract's order."""
        return {
            "index": self.index,
            "record_id": self.record_id,
            "code": self.code,
            "message": self.message,
            "path": self.path,
            "severity": self.severity,
        }


def _closed_lists(schema: dict[str, Any]) -> None:
    """Write the closed lists the field types leave open into the JSON Schema."""
    properties = schema["properties"]
    properties["code"]["enum"] = list(get_args(ErrorCode))
    properties["severity"]["const"] = "error"


class AllRecordsRejected(DatasetRejected):
    """Every record of a dataset failed validation (HTTP 400, ``invalid_request``).

    The message is exactly the contract's ("All records failed validation"); ``details``
    hold the contract's ``{rejected_records, accepted_records}`` and, when known, the
    dataset file as ``dataset``. The individual failures ride along in
    :attr:`record_errors` so a caller can still show why.
    """

    MESSAGE = "All records failed validation"

    def __init__(
        self,
        *,
        record_errors: tuple[RecordError, ...],
        rejected_records: int,
        dataset: str | None = None,
    ) -> None:
        details: dict[str, object] = {"rejected_records": rejected_records, "accepted_records": 0}
        if dataset:
            details["dataset"] = dataset
        super().__init__(self.MESSAGE, details=details)
        self.record_errors = record_errors


def issues_to_errors(
    issues: Iterable[Issue],
    index: int,
    record_id: str | None,
    where: str = "",
    *,
    base: str | None = None,
    whole: str = "record",
) -> list[RecordError]:
    """Turn a record's issues into contract ``RecordError`` entries for ``records[index]``.

    The message starts with the field path relative to the record (``choices[1].id``),
    so it reads on its own; ``where`` (``"lexam.jsonl line 4"``) is appended in brackets.
    Another input's rows name their own array (``base``, e.g. ``labels[3]``) and what an
    issue of the whole row is called (``whole``, e.g. ``row``).
    """
    base = f"records[{index}]" if base is None else base
    suffix = f" ({where})" if where else ""
    errors = []
    for issue in dedupe_issues(list(issues)):
        subject = format_path("", issue.parts) or whole
        errors.append(
            RecordError(
                index=index,
                record_id=record_id,
                code=issue.code,
                message=f"{subject} {issue.text}{suffix}",
                path=format_path(base, issue.parts),
            )
        )
    return errors
