"""JUnit XML: one testcase per record x model, with legaleval properties, with and without xdist."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

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
    assert _props(invalid) == {"passed": "False", "model": "m2", "run_id": run_id,
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
