from __future__ import annotations

import copy
import uuid
from typing import Any

import pytest

from pytest_legaleval.errors import DatasetRejected
from pytest_legaleval.validation import (
    MAX_DATASET_METADATA_BYTES,
    MAX_PAYLOAD_BYTES,
    MAX_RECORD_BYTES,
    MAX_RECORD_METADATA_BYTES,
    MAX_RECORDS,
    AllRecordsRejected,
    check_contract_document,
    record_sha256,
    schema_validator,
    validate_contract_document,
    validate_contract_record,
)
from pytest_legaleval.validation.checks import serialized_size

RECORD: dict[str, Any] = {
    "record_id": "q_0001",
    "input": {"prompt": "Explain overfitting in two sentences."},
    "reference": {"answer": "Overfitting is when..."},
    "tags": ["ml", "definitions"],
    "expected": {"max_latency_ms": 2000, "required_criteria": ["accuracy", "clarity"]},
}


def document(*records: dict[str, Any], **top: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "dataset_id": "qa_eval_set_2026_01",
        "dataset_version": "2026-01-15",
        "schema_version": "1.0",
        "records": list(records) or [copy.deepcopy(RECORD)],
    }
    doc.update(top)
    return doc


def record(**fields: Any) -> dict[str, Any]:
    rec = copy.deepcopy(RECORD)
    rec.update(fields)
    return rec


def errors_of(rec: object) -> list[tuple[str, str]]:
    return [(e.code, e.path) for e in validate_contract_record(rec, 0)]


def nested(levels: int) -> dict[str, Any]:
    """A metadata object ``levels`` deep (the object itself is level 1)."""
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"k": value}
    return value


def blob(total_bytes: int) -> dict[str, str]:
    """An object whose compact JSON is exactly ``total_bytes`` long."""
    value = {"blob": "m" * (total_bytes - len('{"blob":""}'))}
    assert serialized_size(value) == total_bytes
    return value


def test_the_contract_example_record_is_valid() -> None:
    assert validate_contract_record(RECORD, 0) == []


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"record_id": "r" * 128}, []),
        ({"record_id": "r" * 129}, [("string_too_long", "records[0].record_id")]),
        ({"record_id": ""}, [("value_out_of_range", "records[0].record_id")]),
        ({"record_id": 7}, [("invalid_field_type", "records[0].record_id")]),
        ({"input": {"prompt": "p" * 200_000}}, []),
        ({"input": {"prompt": "p" * 200_001}}, [("string_too_long", "records[0].input.prompt")]),
        ({"input": {"prompt": ""}}, [("value_out_of_range", "records[0].input.prompt")]),
        ({"input": {"prompt": 3}}, [("invalid_field_type", "records[0].input.prompt")]),
        ({"input": {}}, [("missing_required_field", "records[0].input.prompt")]),
        ({"input": "text"}, [("invalid_field_type", "records[0].input")]),
        ({"reference": {"answer": "a" * 200_000}}, []),
        (
            {"reference": {"answer": "a" * 200_001}},
            [("string_too_long", "records[0].reference.answer")],
        ),
        ({"reference": {"answer": ""}}, []),
        ({"reference": {"answer": "x", "citations": ["a"]}}, []),
        ({"reference": "answer"}, [("invalid_field_type", "records[0].reference")]),
        ({"tags": [f"t{i}" for i in range(32)]}, []),
        ({"tags": [f"t{i}" for i in range(33)]}, [("value_out_of_range", "records[0].tags")]),
        ({"tags": ["t" * 64]}, []),
        ({"tags": ["ok", "t" * 65]}, [("string_too_long", "records[0].tags[1]")]),
        ({"tags": [""]}, [("value_out_of_range", "records[0].tags[0]")]),
        ({"tags": [1]}, [("invalid_field_type", "records[0].tags[0]")]),
        ({"tags": "ml"}, [("invalid_field_type", "records[0].tags")]),
        ({"expected": {"max_latency_ms": 1}}, []),
        ({"expected": {"max_latency_ms": 120_000}}, []),
        (
            {"expected": {"max_latency_ms": 0}},
            [("value_out_of_range", "records[0].expected.max_latency_ms")],
        ),
        (
            {"expected": {"max_latency_ms": 120_001}},
            [("value_out_of_range", "records[0].expected.max_latency_ms")],
        ),
        (
            {"expected": {"max_latency_ms": 2.5}},
            [("invalid_field_type", "records[0].expected.max_latency_ms")],
        ),
        (
            {"expected": {"max_latency_ms": True}},
            [("invalid_field_type", "records[0].expected.max_latency_ms")],
        ),
        (
            {"expected": {"max_latency_ms": float("inf")}},
            [("value_out_of_range", "records[0].expected.max_latency_ms")],
        ),
        ({"expected": {"required_criteria": list(reversed(["accuracy", "clarity"]))}}, []),
        ({"expected": {"required_criteria": []}}, []),
        (
            {"expected": {"required_criteria": ["accuracy", "speed"]}},
            [("invalid_enum_value", "records[0].expected.required_criteria[1]")],
        ),
        (
            {"expected": {"required_criteria": [1]}},
            [("invalid_field_type", "records[0].expected.required_criteria[0]")],
        ),
        ({"metadata": nested(5)}, []),
        ({"metadata": {"a": [[[["deep"]]]]}}, []),
        ({"metadata": nested(6)}, [("value_out_of_range", "records[0].metadata")]),
        ({"metadata": {"a": [[[[["deep"]]]]]}}, [("value_out_of_range", "records[0].metadata")]),
        ({"metadata": blob(MAX_RECORD_METADATA_BYTES)}, []),
        (
            {"metadata": blob(MAX_RECORD_METADATA_BYTES + 1)},
            [("value_out_of_range", "records[0].metadata")],
        ),
        ({"metadata": []}, [("invalid_field_type", "records[0].metadata")]),
        ({"unknown_field": {"kept": True}}, []),
    ],
)
def test_record_limits_at_their_boundaries(
    fields: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert errors_of(record(**fields)) == expected


def sized_record(total_bytes: int) -> dict[str, Any]:
    rec = record(input={"prompt": "p" * 150_000}, reference={"answer": ""})
    rec["reference"]["answer"] = "a" * (total_bytes - serialized_size(rec))
    assert serialized_size(rec) == total_bytes
    return rec


def test_record_size_limit_is_256_kb_of_compact_utf8() -> None:
    assert errors_of(sized_record(MAX_RECORD_BYTES)) == []
    (error,) = validate_contract_record(sized_record(MAX_RECORD_BYTES + 1), 4)
    assert (error.code, error.path) == ("record_too_large", "records[4]")
    assert "262,145 bytes" in error.message


def test_record_size_counts_utf8_bytes_not_characters() -> None:
    # 100,000 three-byte characters: within 200,000 characters, over 256 KB.
    (error,) = validate_contract_record(record(input={"prompt": "€" * 100_000}), 0)
    assert error.code == "record_too_large"


@pytest.mark.parametrize(
    ("prompt", "path"),
    [
        ("a\x00b", "records[0].input.prompt"),
        ("\ud800", "records[0].input.prompt"),
        ("Cafe\u0301", "records[0].input.prompt"),
    ],
)
def test_record_encoding_rules(prompt: str, path: str) -> None:
    assert errors_of(record(input={"prompt": prompt})) == [("invalid_encoding", path)]


def test_several_errors_of_one_record_are_all_reported() -> None:
    rec = record(record_id="", tags=[""], expected={"max_latency_ms": 0})
    assert sorted(errors_of(rec)) == [
        ("value_out_of_range", "records[0].expected.max_latency_ms"),
        ("value_out_of_range", "records[0].record_id"),
        ("value_out_of_range", "records[0].tags[0]"),
    ]


def test_non_object_record() -> None:
    assert errors_of("q_0001") == [("invalid_field_type", "records[0]")]


def rejection(doc: object, payload_bytes: int = 100) -> DatasetRejected:
    with pytest.raises(DatasetRejected) as caught:
        validate_contract_document(doc, payload_bytes=payload_bytes)
    envelope = caught.value.envelope(str(uuid.uuid4()))
    assert schema_validator("error_envelope").is_valid(envelope), envelope
    return caught.value


def test_the_contract_example_document_is_accepted() -> None:
    doc = document(created_at="2026-01-15T10:05:12Z", metadata={"owner": "eval-team"})
    assert validate_contract_document(doc, payload_bytes=1000) == []


def test_payload_over_100_mb_is_413() -> None:
    assert validate_contract_document(document(), payload_bytes=MAX_PAYLOAD_BYTES) == []
    exc = rejection(document(), payload_bytes=MAX_PAYLOAD_BYTES + 1)
    assert (exc.status, exc.code) == (413, "payload_too_large")


@pytest.mark.parametrize("doc", [[], "x", None, 3])
def test_non_object_top_level_is_400(doc: object) -> None:
    exc = rejection(doc)
    assert (exc.status, exc.code) == (400, "invalid_request")
    assert "must be an object" in exc.message


@pytest.mark.parametrize("field", ["dataset_id", "dataset_version", "schema_version", "records"])
def test_missing_top_level_field_is_400(field: str) -> None:
    doc = document()
    del doc[field]
    assert rejection(doc).message == f"{field} is required"


@pytest.mark.parametrize(
    ("top", "accepted"),
    [
        ({"dataset_id": "A" * 128}, True),
        ({"dataset_id": "A" * 129}, False),
        ({"dataset_id": "a.b-c_D9"}, True),
        ({"dataset_id": "has space"}, False),
        ({"dataset_id": "ünïcode"}, False),
        ({"dataset_id": ""}, False),
        ({"dataset_version": "v" * 64}, True),
        ({"dataset_version": "v" * 65}, False),
        ({"dataset_version": ""}, False),
        ({"dataset_version": 1}, False),
        ({"created_at": "2026-01-15T10:05:12Z"}, True),
        ({"created_at": "2026-01-15T10:05:12.123+00:00"}, True),
        ({"created_at": "2026-01-15T10:05:12+01:00"}, False),
        ({"created_at": "2026-01-15"}, False),
        ({"created_at": "yesterday"}, False),
        ({"metadata": nested(5)}, True),
        ({"metadata": nested(6)}, False),
        ({"metadata": blob(MAX_DATASET_METADATA_BYTES)}, True),
        ({"metadata": blob(MAX_DATASET_METADATA_BYTES + 1)}, False),
        ({"metadata": "owner"}, False),
        ({"metadata": {"owner": "a\x00"}}, False),
        ({"records": {"q": RECORD}}, False),
        ({"records": []}, False),
        ({"extra_top_level": 1}, True),
    ],
)
def test_top_level_limits_at_their_boundaries(top: dict[str, Any], accepted: bool) -> None:
    doc = document(**top)
    if accepted:
        assert validate_contract_document(doc, payload_bytes=100) == []
    else:
        exc = rejection(doc)
        assert (exc.status, exc.code) == (400, "invalid_request")
        assert exc.details["errors"][0]["path"].startswith(next(iter(top)))


def test_unsupported_schema_version() -> None:
    exc = rejection(document(schema_version="2.0"))
    assert exc.message == 'schema_version is not supported: got "2.0", expected "1.0"'


def test_records_count_limit() -> None:
    small = {"record_id": "", "input": {"prompt": "p"}}
    records = [dict(small, record_id=f"r{i}") for i in range(MAX_RECORDS)]
    assert validate_contract_document(document(*records), payload_bytes=100) == []
    records.append(dict(small, record_id="one-too-many"))
    exc = rejection(document(*records))
    assert exc.message == "records must have at most 50000 items, got 50001"


def test_all_records_invalid_is_400_with_counts() -> None:
    doc = document(record(record_id=""), record(input={}))
    with pytest.raises(AllRecordsRejected) as caught:
        validate_contract_document(doc, payload_bytes=100)
    exc = caught.value
    assert (exc.status, exc.code, exc.message) == (
        400,
        "invalid_request",
        "All records failed validation",
    )
    assert exc.details == {"rejected_records": 2, "accepted_records": 0}
    assert [e.path for e in exc.record_errors] == [
        "records[0].record_id",
        "records[1].input.prompt",
    ]


def test_duplicate_record_ids_flag_each_later_copy() -> None:
    doc = document(record(), record(), record(record_id="q_0002"), record())
    errors = validate_contract_document(doc, payload_bytes=100)
    assert [(e.code, e.path, e.index) for e in errors] == [
        ("duplicate_record_id", "records[1].record_id", 1),
        ("duplicate_record_id", "records[3].record_id", 3),
    ]
    assert errors[0].message == 'record_id "q_0001" duplicates records[0].record_id'


def test_a_record_can_have_several_errors_including_duplicate() -> None:
    doc = document(record(), record(tags=[""]))
    errors = validate_contract_document(doc, payload_bytes=100, where="up.json")
    assert [(e.code, e.path) for e in errors] == [
        ("value_out_of_range", "records[1].tags[0]"),
        ("duplicate_record_id", "records[1].record_id"),
    ]
    assert all(e.message.endswith("(up.json)") for e in errors)


def test_check_contract_document_pairs_errors_with_hashes() -> None:
    doc = document(record(), record(record_id="bad", tags=[""]))
    (first_errors, first_sha), (second_errors, _) = check_contract_document(doc, payload_bytes=1)
    assert first_errors == [] and first_sha == record_sha256(doc["records"][0])
    assert [e.code for e in second_errors] == ["value_out_of_range"]
