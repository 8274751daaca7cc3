"""Typed row readers for the importers: XLSX, CSV, TSV, JSON, JSONL and Parquet, streamed.

Unlike :mod:`~pytest_legaleval.importers.tables` (the mapping converter's readers, which
turn every cell into text), these keep each cell's own type: an importer needs LEXam's
``gold`` as the integer it is and a Parquet list column as a list.

Every read is bounded (:mod:`.limits`, the README's limits table): a file over a
file-level limit is a :class:`~pytest_legaleval.errors.ConfigError` raised before its data
is read; a cell or row over its limit is yielded as an :class:`~.limits.UnreadRow` (a
failed row naming the limit) and reading goes on. XLSX is read by :mod:`.xlsx` (standard
library only) and Parquet by :mod:`.parquet` (``pyarrow``, from the ``[import]`` extra; a
missing one is a ``ConfigError`` that names the extra). In CSV and TSV a field over the
cell limit, or a line over the row limit, is a usage error instead: past it the parser
cannot tell where the next record starts.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers.limits import DEFAULT_LIMITS, ReadLimits, UnreadRow, shown_size

__all__ = ["READABLE_SUFFIXES", "bounded_lines", "read_table"]

READABLE_SUFFIXES: tuple[str, ...] = (".xlsx", ".csv", ".tsv", ".json", ".jsonl", ".parquet")
_SKIP = 64 * 1024


def bounded_lines(handle: IO[str], limit: int) -> Iterator[tuple[int, str | None]]:
    """``(line number, line)`` for each line, ``None`` for one over ``limit`` characters.

    A line over the limit is never held: it is read and dropped a piece at a time.
    """
    number = 0
    while line := handle.readline(limit + 1):
        number += 1
        if len(line) > limit and not line.endswith("\n"):
            while (rest := handle.readline(_SKIP)) and not rest.endswith("\n"):
                pass
            yield number, None
            continue
        yield number, line


def _check_file(path: Path, limits: ReadLimits, limit: int | None = None) -> None:
    size = path.stat().st_size
    largest = limits.file if limit is None else min(limit, limits.file)
    if size > largest:
        which = "file limit" if largest == limits.file else "JSON-document limit"
        raise ConfigError(
            f"{path} is {shown_size(size)}, over the {which} of {shown_size(largest)}; "
            "nothing was read"
            + ("; convert it to JSONL, which is read a line at a time" if limit else "")
        )


def _oversized_cell(row: dict[str, Any], limits: ReadLimits) -> str | None:
    for name, value in row.items():
        size = len(value) if isinstance(value, str) else len(json.dumps(value, default=str))
        if size > limits.cell:
            return (
                f"field {name!r} holds {shown_size(size)}, over the cell limit of "
                f"{shown_size(limits.cell)}"
            )
    return None


def _delimited(path: Path, delimiter: str, limits: ReadLimits) -> Iterator[dict[str, Any]]:
    _check_file(path, limits)
    fed = 0

    def lines(handle: IO[str]) -> Iterator[str]:
        nonlocal fed
        for number, line in bounded_lines(handle, limits.row):
            if line is None:
                raise ConfigError(
                    f"{path} line {number} is longer than the row limit of "
                    f"{shown_size(limits.row)}; nothing was imported"
                )
            fed += len(line)
            yield line

    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(lines(handle), delimiter=delimiter)
        header: list[str] | None = None
        while True:
            fed = 0
            # The field limit is module-wide: set for this one record, then put back.
            previous = csv.field_size_limit(limits.cell)
            try:
                cells = next(reader, None)
            except csv.Error as exc:
                raise ConfigError(
                    f"{path} line {reader.line_num}: {exc} (the cell limit is "
                    f"{shown_size(limits.cell)}); nothing was imported"
                ) from None
            finally:
                csv.field_size_limit(previous)
            if cells is None:
                return
            if not cells:
                continue
            if header is None:
                header = cells
                continue
            if len(cells) > len(header):
                raise ConfigError(f"{path} line {reader.line_num}: more cells than header columns")
            if fed > limits.row:
                yield UnreadRow(
                    f"the record ending on line {reader.line_num} holds {shown_size(fed)}, "
                    f"over the row limit of {shown_size(limits.row)}"
                )
                continue
            values = dict(zip(header, cells + [""] * (len(header) - len(cells)), strict=True))
            if any(values.values()):
                yield values


def _jsonl(path: Path, limits: ReadLimits) -> Iterator[dict[str, Any]]:
    _check_file(path, limits)
    with path.open(encoding="utf-8-sig") as handle:
        for number, line in bounded_lines(handle, limits.row):
            if line is None:
                yield UnreadRow(
                    f"line {number} is longer than the row limit of {shown_size(limits.row)}"
                )
                continue
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise ConfigError(f"{path} line {number} is not valid JSON: {exc}") from None
            if not isinstance(row, dict):
                raise ConfigError(f"{path} line {number} is not a JSON object")
            problem = _oversized_cell(row, limits) if len(line) > limits.cell else None
            yield UnreadRow(f"line {number}: {problem}") if problem else row


def _json(path: Path, records_key: str | None, limits: ReadLimits) -> Iterator[dict[str, Any]]:
    _check_file(path, limits, limits.json_document)
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
    large = path.stat().st_size > limits.cell
    for position, row in enumerate(document):
        if not isinstance(row, dict):
            raise ConfigError(f"{path}: item {position} is not an object")
        problem = _oversized_cell(row, limits) if large else None
        if problem is None and large:
            size = len(json.dumps(row, default=str))
            if size > limits.row:
                limit = shown_size(limits.row)
                problem = f"it holds {shown_size(size)}, over the row limit of {limit}"
        yield UnreadRow(f"item {position}: {problem}") if problem else row


def _guarded(path: Path, rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """``rows``, with an unreadable or undecodable file as a usage error, not a traceback."""
    try:
        yield from rows
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None


def read_table(
    path: Path,
    *,
    sheet: str | None = None,
    records_key: str | None = None,
    limits: ReadLimits = DEFAULT_LIMITS,
) -> Iterator[dict[str, Any]]:
    """Yield the rows of one file as dicts, blank rows skipped; its suffix names its format.

    Args:
        path: the file.
        sheet: the XLSX sheet (default: the first worksheet).
        records_key: for JSON, the key of the array of rows when the top level is an
            object (default: the top level, or Hugging Face's ``data``).
        limits: the size limits (default: the README's).

    Yields:
        One dict per row; an :class:`~.limits.UnreadRow` for a row over a size limit.

    Raises:
        ConfigError: an unknown suffix, an unreadable file, a file over a limit, malformed
            XML, or a missing reader (the message names the ``[import]`` extra).

    """
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        from pytest_legaleval.importers.xlsx import read_xlsx  # deferred: only XLSX needs it

        def xlsx() -> Iterator[dict[str, Any]]:
            _check_file(path, limits)
            yield from read_xlsx(path, sheet, limits)

        return _guarded(path, xlsx())
    if suffix in (".csv", ".tsv"):
        return _guarded(path, _delimited(path, "\t" if suffix == ".tsv" else ",", limits))
    if suffix == ".jsonl":
        return _guarded(path, _jsonl(path, limits))
    if suffix == ".json":
        return _guarded(path, _json(path, records_key, limits))
    if suffix == ".parquet":
        from pytest_legaleval.importers.parquet import read_parquet  # deferred: needs pyarrow

        return _guarded(path, read_parquet(path, limits))
    raise ConfigError(f"{path}: unsupported file type; use one of {', '.join(READABLE_SUFFIXES)}")
