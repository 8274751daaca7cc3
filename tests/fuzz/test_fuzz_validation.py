"""Hypothesis properties of the validators: total, well-formed, exact on one broken field."""

from __future__ import annotations

import json
import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_legaleval.errors import DatasetRejected
from pytest_legaleval.testing.strategies import (
    contract_documents,
    contract_record_mutations,
    contract_records,
    hostile_text,
    json_values,
    legal_eval_mutations,
    legal_eval_rows,
)
from pytest_legaleval.validation import (
    ERROR_CODES,
    RecordError,
    schema_validator,
    validate_contract_document,
    validate_contract_record,
    validate_legal_eval_row,
)
from pytest_legaleval.validation.checks import canonicalize, scan_values

# Modest counts: the whole fuzz directory should finish in well under 30 s.
SETTINGS = settings(max_examples=100, deadline=None)
GENERATED = settings(max_examples=60, deadline=None)

anything = (
    json_values()
    | json_values(hostile_text())
    | st.floats()
    | st.integers(min_value=-(10**400), max_value=10**400)
)
# Shapes close enough to a row or record that the deeper rules get exercised too.
row_like = st.fixed_dictionaries(
    {"task_type": st.sampled_from(["mcq", "reference_qa", "rubric_qa", "essay"])},
    optional={
        key: anything
        for key in (
            "schema_version",
            "id",
            "dataset",
            "prompt",
            "choices",
            "correct_choice_ids",
            "rubric",
            "reference_answers",
            "messages",
            "metadata",
        )
    },
)
record_like = st.fixed_dictionaries(
    {},
    optional={
        "record_id": anything,
        "input": anything | st.fixed_dictionaries({"prompt": anything}),
        "reference": anything,
        "tags": anything,
        "expected": anything,
        "metadata": anything,
    },
)


def assert_well_formed(errors: list[RecordError], index: int) -> None:
    validator = schema_validator("record_error")
    for error in errors:
        body = error.to_dict()
        assert validator.is_valid(body), body
        assert error.code in ERROR_CODES
        assert error.index == index and error.path.startswith(f"records[{index}]")
        # Every error must survive being written as UTF-8 JSON (no lone surrogates).
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    assert len({(e.code, e.path) for e in errors}) == len(errors), "duplicate errors"


@SETTINGS
@given(anything | row_like, st.integers(0, 10))
def test_legal_eval_validator_is_total(value: Any, index: int) -> None:
    assert_well_formed(validate_legal_eval_row(value, index, where="f.jsonl line 1"), index)


@SETTINGS
@given(anything | record_like, st.integers(0, 10))
def test_contract_record_validator_is_total(value: Any, index: int) -> None:
    assert_well_formed(validate_contract_record(value, index), index)


document_like = st.fixed_dictionaries(
    {},
    optional={
        "dataset_id": anything | st.from_regex(r"\A[a-z]{1,8}\Z"),
        "dataset_version": anything | st.just("1"),
        "schema_version": anything | st.just("1.0"),
        "created_at": anything,
        "metadata": anything,
        "records": st.lists(contract_records() | record_like | anything, max_size=4) | anything,
    },
)


@SETTINGS
@given(anything | document_like, st.integers(0, 200_000_000))
def test_contract_document_validator_is_total(value: Any, payload_bytes: int) -> None:
    try:
        errors = validate_contract_document(value, payload_bytes=payload_bytes)
    except DatasetRejected as exc:
        envelope = exc.envelope(str(uuid.uuid4()))
        assert schema_validator("error_envelope").is_valid(envelope), envelope
        json.dumps(envelope, ensure_ascii=False).encode("utf-8")
        assert exc.status in (400, 413)
    else:
        for error in errors:
            assert schema_validator("record_error").is_valid(error.to_dict())


@SETTINGS
@given(anything | row_like | record_like)
def test_the_canonical_encoding_verdict_never_says_clean_wrongly(value: Any) -> None:
    if canonicalize(value).clean:
        assert scan_values(value) == []


@GENERATED
@given(legal_eval_rows())
def test_valid_rows_are_accepted(row: dict[str, Any]) -> None:
    assert validate_legal_eval_row(row, 0) == []


@GENERATED
@given(contract_documents())
def test_valid_documents_are_accepted(doc: dict[str, Any]) -> None:
    assert validate_contract_document(doc, payload_bytes=len(json.dumps(doc))) == []


@settings(max_examples=150, deadline=None)
@given(legal_eval_mutations())
def test_one_broken_row_field_gives_exactly_its_error(mutation: Any) -> None:
    errors = validate_legal_eval_row(mutation.row, 0)
    assert [(e.code, e.path) for e in errors] == [(mutation.code, mutation.path)]


@settings(max_examples=100, deadline=None)
@given(contract_record_mutations())
def test_one_broken_record_field_gives_exactly_its_error(mutation: Any) -> None:
    errors = validate_contract_record(mutation.row, 0)
    assert [(e.code, e.path) for e in errors] == [(mutation.code, mutation.path)]
