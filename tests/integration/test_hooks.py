"""The hooks users implement: their own grader, and a sink that sees every result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import mcq_row, read_jsonl, run_dirs, run_eval, write_jsonl

CONFTEST = '''
import json
from pytest_legaleval.grading import Grade, GradeRequest


class KeywordGrader:
    name = "keyword"
    needs_judge = False

    def grade(self, request: GradeRequest) -> Grade:
        wanted = request.record.reference_answers[0].lower()
        if wanted in request.answer.lower():
            return Grade.passing(self.name, f"mentions {wanted!r}")
        return Grade.failing(self.name, "keyword_missing", f"does not mention {wanted!r}")


class AlwaysB:
    """Replaces the built-in MCQ grader: passes when the answer is exactly B."""

    name = "strict-b"
    needs_judge = False

    async def grade(self, request: GradeRequest) -> Grade:
        if request.answer.strip() == "B":
            return Grade.passing(self.name)
        return Grade.failing(self.name, "not_b", f"answered {request.answer!r}")


def pytest_legaleval_register_graders(registry, config):
    registry.register(KeywordGrader(), policy_id="keywords")
    registry.register(AlwaysB(), task_type="mcq")


def pytest_legaleval_result(result, record, run_id, config):
    with open("sink.jsonl", "a", encoding="utf-8") as sink:
        sink.write(json.dumps({"id": result.record_id, "passed": result.passed,
                               "grader": result.grader, "run_id": run_id}) + "\\n")
'''


def _reference(record_id: str, answer: str) -> dict:
    return {
        "schema_version": "legal_eval_v1",
        "id": record_id,
        "dataset": "t",
        "task_type": "reference_qa",
        "prompt": f"Question {record_id}?",
        "reference_answers": [answer],
        "metadata": {"policy_id": "keywords"},
    }


@pytest.mark.parametrize("workers", [None, "2"])
def test_a_users_graders_grade_and_a_result_sink_sees_every_result(
    pytester: pytest.Pytester, suite: Path, workers: str | None
) -> None:
    pytester.makeconftest(CONFTEST)
    data = write_jsonl(
        pytester.path / "d.jsonl",
        [
            _reference("r1", "culpa"),
            _reference("r2", "Treu und Glauben"),
            mcq_row("m1", correct="B"),
            mcq_row("m2", correct="B"),
        ],
    )
    responses = write_jsonl(
        pytester.path / "r.jsonl",
        [
            {"record_id": "r1", "response": "It is culpa in contrahendo."},
            {"record_id": "r2", "response": "Good faith."},
            {"record_id": "m1", "response": "B"},
            {"record_id": "m2", "response": "Answer: B"},  # the built-in grader passes this
        ],
    )
    extra = ["-n", workers] if workers else []
    result = run_eval(pytester, data, responses, *extra)
    result.assert_outcomes(passed=2, failed=2)
    (run,) = run_dirs(pytester.path / "runs")
    lines = {line["record_id"]: line for line in read_jsonl(run / "predictions.jsonl")}
    assert {k: (v["grader"], v["passed"], v["reason"]) for k, v in lines.items()} == {
        "r1": ("keyword", True, "correct"),
        "r2": ("keyword", False, "keyword_missing"),
        "m1": ("strict-b", True, "correct"),
        "m2": ("strict-b", False, "not_b"),
    }
    sink = [json.loads(line) for line in (pytester.path / "sink.jsonl").read_text().splitlines()]
    assert sorted((s["id"], s["passed"], s["grader"]) for s in sink) == [
        ("m1", True, "strict-b"),
        ("m2", False, "strict-b"),
        ("r1", True, "keyword"),
        ("r2", False, "keyword"),
    ]
    assert {s["run_id"] for s in sink} == {run.name}


def test_a_malformed_grader_registration_is_a_usage_error(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.makeconftest(
        "def pytest_legaleval_register_graders(registry, config):\n"
        "    registry.register(object(), task_type='mcq')\n"
    )
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row("m1")])
    responses = write_jsonl(pytester.path / "r.jsonl", [{"record_id": "m1", "response": "B"}])
    result = run_eval(pytester, data, responses)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*Expected a Grader*"])
