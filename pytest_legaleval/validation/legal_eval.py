"""Validation of one ``legal_eval_v1`` JSONL row."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pytest_legaleval.validation.checks import Issue, canonicalize, scan_values, show, usable_id
from pytest_legaleval.validation.duplicates import duplicate_key_issues
from pytest_legaleval.validation.record_error import RecordError, issues_to_errors
from pytest_legaleval.validation.schemas import schema_issues

__all__ = ["check_legal_eval_row", "validate_legal_eval_row"]

SCHEMA = "legal_eval_v1"
_MAX_LABELS = 16
_MAX_FLOAT = sys.float_info.max


def _duplicate_ids(items: Sequence[object], field: str, what: str) -> list[Issue]:
    first: dict[str, int] = {}
    issues = []
    for position, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        item_id = item["id"]
        if item_id in first:
            issues.append(
                Issue(
                    "value_out_of_range",
                    (field, position, "id"),
                    f"{show(item_id)} duplicates {field}[{first[item_id]}].id; "
                    f"{what} ids must be unique",
                )
            )
        else:
            first[item_id] = position
    return issues


def _weight_issues(rubric: list[object]) -> list[Issue]:
    # A JSON integer such as 1e400 written out in digits is a valid "number" to the schema,
    # but no float can hold it, and weights are floats.
    issues = []
    for position, criterion in enumerate(rubric):
        weight = criterion.get("weight") if isinstance(criterion, dict) else None
        if isinstance(weight, int) and not isinstance(weight, bool) and abs(weight) > _MAX_FLOAT:
            issues.append(
                Issue("value_out_of_range", ("rubric", position, "weight"), "is out of range")
            )
    return issues


def _choice_issues(row: dict[str, object]) -> list[Issue]:
    choices = row.get("choices")
    correct = row.get("correct_choice_ids")
    if not isinstance(choices, list):
        return []
    issues = _duplicate_ids(choices, "choices", "choice")
    ids = [c.get("id") if isinstance(c, dict) else None for c in choices]
    # Only compare against a well-formed choice list: a malformed one already has its own
    # error, and guessing its ids would add confusing follow-up errors.
    if not isinstance(correct, list) or not all(isinstance(i, str) for i in ids):
        return issues
    known = set(ids)
    for position, choice_id in enumerate(correct):
        if isinstance(choice_id, str) and choice_id and choice_id not in known:
            labels = ", ".join(show(i) for i in ids[:_MAX_LABELS])
            if len(ids) > _MAX_LABELS:
                labels += f", ... ({len(ids)} in all)"
            issues.append(
                Issue(
                    "invalid_enum_value",
                    ("correct_choice_ids", position),
                    f"{show(choice_id)} is not the id of any choice (choices: {labels})",
                )
            )
    return issues


def check_legal_eval_row(
    row: object, index: int, *, where: str = "", raw: str | bytes | None = None
) -> tuple[list[RecordError], str]:
    """Validate a row like :func:`validate_legal_eval_row` and also return its hash.

    The canonical JSON the encoding check needs is the one :func:`record_sha256` hashes,
    so a loader that wants both serializes each row once. With ``raw``, the JSON text the
    row was parsed from, a key repeated in any object of it is an ``invalid_encoding``
    error at that object's path.

    Returns:
        ``(errors, sha256)``: the row's errors and ``record_sha256(row)``.

    """
    canonical = canonicalize(row)
    task_type = row.get("task_type") if isinstance(row, dict) else None
    issues = schema_issues(SCHEMA, row)
    if isinstance(task_type, str):
        # Name the task type in forbidden-field messages; built only when there are some.
        issues = [
            Issue(i.code, i.parts, f"is not allowed for task_type {show(task_type)}")
            if i.code == "unsupported_field"
            else i
            for i in issues
        ]
    if isinstance(row, dict):
        if task_type == "mcq":
            issues.extend(_choice_issues(row))
        rubric = row.get("rubric")
        if isinstance(rubric, list):
            issues.extend(_duplicate_ids(rubric, "rubric", "criterion"))
            issues.extend(_weight_issues(rubric))
    if not canonical.clean:
        issues.extend(scan_values(row))
    if raw is not None:
        issues.extend(duplicate_key_issues(raw, canonical.colons))
    if not issues:
        return [], canonical.sha256
    record_id = usable_id(row.get("id")) if isinstance(row, dict) else None
    return issues_to_errors(issues, index, record_id, where), canonical.sha256


def validate_legal_eval_row(row: object, index: int, *, where: str = "") -> list[RecordError]:
    """Validate one ``legal_eval_v1`` row against the schema and the extra rules.

    The schema (``schemas/legal_eval_v1.schema.json``) covers shapes, types, enums and the
    per-task-type required and forbidden fields. On top of it: the contract's encoding rules
    (U+0000, unpaired surrogates, NFC), finite numbers, ``correct_choice_ids`` drawn from
    ``choices[*].id`` (``invalid_enum_value`` on the offending element), and unique choice and
    rubric criterion ids (``value_out_of_range`` on the later duplicate). Unknown top-level
    fields are allowed.

    Args:
        row: the JSON value parsed from one JSONL line.
        index: zero-based row index in its file; paths read ``records[index]...``.
        where: a location such as ``"lexam.jsonl line 4"``, appended to every message.

    Returns:
        The row's errors; empty when the row is valid.

    """
    return check_legal_eval_row(row, index, where=where)[0]
