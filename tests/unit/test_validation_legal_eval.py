from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from pytest_legaleval.validation import (
    check_legal_eval_row,
    check_text,
    record_sha256,
    validate_legal_eval_row,
)

MCQ: dict[str, Any] = {
    "schema_version": "legal_eval_v1",
    "id": "t:mcq:1",
    "dataset": "lexam",
    "task_type": "mcq",
    "prompt": "Which statement is correct?",
    "choices": [{"id": "A", "text": "i"}, {"id": "B", "text": "ii"}, {"id": "C", "text": "iii"}],
    "correct_choice_ids": ["B"],
    "metadata": {"policy_id": "lexam"},
}
REFERENCE: dict[str, Any] = {
    "schema_version": "legal_eval_v1",
    "id": "t:ref:1",
    "dataset": "legalbench",
    "task_type": "reference_qa",
    "prompt": "Where is diversity jurisdiction codified?",
    "reference_answers": ["28 USC § 1332"],
}
RUBRIC: dict[str, Any] = {
    "schema_version": "legal_eval_v1",
    "id": "t:rubric:1",
    "dataset": "ace",
    "task_type": "rubric_qa",
    "prompt": "Write a client alert.",
    "rubric": [
        {"id": "c1", "title": "Names the court", "weight": 2},
        {"id": "c2", "title": "Invents facts", "description": "penalty", "weight": -1.5},
    ],
    "messages": [{"role": "system", "content": "You are a lawyer."}],
    "attachments": [{"path": "docs/order.pdf", "kind": "pdf", "title": "Order"}],
}


def errors_of(row: object, index: int = 0) -> list[tuple[str, str]]:
    return [(e.code, e.path) for e in validate_legal_eval_row(row, index)]


def changed(base: dict[str, Any], **fields: Any) -> dict[str, Any]:
    row = copy.deepcopy(base)
    row.update(fields)
    return row


@pytest.mark.parametrize("row", [MCQ, REFERENCE, RUBRIC], ids=["mcq", "reference", "rubric"])
def test_valid_rows_have_no_errors(row: dict[str, Any]) -> None:
    assert validate_legal_eval_row(row, 0) == []


def test_unknown_top_level_fields_are_allowed() -> None:
    assert errors_of(changed(MCQ, source_notes={"anything": [1, 2]})) == []


def test_non_object_row_is_a_type_error_at_the_record() -> None:
    (error,) = validate_legal_eval_row(["not", "an", "object"], 7, where="a.jsonl line 9")
    assert (error.code, error.path, error.record_id) == ("invalid_field_type", "records[7]", None)
    assert error.message == "record must be an object, got array (a.jsonl line 9)"


def test_where_and_index_appear_in_every_error() -> None:
    row = changed(MCQ, prompt="", choices=[{"id": "A", "text": "x"}], correct_choice_ids=["A"])
    errors = validate_legal_eval_row(row, 3, where="lexam.jsonl line 4")
    assert {(e.code, e.path) for e in errors} == {
        ("value_out_of_range", "records[3].prompt"),
        ("value_out_of_range", "records[3].choices"),
    }
    assert all(e.message.endswith("(lexam.jsonl line 4)") for e in errors)
    assert all(e.record_id == "t:mcq:1" and e.index == 3 for e in errors)


def test_messages_are_specific() -> None:
    row = changed(MCQ, choices=[{"id": "A", "text": "x"}], correct_choice_ids=["A"])
    (error,) = validate_legal_eval_row(row, 1, where="lexam.jsonl line 2")
    assert error.message == "choices must have at least 2 items, got 1 (lexam.jsonl line 2)"


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (changed(MCQ, prompt=5), [("invalid_field_type", "records[0].prompt")]),
        (changed(MCQ, id=None), [("invalid_field_type", "records[0].id")]),
        (changed(MCQ, id=""), [("value_out_of_range", "records[0].id")]),
        (changed(MCQ, dataset=""), [("value_out_of_range", "records[0].dataset")]),
        (changed(MCQ, context=["x"]), [("invalid_field_type", "records[0].context")]),
        (changed(MCQ, metadata="lexam"), [("invalid_field_type", "records[0].metadata")]),
        # A wrong type hides the enum check of the same value: one problem, one error.
        (changed(MCQ, task_type=5), [("invalid_field_type", "records[0].task_type")]),
        (changed(MCQ, schema_version=1), [("invalid_field_type", "records[0].schema_version")]),
        (
            changed(MCQ, correct_choice_ids=["B", "B"]),
            [("value_out_of_range", "records[0].correct_choice_ids")],
        ),
        (
            changed(MCQ, correct_choice_ids=["B", ""]),
            [("value_out_of_range", "records[0].correct_choice_ids[1]")],
        ),
        (
            changed(MCQ, correct_choice_ids=["B", "Z", "Y"]),
            [
                ("invalid_enum_value", "records[0].correct_choice_ids[1]"),
                ("invalid_enum_value", "records[0].correct_choice_ids[2]"),
            ],
        ),
        (
            changed(MCQ, choices=[{"id": "A", "text": "x"}, {"id": "A", "text": "y"}]),
            # B is no longer a choice, and the second A repeats the first.
            [
                ("value_out_of_range", "records[0].choices[1].id"),
                ("invalid_enum_value", "records[0].correct_choice_ids[0]"),
            ],
        ),
        (
            changed(MCQ, choices=[{"id": "A"}, {"id": "B", "text": "y"}]),
            [("missing_required_field", "records[0].choices[0].text")],
        ),
        (
            changed(MCQ, choices="A,B"),
            [("invalid_field_type", "records[0].choices")],
        ),
        (
            # Forbidden field: its own contents are not worth a second error.
            changed(MCQ, rubric=[]),
            [("unsupported_field", "records[0].rubric")],
        ),
        (
            changed(REFERENCE, rubric="x", choices=[]),
            [
                ("unsupported_field", "records[0].rubric"),
                ("unsupported_field", "records[0].choices"),
            ],
        ),
        (
            changed(REFERENCE, reference_answers=["ok", ""]),
            [("value_out_of_range", "records[0].reference_answers[1]")],
        ),
        (
            changed(REFERENCE, reference_answers=["ok", 3]),
            [("invalid_field_type", "records[0].reference_answers[1]")],
        ),
        (
            changed(RUBRIC, reference_answers=[]),  # optional for rubric_qa, may be empty
            [],
        ),
        (
            changed(RUBRIC, rubric=[{"id": "c1", "title": "t", "weight": "heavy"}]),
            [("invalid_field_type", "records[0].rubric[0].weight")],
        ),
        (
            changed(RUBRIC, rubric=[{"id": "c1", "title": "t", "weight": True}]),
            [("invalid_field_type", "records[0].rubric[0].weight")],
        ),
        (
            changed(RUBRIC, rubric=[{"id": "c1", "title": "t", "weight": float("inf")}]),
            [("value_out_of_range", "records[0].rubric[0].weight")],
        ),
        (
            changed(RUBRIC, rubric=[{"id": "c1", "title": "t", "weight": 10**400}]),
            [("value_out_of_range", "records[0].rubric[0].weight")],
        ),
        (
            changed(RUBRIC, rubric=[{"id": "c1", "title": "a"}, {"id": "c1", "title": "b"}]),
            [("value_out_of_range", "records[0].rubric[1].id")],
        ),
        (
            changed(RUBRIC, rubric=[{"id": "c1", "title": ""}]),
            [("value_out_of_range", "records[0].rubric[0].title")],
        ),
        (
            changed(RUBRIC, messages=[{"role": "user", "content": ""}]),
            [("value_out_of_range", "records[0].messages[0].content")],
        ),
        (
            changed(RUBRIC, messages=[{"role": "user"}]),
            [("missing_required_field", "records[0].messages[0].content")],
        ),
        (changed(RUBRIC, messages=[]), []),
        (
            changed(RUBRIC, attachments=[{"kind": "pdf"}]),
            [("missing_required_field", "records[0].attachments[0].path")],
        ),
        (
            changed(RUBRIC, attachments=[{"path": "a.pdf", "title": 3}]),
            [("invalid_field_type", "records[0].attachments[0].title")],
        ),
    ],
)
def test_rule_violations(row: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert sorted(errors_of(row)) == sorted(expected)


def test_missing_per_task_type_fields() -> None:
    row = copy.deepcopy(MCQ)
    del row["choices"], row["correct_choice_ids"]
    assert errors_of(row) == [
        ("missing_required_field", "records[0].choices"),
        ("missing_required_field", "records[0].correct_choice_ids"),
    ]
    row = copy.deepcopy(RUBRIC)
    del row["rubric"]
    assert errors_of(row) == [("missing_required_field", "records[0].rubric")]


def test_every_missing_common_field_is_reported() -> None:
    (error, *rest) = validate_legal_eval_row({}, 0)
    assert [e.path for e in (error, *rest)] == [
        f"records[0].{field}"
        for field in ("schema_version", "id", "dataset", "task_type", "prompt")
    ]
    assert error.message == "schema_version is required"


def test_forbidden_field_message_names_the_task_type() -> None:
    (error,) = validate_legal_eval_row(changed(MCQ, reference_answers=["x"]), 1)
    assert error.message == 'reference_answers is not allowed for task_type "mcq"'


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda r: r.update(prompt="a\x00b"), "records[0].prompt"),
        (lambda r: r.update(prompt="a\ud800b"), "records[0].prompt"),
        (lambda r: r.update(prompt="Cafe\u0301"), "records[0].prompt"),
        (lambda r: r["choices"][1].update(text="\udfff"), "records[0].choices[1].text"),
        (lambda r: r["metadata"].update({"bad\x00key": 1}), 'records[0].metadata["bad\\u0000key"]'),
        (lambda r: r["metadata"].update({"n": [float("nan")]}), "records[0].metadata.n[0]"),
    ],
)
def test_encoding_rules_apply_to_every_string_and_key(mutate: Any, path: str) -> None:
    row = copy.deepcopy(MCQ)
    mutate(row)
    (error,) = validate_legal_eval_row(row, 0)
    assert error.path == path
    assert error.code in {"invalid_encoding", "value_out_of_range"}
    json.dumps(error.to_dict(), ensure_ascii=False).encode("utf-8")  # always serializable


def test_unusable_ids_are_reported_as_null() -> None:
    (error,) = errors = validate_legal_eval_row(changed(MCQ, id="x\ud800"), 0)
    assert errors[0].record_id is None
    assert error.code == "invalid_encoding"


def test_check_text_walks_keys_and_values() -> None:
    value = {"ok": ["fine", "e\u0301"], "k\x00": "v", "s": "\ud83d"}
    found = sorted(check_text(value, "records[2]"), key=lambda triple: triple[2])
    assert [(code, path) for code, _, path in found] == [
        ("invalid_encoding", "records[2].ok[1]"),
        ("invalid_encoding", "records[2].s"),
        ("invalid_encoding", 'records[2]["k\\u0000"]'),
    ]
    assert "NFC" in dict((p, m) for _, m, p in found)["records[2].ok[1]"]
    assert check_text({"a": ["b", 1, None, 2.5, "Straße", "é"]}, "x") == []


def test_record_sha256_is_canonical() -> None:
    a = {"b": [1, {"y": "é", "x": None}], "a": "ü"}
    b = json.loads(json.dumps(a, indent=4, ensure_ascii=True))
    b = dict(reversed(list(b.items())))
    assert record_sha256(a) == record_sha256(b)
    assert record_sha256({"a": 1}) == (
        "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
    )
    assert check_legal_eval_row(MCQ, 0) == ([], record_sha256(MCQ))
