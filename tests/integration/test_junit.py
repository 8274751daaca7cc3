"""JUnit XML: one testcase per record x model, with legaleval properties, with and without xdist."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from .conftest import mcq_row, run_dirs, write_jsonl

PROPERTIES = ["score", "passed", "latency_ms", "tokens", "model", "judge", "run_id", "reason"]


def _data(pytester: pytest.Pytester) -> list[str]:
    rows = [
        mcq_row("q1"),
        mcq_row("q2"),
        mcq_row("bad", choices=[{"id": "A", "text": "only"}], correct="A"),
    ]
    data = write_jsonl(pytester.path / "d.jsonl", rows)
    responses = write_jsonl(
        pytester.path / "r.jsonl",
        [
            {"record_id": "q1", "response": "Answer: B", "model": "m1"},
            {"record_id": "q2", "response": "Answer: C", "model": "m1"},
            {"record_id": "q1", "response": "B", "model": "m2"},
            {"record_id": "q2", "response": "B", "model": "m2"},
        ],
    )
    return ["--dataset", str(data), "--responses", str(responses)]


def _cases(path: Path) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    return {case.attrib["name"]: case for case in root.iter("testcase")}


def _props(case: ET.Element) -> dict[str, str]:
    return {p.attrib["name"]: p.attrib["value"] for p in case.iter("property")}


def _check(path: Path, run_id: str) -> None:
    cases = _cases(path)
    assert len(cases) == 6  # 3 records x 2 models
    for name, case in cases.items():
        props = _props(case)
        assert props["run_id"] == run_id, name
        assert props["model"] in ("m1", "m2"), name
    passing = _props(cases["test_record[t/q1-m1]"])
    assert list(passing) == PROPERTIES
    assert passing == {
        "score": "1.0", "passed": "True", "latency_ms": "", "tokens": "", "model": "m1",
        "judge": "none", "run_id": run_id, "reason": "correct",
    }  # fmt: skip
    wrong = cases["test_record[t/q2-m1]"]
    failure = wrong.find("failure")
    assert failure is not None
    assert failure.attrib["message"] == "wrong_answer: chose C (from 'Answer: C'); correct is B"
    assert _props(wrong)["passed"] == "False" and _props(wrong)["score"] == "0.0"
    invalid = cases["test_record[t/bad-m2]"]
    assert invalid.find("error") is not None
    assert _props(invalid) == {"score": "", "passed": "", "model": "m2", "run_id": run_id,
                               "reason": "invalid_record"}  # fmt: skip


def _run_id(root: Path) -> str:
    (run,) = run_dirs(root)
    return str(json.loads((run / "run_manifest.json").read_text())["run_id"])


def test_junit_properties_in_process(pytester: pytest.Pytester, suite: Path) -> None:
    args = _data(pytester)
    result = pytester.runpytest(*args, "--run-dir", "runs", "--junitxml", "out.xml")
    result.assert_outcomes(passed=3, failed=1, errors=2)
    _check(pytester.path / "out.xml", _run_id(pytester.path / "runs"))


@pytest.mark.slow
def test_junit_properties_with_xdist(pytester: pytest.Pytester, suite: Path) -> None:
    args = _data(pytester)
    result = pytester.runpytest_subprocess(
        *args, "-n", "2", "--run-dir", "runs", "--junitxml", "out.xml"
    )
    result.assert_outcomes(passed=3, failed=1, errors=2)
    _check(pytester.path / "out.xml", _run_id(pytester.path / "runs"))


def test_no_junit_no_properties(pytester: pytest.Pytester, suite: Path) -> None:
    """Without --junitxml the recorder keeps nothing pending per item."""
    args = _data(pytester)
    pytester.makeconftest(
        """
        def pytest_runtest_logreport(report):
            if report.when == "teardown":
                assert not report.user_properties, report.user_properties
        """
    )
    pytester.runpytest(*args, "--run-dir", "runs").assert_outcomes(passed=3, failed=1, errors=2)


# -- errors are pytest errors -----------------------------------------------------------------


def _mixed(pytester: pytest.Pytester) -> list[str]:
    """Every category: passed, failed (wrong, unparseable), error (missing response, a
    generation error after the retries), skipped (a reference record, no judge), invalid."""
    rows = [
        mcq_row("right"),
        mcq_row("wrong"),
        mcq_row("mute"),
        mcq_row("absent"),
        mcq_row("bad", choices=[{"id": "A", "text": "only"}], correct="A"),
        {"schema_version": "legal_eval_v1", "id": "open", "dataset": "t",
         "task_type": "reference_qa", "prompt": "Define tort.",
         "reference_answers": ["A civil wrong."]},
    ]  # fmt: skip
    data = write_jsonl(pytester.path / "d.jsonl", rows)
    answers = {"right": "Answer: B", "wrong": "Answer: C", "mute": "I do not know",
               "open": "A civil wrong."}  # fmt: skip
    responses = write_jsonl(
        pytester.path / "r.jsonl", [{"record_id": k, "response": v} for k, v in answers.items()]
    )
    return ["--dataset", str(data), "--responses", str(responses), "--run-dir", "runs"]


def _agree(result: pytest.RunResult, root: Path) -> None:
    """pytest's counts, JUnit's and the metrics' are the same items, named the same way."""
    outcomes = result.parseoutcomes()
    (run,) = run_dirs(root / "runs")
    summary = json.loads((run / "metrics_summary.json").read_text())
    suite = ET.parse(root / "out.xml").getroot().find("testsuite")
    assert suite is not None
    # pytest has no word for an invalid record: its errors are the errors and the invalid
    assert outcomes == {
        "passed": summary["passed_items"],
        "failed": summary["failed_items"],
        "errors": summary["error_items"] + summary["invalid_items"],
        "skipped": summary["skipped_items"],
    }
    assert (summary["passed_items"], summary["failed_items"], summary["error_items"],
            summary["skipped_items"], summary["invalid_items"]) == (1, 2, 1, 1, 1)  # fmt: skip
    assert int(suite.attrib["failures"]) == summary["failed_items"]
    assert int(suite.attrib["errors"]) == summary["error_items"] + summary["invalid_items"]
    assert int(suite.attrib["skipped"]) == summary["skipped_items"]
    cases = _cases(root / "out.xml")
    absent = cases["test_record[t/absent]"]
    error = absent.find("error")
    assert error is not None and absent.find("failure") is None
    assert "missing_response: no response for record 'absent'" in error.attrib["message"]
    assert _props(absent)["reason"] == "missing_response"
    for name, reason in (("wrong", "wrong_answer"), ("mute", "no_answer_extracted")):
        case = cases[f"test_record[t/{name}]"]
        failure = case.find("failure")
        assert failure is not None and case.find("error") is None, name
        assert failure.attrib["message"].startswith(f"{reason}: "), name
    # The terminal names the item and its reason under ERRORS.
    result.stdout.fnmatch_lines(
        ["*ERROR at setup of test_record[[]t/absent[]]*", "missing_response: no response*"]
    )


def test_errors_are_pytest_errors_and_junit_errors(pytester: pytest.Pytester, suite: Path) -> None:
    result = pytester.runpytest(*_mixed(pytester), "--junitxml", "out.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _agree(result, pytester.path)


@pytest.mark.slow
def test_errors_are_pytest_errors_with_xdist(pytester: pytest.Pytester, suite: Path) -> None:
    result = pytester.runpytest_subprocess(*_mixed(pytester), "-n", "2", "--junitxml", "out.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _agree(result, pytester.path)


def test_engine_errors_are_errors_and_the_test_does_not_run(
    pytester: pytest.Pytester, mock_openai: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A generation error after the retries: ERROR at setup; the user's test never runs."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    pytester.makepyfile(
        test_own="""
        def test_cites(record, evaluation):
            print("RAN", record.id)
            assert evaluation.passed
        """
    )
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1"), mcq_row("q2")])
    mock_openai.add_reply("Question q1", "Answer: B")
    mock_openai.add_fault("400", match="Question q2")
    result = pytester.runpytest(
        "--dataset", str(data), "--model", "openai/m", "--base-url", mock_openai.base_url,
        "--no-cache", "--run-dir", "runs", "--junitxml", "out.xml", "-s",
    )  # fmt: skip
    result.assert_outcomes(passed=1, errors=1)
    assert result.stdout.str().count("RAN") == 1
    result.stdout.fnmatch_lines(["*ERROR at setup of test_cites[[]t/q2[]]*"])
    case = _cases(pytester.path / "out.xml")["test_cites[t/q2]"]
    error = case.find("error")
    assert error is not None and "generation_error:bad_request" in error.attrib["message"]
