"""Properties of the shared writer: every row is written or reported, never dropped."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_legaleval.importers import ImportOptions, SourceRow, get_importer, write_records
from pytest_legaleval.testing.strategies import hostile_text, json_values, legal_eval_rows
from pytest_legaleval.validation import check_legal_eval_row

SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# A record the writer may see: valid rows, rows with a few fields broken, or any JSON.
records = st.one_of(
    legal_eval_rows(),
    st.builds(
        lambda row, key, value: {**row, key: value},
        legal_eval_rows(),
        st.sampled_from(["id", "prompt", "choices", "correct_choice_ids", "rubric", "metadata"]),
        json_values(hostile_text(), max_leaves=6),
    ),
    st.dictionaries(hostile_text(8), json_values(hostile_text(), max_leaves=6), max_size=6),
)
source_rows = st.builds(
    SourceRow,
    where=st.integers(0, 10**6).map(lambda n: f"f row {n}"),
    split=st.sampled_from([None, "test", "train"]),
    record=st.none() | records,
    error=st.none() | st.text(min_size=1, max_size=20),
)


def _check(summary: Any, out: Path, rows: list[SourceRow]) -> None:
    assert summary.read == len(rows)
    assert summary.read == summary.written + summary.failed + summary.skipped_total
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").split("\n")[:-1]]
    assert len(written) == summary.written
    assert len({r["id"] for r in written}) == len(written)
    for index, row in enumerate(written):
        assert check_legal_eval_row(row, index)[0] == []
    assert all(f.reason for f in summary.failures)
    assert len(summary.failures) == min(summary.failed, 50)


@SETTINGS
@given(rows=st.lists(source_rows, max_size=12), split=st.sampled_from([None, "test"]))
def test_any_row_is_written_or_reported(rows: list[SourceRow], split: str | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.jsonl"
        summary = write_records(rows, out, split=split)
        _check(summary, out, rows)
        assert not list(Path(folder).glob(".*tmp*"))


@SETTINGS
@given(
    rows=st.lists(source_rows, max_size=12),
    limit=st.integers(0, 5),
    seed=st.none() | st.integers(0, 3),
)
def test_sampling_writes_at_most_limit_valid_records(
    rows: list[SourceRow], limit: int, seed: int | None
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.jsonl"
        summary = write_records(rows, out, limit=limit, seed=seed)
        assert summary.written <= limit
        if seed is not None:
            _check(summary, out, rows)


# The cells an upstream row may hold: text, numbers, lists, nested objects, nulls.
upstream_rows = st.dictionaries(
    st.sampled_from(
        [
            "id",
            "question",
            "choices",
            "gold",
            "answer",
            "question_type",
            "4_choices",
            "4_choices_gold",
            "option_a",
            "option_b",
            "facts",
            "context",
            "a",
            "b",
            "label",
            "case_id",
            "task",
            "prompt_0",
            "response_0",
            "reference_texts_0",
            "rubric",
            "Task ID",
            "Prompt",
            "Rubric JSON",
            "File Attachments",
            "complete_facts",
        ]
    ),
    json_values(hostile_text(), max_leaves=6)
    | st.sampled_from(["['a', 'b']", "[1, 2", "{}", "1", "2.5", "A", "b", "[]", "[{}]"]),
    max_size=10,
)


@SETTINGS
@given(
    rows=st.lists(upstream_rows, min_size=1, max_size=6),
    source=st.sampled_from(["lexam", "prbench", "apex", "lar_echr", "include"]),
)
def test_importers_turn_any_row_into_a_record_or_a_reason(
    rows: list[dict[str, Any]], source: str
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "rows.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        importer = get_importer(source)
        produced = list(importer.rows([data], ImportOptions()))
        assert all((r.record is None) != (r.error is None) for r in produced)
        out = Path(folder) / "out.jsonl"
        summary = write_records(produced, out)
        _check(summary, out, produced)
