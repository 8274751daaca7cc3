"""A NaN that still reaches a writer: written as null with a warning, the line never lost.

The judge and every input refuse non-finite numbers, but a user's own grader can still
hand one over, and ``legaleval report``/``merge`` read run directories written elsewhere.
Every writer of an artifact — the run directory (JSONL lines, JSON documents, the streamed
``input_dataset.json``), the HTML report's embedded data, the service's run table —
writes standard JSON: a non-finite number becomes ``null`` and a ``NonFiniteWarning``
names the file and the field. A ``-W error`` filter does not cost the run its line.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import stat
import warnings
from pathlib import Path

import pytest

from pytest_legaleval.errors import NonFiniteWarning
from pytest_legaleval.report.texts import script_json
from pytest_legaleval.run.directory import RunDirectory

from ..integration.conftest import mcq_row
from ..service_harness import call, document, record, service_app
from ..strict_json import assert_strict_run_dir, strict_jsonl, strict_loads

SUITE = "def test_record(record, evaluation):\n    evaluation.check()\n"
HOSTILE = {"score": math.nan, "nested": {"list": [1.0, math.inf, -math.inf]}, "ok": 0.5}
CLEANED = {"score": None, "nested": {"list": [1.0, None, None]}, "ok": 0.5}


def test_the_run_directory_writes_null_for_every_non_finite_number(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "run_x")
    with pytest.warns(NonFiniteWarning) as caught:
        directory.append("predictions.jsonl", {"record_id": "a", **HOSTILE})
        directory.append("predictions.jsonl", {"record_id": "b", "score": 1.0})
        directory.write_json("metrics_summary.json", {"mean_score": math.nan, "n": 2})
        directory.write_json_stream(
            "input_dataset.json", {"head": math.inf}, "records", [{"w": math.nan}, {"w": 1}]
        )
    directory.finalize()
    assert strict_jsonl(tmp_path / "run_x" / "predictions.jsonl") == [
        {"record_id": "a", **CLEANED},
        {"record_id": "b", "score": 1.0},
    ]
    assert strict_loads((tmp_path / "run_x" / "metrics_summary.json").read_text()) == {
        "mean_score": None,
        "n": 2,
    }
    assert strict_loads((tmp_path / "run_x" / "input_dataset.json").read_text()) == {
        "head": None,
        "records": [{"w": None}, {"w": 1}],
    }
    assert_strict_run_dir(tmp_path / "run_x")
    messages = [str(w.message) for w in caught]
    assert messages[0] == (
        "predictions.jsonl: a non-finite number (NaN or infinity) at $.score, "
        "$.nested.list[1], $.nested.list[2] was written as null; standard JSON has none"
    )
    named = {m.partition(":")[0] for m in messages}
    assert named == {"predictions.jsonl", "metrics_summary.json", "input_dataset.json"}


def test_a_warnings_as_errors_filter_does_not_cost_the_line(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "run_x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        directory.append("predictions.jsonl", {"record_id": "a", "score": math.nan})
    directory.close()
    assert strict_jsonl(tmp_path / "run_x" / "predictions.jsonl") == [
        {"record_id": "a", "score": None}
    ]


def test_the_reports_embedded_data_is_standard_json() -> None:
    with pytest.warns(NonFiniteWarning, match=r"the HTML report: .*\$\.score"):
        text = script_json(HOSTILE)
    assert strict_loads(text) == CLEANED


GRADER = """
import math
from pytest_legaleval.grading import Grade


class NanGrader:
    name = "nan-grader"
    needs_judge = False

    async def grade(self, request):
        return Grade("passed", True, math.nan, "correct", "NaN on purpose", self.name,
                     {"confidence": math.inf, "per_part": [0.5, -math.inf]})


def pytest_legaleval_register_graders(registry, config):
    registry.register(NanGrader(), task_type="mcq")
"""


def _reseal(run: Path) -> None:
    names = sorted(p.name for p in run.iterdir() if p.is_file() and p.name != "SHA256SUMS")
    sums = [f"{hashlib.sha256((run / n).read_bytes()).hexdigest()}  {n}\n" for n in names]
    (run / "SHA256SUMS").write_text("".join(sums), encoding="utf-8")


@pytest.mark.parametrize("workers", [None, "2"])
def test_a_graders_nan_is_null_in_every_artifact_and_the_report(
    pytester: pytest.Pytester, workers: str | None
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeconftest(GRADER)
    data = pytester.path / "d.jsonl"
    data.write_text("".join(json.dumps(mcq_row(f"q{i}")) + "\n" for i in range(3)), "utf-8")
    responses = pytester.path / "r.jsonl"
    responses.write_text(
        "".join(json.dumps({"record_id": f"q{i}", "response": "B"}) + "\n" for i in range(3)),
        "utf-8",
    )
    args = ["--dataset", str(data), "--responses", str(responses), "--run-dir", "runs"]
    with warnings.catch_warnings(record=True) as escaped:
        # Under xdist the controller writes outside any test, where pytest records no
        # warning: it goes to stderr (here, in-process, to this test's own record).
        warnings.simplefilter("always", NonFiniteWarning)
        result = pytester.runpytest(*args, *(["-n", workers] if workers else []))
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    result.assert_outcomes(passed=3)
    warned = [str(w.message) for w in escaped if issubclass(w.category, NonFiniteWarning)]
    assert "NonFiniteWarning: predictions.jsonl: a non-finite" in output or any(
        m.startswith("predictions.jsonl: a non-finite") for m in warned
    )
    (run,) = [p for p in (pytester.path / "runs").iterdir() if p.is_dir()]
    rows = strict_jsonl(run / "predictions.jsonl")
    assert len(rows) == 3  # every item kept its line
    for row in rows:
        assert row["score"] is None
        assert row["details"]["confidence"] is None
        assert row["details"]["per_part"] == [0.5, None]
    assert_strict_run_dir(run)
    # A run directory written before this change (a NaN token in a line) still renders,
    # and the page's data stays standard JSON (script_json's own null is tested above).
    for path in run.iterdir():
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    text = (run / "predictions.jsonl").read_text(encoding="utf-8")
    (run / "predictions.jsonl").write_text(
        text.replace('"score":null', '"score":NaN', 1), encoding="utf-8"
    )
    from pytest_legaleval.cli import main

    # Issue 41: an edit after sealing is refused; a run written that way is sealed over it.
    assert main(["report", str(run), "--out", str(pytester.path / "report.html")]) == 2
    _reseal(run)
    with pytest.warns(NonFiniteWarning, match="read as null"):
        assert main(["report", str(run), "--out", str(pytester.path / "report.html")]) == 0
    page = (pytester.path / "report.html").read_text(encoding="utf-8")
    blocks = re.findall(r'<script type="application/json" id="[^"]*">(.*?)</script>', page, re.S)
    assert blocks and all(strict_loads(block) is not None for block in blocks)


def test_the_service_answers_a_run_whose_figures_hold_a_nan(tmp_path: Path) -> None:
    """The run table stores null, so the run's answer is a 200 in standard JSON, not a 500."""
    app, backend = service_app(tmp_path)
    body = json.dumps(document("nan", [record("a", "Fine?")])).encode()
    headers = {"Content-Type": "application/json"}
    status, _, accepted = call(app, "POST", "/v1/runs", body=body, headers=headers)
    assert status == 202, accepted
    run_id = accepted["run_id"]
    with pytest.warns(NonFiniteWarning, match=r"the run table: .*\$\.mean_score"):
        backend.store.finish(run_id, "completed", metrics={"mean_score": math.nan, "n": 1})
    status, _, run = call(app, "GET", f"/v1/runs/{run_id}")
    assert status == 200, run
    assert run["metrics"] == {"mean_score": None, "n": 1}
