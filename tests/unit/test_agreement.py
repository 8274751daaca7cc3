from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.cli import main
from pytest_legaleval.datasets.agreement import cohen_kappa, compare_decisions, confusion_matrix
from pytest_legaleval.datasets.turing_export import (
    automated_evaluation_from_predictions,
    automated_evaluation_from_run,
)
from pytest_legaleval.run.artifacts import prediction_line
from pytest_legaleval.validation import schema_validator

REPO = Path(__file__).resolve().parents[2]
TURING = REPO / "examples" / "turing"


def test_kappa_on_a_crafted_matrix() -> None:
    # 50 items: p_o = (20 + 15) / 50 = 0.7; rows 25/25, columns 30/20:
    # p_e = (25*30 + 25*20) / 50**2 = 0.5, so kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    assert cohen_kappa([[20, 5], [10, 15]]) == pytest.approx(0.4)


def test_kappa_three_labels_by_hand() -> None:
    # n = 10, diagonal 2 + 3 + 2 = 7 -> p_o = 0.7; rows (4, 3, 3), columns (3, 4, 3):
    # p_e = (4*3 + 3*4 + 3*3) / 100 = 0.33; kappa = (0.7 - 0.33) / 0.67 = 0.37 / 0.67.
    assert cohen_kappa([[2, 1, 1], [0, 3, 0], [1, 0, 2]]) == pytest.approx(0.37 / 0.67)


def test_kappa_extremes() -> None:
    assert cohen_kappa([[3, 0], [0, 2]]) == pytest.approx(1.0)
    assert cohen_kappa([[0, 2], [3, 0]]) < 0
    assert cohen_kappa([[4]]) is None
    assert cohen_kappa([]) is None


def test_confusion_matrix_rows_are_human_columns_automated() -> None:
    labels, matrix = confusion_matrix([("yes", "no"), ("yes", "yes"), ("no", "no")])
    assert labels == ("no", "yes")
    assert matrix == [[1, 0], [1, 1]]


def test_compare_groups_by_type_and_mode_and_leaves_out_failed() -> None:
    automated = [
        {"id": "1", "type": "critique", "mode": "m1", "verdict": "Correct"},
        {"id": "2", "type": "critique", "mode": "m1", "verdict": "incorrect"},
        {"id": "3", "type": "critique", "mode": "m2", "verdict": "correct"},
        {"id": "4", "type": "illposed", "verdict": "claimant_wins"},
        {"id": "5", "type": "critique", "verdict": "correct", "status": "failed"},
        {"id": "6", "type": "illposed", "verdict": "x"},
        {"id": "7", "type": "critique", "verdict": "x"},
    ]
    human = [
        {"id": "1", "type": "critique", "mode": "m1", "verdict": " correct"},
        {"id": "2", "type": "critique", "mode": "m1", "verdict": "correct"},
        {"id": "3", "type": "critique", "mode": "m2", "verdict": "correct"},
        {"id": "4", "type": "illposed", "mode": "", "verdict": "claimant_wins"},
        {"id": "5", "type": "critique", "verdict": "correct"},
        {"id": "7", "type": "illposed", "verdict": "x"},
        {"id": "8", "type": "critique", "verdict": "x"},
    ]
    report = compare_decisions(automated, human)
    assert report.overall.pairs == 4 and report.overall.accuracy == 0.75
    assert [(g.type, g.pairs, g.accuracy) for g in report.by_type] == [
        ("critique", 3, pytest.approx(2 / 3)),
        ("illposed", 1, 1.0),
    ]
    assert [(g.type, g.mode, g.pairs) for g in report.by_type_and_mode] == [
        ("critique", "m1", 2),
        ("critique", "m2", 1),
        ("illposed", "", 1),
    ]
    m1 = report.by_type_and_mode[0]
    assert m1.labels == ("correct", "incorrect") and m1.confusion == [[1, 1], [0, 0]]
    assert (report.failed_automated, report.type_mismatches) == (1, 1)
    assert (report.unmatched_automated, report.unmatched_human) == (1, 2)


def test_agreement_command_on_the_example_files(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "agreement",
            str(TURING / "automated_evaluations" / "judge-x.json"),
            str(TURING / "evaluations" / "alice.json"),
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["overall"]["pairs"] == 2 and report["failed_automated"] == 1
    assert [g["accuracy"] for g in report["by_type"]] == [1.0, 0.0]


def test_agreement_with_nothing_in_common_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    human = tmp_path / "h.json"
    human.write_text(json.dumps({"decisions": [{"id": "zz", "type": "critique", "verdict": "x"}]}))
    code = main(["agreement", str(TURING / "automated_evaluations" / "judge-x.json"), str(human)])
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["legaleval agreement: error: no decision id appears in both files"]


def test_judge_results_export_as_a_valid_automated_evaluation() -> None:
    verdict = {"model": "judge", "score": 1.0, "rationale": "matches", "error": None, "raw": None}
    failed = {"model": "judge", "score": None, "rationale": "", "error": "judge_error", "raw": "??"}
    rows = [
        {"record_id": "r1", "model": "m", "passed": True, "response": "A", "run_id": "run_x",
         "judge": {"kind": "reference", "verdicts": [verdict]}},
        {"record_id": "r2", "model": "m", "passed": None, "response": "B",
         "judge": {"kind": "reference", "verdicts": [failed]}},
        {"record_id": "r3", "model": "m", "passed": True, "response": "C", "judge": None},
    ]  # fmt: skip
    exported = automated_evaluation_from_predictions(rows)
    schema_validator("turing_automated_evaluation").validate(exported)
    first, second = exported["decisions"]
    assert (first["id"], first["verdict"], first["status"], first["reasoning"]) == (
        "r1",
        "correct",
        "succeeded",
        "matches",
    )
    assert (second["status"], second["raw_response"]) == ("failed", "??")
    human = [{"id": "r1", "type": "critique", "mode": "reference", "verdict": "correct"}]
    report = compare_decisions(exported["decisions"], human)
    assert report.overall.accuracy == 1.0 and report.failed_automated == 1


def _stored(result: dict[str, Any]) -> dict[str, Any]:
    """A predictions.jsonl line, as the run directory writes it (``model_response``)."""
    return prediction_line(
        "run_x", f"{result['record_id']}@{result['model']}", result, "passed",
        record=None, generation_settings={}, version="test",
    )  # fmt: skip


def test_a_run_directory_exports_the_answer_and_the_rubric_reasoning(tmp_path: Path) -> None:
    rubric_verdict = {
        "model": "judge", "score": 0.5, "rationale": "", "error": None, "raw": None,
        "criteria": [
            {"id": "statute", "met": True, "score": 1.0, "rationale": "cites Art. 97 OR"},
            {"id": "notice", "met": False, "score": 0.0, "rationale": "no notice period"},
        ],
    }  # fmt: skip
    reference_verdict = {"model": "judge", "score": 1.0, "rationale": "matches the key",
                         "error": None, "raw": None}  # fmt: skip
    results = [
        {"record_id": "r1", "model": "m", "passed": False, "response": "Cite Art. 97 OR.",
         "judge": {"kind": "rubric", "verdicts": [rubric_verdict]}},
        {"record_id": "r2", "model": "m", "passed": True, "response": "The buyer.",
         "judge": {"kind": "reference", "verdicts": [reference_verdict]}},
    ]  # fmt: skip
    (tmp_path / "predictions.jsonl").write_text(
        "".join(json.dumps(_stored(r)) + "\n" for r in results), encoding="utf-8"
    )
    assert "response" not in _stored(results[0])  # what the run stores
    exported = automated_evaluation_from_run(tmp_path)
    schema_validator("turing_automated_evaluation").validate(exported)
    rubric, reference = exported["decisions"]
    assert (rubric["answer"], rubric["mode"]) == ("Cite Art. 97 OR.", "rubric")
    assert rubric["reasoning"] == (
        "statute: met — cites Art. 97 OR\nnotice: not met — no notice period"
    )
    assert (reference["answer"], reference["reasoning"]) == ("The buyer.", "matches the key")


def test_the_report_says_which_axis_of_a_confusion_matrix_is_which() -> None:
    automated = [
        {"id": "a", "type": "critique", "verdict": "correct"},
        {"id": "b", "type": "critique", "verdict": "correct"},
    ]
    human = [
        {"id": "a", "type": "critique", "verdict": "correct"},
        {"id": "b", "type": "critique", "verdict": "incorrect"},
    ]
    overall = compare_decisions(automated, human).to_dict()["overall"]
    assert overall["confusion_axes"] == {"rows": "human verdict", "columns": "automated verdict"}
    assert overall["confusion"] == [[1, 0], [1, 0]]
    assert overall["confusion_by_label"] == {
        "correct": {"correct": 1, "incorrect": 0},
        "incorrect": {"correct": 1, "incorrect": 0},
    }
