"""Typed row readers for the importers: XLSX, CSV, TSV, JSON, JSONL and Parquet, streamed.

Unlike :mod:`~pytest_legaleval.importers.tables` (the mapping converter's readers, which
turn every cell into text), these keep each cell's own type: an importer needs LEXam's
``gold`` as the integer it is and a Parquet list column as a list. Spreadsheet text is the
text Excel shows: ``_xHHHH_`` escapes are decoded once, as the OOXML standard says (a
stored ``_x005F_x0003_`` is the seven characters ``_x0003_``).

XLSX needs ``openpyxl`` and Parquet ``pyarrow``, both in the ``[import]`` extra; a missing
one is a :class:`~pytest_legaleval.errors.ConfigError` that names the extra.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError

__all__ = ["READABLE_SUFFIXES", "missing_extra", "read_table"]

READABLE_SUFFIXES: tuple[str, ...] = (".xlsx", ".csv", ".tsv", ".json", ".jsonl", ".parquet")
_PARQUET_BATCH = 512


def missing_extra(module: str, what: str) -> ConfigError:
    """The error for a reader dependency that is not installed."""
    return ConfigError(
        f"reading {what} needs {module}, which is not installed; "
        f"install the import extra: pip install 'pytest-legaleval[import]'"
    )


def _xlsx(path: Path, sheet: str | None) -> Iterator[dict[str, Any]]:
    try:
        import openpyxl  # type: ignore[import-untyped]  # deferred: only XLSX needs it
    except ImportError:
        raise missing_extra("openpyxl", "XLSX files") from None
    try:
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many types for a damaged file
        raise ConfigError(f"{path} is not a readable XLSX file: {exc}") from None
    try:
        if sheet is not None and sheet not in workbook.sheetnames:
            raise ConfigError(
                f"{path}: no sheet {sheet!r}; sheets: {', '.join(workbook.sheetnames)}"
            )
        rows = (workbook[sheet] if sheet else workbook.worksheets[0]).iter_rows(values_only=True)
        header = next(rows, None)
        if header is None:
            return
        names = [str(name) if name is not None else "" for name in header]
        for values in rows:
            if all(v is None or v == "" for v in values):
                continue
            cells = list(values) + [None] * (len(names) - len(values))
            yield {name: cells[i] for i, name in enumerate(names) if name}
    finally:
        workbook.close()


def _delimited(path: Path, delimiter: str) -> Iterator[dict[str, Any]]:
    csv.field_size_limit(1 << 30)
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        for row in reader:
            if None in row:
                raise ConfigError(f"{path} line {reader.line_num}: more cells than header columns")
            values = {key: "" if value is None else value for key, value in row.items()}
            if any(values.values()):
                yield values


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


def _json(path: Path, records_key: str | None) -> Iterator[dict[str, Any]]:
    try:
        document = json.loads(path.read_text(encoding="utf-8-sig"))
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from None
    if records_key is not None:
        document = document.get(records_key) if isinstance(document, dict) else None
        if not isinstance(document, list):
            raise ConfigError(f"{path}: expected an array of objects at key {records_key!r}")
    # A Hugging Face JSON export is an array of rows, or {"data": [...]}; nothing else.
    elif isinstance(document, dict) and isinstance(document.get("data"), list):
        document = document["data"]
    if not isinstance(document, list):
        raise ConfigError(f"{path}: expected an array of row objects")
    for position, row in enumerate(document):
        if not isinstance(row, dict):
            raise ConfigError(f"{path}: item {position} is not an object")
        yield row


def _parquet(path: Path) -> Iterator[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]  # deferred: only Parquet
    except ImportError:
        raise missing_extra("pyarrow", "Parquet files") from None
    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError ...
        raise ConfigError(f"{path} is not a readable Parquet file: {exc}") from None
    with parquet:
        for batch in parquet.iter_batches(batch_size=_PARQUET_BATCH):
            yield from batch.to_pylist()


def read_table(
    path: Path, *, sheet: str | None = None, records_key: str | None = None
) -> Iterator[dict[str, Any]]:
    """Yield the rows of one file as dicts, blank rows skipped; its suffix names its format.

    Args:
        path: the file.
        sheet: the XLSX sheet (default: the first).
        records_key: for JSON, the key of the array of rows when the top level is an
            object (default: the top level, or Hugging Face's ``data``).

    Raises:
        ConfigError: an unknown suffix, an unreadable file or a missing reader (the
            message names the ``[import]`` extra).

    """
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        return _xlsx(path, sheet)
    if suffix in (".csv", ".tsv"):
        return _delimited(path, "\t" if suffix == ".tsv" else ",")
    if suffix == ".jsonl":
        return _jsonl(path)
    if suffix == ".json":
        return _json(path, records_key)
    if suffix == ".parquet":
        return _parquet(path)
    raise ConfigError(f"{path}: unsupported file type; use one of {', '.join(READABLE_SUFFIXES)}")
