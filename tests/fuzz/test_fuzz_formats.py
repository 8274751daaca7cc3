"""Hypothesis properties of the file loaders: any bytes give a result or a 400/413."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_legaleval.errors import ConfigError, DatasetRejected
from pytest_legaleval.formats import load_dataset
from pytest_legaleval.records import Record
from pytest_legaleval.testing.strategies import contract_documents, legal_eval_rows
from pytest_legaleval.validation import record_sha256, schema_validator

SETTINGS = settings(max_examples=75, deadline=None)

lines = st.lists(
    st.binary(max_size=40)
    | st.sampled_from([b"{}", b"[]", b"null", b'{"id": NaN}', b"\xef\xbb\xbf{}", b"\r"]),
    max_size=6,
).map(b"\n".join)
row_lines = st.lists(legal_eval_rows(), min_size=1, max_size=4).map(
    lambda rows: b"\n".join(json.dumps(r).encode() for r in rows)
)
documents = st.binary(max_size=200) | contract_documents().map(lambda d: json.dumps(d).encode())


def load_bytes(data: bytes, name: str, fmt: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        try:
            result = load_dataset([path], fmt)
        except DatasetRejected as exc:
            assert exc.status in (400, 413)
            envelope = exc.envelope("8ce7e5f9-7a47-49fd-bb9f-7d0ddc49e1e0")
            assert schema_validator("error_envelope").is_valid(envelope), envelope
        except ConfigError:
            assert fmt == "auto"
        else:
            assert len(result.entries) == sum(info.total_records for info in result.datasets)
            for error in result.errors:
                assert schema_validator("record_error").is_valid(error.to_dict())


@SETTINGS
@given(lines | row_lines, st.sampled_from(["legal_eval_v1", "auto"]))
def test_any_bytes_as_jsonl(data: bytes, fmt: str) -> None:
    load_bytes(data, "data.jsonl", fmt)


@SETTINGS
@given(documents, st.sampled_from(["contract_v1", "auto"]))
def test_any_bytes_as_a_contract_document(data: bytes, fmt: str) -> None:
    load_bytes(data, "doc.json", fmt)


@settings(max_examples=30, deadline=None)
@given(st.lists(legal_eval_rows(), min_size=1, max_size=5, unique_by=lambda r: r["id"]))
def test_valid_rows_round_trip_into_records(rows: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.jsonl"
        path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
        result = load_dataset([path])
    assert result.errors == []
    assert [r.id for r in result.records] == [row["id"] for row in rows]
    for record, row in zip(result.records, rows, strict=True):
        assert isinstance(record, Record)
        assert record.sha256 == record_sha256(row)
        assert record.task_type == row["task_type"]
        assert len(record.choices) == len(row.get("choices", ()))
        assert len(record.rubric) == len(row.get("rubric", ()))
