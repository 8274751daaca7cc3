"""What `legaleval submit` uploads and how it reads the server: conversion, ids, headers."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_legaleval.formats import load_dataset
from pytest_legaleval.run.artifacts import ARTIFACTS
from pytest_legaleval.run.names import KNOWN_ARTIFACTS
from pytest_legaleval.service.client import (
    ARTIFACT_NAMES,
    RETRY_AFTER_CAP_S,
    ServiceError,
    checked_run_id,
    parse_retry_after,
    printable,
    printable_json,
)
from pytest_legaleval.service.documents import (
    NotUploadable,
    contract_document,
    document_format,
    write_document,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _row(row_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "schema_version": "legal_eval_v1", "id": row_id, "dataset": "mini",
        "task_type": "reference_qa", "prompt": f"Question {row_id}?",
        "reference_answers": [f"Answer {row_id}."], **extra,
    }  # fmt: skip


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_reference_rows_become_a_contract_document_the_service_reads_alike(
    tmp_path: Path,
) -> None:
    rows = [
        _row("a", context="Art. 1 applies.", metadata={"policy_id": "p"}),
        _row("b", prompt="Caf\u00e9 \u00a7 12?"),
    ]
    source = _jsonl(tmp_path / "rows.jsonl", rows)
    assert document_format(source) == "legal_eval_v1"
    target = write_document(contract_document(source), tmp_path / "doc.json")
    assert document_format(target) == "contract_v1"
    loaded = load_dataset([target], "contract_v1")
    assert loaded.rejected == []
    original = {r.id: r for r in load_dataset([source], "legal_eval_v1").records}
    for record in loaded.records:
        before = original[record.id]
        assert record.task_type == before.task_type == "reference_qa"
        assert record.reference_answers == before.reference_answers
        assert record.context == before.context and record.metadata == before.metadata
    assert {r.id: r.prompt for r in loaded.records}["b"] == "Caf\u00e9 \u00a7 12?"
    assert loaded.datasets[0].dataset_id == "mini"


@pytest.mark.parametrize(
    ("rows", "said"),
    [
        ([_row("a"), _row("m", task_type="mcq", reference_answers=None,
          choices=[{"id": "A", "text": "x"}, {"id": "B", "text": "y"}],
          correct_choice_ids=["A"])], "line 2: task_type mcq"),
        ([_row("a", reference_answers=["one", "two"])], "2 reference answers"),
        ([_row("a"), _row("b", dataset="other")], "one file per dataset"),
        ([_row("a"), {"schema_version": "legal_eval_v1", "id": "b"}], "not valid legal_eval_v1"),
    ],
)  # fmt: skip
def test_rows_the_contract_cannot_carry_stop_the_upload_saying_how(
    tmp_path: Path, rows: list[dict[str, Any]], said: str
) -> None:
    rows = [{k: v for k, v in row.items() if v is not None} for row in rows]
    with pytest.raises(NotUploadable, match=said) as caught:
        contract_document(_jsonl(tmp_path / "rows.jsonl", rows))
    if "not valid" in said:
        assert caught.value.errors and caught.value.errors[0]["code"]


def test_other_files_are_named_as_what_submit_cannot_take(tmp_path: Path) -> None:
    responses = EXAMPLES / "legal_mcq.responses.jsonl"
    with pytest.raises(Exception, match="Dataset Contract v1 document"):
        document_format(responses)
    assert document_format(EXAMPLES / "contract_reference.json") == "contract_v1"


def test_the_clients_artifact_names_are_the_contracts_and_ours() -> None:
    assert ARTIFACT_NAMES[: len(ARTIFACTS)] == ARTIFACTS
    assert set(ARTIFACT_NAMES) == set(KNOWN_ARTIFACTS)


@pytest.mark.parametrize(
    "value",
    ["../escaped", "/abs", "run_01J8Q4ER9Z7Y5V5K6F4A1P2M3N\n", "run_01J8Q4ER9Z7Y5V5K6F4A1P2M3I",
     "run_01J8Q4ER9Z7Y5V5K6F4A1P2M3N/x", None, 1, "RUN_01J8Q4ER9Z7Y5V5K6F4A1P2M3N"],
)  # fmt: skip
def test_checked_run_id_refuses_what_is_not_a_run_id(value: object) -> None:
    with pytest.raises(ServiceError, match="not one"):
        checked_run_id(value)
    assert checked_run_id("run_01J8Q4ER9Z7Y5V5K6F4A1P2M3N") == "run_01J8Q4ER9Z7Y5V5K6F4A1P2M3N"


@given(st.one_of(st.none(), st.text(max_size=40), st.from_regex(r"\A-?[0-9.e+inf]{1,12}\Z")))
def test_any_retry_after_is_a_finite_wait_within_the_cap(value: str | None) -> None:
    wait = parse_retry_after(value, 5.0)
    assert math.isfinite(wait) and 0 <= wait <= RETRY_AFTER_CAP_S


def test_retry_after_reads_delta_seconds_only() -> None:
    cases = {"0": 0.0, "7": 7.0, " 7 ": 7.0, "2.5": 2.5, "600": 60.0, "nan": 5.0,
             "-5": 5.0, "inf": 5.0, "1e3": 5.0, "+3": 5.0, "": 5.0}  # fmt: skip
    assert {k: parse_retry_after(k, 5.0) for k in cases} == cases


@given(st.text(max_size=200))
def test_printable_text_holds_no_control_or_direction_character(text: str) -> None:
    shown = printable(text, 10_000)
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in shown)
    assert not any(c in shown for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    if text.isprintable() and text.isascii():
        assert shown == text


@given(
    st.recursive(
        st.text(max_size=30),
        lambda kids: st.dictionaries(st.text(max_size=5), kids, max_size=3),
        max_leaves=8,
    )
)
def test_printable_json_stays_the_same_json_and_holds_nothing_unsafe(value: Any) -> None:
    shown = printable_json(value)
    assert json.loads(shown) == value
    assert not any(0x7F <= ord(c) <= 0x9F or c in "\u202e\u2066\u200f" for c in shown)
    assert not any(ord(c) < 0x20 and c != "\n" for c in shown)
