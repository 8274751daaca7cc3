"""The Parquet reader: pyarrow's own values, each row sized as a brute-force count sizes it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_legaleval.importers.limits import ReadLimits, UnreadRow
from pytest_legaleval.importers.parquet import _sizes, _text_columns
from pytest_legaleval.importers.readers import read_table

from ..extras import import_or_skip

pa = import_or_skip("pyarrow")
pq = import_or_skip("pyarrow.parquet")

DATA = Path(__file__).resolve().parents[1] / "data" / "importers"
SCHEMA = pa.schema(
    [
        ("text", pa.string()),
        ("count", pa.int64()),
        ("score", pa.float64()),
        ("flag", pa.bool_()),
        ("blob", pa.binary()),
        ("tags", pa.list_(pa.string())),
        ("rubric", pa.list_(pa.struct([("title", pa.string()), ("weight", pa.float64())]))),
        ("notes", pa.map_(pa.string(), pa.string())),
        ("pair", pa.list_(pa.int32(), 2)),
    ]
)
WIDTH = {"count": 8, "score": 8, "flag": 1}


def brute_size(value: Any, kind: Any) -> int:
    """A value's data bytes, counted from its Python form: text and bytes by length, fixed
    widths whether null or not (as Arrow stores them), nested values summed."""
    if pa.types.is_string(kind):
        return len(value.encode()) if value is not None else 0
    if pa.types.is_binary(kind):
        return len(value) if value is not None else 0
    if pa.types.is_map(kind):
        return sum(brute_size(k, kind.key_type) + brute_size(v, kind.item_type)
                   for k, v in value or [])  # fmt: skip
    if pa.types.is_fixed_size_list(kind) and value is None:
        return kind.list_size * brute_size(None, kind.value_type)  # null, its slots still kept
    if pa.types.is_list(kind) or pa.types.is_fixed_size_list(kind):
        return sum(brute_size(v, kind.value_type) for v in value or [])
    if pa.types.is_struct(kind):
        return sum(brute_size((value or {}).get(f.name), f.type) for f in kind)
    return max(1, kind.bit_width // 8)


texts = st.one_of(st.none(), st.text(max_size=12))
rows = st.fixed_dictionaries(
    {
        "text": texts,
        "count": st.one_of(st.none(), st.integers(-(2**40), 2**40)),
        "score": st.one_of(st.none(), st.floats(allow_nan=False)),
        "flag": st.one_of(st.none(), st.booleans()),
        "blob": st.one_of(st.none(), st.binary(max_size=10)),
        "tags": st.one_of(st.none(), st.lists(texts, max_size=4)),
        "rubric": st.one_of(
            st.none(),
            st.lists(
                st.one_of(
                    st.none(),
                    st.fixed_dictionaries(
                        {"title": texts, "weight": st.one_of(st.none(), st.floats(allow_nan=False))}
                    ),
                ),
                max_size=3,
            ),
        ),
        "notes": st.one_of(
            st.none(),
            st.lists(st.tuples(st.text(max_size=5), texts), max_size=3, unique_by=lambda kv: kv[0]),
        ),
        "pair": st.one_of(st.none(), st.lists(st.integers(-5, 5), min_size=2, max_size=2)),
    }
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(table_rows=st.lists(rows, max_size=25), batch=st.integers(1, 7))
def test_rows_and_sizes_match_pyarrow_and_a_brute_force_count(
    tmp_path: Path, table_rows: list[dict[str, Any]], batch: int
) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pylist(table_rows, schema=SCHEMA), path, row_group_size=batch)
    expected = pq.read_table(path).to_pylist()
    assert list(read_table(path)) == expected  # dictionaries change no value
    reader = pq.ParquetFile(path, read_dictionary=_text_columns(pq.read_metadata(path)))
    sized: list[list[int]] = []
    for part in reader.iter_batches(batch_size=batch):
        by_column = [_sizes(column) for column in part.columns]
        sized.extend(list(row) for row in zip(*by_column, strict=True))
    counted = [[brute_size(row[f.name], f.type) for f in SCHEMA] for row in expected]
    assert sized == counted


def test_over_limit_rows_keep_their_place_among_the_others(tmp_path: Path) -> None:
    texts_ = ["a" * size for size in (10, 300, 20, 300, 300, 5)]
    pq.write_table(pa.table({"id": list(range(6)), "text": texts_}), tmp_path / "t.parquet")
    found = list(read_table(tmp_path / "t.parquet", limits=ReadLimits(cell=100, batch=40)))
    assert [row["id"] if not isinstance(row, UnreadRow) else None for row in found] == [
        0, None, 2, None, None, 5
    ]  # fmt: skip
    assert all(r.reason.startswith("column 'text' holds 300 B") for r in found if not r)


@pytest.mark.parametrize("name", ["test-00000-of-00001.parquet"])
def test_prbench_reads_as_pyarrow_reads_it(name: str) -> None:
    path = DATA / "prbench" / name
    assert list(read_table(path)) == pq.read_table(path).to_pylist()


def test_a_value_python_cannot_hold_fails_its_row_alone(tmp_path: Path) -> None:
    # Microseconds 2**60 after 1970 is a valid Parquet timestamp and no Python datetime.
    when = pa.array([0, 2**60, 1_000_000], type=pa.timestamp("us"))
    pq.write_table(pa.table({"id": [1, 2, 3], "when": when}), tmp_path / "t.parquet")
    found = list(read_table(tmp_path / "t.parquet"))
    assert [row.get("id") for row in found] == [1, None, 3]
    assert isinstance(found[1], UnreadRow)
    assert found[1].reason == "a value cannot be read: date value out of range"
