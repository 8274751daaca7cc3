"""Human labels: the JSONL and Turing readers, their record errors, and matching to a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._audit_items import collect_items, match_labels
from pytest_legaleval.metrics._human_labels import labels_from_rows, read_human_labels
from pytest_legaleval.validation import ERROR_CODES, MAX_RECORD_BYTES, schema_validator

from .audit_lines import line


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
        encoding="utf-8",
    )
    return path


def _codes(errors: list[Any]) -> list[tuple[str, str]]:
    return [(e.code, e.path) for e in errors]


def _valid_contract_entries(errors: list[Any]) -> None:
    validator = schema_validator("record_error")
    for error in errors:
        assert validator.is_valid(error.to_dict()), error


def test_good_rows_become_labels(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "labels.jsonl",
        [
            {"record_id": "r1", "model": "m1", "passed": True, "rater": "ann"},
            "",
            {"record_id": "r2", "score": 0.25, "comment": "too short"},
            {"record_id": "r3", "model": "m1", "criterion_id": "c1", "passed": False},
        ],
    )
    found = read_human_labels(path)
    assert not found.errors and found.rows == 3 and found.rejected == 0
    first, second, third = found.labels
    assert (first.record_id, first.model, first.passed, first.rater) == ("r1", "m1", True, "ann")
    assert (second.model, second.passed, second.score) == (None, None, 0.25)
    assert (third.criterion_id, third.passed, third.index) == ("c1", False, 2)
    assert third.where == "labels.jsonl line 4"


@pytest.mark.parametrize(
    ("row", "code", "path"),
    [
        ("not json", "invalid_encoding", "labels[0]"),
        ('{"record_id": "r", "passed": true, "passed": false}', "invalid_encoding", "labels[0]"),
        ([1, 2], "invalid_field_type", "labels[0]"),
        ({"record_id": "r", "passed": "yes"}, "invalid_field_type", "labels[0].passed"),
        ({"record_id": 7, "passed": True}, "invalid_field_type", "labels[0].record_id"),
        ({"record_id": "r", "score": 1.5}, "value_out_of_range", "labels[0].score"),
        ({"record_id": "r", "score": -0.1}, "value_out_of_range", "labels[0].score"),
        ('{"record_id": "r", "score": NaN}', "invalid_encoding", "labels[0]"),  # not JSON
        ('{"record_id": "r", "score": 1e400}', "value_out_of_range", "labels[0].score"),
        ({"record_id": "", "passed": True}, "value_out_of_range", "labels[0].record_id"),
        ({"passed": True}, "missing_required_field", "labels[0].record_id"),
        ({"record_id": "r"}, "missing_required_field", "labels[0].passed"),
        ({"record_id": "r", "passed": True, "pased": 1}, "unsupported_field", "labels[0].pased"),
        ({"record_id": "r\u0000", "passed": True}, "invalid_encoding", "labels[0].record_id"),
    ],
)
def test_bad_rows_are_record_errors(tmp_path: Path, row: Any, code: str, path: str) -> None:
    good = {"record_id": "ok", "passed": True}
    found = read_human_labels(_write(tmp_path / "l.jsonl", [row, good]))
    assert (code, path) in _codes(found.errors)
    pairs = _codes(found.errors)
    assert len(pairs) == len(set(pairs))  # one problem, one error (1e400: schema and scan)
    assert [label.record_id for label in found.labels] == ["ok"]  # the next row still reads
    assert found.rejected == 1 and found.rows == 2
    assert all(e.code in ERROR_CODES and "l.jsonl line 1" in e.message for e in found.errors)
    _valid_contract_entries(found.errors)


def test_invalid_utf8_and_oversized_rows(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    big = json.dumps({"record_id": "r", "passed": True, "comment": "x" * MAX_RECORD_BYTES})
    path.write_bytes(b'{"record_id": "\xff", "passed": true}\n' + big.encode() + b"\n")
    found = read_human_labels(path)
    assert _codes(found.errors) == [
        ("invalid_encoding", "labels[0]"),
        ("record_too_large", "labels[1]"),
    ]
    assert "not valid UTF-8" in found.errors[0].message


def test_a_bom_and_crlf_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"record_id": "r", "passed": true}\r\n')
    assert [label.record_id for label in read_human_labels(path).labels] == ["r"]


def _turing(tmp_path: Path, decisions: list[Any], name: str = "alice") -> Path:
    folder = tmp_path / "evaluations"
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"decisions": decisions}), encoding="utf-8")
    return path


def test_a_turing_human_evaluation_file_is_read(tmp_path: Path) -> None:
    path = _turing(
        tmp_path,
        [
            {"id": "r1", "type": "critique", "answer_model": "m1", "verdict": "Correct"},
            {"id": "r2@m2", "type": "critique", "answer_model": "m2", "verdict": "incorrect"},
            {"id": "r3", "type": "critique_debate", "verdict": "insufficient"},
            {},
            {"id": "q9", "type": "illposed", "verdict": "fail"},
            {"id": "r4", "type": "critique", "verdict": "obscure"},
            {"id": "r5", "type": "opinion", "verdict": "correct"},
        ],
    )
    found = read_human_labels(path)
    labels = [(x.record_id, x.model, x.passed, x.rater) for x in found.labels]
    assert labels == [
        ("r1", "m1", True, "alice"),
        ("r2", "m2", False, "alice"),
        ("r3", None, False, "alice"),
    ]
    assert found.skipped == 1 and found.rows == 6 and found.rejected == 2
    assert ("invalid_enum_value", "decisions[5].verdict") in _codes(found.errors)
    assert any(e.path.startswith("decisions[6]") for e in found.errors)
    _valid_contract_entries(found.errors)


def test_a_directory_reads_every_file_with_its_rater(tmp_path: Path) -> None:
    _turing(tmp_path, [{"id": "r1", "type": "critique", "verdict": "correct"}], "alice")
    _turing(tmp_path, [{"id": "r1", "type": "critique", "verdict": "incorrect"}], "bob")
    _write(tmp_path / "evaluations" / "extra.jsonl", [{"record_id": "r2", "passed": True}])
    (tmp_path / "evaluations" / "notes.txt").write_text("ignored", encoding="utf-8")
    found = read_human_labels(tmp_path / "evaluations")
    assert found.files == ["alice.json", "bob.json", "extra.jsonl"]
    assert [(x.record_id, x.rater) for x in found.labels] == [
        ("r1", "alice"),
        ("r1", "bob"),
        ("r2", None),
    ]


def test_files_that_cannot_be_read_raise_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        read_human_labels(tmp_path / "missing.jsonl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"no \.jsonl or \.json file"):
        read_human_labels(tmp_path / "empty")
    automated = tmp_path / "judge.json"
    automated.write_text(
        json.dumps({"decisions": [{"id": "r", "type": "critique", "verdict": "correct",
                                   "judge_model": "j", "reasoning": "ok"}]}),
        encoding="utf-8",
    )  # fmt: skip
    with pytest.raises(ConfigError, match="automated evaluation file, not human labels"):
        read_human_labels(automated)
    broken = tmp_path / "broken.json"
    broken.write_text('{"decisions": 5}', encoding="utf-8")
    with pytest.raises(ConfigError, match="decisions array"):
        read_human_labels(broken)


KEYS = ["record_id", "model", "passed", "score", "rater", "x", "criterion_id"]


@settings(max_examples=75, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(KEYS),
            st.none() | st.booleans() | st.floats() | st.text(max_size=5) | st.integers(),
        )
        | st.integers()
        | st.text(max_size=5),
        max_size=8,
    )
)
def test_any_rows_give_labels_or_record_errors(rows: list[Any]) -> None:
    found = labels_from_rows(rows)
    assert found.rows == len(rows)
    assert len(found.labels) + found.rejected == len(rows)
    rejected_rows = {e.index for e in found.errors}
    assert len(rejected_rows) == found.rejected
    for label in found.labels:
        assert label.passed is not None or label.score is not None
        assert label.score is None or 0.0 <= label.score <= 1.0


# -- matching labels to a run -----------------------------------------------------------------


LINES = [
    line("r1", "m1", passed=True),
    line("r1", "m2", passed=False),
    line(
        "r2",
        "m1",
        passed=False,
        criteria=[{"id": "c1", "met": 1.0}, {"id": "c2", "met": 0.0}, {"id": "c3", "met": None}],
    ),
    line("r3", "m1", passed=None),  # a judge error: no verdict
    line("q1", "m1", passed=True, grader="mcq"),  # graded without a judge
    line("solo", "m1", passed=True),
]


def _match(rows: list[dict[str, Any]]) -> Any:
    return match_labels(labels_from_rows(rows), collect_items(LINES))


def test_unknown_ids_missing_models_and_bad_criteria_are_record_errors() -> None:
    matched = _match(
        [
            {"record_id": "nope", "model": "m1", "passed": True},
            {"record_id": "r1", "model": "m9", "passed": True},
            {"record_id": "r1", "passed": True},  # two models answered r1
            {"record_id": "r2", "model": "m1", "criterion_id": "c7", "passed": True},
            {"record_id": "r1", "model": "m1", "criterion_id": "c1", "passed": True},  # no criteria
        ]
    )
    assert _codes(matched.errors) == [
        ("invalid_enum_value", "labels[0].record_id"),
        ("invalid_enum_value", "labels[1].model"),
        ("missing_required_field", "labels[2].model"),
        ("invalid_enum_value", "labels[3].criterion_id"),
        ("invalid_enum_value", "labels[4].criterion_id"),
    ]
    assert "2 models answered this record (m1, m2)" in matched.errors[2].message
    assert matched.counts["rejected"] == 5 and not matched.items
    _valid_contract_entries(matched.errors)


def test_a_model_may_be_left_out_when_one_model_answered() -> None:
    matched = _match([{"record_id": "solo", "passed": False}])
    assert not matched.errors
    assert matched.items[("solo", "m1")].passed is False


def test_labels_on_mcq_items_and_on_items_without_a_verdict_are_counted_apart() -> None:
    matched = _match(
        [
            {"record_id": "q1", "model": "m1", "passed": True},
            {"record_id": "r3", "model": "m1", "passed": True},
            {"record_id": "r1", "model": "m1", "passed": True},
            {"record_id": "r2", "model": "m1", "criterion_id": "c3", "passed": True},
        ]
    )
    assert not matched.errors  # c3 is a criterion of r2, but its verdict failed
    assert matched.counts["not_judge_graded"] == 1 and matched.counts["without_verdict"] == 2
    assert list(matched.items) == [("r1", "m1")] and matched.counts["used"] == 1


def test_duplicates_of_one_rater_are_errors_and_raters_combine_by_majority() -> None:
    matched = _match(
        [
            {"record_id": "r1", "model": "m1", "passed": True, "rater": "a"},
            {"record_id": "r1", "model": "m1", "passed": False, "rater": "a"},  # duplicate
            {"record_id": "r1", "model": "m1", "passed": False, "rater": "b", "score": 0.4},
            {"record_id": "r1", "model": "m1", "passed": False, "rater": "c", "score": 0.2},
            {"record_id": "r1", "model": "m2", "passed": True, "rater": "a"},
            {"record_id": "r1", "model": "m2", "passed": False, "rater": "b"},  # a tie
        ]
    )
    assert _codes(matched.errors) == [("duplicate_record_id", "labels[1]")]
    assert "(the first, labels row 1, is kept)" in matched.errors[0].message
    combined = matched.items[("r1", "m1")]
    assert (combined.passed, combined.raters, combined.pass_votes, combined.fail_votes) == (
        False,
        3,
        1,
        2,
    )
    assert combined.score == pytest.approx(0.3)
    tie = matched.items[("r1", "m2")]
    assert tie.passed is None and tie.tie and matched.counts["ties"] == 1
    assert matched.counts["raters"] == 3


def test_a_score_alone_votes_pass_against_the_item_s_threshold() -> None:
    matched = _match(
        [
            {"record_id": "r1", "model": "m1", "score": 0.7},  # threshold 0.7: a pass
            {"record_id": "r1", "model": "m2", "score": 0.69},
            {"record_id": "r2", "model": "m1", "criterion_id": "c1", "score": 0.5},  # met: ≥ 0.5
        ]
    )
    assert matched.items[("r1", "m1")].passed is True
    assert matched.items[("r1", "m2")].passed is False
    assert matched.criteria[("r2", "m1", "c1")].passed is True


def test_a_turing_id_with_the_model_appended_resolves() -> None:
    matched = _match([{"record_id": "r1@m2", "passed": True}])
    assert not matched.errors and ("r1", "m2") in matched.items
