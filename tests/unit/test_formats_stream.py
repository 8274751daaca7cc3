"""Streaming reads (``DatasetStream``) and selection counts without entries."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_legaleval.errors import DatasetRejected
from pytest_legaleval.formats import DatasetStream, RejectedRecord, load_dataset
from pytest_legaleval.pipeline.selection import select, selected_count
from pytest_legaleval.pipeline.settings import Shard
from pytest_legaleval.records import Record
from pytest_legaleval.validation import AllRecordsRejected

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _row(i: int, **extra: object) -> str:
    row = {
        "schema_version": "legal_eval_v1",
        "id": f"s:{i}",
        "dataset": "s",
        "task_type": "mcq",
        "prompt": f"Question {i}?",
        "choices": [{"id": "A", "text": "yes"}, {"id": "B", "text": "no"}],
        "correct_choice_ids": ["A"],
        **extra,
    }
    return json.dumps(row) + "\n"


def test_stream_yields_what_load_dataset_returns_and_rereads_on_each_iteration() -> None:
    paths = [str(EXAMPLES / "legal_mcq.jsonl"), str(EXAMPLES / "contract_reference.json")]
    loaded = load_dataset(paths)
    stream = DatasetStream(paths)
    first = list(stream)
    datasets = list(stream.datasets)
    second = list(stream)
    assert first == loaded.entries == second
    assert datasets == loaded.datasets == stream.datasets
    assert len(datasets) >= 2  # several files, each described once per iteration


def test_a_generator_holds_one_entry_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text("".join(_row(i) for i in range(5)) + '{"id": "s:bad"}\n')
    stream = iter(DatasetStream([path]))
    head = next(stream)
    assert isinstance(head, Record) and head.id == "s:0"
    rest = list(stream)
    assert [type(e) for e in rest] == [Record] * 4 + [RejectedRecord]


def test_a_rejected_file_raises_after_its_last_entry(tmp_path: Path) -> None:
    good = tmp_path / "a.jsonl"
    good.write_text(_row(1))
    bad = tmp_path / "b.jsonl"
    bad.write_text(_row(2, task_type="nonsense") + _row(3, choices=[]))
    stream = DatasetStream([good, bad])
    seen: list[object] = []
    with pytest.raises(AllRecordsRejected) as info:
        for entry in stream:
            seen.append(entry)
    assert len(seen) == 3  # a.jsonl's record, then b.jsonl's two rejected rows
    assert len(info.value.record_errors) >= 2  # the errors of every rejected row are kept
    assert [d.path for d in stream.datasets] == [str(good)]


def test_an_empty_file_is_rejected_by_the_stream(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n")
    with pytest.raises(DatasetRejected, match="at least 1 item"):
        list(DatasetStream([path]))


def test_duplicates_across_files_are_found_by_the_stream(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(_row(1))
    (tmp_path / "b.jsonl").write_text(_row(1) + _row(2))
    entries = list(DatasetStream([tmp_path]))
    assert isinstance(entries[1], RejectedRecord)
    assert entries[1].errors[0].code == "duplicate_record_id"


def test_the_stream_reads_a_changed_file_anew(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(_row(1))
    stream = DatasetStream([path])
    list(stream)
    before = stream.datasets[0].sha256
    shutil.copy(path, tmp_path / "copy.jsonl")
    path.write_text(_row(1) + _row(2))
    assert len(list(stream)) == 2
    assert stream.datasets[0].sha256 != before


@given(
    n=st.integers(0, 60),
    sample=st.none() | st.integers(0, 70),
    limit=st.none() | st.integers(0, 70),
    shard=st.none() | st.integers(1, 4).flatmap(lambda c: st.tuples(st.integers(1, c), st.just(c))),
)
def test_selected_count_equals_the_selection(
    n: int, sample: int | None, limit: int | None, shard: tuple[int, int] | None
) -> None:
    from pytest_legaleval.records import SourceRef

    entries = [
        RejectedRecord(SourceRef("f.jsonl", i, i + 1, "legal_eval_v1"), f"r{i}", "d", ())
        for i in range(n)
    ]
    chosen_shard = Shard(*shard) if shard else None
    chosen = select(entries, shard=chosen_shard, sample=sample, seed=3, limit=limit)
    in_shard = len(select(entries, shard=chosen_shard))
    assert selected_count(in_shard, sample=sample, limit=limit) == len(chosen)
