"""Row reading for ``legaleval convert``: CSV, TSV, JSON, JSONL and XLSX, streamed.

The importers' readers (:mod:`~pytest_legaleval.importers.readers`) read the files; here
spreadsheet and delimited cells come out as strings (an empty cell is ``""``; a
whole-number spreadsheet cell ``2022.0`` is ``"2022"``), so a mapping reads every tabular
source alike; JSON values keep their JSON types.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers.limits import UnreadRow
from pytest_legaleval.importers.readers import read_table

__all__ = ["TABLE_SUFFIXES", "read_rows"]

TABLE_SUFFIXES: tuple[str, ...] = (".csv", ".tsv", ".json", ".jsonl", ".xlsx")


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def _as_text(rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for row in rows:
        if isinstance(row, UnreadRow):
            yield row  # a row over a size limit stays a failure, never a blank row
            continue
        cells = {name: _cell(value) for name, value in row.items()}
        if any(cells.values()):
            yield cells


def read_rows(
    path: Path, *, sheet: str | None = None, records_key: str | None = None
) -> Iterator[dict[str, Any]]:
    """Yield the rows of a CSV, TSV, JSON, JSONL or XLSX file, blank rows skipped.

    A row over a size limit comes as an :class:`~.limits.UnreadRow` (a failed row).

    Args:
        path: the input file; its suffix names its format.
        sheet: the XLSX sheet (default: the first).
        records_key: for JSON, the key of the array when the top level is an object.

    Raises:
        ConfigError: an unknown suffix or a file that cannot be read as its format.

    """
    suffix = path.suffix.lower()
    if not path.is_file():
        raise ConfigError(f"input {path}: no such file")
    if suffix not in TABLE_SUFFIXES:
        raise ConfigError(
            f"input {path}: unsupported file type; use one of {', '.join(TABLE_SUFFIXES)}"
        )
    rows = read_table(path, sheet=sheet, records_key=records_key)
    return rows if suffix in (".json", ".jsonl") else _as_text(rows)
