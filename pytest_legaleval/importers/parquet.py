"""Parquet rows with bounded memory: sizes checked in the metadata, values sized before use.

A Parquet file is small on disk and can be huge in memory: a value stored once in a
column's dictionary expands into every row that names it, and compression hides the rest
(an 11 KB file reached 1.6 GB when its batches were turned into Python values). So:

1. Before any data page is read, the footer's declared sizes are checked against
   :class:`~pytest_legaleval.importers.limits.ReadLimits`: the footer itself, each row
   group (its uncompressed bytes, and its values at their in-memory width) and the whole
   file. A file over a limit is a usage error naming it; nothing else is read.
2. Text and binary columns are read as Arrow dictionaries, so a repeated value stays one
   value in memory; every row's size (each cell's bytes, by column) is computed from the
   Arrow buffers before any Python value is made. A row with a cell over the cell limit,
   or over the row limit, is an :class:`~pytest_legaleval.importers.limits.UnreadRow`;
   the others become Python values a slice at a time, never more than the batch limit.

Needs ``pyarrow`` (the ``[import]`` extra).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from itertools import accumulate, pairwise
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers.limits import ReadLimits, UnreadRow, shown_size

__all__ = ["MAX_FOOTER_BYTES", "read_parquet"]

MAX_FOOTER_BYTES = 64 * 1024 * 1024
"""A Parquet footer (the file's metadata) larger than this is refused before it is parsed."""
_MAX_BATCH_ROWS = 512
_VALUE_WIDTH = {"BOOLEAN": 1, "INT32": 4, "FLOAT": 4, "INT64": 8, "DOUBLE": 8, "INT96": 12,
                "BYTE_ARRAY": 8}  # fmt: skip


def _missing(module: str) -> ConfigError:
    return ConfigError(
        f"reading Parquet files needs {module}, which is not installed; "
        f"install the import extra: pip install 'pytest-legaleval[import]'"
    )


def _check_footer(path: Path) -> None:
    with path.open("rb") as handle:
        size = handle.seek(0, 2)
        if size < 12:
            raise ConfigError(f"{path} is not a readable Parquet file: {size} bytes")
        handle.seek(size - 8)
        length, magic = struct.unpack("<I4s", handle.read(8))
    if magic == b"PAR1" and length > MAX_FOOTER_BYTES:
        raise ConfigError(
            f"{path}: its footer declares {shown_size(length)} of metadata, over the Parquet "
            f"footer limit of {shown_size(MAX_FOOTER_BYTES)}; nothing was read"
        )


def _declared(metadata: Any, path: Path, limits: ReadLimits) -> int:
    """Check each row group's declared size; the largest per-row size, for the batch size."""
    schema = metadata.schema
    total = 0
    per_row = 1
    for number in range(metadata.num_row_groups):
        group = metadata.row_group(number)
        columns = [group.column(i) for i in range(group.num_columns)]
        data = max(group.total_byte_size, sum(c.total_uncompressed_size for c in columns))
        # What the values take once decoded, at their width: a dictionary or a run-length
        # encoding can make that far more than the encoded bytes.
        width = sum(
            c.num_values
            * (schema.column(i).length or 0 if c.physical_type == "FIXED_LEN_BYTE_ARRAY"
               else _VALUE_WIDTH.get(c.physical_type, 8))
            for i, c in enumerate(columns)
        )  # fmt: skip
        size = max(data, width)
        if size > limits.row_group:
            raise ConfigError(
                f"{path}: row group {number} declares {shown_size(size)} uncompressed, over "
                f"the Parquet row-group limit of {shown_size(limits.row_group)}; "
                "nothing was read"
            )
        total += size
        per_row = max(per_row, size // max(group.num_rows, 1))
    if total > limits.file:
        raise ConfigError(
            f"{path}: its row groups declare {shown_size(total)} uncompressed, over the "
            f"file limit of {shown_size(limits.file)}; nothing was read"
        )
    return per_row


def _text_columns(metadata: Any) -> list[str]:
    """The byte-array leaf columns that are text or binary (not decimals)."""
    schema = metadata.schema
    found = []
    for index in range(metadata.num_columns):
        column = schema.column(index)
        if column.physical_type == "BYTE_ARRAY" and column.logical_type.type != "DECIMAL":
            found.append(column.path)
    return found


def _binary_like(kind: Any) -> bool:
    import pyarrow as pa  # type: ignore[import-untyped]

    return bool(
        pa.types.is_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_large_binary(kind)
    )


def _sizes(array: Any) -> list[int]:
    """Each value's data bytes (text and binary lengths, fixed widths), nested ones summed."""
    import pyarrow as pa
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    kind = array.type
    count = len(array)
    if isinstance(kind, pa.BaseExtensionType):  # JSON, UUID …: sized as what they store
        return _sizes(array.storage)
    # Nulls come out as None and count 0 (pyarrow's fill_null would import pandas).
    if pa.types.is_dictionary(kind):
        values = array.dictionary
        if _binary_like(values.type):
            taken = pc.take(pc.binary_length(values), array.indices).to_pylist()
            return [size or 0 for size in taken]
        each = _sizes(values)
        return [0 if i is None else each[i] for i in array.indices.to_pylist()]
    if _binary_like(kind):
        return [size or 0 for size in pc.binary_length(array).to_pylist()]
    if pa.types.is_map(kind):
        child = [k + v for k, v in zip(_sizes(array.keys), _sizes(array.items), strict=True)]
        return _per_parent(child, array.offsets.to_pylist())
    if pa.types.is_fixed_size_list(kind):
        size = kind.list_size
        child = _sizes(array.values)
        return _per_parent(child, [(array.offset + i) * size for i in range(count + 1)])
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _per_parent(_sizes(array.values), array.offsets.to_pylist())
    if pa.types.is_struct(kind):
        fields = [_sizes(field) for field in array.flatten()]
        return [sum(row) for row in zip(*fields, strict=True)] if fields else [0] * count
    try:
        width = max(1, kind.bit_width // 8)
    except (ValueError, AttributeError):
        width = 16  # a type without a fixed width and not handled above: a fair guess
    return [width] * count


def _per_parent(child: list[int], offsets: list[int]) -> list[int]:
    running = [0, *accumulate(child)]
    return [running[end] - running[start] for start, end in pairwise(offsets)]


def _batch_rows(
    batch: Any, columns: list[list[int]], limits: ReadLimits
) -> Iterator[dict[str, Any]]:
    """The rows of one batch, sized in ``columns``, made Python values a slice at a time."""
    names = batch.schema.names
    start = 0
    held = 0
    for index in range(batch.num_rows):
        cells = [column[index] for column in columns]
        widest = max(range(len(cells)), key=cells.__getitem__) if cells else 0
        problem = None
        if cells and cells[widest] > limits.cell:
            problem = (
                f"column {names[widest]!r} holds {shown_size(cells[widest])}, over the "
                f"cell limit of {shown_size(limits.cell)}"
            )
        elif sum(cells) > limits.row:
            problem = (
                f"the row holds {shown_size(sum(cells))}, over the row limit of "
                f"{shown_size(limits.row)}"
            )
        if problem is not None or held + sum(cells) > limits.batch:
            if index > start:
                yield from _python_rows(batch, start, index - start)
            start, held = index, 0
        if problem is not None:
            yield UnreadRow(problem)
            start = index + 1
            continue
        held += sum(cells)
    if batch.num_rows > start:
        yield from _python_rows(batch, start, batch.num_rows - start)


def _python_rows(batch: Any, start: int, count: int) -> list[dict[str, Any]]:
    """Rows ``start`` … as Python values; a row whose value Python cannot hold fails alone.

    A timestamp past year 9999, for one, is a valid Parquet value but no ``datetime``.
    """
    try:
        rows: list[dict[str, Any]] = batch.slice(start, count).to_pylist()
    except Exception as exc:  # pyarrow's conversions raise OverflowError, ValueError, Arrow*
        if count == 1:
            return [UnreadRow(f"a value cannot be read: {exc}")]
        return [row for at in range(start, start + count) for row in _python_rows(batch, at, 1)]
    return rows


def read_parquet(path: Path, limits: ReadLimits) -> Iterator[dict[str, Any]]:
    """Yield a Parquet file's rows as dicts, within ``limits``.

    Raises:
        ConfigError: pyarrow missing, an unreadable file, or declared sizes over a limit
            (the message names it).

    """
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]  # deferred: only Parquet
    except ImportError:
        raise _missing("pyarrow") from None
    _check_footer(path)
    try:
        metadata = pq.read_metadata(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError ...
        raise ConfigError(f"{path} is not a readable Parquet file: {exc}") from None
    per_row = _declared(metadata, path, limits)
    rows = max(1, min(_MAX_BATCH_ROWS, limits.batch // per_row))
    try:
        parquet = pq.ParquetFile(path, read_dictionary=_text_columns(metadata))
    except Exception as exc:
        raise ConfigError(f"{path} is not a readable Parquet file: {exc}") from None
    expanded = 0
    with parquet:
        for batch in _batches(parquet, rows, metadata.num_row_groups, path):
            columns = [_sizes(column) for column in batch.columns]
            expanded += sum(map(sum, columns))
            if expanded > limits.file:
                # Checked before the batch becomes Python values: a value repeated through
                # a dictionary is small on disk and in Arrow, huge once copied per row.
                raise ConfigError(
                    f"{path}: its rows expand to more than {shown_size(limits.file)}, over the "
                    "file limit (values repeated through a dictionary?); import stopped"
                )
            yield from _batch_rows(batch, columns, limits)


def _batches(parquet: Any, rows: int, groups: int, path: Path) -> Iterator[Any]:
    """The batches of each row group in turn.

    A batch spanning two row groups would need two dictionaries in one nested column,
    which pyarrow cannot read.
    """
    for group in range(groups):
        batches = parquet.iter_batches(batch_size=rows, row_groups=[group])
        while True:
            try:
                batch = next(batches, None)
            except Exception as exc:  # a damaged page: the file, not a row, is unreadable
                raise ConfigError(f"{path} is not a readable Parquet file: {exc}") from None
            if batch is None:
                break
            yield batch
