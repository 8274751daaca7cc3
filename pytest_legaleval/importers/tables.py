"""Row readers for ``legaleval convert``: CSV, TSV, JSON, JSONL and XLSX, streamed.

Every reader yields one ``dict`` per row. Spreadsheet and delimited cells come out as
strings (an empty cell is ``""``; a whole-number spreadsheet cell ``2022.0`` is ``"2022"``),
so a mapping reads every tabular source alike; JSON values keep their JSON types.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError

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


def _delimited(path: Path, delimiter: str) -> Iterator[dict[str, Any]]:
    csv.field_size_limit(1 << 30)
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        if reader.fieldnames is None:
            return
        for row in reader:
            if None in row:
                raise ConfigError(f"{path} line {reader.line_num}: more cells than header columns")
            values = {key: value if value is not None else "" for key, value in row.items()}
            if any(values.values()):
                yield values


def _xlsx(path: Path, sheet: str | None) -> Iterator[dict[str, Any]]:
    try:
        import openpyxl  # type: ignore[import-untyped]  # deferred: only spreadsheets need it
    except ImportError:
        raise ConfigError(
            f"input {path}: reading XLSX files needs openpyxl, which is not installed; "
            "install the import extra: pip install 'pytest-legaleval[import]'"
        ) from None

    workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        if sheet is not None and sheet not in workbook.sheetnames:
            raise ConfigError(
                f"{path}: no sheet {sheet!r}; sheets: {', '.join(workbook.sheetnames)}"
            )
        rows = (workbook[sheet] if sheet else workbook.worksheets[0]).iter_rows(values_only=True)
        header = next(rows, None)
        if header is None:
            return
        names = [_cell(name) for name in header]
        for values in rows:
            cells = [_cell(v) for v in values]
            if any(cells):
                yield dict(zip(names, cells + [""] * (len(names) - len(cells)), strict=False))
    finally:
        workbook.close()


def _json(path: Path, records_key: str | None) -> Iterator[dict[str, Any]]:
    try:
        document = json.loads(path.read_text(encoding="utf-8-sig"))
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from None
    if records_key is not None:
        document = document.get(records_key) if isinstance(document, dict) else None
    if not isinstance(document, list):
        where = f"key {records_key!r}" if records_key else "the top level"
        raise ConfigError(f"{path}: expected an array of objects at {where} (mapping records_key)")
    for position, row in enumerate(document):
        if not isinstance(row, dict):
            raise ConfigError(f"{path}: item {position} is not an object")
        yield row


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8-sig") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise ConfigError(f"{path} line {number} is not valid JSON: {exc}") from None
            if not isinstance(row, dict):
                raise ConfigError(f"{path} line {number} is not a JSON object")
            yield row


def read_rows(
    path: Path, *, sheet: str | None = None, records_key: str | None = None
) -> Iterator[dict[str, Any]]:
    """Yield the rows of a CSV, TSV, JSON, JSONL or XLSX file, blank rows skipped.

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
    if suffix == ".csv":
        return _delimited(path, ",")
    if suffix == ".tsv":
        return _delimited(path, "\t")
    if suffix == ".json":
        return _json(path, records_key)
    if suffix == ".jsonl":
        return _jsonl(path)
    if suffix == ".xlsx":
        return _xlsx(path, sheet)
    raise ConfigError(
        f"input {path}: unsupported file type; use one of {', '.join(TABLE_SUFFIXES)}"
    )
