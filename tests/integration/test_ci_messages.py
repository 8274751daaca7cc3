"""What CI shows of a run says why, in one line: pytest's summary and JUnit (issue 30).

An invalid record and a rubric failure (LBR's real verdict on a PRBench answer, replayed)
read in one line in pytest's short summary and in JUnit's ``message``; the details (the
``record_errors`` JSON, every criterion) are in the body. JUnit testcases are classed by
dataset (and task) and carry the model's answer in ``<system-out>``. Single process and
``-n 2``.
"""

from __future__ import annotations

import gzip
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ..lbr_run import DATA, gz_lines
from .conftest import mcq_row, write_jsonl

RUBRIC_ID = "prbench:383db25ffb4d767c69ff1c5b"
MODEL = "magistral_medium_latest"
RUBRIC_LINE = (
    'below_threshold 0.16 < 0.70: missed "The model explains that through the principle of '
    'direct effe…", "The model outlines that a legal mechanism is established thr…", +9; '
    'penalized "The model provides political remedies to the user\'s data bre…"'
)
INVALID_LINE = "invalid_record: prompt is required (d.jsonl line 4)"


def _files(root: Path) -> list[str]:
    with gzip.open(DATA / "merged_legal_eval_v1.jsonl.gz", "rt", encoding="utf-8") as handle:
        (rubric,) = [row for row in map(json.loads, handle) if row["id"] == RUBRIC_ID]
    broken = mcq_row("b", dataset="mini")
    del broken["prompt"]
    rows = [
        rubric,
        mcq_row("t1", dataset="lb", metadata={"task": "hearsay"}),
        mcq_row("t2", dataset="lb", metadata={"task": "abercrombie"}),
        broken,
    ]
    write_jsonl(root / "d.jsonl", rows)
    answer = next(
        row["response"]
        for row in map(json.loads, gz_lines(DATA / "responses_prefilled.jsonl.gz"))
        if row["record_id"] == RUBRIC_ID and row["model"] == MODEL
    )
    responses = [
        {"record_id": RUBRIC_ID, "response": answer, "model": MODEL},
        {"record_id": "t1", "response": "Answer: B " + "long " * 1000, "model": MODEL},
        {"record_id": "t2", "response": "Answer: C", "model": MODEL},
    ]
    write_jsonl(root / "r.jsonl", responses)
    verdicts = [
        line
        for line in gz_lines(DATA / "judgments.jsonl.gz")
        if RUBRIC_ID in line and f'"{MODEL}"' in line
    ]
    (root / "judgments.jsonl").write_text("".join(verdicts), encoding="utf-8")
    return [
        "--dataset", str(root / "d.jsonl"), "--responses", str(root / "r.jsonl"),
        "--judgments", str(root / "judgments.jsonl"), "--run-dir", "runs",
        "--junitxml", "out.xml", "-p", "no:randomly",
    ]  # fmt: skip


def _cases(path: Path) -> dict[str, ET.Element]:
    return {c.attrib["name"]: c for c in ET.parse(path).getroot().iter("testcase")}


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_reasons_read_in_one_line_in_pytest_and_junit(
    pytester: pytest.Pytester, suite: Path, workers: list[str]
) -> None:
    result = pytester.runpytest_subprocess(*_files(pytester.path), "-rfE", "-vv", *workers)
    result.assert_outcomes(passed=1, failed=2, errors=1)
    out = result.stdout.str()
    # The short summary: node id, then the one line (-vv: not cut to the terminal width).
    assert f"FAILED test_suite.py::test_record[prbench/{RUBRIC_ID}] - {RUBRIC_LINE}\n" in out
    assert f"ERROR test_suite.py::test_record[mini/b] - {INVALID_LINE}\n" in out
    # The sections: the line, then the details.
    assert '"record_errors": [' in out and '"code": "missing_required_field"' in out
    assert "[missed] (w=8) The model firstly explains that the user must complain" in out
    assert "[penalty] (w=-5) The model provides political remedies" in out
    cases = _cases(pytester.path / "out.xml")
    rubric = cases[f"test_record[prbench/{RUBRIC_ID}]"]
    failure = rubric.find("failure")
    assert failure is not None and failure.attrib["message"] == RUBRIC_LINE
    assert failure.text is not None and failure.text.startswith(RUBRIC_LINE + "\n\n")
    assert failure.text.count("\n  [") == 14  # every criterion in the body
    invalid = cases["test_record[mini/b]"].find("error")
    assert invalid is not None
    assert invalid.attrib["message"] == f'failed on setup with "{INVALID_LINE}"'
    assert invalid.text is not None
    assert json.loads(invalid.text.partition("\n\n")[2])["record_errors"][0]["path"] == (
        "records[3].prompt"
    )
    # Classed by dataset (and task); the answer as the test's output.
    assert {name: c.attrib["classname"] for name, c in cases.items()} == {
        f"test_record[prbench/{RUBRIC_ID}]": "prbench",
        "test_record[lb/t1]": "lb.hearsay",
        "test_record[lb/t2]": "lb.abercrombie",
        "test_record[mini/b]": "mini",
    }
    out_t2 = cases["test_record[lb/t2]"].find("system-out")
    assert out_t2 is not None and out_t2.text == "Answer: C"
    out_t1 = cases["test_record[lb/t1]"].find("system-out")
    assert out_t1 is not None and out_t1.text is not None
    assert out_t1.text.startswith("Answer: B long")
    assert "more characters in predictions.jsonl" in out_t1.text
    assert len(out_t1.text) < 2100
    assert cases["test_record[mini/b]"].find("system-out") is None  # never asked


def test_tb_line_gives_the_one_line(pytester: pytest.Pytester, suite: Path) -> None:
    result = pytester.runpytest_subprocess(*_files(pytester.path), "--tb=line")
    out = result.stdout.str()
    assert f"test_suite.py::test_record[prbench/{RUBRIC_ID}] - {RUBRIC_LINE}" in out
    assert f"\n{INVALID_LINE}\n" in out  # under its ERROR header
    assert '"record_errors"' not in out and "[missed]" not in out
