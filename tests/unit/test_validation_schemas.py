from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from pytest_legaleval.validation import (
    ERROR_CODES,
    RecordError,
    load_schema,
    schema_names,
    schema_validator,
)

DATA = Path(__file__).parent.parent / "data"
REQUIRED_SCHEMAS = {
    "legal_eval_v1",
    "contract_v1_document",
    "contract_v1_record",
    "record_error",
    "run_accepted",
    "error_envelope",
    "responses_row",
}


def test_every_required_schema_ships() -> None:
    assert REQUIRED_SCHEMAS <= set(schema_names())


@pytest.mark.parametrize("name", sorted(REQUIRED_SCHEMAS))
def test_schema_is_valid_draft_2020_12_with_id(name: str) -> None:
    schema = load_schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith(f"/{name}.schema.json")
    jsonschema.Draft202012Validator.check_schema(schema)


def test_load_schema_returns_a_fresh_copy() -> None:
    first = load_schema("record_error")
    first["properties"].clear()
    assert load_schema("record_error")["properties"]


def test_unknown_schema_name_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="legal_eval_v1"):
        load_schema("no_such_schema")


def test_record_error_codes_match_the_schema_and_the_contract() -> None:
    enum = set(load_schema("record_error")["properties"]["code"]["enum"])
    assert enum == ERROR_CODES
    assert len(ERROR_CODES) == 9


def test_record_error_to_dict_has_the_contract_keys_in_order() -> None:
    error = RecordError(1, "q_0002", "invalid_field_type", "input.prompt must be a string", "p")
    assert list(error.to_dict()) == ["index", "record_id", "code", "message", "path", "severity"]
    assert error.to_dict()["severity"] == "error"
    assert schema_validator("record_error").is_valid(error.to_dict())


def test_record_error_schema_rejects_extra_keys_and_other_severities() -> None:
    good = RecordError(0, None, "record_too_large", "m", "records[0]").to_dict()
    validator = schema_validator("record_error")
    assert validator.is_valid(good)
    assert not validator.is_valid({**good, "extra": 1})
    assert not validator.is_valid({**good, "severity": "warning"})
    assert not validator.is_valid({**good, "code": "bad_code"})
    assert not validator.is_valid({**good, "index": -1})


CONTRACT_RUN = {
    "run_id": "run_01J8Q4ER9Z7Y5V5K6F4A1P2M3N",
    "status": "accepted_with_record_errors",
    "summary": {"total_records": 3, "accepted_records": 2, "rejected_records": 1},
    "record_errors": [
        {
            "index": 1,
            "record_id": "q_0002",
            "code": "invalid_field_type",
            "message": "input.prompt must be a string",
            "path": "records[1].input.prompt",
            "severity": "error",
        }
    ],
    "request_id": "8ce7e5f9-7a47-49fd-bb9f-7d0ddc49e1e0",
}


def test_the_contracts_run_object_is_valid() -> None:
    assert schema_validator("run_accepted").is_valid(CONTRACT_RUN)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("run_id", "run_01j8q4er9z7y5v5k6f4a1p2m3n"),  # lower case is not Crockford base32
        ("run_id", "run_01J8Q4ER9Z7Y5V5K6F4A1P2M3I"),  # I is excluded
        ("status", "completed"),
        ("request_id", "not-a-uuid"),
        ("record_errors", [{"index": 0}]),  # $ref to record_error resolves and applies
    ],
)
def test_run_object_violations_are_caught(field: str, value: object) -> None:
    assert not schema_validator("run_accepted").is_valid({**CONTRACT_RUN, field: value})


def test_the_contracts_error_envelope_is_valid() -> None:
    envelope = {
        "error": {
            "code": "invalid_request",
            "message": "All records failed validation",
            "details": {"rejected_records": 100, "accepted_records": 0},
        },
        "request_id": "8ce7e5f9-7a47-49fd-bb9f-7d0ddc49e1e0",
    }
    validator = schema_validator("error_envelope")
    assert validator.is_valid(envelope)
    assert not validator.is_valid({**envelope, "error": {"code": "teapot", "message": "x"}})


@pytest.mark.parametrize(
    ("row", "valid"),
    [
        ({"record_id": "q1", "response": "B"}, True),
        ({"record_id": "q1", "response": "B", "model": "openai/gpt-4.1"}, True),
        ({"example_id": "q1", "candidate_name": "m", "response_text": "B"}, True),
        ({"record_id": "q1"}, False),
        ({"example_id": "q1", "response_text": "B"}, False),
        ({"record_id": "q1", "response": 3}, False),
        ({"record_id": "", "response": "B"}, False),
    ],
)
def test_responses_row_shapes(row: dict[str, object], valid: bool) -> None:
    assert schema_validator("responses_row").is_valid(row) is valid


def _rows(path: Path) -> list[object]:
    rows = []
    for raw in path.read_bytes().splitlines():
        try:
            rows.append(json.loads(raw.decode("utf-8")))
        except UnicodeDecodeError:
            continue
    return rows


SAMPLES = sorted((DATA / "malformed").glob("*.jsonl")) + sorted((DATA / "real").glob("*.jsonl"))


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_python_jsonschema_and_jsonschema_rs_agree(path: Path) -> None:
    # The schemas must mean the same thing to every Draft 2020-12 engine, not only ours.
    reference = jsonschema.Draft202012Validator(load_schema("legal_eval_v1"))
    fast = schema_validator("legal_eval_v1")
    for row in _rows(path):
        assert reference.is_valid(row) == fast.is_valid(row)
