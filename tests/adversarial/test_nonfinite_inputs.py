"""NaN, Infinity and 1e999 in what a run reads: an error in the input's own format, never a value.

Python's ``json`` reads ``NaN``/``Infinity``/``-Infinity`` and turns ``1e999`` into ``inf``;
PyYAML reads ``.nan`` and ``.inf``. None of them is a number a record, a row, a recorded
verdict or a setting can hold: a dataset record is rejected with a contract
``record_errors`` entry (the others still run); a responses row is a bad row naming its
line; a recorded judge verdict is a judge error for its item; a YAML file is a usage
error naming the key; an upload to the service is a 400 or a record error, answered in
standard JSON.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.formats import load_dataset
from pytest_legaleval.grading._base import GradeRequest, run_inline
from pytest_legaleval.grading._policies import PolicyBook
from pytest_legaleval.grading._replay import ReplayGrader
from pytest_legaleval.grading._verdicts import read_verdicts
from pytest_legaleval.records import Criterion, Record
from pytest_legaleval.util.safe_yaml import load_yaml
from pytest_legaleval.validation import ERROR_CODES

from ..integration.conftest import mcq_row
from ..service_harness import call, document, record, service_app
from ..strict_json import strict_loads

TOKENS = ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"]
SUITE = "def test_record(record, evaluation):\n    evaluation.check()\n"


def _with_token(row: dict[str, Any], token: str) -> str:
    return json.dumps(row).replace('"__TOKEN__"', token)


@pytest.mark.parametrize("token", TOKENS)
def test_a_jsonl_record_with_a_non_finite_number_is_a_record_error(
    tmp_path: Path, token: str
) -> None:
    path = tmp_path / "d.jsonl"
    lines = [
        json.dumps(mcq_row("good1")),
        _with_token(mcq_row("bad", metadata={"weight": "__TOKEN__"}), token),
        _with_token({**mcq_row("bad2"), "rubric_weight": "__TOKEN__"}, token),
        json.dumps(mcq_row("good2")),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    loaded = load_dataset([path])
    assert [r.id for r in loaded.records] == ["good1", "good2"]
    assert len(loaded.rejected) == 2
    for rejected in loaded.rejected:
        (error, *_) = rejected.errors
        assert error.code in ERROR_CODES and error.path.startswith("records[")
        assert "d.jsonl line" in error.message


@pytest.mark.parametrize("token", ["1e999", "-1e999"])
def test_a_contract_record_with_an_overflowing_number_is_rejected_alone(
    tmp_path: Path, token: str
) -> None:
    doc = document("nonfinite", [record("a", "Fine?"), record("b", "Huge?")])
    doc["records"][1]["metadata"] = {"size": "__T__"}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc).replace('"__T__"', token), encoding="utf-8")
    loaded = load_dataset([path])
    assert [r.id for r in loaded.records] == ["a"]
    (rejected,) = loaded.rejected
    assert [(e.code, e.path) for e in rejected.errors] == [
        ("value_out_of_range", "records[1].metadata.size")
    ]


@pytest.mark.parametrize("token", ["NaN", "Infinity", "1e999"])
def test_an_upload_with_a_non_finite_number_is_answered_in_standard_json(
    tmp_path: Path, token: str
) -> None:
    """NaN is no JSON: the document is a 400; 1e999 is JSON no double holds: a record error.
    Either way the answer itself is standard JSON."""
    app, _ = service_app(tmp_path)
    doc = document("nonfinite", [record("a", "Fine?"), record("b", "Huge?")])
    doc["records"][1]["metadata"] = {"size": "__T__"}
    body = json.dumps(doc).replace('"__T__"', token).encode()
    headers = {"Content-Type": "application/json"}
    status, _, answer = call(app, "POST", "/v1/runs", body=body, headers=headers)
    strict_loads(json.dumps(answer, allow_nan=False))
    if token == "1e999":
        assert status == 202, answer
        (error,) = answer["record_errors"]
        assert (error["code"], error["path"]) == ("value_out_of_range", "records[1].metadata.size")
    else:
        assert status == 400, answer
        assert answer["error"]["code"] == "invalid_request"
        assert token in answer["error"]["message"]


@pytest.mark.parametrize("token", TOKENS)
def test_a_responses_row_with_a_non_finite_number_stops_the_session_cleanly(
    pytester: pytest.Pytester, token: str
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    data = pytester.path / "d.jsonl"
    data.write_text(json.dumps(mcq_row("q1")) + "\n", encoding="utf-8")
    responses = pytester.path / "r.jsonl"
    responses.write_text(
        f'{{"record_id": "q1", "response": "Answer: B", "usage": {{"prompt_tokens": {token}}}}}\n',
        encoding="utf-8",
    )
    result = pytester.runpytest(
        "--dataset", str(data), "--responses", str(responses), "--run-dir", "runs"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*r.jsonl: 1 bad rows:*", f"*line 1: *{token.lstrip('-')}*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert not (pytester.path / "runs").exists()


RUBRIC_RECORD = Record(
    id="r1",
    dataset="lbr",
    task_type="rubric_qa",
    prompt="Advise the landlord.",
    rubric=(Criterion("c1", "Names the statute", weight=2.0), Criterion("c2", "Notice")),
)


def _lbr_row(grade: str, weight: str = "2") -> str:
    return (
        '{"example_id": "r1", "candidate_name": "m", "judge_mode": "rubric", "score": 1.0, '
        '"pass": true, "criterion_grades": ['
        f'{{"criterion_id": "c1", "weight": {weight}, "grade": {grade}}}, '
        '{"criterion_id": "c2", "weight": 1, "grade": 1}]}'
    )


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize("where", ["grade", "weight"])
def test_a_recorded_verdict_with_a_non_finite_number_replays_as_a_judge_error(
    token: str, where: str
) -> None:
    line = _lbr_row(token, "2") if where == "grade" else _lbr_row("1", token)
    found = read_verdicts([line], records={"r1": RUBRIC_RECORD})
    verdict = found.verdicts[("r1", "m", 0)]
    assert verdict.error is not None and "not standard JSON" in verdict.error
    assert [p.code for p in found.problems] == ["non_finite"]
    grader = ReplayGrader(lambda: found, "judgments.jsonl")
    request = GradeRequest(
        record=RUBRIC_RECORD, answer="x", model="m", policy=PolicyBook().get("default")
    )
    grade = run_inline(grader.grade(request))
    assert (grade.outcome, grade.reason, grade.score, grade.passed) == (
        "error",
        "judge_error",
        None,
        None,
    )
    # The same line with finite numbers replays as a verdict: the refusal is the token's.
    assert read_verdicts([_lbr_row("1")], records={"r1": RUBRIC_RECORD}).problems == []


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("temperature: .nan\n", "temperature"),
        ("models:\n  openai/m:\n    temperature: .inf\n", "models.openai/m.temperature"),
        ("models:\n  gpt:\n    input: -.inf\n    output: 1\n", "models.gpt.input"),
        ("judge:\n  scale: [1, 1.0e+999]\n", "judge.scale[1]"),  # YAML 1.1 needs the dot
        ("pass_threshold: .NaN\n", "pass_threshold"),
    ],
)
def test_a_yaml_file_with_a_non_finite_number_is_a_usage_error(text: str, where: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_yaml(text, source="legaleval.yaml")
    message = str(caught.value)
    assert message.startswith(f"legaleval.yaml: {where} is not a finite number"), message
    finite = re.sub(r"-?\.(nan|NaN|inf)|1\.0e\+999", "0.5", text)
    assert load_yaml(finite, source="legaleval.yaml") is not None  # the token, nothing else


def test_a_legaleval_yaml_model_setting_of_nan_is_a_usage_error_before_any_call(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    data = pytester.path / "d.jsonl"
    data.write_text(json.dumps(mcq_row("q1")) + "\n", encoding="utf-8")
    (pytester.path / "legaleval.yaml").write_text(
        "models:\n  openai/m:\n    base_url: http://127.0.0.1:9/v1\n    temperature: .nan\n",
        encoding="utf-8",
    )
    result = pytester.runpytest("--dataset", str(data), "--model", "openai/m")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*models.openai/m.temperature is not a finite number*"])
