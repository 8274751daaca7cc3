from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import DatasetRejected, ResponsesError
from pytest_legaleval.formats import detect_format, load_dataset
from pytest_legaleval.formats.turing import benchmark_record_id
from pytest_legaleval.pipeline.responses import load_responses
from pytest_legaleval.validation import schema_validator

REPO = Path(__file__).resolve().parents[2]
TURING = REPO / "examples" / "turing"
KINDS = {
    "benchmarks/model-a.json": "turing_benchmark",
    "answers/model-a/model-b.json": "turing_answers",
    "critiques/contradictor/model-a/model-c__model-b.json": "turing_critiques",
    "debates/illposed/model-a/model-b.json": "turing_debates",
    "automated_evaluations/judge-x.json": "turing_automated_evaluation",
    "evaluations/alice.json": "turing_human_evaluation",
    "judging_task.json": "turing_judging_task",
    "metadata.json": "turing_metadata",
}


def dump(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")
    return path


@pytest.mark.parametrize(("name", "fmt"), KINDS.items())
def test_every_kind_is_detected_and_valid(name: str, fmt: str) -> None:
    path = TURING / name
    assert detect_format(path) == fmt
    schema_validator(fmt).validate(json.loads(path.read_text()))
    loaded = load_dataset([path])
    assert loaded.errors == []
    (info,) = loaded.datasets
    assert info.format == fmt and info.accepted_records == info.total_records - info.skipped_records


def test_placeholders_are_counted_not_rejected() -> None:
    infos = {n: load_dataset([TURING / n]).datasets[0] for n in KINDS}
    assert infos["answers/model-a/model-b.json"].placeholder_records == 1
    assert infos["automated_evaluations/judge-x.json"].placeholder_records == 1
    assert infos["evaluations/alice.json"].placeholder_records == 0


def test_benchmark_takes_the_last_succeeded_round_and_skips_failed_entries() -> None:
    loaded = load_dataset([TURING / "benchmarks" / "model-a.json"])
    first, second = loaded.records
    assert first.prompt.startswith("Under the GDPR, within how many hours")
    assert first.reference_answers == (
        "Within 72 hours of becoming aware of the breach, and without undue delay.",
    )
    assert first.metadata["generation_round"] == 1 and first.metadata["refinement_round"] == 1
    assert first.id == benchmark_record_id("model-a", first.prompt)
    assert second.metadata["run_id"] == "run-002"
    (info,) = loaded.datasets
    assert (info.total_records, info.accepted_records, info.skipped_records) == (4, 2, 2)
    assert info.placeholder_records == 1


def test_invalid_entries_are_record_errors_with_their_path(tmp_path: Path) -> None:
    entries = [
        {},
        {"run_id": "r1", "topic_slug": "t", "status": "succeeded", "generation_rounds": [
            {"status": "succeeded", "refinement_rounds": [
                {"round": 1, "question": "Q?", "answer": "A.", "evaluation": {}}]}]},
        {"run_id": "r2", "topic_slug": "t", "status": "done"},
        {"run_id": "r3", "topic_slug": "t", "status": "succeeded", "generation_rounds": [
            {"status": "failed", "refinement_rounds": []}]},
        {"topic_slug": "t", "status": "succeeded", "generation_rounds": [
            {"status": "succeeded", "refinement_rounds": [{"round": 0, "question": "Q2?"}]}]},
    ]  # fmt: skip
    loaded = load_dataset([dump(tmp_path / "benchmarks" / "m.json", entries)])
    assert [r.metadata["run_id"] for r in loaded.records] == ["r1"]
    errors = sorted((e.index, e.code, e.path) for e in loaded.errors)
    assert errors == [
        (2, "invalid_enum_value", "records[2].status"),
        (3, "missing_required_field", "records[3].generation_rounds"),
        (
            4,
            "missing_required_field",
            "records[4].generation_rounds[0].refinement_rounds[0].answer",
        ),
        (
            4,
            "missing_required_field",
            "records[4].generation_rounds[0].refinement_rounds[0].evaluation",
        ),
        (4, "missing_required_field", "records[4].run_id"),
        (4, "value_out_of_range", "records[4].generation_rounds[0].refinement_rounds[0].round"),
    ]


def test_decision_errors_and_duplicate_ids(tmp_path: Path) -> None:
    document = {"decisions": [
        {"id": "a", "type": "critique", "verdict": "correct", "comment": "ok"},
        {"id": "a", "type": "critique", "verdict": "wrong"},
        {"id": "b", "type": "essay", "verdict": "x", "confidence": 9},
    ]}  # fmt: skip
    loaded = load_dataset([dump(tmp_path / "evaluations" / "bob.json", document)])
    assert loaded.records == []
    errors = sorted((e.record_id, e.code, e.path) for e in loaded.errors)
    assert errors == [
        ("a", "duplicate_record_id", "decisions[1].id"),
        ("b", "invalid_enum_value", "decisions[2].type"),
        ("b", "value_out_of_range", "decisions[2].confidence"),
    ]
    assert loaded.datasets[0].accepted_records == 1


def test_a_wrong_top_level_is_a_dataset_error(tmp_path: Path) -> None:
    path = dump(tmp_path / "x.json", {"decisions": {"id": "a"}})
    with pytest.raises(DatasetRejected, match="decisions array"):
        load_dataset([path], "turing_human_evaluation")
    path = dump(tmp_path / "y.json", {"run_id": "r"})
    with pytest.raises(DatasetRejected, match="must be a JSON array"):
        load_dataset([path], "turing_benchmark")


def test_a_benchmark_without_a_succeeded_question_is_rejected(tmp_path: Path) -> None:
    path = dump(tmp_path / "b.json", [{}, {"run_id": "r", "topic_slug": "t", "status": "failed"}])
    with pytest.raises(DatasetRejected, match="no succeeded question: 1 failed or ill-posed, 1"):
        load_dataset([path], "turing_benchmark")


def test_answer_files_are_a_response_source_keyed_to_benchmark_records(tmp_path: Path) -> None:
    records = load_dataset([TURING / "benchmarks" / "model-a.json"]).records
    table = load_responses(TURING / "answers" / "model-a" / "model-b.json")
    assert table.models == ("model-b",)
    assert [table.get(r.id, "model-b") for r in records] == [
        "Within 72 hours where feasible.",
        "Consent and legitimate interests.",
    ]


def test_an_answer_file_with_bad_entries_names_them(tmp_path: Path) -> None:
    target = tmp_path / "answers" / "model-a" / "model-b.json"
    target.parent.mkdir(parents=True)
    shutil.copy(TURING / "answers" / "model-a" / "model-b.json", target)
    entries = json.loads(target.read_text())
    entries[0]["status"] = "done"
    dump(target, entries)
    with pytest.raises(ResponsesError, match=r"1 bad entries:\n  entry 0: status must be one of"):
        load_responses(target)
