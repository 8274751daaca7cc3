"""Attack: Parquet files small on disk and huge in memory (issue 31).

An 11 KB Parquet file reached 1.6 GB: one long value, stored once in a column's
dictionary, named by every row, was copied into every row of a 512-row batch. Now the
footer's declared sizes are checked before any page is read, text columns stay Arrow
dictionaries, and every row is sized before any Python value is made.

The files are built here: real ones written by pyarrow, and footers rewritten to declare
sizes no test could afford to write (a small Thrift compact-protocol codec below). A
refusal that names a limit on a file whose data pages were zeroed proves nothing was read.
"""

from __future__ import annotations

import struct
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers import parquet as parquet_reader
from pytest_legaleval.importers.limits import DEFAULT_LIMITS, MiB, ReadLimits, UnreadRow
from pytest_legaleval.importers.parquet import MAX_FOOTER_BYTES
from pytest_legaleval.importers.readers import read_table

from ..extras import import_or_skip

pa = import_or_skip("pyarrow")
pq = import_or_skip("pyarrow.parquet")

GiB = 1024 * MiB

# --- Thrift compact protocol: just enough to read and rewrite a Parquet footer ---------
# A struct is a list of [field id, type, value]; a list value is (element type, [values]).
_BOOL_TRUE, _BOOL_FALSE, _I64, _BINARY, _LIST, _SET, _MAP, _STRUCT = 1, 2, 6, 8, 9, 10, 11, 12


class _Bytes:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def byte(self) -> int:
        self.at += 1
        return self.data[self.at - 1]

    def varint(self) -> int:
        shift = value = 0
        while True:
            byte = self.byte()
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    def take(self, count: int) -> bytes:
        self.at += count
        return self.data[self.at - count : self.at]


def _unzigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def _zigzag(value: int) -> int:
    return (value << 1) ^ (value >> 63)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        if value < 0x80:
            return bytes(out + bytes([value]))
        out.append((value & 0x7F) | 0x80)
        value >>= 7


def _read(source: _Bytes, kind: int) -> Any:
    if kind in (_BOOL_TRUE, _BOOL_FALSE):
        return source.byte() == 1  # inside a list: one byte per element
    if kind == 3:
        return source.byte()
    if kind in (4, 5, _I64):
        return _unzigzag(source.varint())
    if kind == 7:
        return source.take(8)
    if kind == _BINARY:
        return source.take(source.varint())
    if kind in (_LIST, _SET):
        header = source.byte()
        size = header >> 4 if header >> 4 != 15 else source.varint()
        return (header & 0x0F, [_read(source, header & 0x0F) for _ in range(size)])
    if kind == _MAP:
        size = source.varint()
        types = source.byte() if size else 0
        return (types, [(_read(source, types >> 4), _read(source, types & 0x0F))
                        for _ in range(size)])  # fmt: skip
    if kind == _STRUCT:
        fields: list[list[Any]] = []
        last = 0
        while (header := source.byte()) != 0:
            delta, field_kind = header >> 4, header & 0x0F
            last = last + delta if delta else _unzigzag(source.varint())
            value = field_kind == _BOOL_TRUE if field_kind in (1, 2) else _read(source, field_kind)
            fields.append([last, field_kind, value])
        return fields
    raise ValueError(f"unknown Thrift compact type {kind}")


def _write(kind: int, value: Any) -> bytes:
    if kind in (_BOOL_TRUE, _BOOL_FALSE):
        return bytes([1 if value else 2])
    if kind == 3:
        return bytes([value])
    if kind in (4, 5, _I64):
        return _varint(_zigzag(value))
    if kind == 7:
        return bytes(value)
    if kind == _BINARY:
        return _varint(len(value)) + bytes(value)
    if kind in (_LIST, _SET):
        element, items = value
        head = bytes([(len(items) << 4) | element]) if len(items) < 15 else (
            bytes([0xF0 | element]) + _varint(len(items)))  # fmt: skip
        return head + b"".join(_write(element, item) for item in items)
    if kind == _MAP:
        types, pairs = value
        body = b"".join(_write(types >> 4, k) + _write(types & 0x0F, v) for k, v in pairs)
        return _varint(len(pairs)) + (bytes([types]) if pairs else b"") + body
    if kind == _STRUCT:
        out, last = bytearray(), 0
        for field_id, field_kind, field_value in value:
            if field_kind in (1, 2):
                field_kind = _BOOL_TRUE if field_value else _BOOL_FALSE
            if 0 < field_id - last <= 15:
                out.append(((field_id - last) << 4) | field_kind)
            else:
                out += bytes([field_kind]) + _varint(_zigzag(field_id))
            if field_kind not in (1, 2):
                out += _write(field_kind, field_value)
            last = field_id
        return bytes(out + b"\x00")
    raise ValueError(f"unknown Thrift compact type {kind}")


def _field(struct_value: list[list[Any]], field_id: int) -> list[Any]:
    return next(field for field in struct_value if field[0] == field_id)


def rewrite_footer(path: Path, edit: Callable[[list[list[Any]]], None]) -> None:
    """Decode the footer (FileMetaData), let ``edit`` change it, write it back."""
    data = path.read_bytes()
    (length,) = struct.unpack_from("<I", data, len(data) - 8)
    start = len(data) - 8 - length
    metadata = _read(_Bytes(data[start : len(data) - 8]), _STRUCT)
    assert _write(_STRUCT, metadata) == data[start : len(data) - 8]  # the codec round-trips
    edit(metadata)
    footer = _write(_STRUCT, metadata)
    path.write_bytes(data[:start] + footer + struct.pack("<I", len(footer)) + b"PAR1")


def row_groups(metadata: list[list[Any]]) -> Iterator[list[list[Any]]]:
    """FileMetaData.row_groups (field 4)."""
    yield from _field(metadata, 4)[2][1]


def column_meta(group: list[list[Any]]) -> Iterator[list[list[Any]]]:
    """Each ColumnChunk.meta_data (field 3) of RowGroup.columns (field 1)."""
    for chunk in _field(group, 1)[2][1]:
        yield _field(chunk, 3)[2]


def zero_data_pages(path: Path) -> None:
    """Overwrite everything between the magic and the footer: reading any page now fails."""
    data = bytearray(path.read_bytes())
    (length,) = struct.unpack_from("<I", data, len(data) - 8)
    data[4 : len(data) - 8 - length] = bytes(len(data) - 12 - length)
    path.write_bytes(bytes(data))


def small_table(path: Path, rows: int = 50, **options: Any) -> Path:
    table = pa.table({"task": [f"t{i}" for i in range(rows)], "turns": list(range(rows))})
    pq.write_table(table, path, **options)
    return path


def refusal(path: Path, limits: ReadLimits = DEFAULT_LIMITS) -> str:
    with pytest.raises(ConfigError) as caught:
        list(read_table(path, limits=limits))
    return str(caught.value)


# --- declared sizes -----------------------------------------------------------------


def test_a_row_group_declaring_huge_sizes_is_refused_with_its_pages_unread(
    tmp_path: Path,
) -> None:
    path = small_table(tmp_path / "declared.parquet")

    def declare_two_gib(metadata: list[list[Any]]) -> None:
        for group in row_groups(metadata):
            _field(group, 2)[2] = 2 * GiB  # RowGroup.total_byte_size
            for meta in column_meta(group):
                _field(meta, 6)[2] = GiB  # ColumnMetaData.total_uncompressed_size

    rewrite_footer(path, declare_two_gib)
    assert pq.read_metadata(path).row_group(0).total_byte_size == 2 * GiB  # a valid footer
    zero_data_pages(path)
    message = refusal(path)
    assert message.endswith(
        "row group 0 declares 2.0 GiB uncompressed, over the Parquet row-group limit of "
        "512.0 MiB; nothing was read"
    )


def test_values_declared_past_the_row_group_limit_at_their_width(tmp_path: Path) -> None:
    # A billion int64 values (run-length encoded, they could fit in a few bytes) decode to
    # 8 GB: the declared count is checked at the values' width.
    path = small_table(tmp_path / "counted.parquet")

    def a_billion_values(metadata: list[list[Any]]) -> None:
        for group in row_groups(metadata):
            for meta in column_meta(group):
                _field(meta, 5)[2] = 10**9  # ColumnMetaData.num_values

    rewrite_footer(path, a_billion_values)
    zero_data_pages(path)
    assert "over the Parquet row-group limit" in refusal(path)


def test_row_groups_declaring_more_than_the_file_limit_in_all(tmp_path: Path) -> None:
    path = small_table(tmp_path / "groups.parquet", rows=30, row_group_size=10)

    def four_hundred_mib_each(metadata: list[list[Any]]) -> None:
        for group in row_groups(metadata):
            _field(group, 2)[2] = 400 * MiB

    rewrite_footer(path, four_hundred_mib_each)
    assert pq.read_metadata(path).num_row_groups == 3
    zero_data_pages(path)
    assert refusal(path).endswith(
        "its row groups declare 1.2 GiB uncompressed, over the file limit of 1.0 GiB; "
        "nothing was read"
    )


def test_a_footer_declaring_a_gigabyte_of_metadata_is_never_parsed(tmp_path: Path) -> None:
    path = small_table(tmp_path / "footer.parquet")
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, len(data) - 8, GiB)
    path.write_bytes(bytes(data))
    assert GiB > MAX_FOOTER_BYTES
    assert "over the Parquet footer limit of 64.0 MiB; nothing was read" in refusal(path)


# --- values that expand ---------------------------------------------------------------


def expanding(path: Path, rows: int, size: int, *, arrow_schema: bool = True) -> Path:
    """``rows`` rows naming one ``size``-character value, stored once (the attack's file).

    Without ``arrow_schema`` the dictionary exists only in Parquet's encoding (as other
    writers leave it), so a reader that does not ask for dictionaries expands it in Arrow.
    """
    value = pa.array(["a" * size])
    column = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), value)
    table = pa.table({"task": [f"t{i}" for i in range(rows)], "prompt_0": column})
    pq.write_table(table, path, compression="zstd", store_schema=arrow_schema)
    return path


def python_peak(read: Callable[[], Any]) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        try:
            result: Any = read()
        except ConfigError as exc:
            result = exc
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("arrow_schema", [True, False])
def test_the_attacks_file_is_refused_before_any_row_is_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arrow_schema: bool
) -> None:
    # 512 rows × 3.2 MB of one dictionary value: 2 KB on disk, 1.6 GB as Python rows.
    path = expanding(tmp_path / "attack.parquet", 512, 3_200_000, arrow_schema=arrow_schema)
    assert path.stat().st_size < 11 * 1024
    arrow_held: list[int] = []
    sizes = parquet_reader._sizes

    def sizing(array: Any) -> list[int]:
        arrow_held.append(pa.total_allocated_bytes())  # the batch is decoded by now
        return sizes(array)

    monkeypatch.setattr(parquet_reader, "_sizes", sizing)
    before = pa.total_allocated_bytes()
    refused, peak = python_peak(lambda: list(read_table(path)))
    assert isinstance(refused, ConfigError)
    assert "its rows expand to more than 1.0 GiB, over the file limit" in str(refused)
    assert peak < 4 * MiB  # no row was copied into Python
    # Arrow holds the value once (a reader that expands it holds 1.6 GB here when the
    # dictionary is Parquet's alone, as the second case writes it).
    assert arrow_held and max(arrow_held) - before < 16 * MiB


def test_expanding_rows_under_the_file_limit_arrive_a_bounded_slice_at_a_time(
    tmp_path: Path,
) -> None:
    # 40 rows × 2 MiB: 80 MiB as Python rows, turned into them 8 MiB at a time.
    path = expanding(tmp_path / "slices.parquet", 40, 2 * MiB)
    count = 0

    def read() -> None:
        nonlocal count
        for row in read_table(path, limits=ReadLimits(batch=8 * MiB)):
            assert len(row["prompt_0"]) == 2 * MiB
            count += 1

    _, peak = python_peak(read)
    assert count == 40
    assert peak < 16 * MiB  # not 80 MiB: a batch is never copied whole


def test_a_value_over_the_cell_limit_fails_its_row_and_is_never_copied(tmp_path: Path) -> None:
    big = "b" * (DEFAULT_LIMITS.cell + MiB)
    table = pa.table({"task": ["t1", "t2", "t3"], "prompt_0": ["short", big, "short"]})
    pq.write_table(table, tmp_path / "cell.parquet", compression="zstd")
    del big, table
    found, peak = python_peak(lambda: list(read_table(tmp_path / "cell.parquet")))
    assert [row.get("task") for row in found] == ["t1", None, "t3"]
    assert isinstance(found[1], UnreadRow)
    assert found[1].reason == "column 'prompt_0' holds 9.0 MiB, over the cell limit of 8.0 MiB"
    assert peak < 2 * MiB


def test_nested_values_count_toward_their_row(tmp_path: Path) -> None:
    # PRBench's shape: a list of structs whose texts are the bulk of the row.
    rubric = [{"title": "x" * 400, "weight": 1.0}] * 3
    table = pa.table({"task": ["t1", "t2"], "rubric": [rubric, rubric[:1]]})
    pq.write_table(table, tmp_path / "nested.parquet")
    found = list(read_table(tmp_path / "nested.parquet", limits=ReadLimits(row=1000)))
    assert isinstance(found[0], UnreadRow)
    assert found[0].reason == "the row holds 1.2 KiB, over the row limit of 1000 B"
    assert found[1] == {"task": "t2", "rubric": rubric[:1]}
