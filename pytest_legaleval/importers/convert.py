"""``legaleval convert``: tabular or JSON benchmark files into ``legal_eval_v1`` JSONL.

Rows stream from each input through its mapping layout into a temporary file next to the
output; every row is validated with the ``legal_eval_v1`` rules (ids unique across the
whole output) as it is written, and the output is renamed into place only when every row
passed. A failed conversion leaves no output behind.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers.limits import UnreadRow
from pytest_legaleval.importers.mapping import RowError, load_mapping
from pytest_legaleval.importers.tables import read_rows
from pytest_legaleval.validation import RecordError, check_legal_eval_row

__all__ = ["ConversionFailed", "ConversionResult", "convert"]

_MAX_ERRORS_KEPT = 20


class ConversionFailed(ConfigError):
    """Rows failed to convert or to validate; nothing was written."""

    def __init__(self, message: str, errors: list[RecordError], failed: int) -> None:
        super().__init__(message)
        self.errors = errors
        self.failed = failed


@dataclass
class ConversionResult:
    """What :func:`convert` wrote."""

    output: Path
    rows: int
    per_input: dict[str, int] = field(default_factory=dict)


def convert(
    mapping_path: Path, inputs: Sequence[Path], output: Path, *, force: bool = False
) -> ConversionResult:
    """Convert ``inputs`` with the mapping into one validated JSONL file.

    Raises:
        ConfigError: a missing input or mapping, an unmatched input, an existing output
            without ``force``.
        ConversionFailed: rows that could not be converted or failed validation.

    """
    mapping = load_mapping(mapping_path)
    if not inputs:
        raise ConfigError("no input files given")
    if output.exists() and not force:
        raise ConfigError(f"--out {output} already exists; pass --force to overwrite")
    layouts = [(path, mapping.layout_for(path)) for path in inputs]
    output.parent.mkdir(parents=True, exist_ok=True)
    temp = output.with_name(f".{output.name}.tmp-{os.getpid()}")
    seen: dict[str, str] = {}
    errors: list[RecordError] = []
    failed = index = 0
    result = ConversionResult(output, 0)
    try:
        with temp.open("w", encoding="utf-8") as handle:
            for path, layout in layouts:
                options = {
                    "sheet": layout.spec.get("sheet"),
                    "records_key": layout.spec.get("records_key"),
                }
                count = 0
                for position, source in enumerate(read_rows(path, **options)):
                    where = f"{path.name} row {position + 1}"
                    try:
                        if isinstance(source, UnreadRow):
                            raise RowError(source.reason)
                        row = layout.convert(source, position, path)
                    except RowError as exc:
                        found = [
                            RecordError(
                                index,
                                None,
                                "invalid_field_type",
                                f"{exc} ({where})",
                                f"records[{index}]",
                            )
                        ]
                    else:
                        found, _ = check_legal_eval_row(row, index, where=where)
                        first = (
                            seen.setdefault(row["id"], where)
                            if isinstance(row.get("id"), str)
                            else where
                        )
                        if first != where:
                            found.append(
                                RecordError(
                                    index,
                                    row["id"],
                                    "duplicate_record_id",
                                    f"id {row['id']!r} duplicates the row at {first} ({where})",
                                    f"records[{index}].id",
                                )
                            )
                    if found:
                        failed += 1
                        errors.extend(found[: max(0, _MAX_ERRORS_KEPT - len(errors))])
                    else:
                        line = json.dumps(row, ensure_ascii=False, allow_nan=False)
                        handle.write(line + "\n")
                        count += 1
                    index += 1
                result.per_input[str(path)] = count
                result.rows += count
        if failed:
            first_error = errors[0]
            raise ConversionFailed(
                f"{failed} of {index} row(s) failed; nothing was written "
                f"(first: {first_error.path}: {first_error.message})",
                errors,
                failed,
            )
        os.replace(temp, output)
    finally:
        temp.unlink(missing_ok=True)
    return result
