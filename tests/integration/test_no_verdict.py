"""An item without a verdict looks the same everywhere: an error with no score (issue 30).

A missing response, a generation error, a judge error, a broken latency budget, a call the
budget cancelled and the LBR run's failed generation are each ``outcome: "error"`` with
``score: null`` and ``passed: null`` in ``predictions.jsonl``; ``failures.jsonl`` names
them; JUnit writes an ``<error>`` whose ``score`` and ``passed`` properties are empty; the
HTML report's row has no score; the metrics' mean score leaves them out. Never a 0.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.metrics._runfiles import load_run
from pytest_legaleval.report.data import ORDER, collect

from ..lbr_run import DATA, gz_lines
from .conftest import mcq_row, read_jsonl, run_dirs, write_jsonl

CATEGORY, SCORE = 3, 4
"""Report row fields (``report/items.py``): category index and score."""


def _check(root: Path, reasons: dict[str, str], *, junit: bool = True) -> dict[str, Any]:
    """Every artifact agrees: the items of ``reasons`` (record id → reason) have no verdict."""
    (run,) = run_dirs(root / "runs")
    predictions = {p["record_id"]: p for p in read_jsonl(run / "predictions.jsonl")}
    failures = {f["record_id"]: f for f in read_jsonl(run / "failures.jsonl")}
    for record_id, reason in reasons.items():
        line = predictions[record_id]
        assert (line["outcome"], line["passed"], line["score"], line["reason"]) == (
            "error", None, None, reason
        ), record_id  # fmt: skip
        assert failures[record_id]["reason"] == reason, record_id
        assert "score" not in failures[record_id]
    if junit:
        cases = {
            c.attrib["name"].split("/")[-1].rstrip("]"): c
            for c in ET.parse(root / "out.xml").getroot().iter("testcase")
        }
        for record_id in reasons:
            case = cases[record_id]
            props = {p.attrib["name"]: p.attrib["value"] for p in case.iter("property")}
            assert (props["score"], props["passed"]) == ("", ""), record_id
            assert case.find("error") is not None and case.find("failure") is None, record_id
    rows = collect(load_run(run)).rows
    assert len(rows) == len(predictions) + len(failures) - len(reasons)  # + invalid items
    for row in rows:
        if ORDER[row[CATEGORY]] not in ("passed", "failed"):
            assert row[SCORE] is None, row
    summary = json.loads((run / "metrics_summary.json").read_text())
    graded = [p for p in predictions.values() if p["outcome"] in ("passed", "failed")]
    assert summary["scored_items"] == len([p for p in graded if p["score"] is not None])
    scores = [p["score"] for p in graded if p["score"] is not None]
    if scores:
        assert summary["mean_score"] == pytest.approx(math.fsum(scores) / len(scores))
    return predictions


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_engine_and_judge_failures_have_no_score(
    pytester: pytest.Pytester,
    suite: Path,
    mock_openai: Any,
    monkeypatch: pytest.MonkeyPatch,
    workers: list[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    reference = {
        "schema_version": "legal_eval_v1", "id": "judged", "dataset": "t",
        "task_type": "reference_qa", "prompt": "JUDGEBAD: what is a tort?",
        "reference_answers": ["A civil wrong."],
    }  # fmt: skip
    rows = [
        mcq_row("ok", prompt="Question ok [ans=B]?"),
        mcq_row("genfail", prompt="Question GENFAIL?"),
        reference,
    ]
    data = write_jsonl(pytester.path / "d.jsonl", rows)
    slow = {
        "dataset_id": "t", "dataset_version": "1", "schema_version": "1.0",
        "records": [{"record_id": "slow", "input": {"prompt": "Question SLOW?"},
                     "reference": {"answer": "a"}, "expected": {"max_latency_ms": 1}}],
    }  # fmt: skip
    (pytester.path / "slow.json").write_text(json.dumps(slow))
    mock_openai.add_reply(r"\[ans=B\]", "Answer: B")
    mock_openai.add_fault("400", match="GENFAIL")
    mock_openai.add_reply("SLOW", {"content": "Answer: B", "delay": 0.05})
    mock_openai.add_reply("JUDGEBAD", "no verdict in here")  # answer and judge reply alike
    result = pytester.runpytest_subprocess(
        "--dataset", str(data), "--dataset", "slow.json", "--model", "openai/m",
        "--judge-model", "openai/judge",
        "--base-url", mock_openai.base_url, "--no-cache", "--retry-delays", "0.01",
        "--run-dir", "runs", "--junitxml", "out.xml", *workers,
    )  # fmt: skip
    result.assert_outcomes(passed=1, errors=3)
    _check(
        pytester.path,
        {
            "genfail": "generation_error:bad_request",
            "slow": "latency_exceeded",
            "judged": "judge_error",
        },
    )


def test_a_missing_response_has_no_score(pytester: pytest.Pytester, suite: Path) -> None:
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row(f"q{i}") for i in range(4)])
    responses = write_jsonl(pytester.path / "r.jsonl", [{"record_id": "q0", "response": "B"}])
    result = pytester.runpytest(
        "--dataset", str(data), "--responses", str(responses), "--run-dir", "runs",
        "--junitxml", "out.xml",
    )  # fmt: skip
    result.assert_outcomes(passed=1, errors=3)
    _check(pytester.path, dict.fromkeys(("q1", "q2", "q3"), "missing_response"))


def test_a_call_the_budget_cancelled_has_no_score(
    pytester: pytest.Pytester, suite: Path, mock_openai: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    data = write_jsonl(
        pytester.path / "d.jsonl",
        [mcq_row(f"q{i}", prompt=f"Question q{i} [ans=B]?") for i in range(6)],
    )
    mock_openai.add_reply(r"\[ans=B\]", "Answer: B")
    (pytester.path / "prices.yaml").write_text("models:\n  m: {input: 1000, output: 1000}\n")
    result = pytester.runpytest(
        "--dataset", str(data), "--model", "openai/m", "--base-url", mock_openai.base_url,
        "--no-cache", "--concurrency", "1", "--max-new-tokens", "8",
        "--price-table", "prices.yaml", "--max-cost", "0.1", "--run-dir", "runs",
        "--junitxml", "out.xml",
    )  # fmt: skip
    (run,) = run_dirs(pytester.path / "runs")
    stopped = [p["record_id"] for p in read_jsonl(run / "predictions.jsonl")
               if p["reason"] == "budget"]  # fmt: skip
    assert 0 < len(stopped) < 6, result.stdout.str()
    _check(pytester.path, dict.fromkeys(stopped, "budget"))


def test_the_lbr_run_s_failed_generation_has_no_score(
    pytester: pytest.Pytester, suite: Path
) -> None:
    """LBR never got magistral's answer to one record (a capacity error): no score."""
    rows = [json.loads(line) for line in gz_lines(DATA / "merged_legal_eval_v1.jsonl.gz")]
    answers = [json.loads(line) for line in gz_lines(DATA / "responses_prefilled.jsonl.gz")]
    model = "magistral_medium_latest"
    answered = {a["record_id"] for a in answers if a["model"] == model}
    (missing,) = [r["id"] for r in rows if r["id"] not in answered]
    lexam = [r for r in rows if r["id"].startswith("lexam:mcq") and r["id"] != missing][:3]
    chosen = [r for r in rows if r["id"] == missing] + lexam
    data = write_jsonl(pytester.path / "d.jsonl", chosen)
    ids = {r["id"] for r in chosen}
    responses = write_jsonl(
        pytester.path / "r.jsonl",
        [a for a in answers if a["model"] == model and a["record_id"] in ids],
    )
    pytester.runpytest(
        "--dataset", str(data), "--responses", str(responses), "--run-dir", "runs",
        "--junitxml", "out.xml", "-p", "no:randomly",
    )  # fmt: skip
    predictions = _check(pytester.path, {missing: "missing_response"})
    assert predictions[missing]["model"] == model


def test_an_older_run_s_zero_for_an_item_without_a_verdict_is_not_shown(tmp_path: Path) -> None:
    """Runs written before this rule stored a missing response as ``failed`` with 0.0."""
    run = tmp_path / "run_old"
    run.mkdir()
    manifest = {"run_id": "run_old", "status": "completed_with_failures", "models": ["m"]}
    (run / "run_manifest.json").write_text(json.dumps(manifest))
    lines = [
        {"item_id": "t.py::test_record[d/a]", "record_id": "a", "dataset": "d", "model": "m",
         "outcome": "failed", "passed": False, "score": 0.0, "reason": "missing_response"},
        {"item_id": "t.py::test_record[d/b]", "record_id": "b", "dataset": "d", "model": "m",
         "outcome": "failed", "passed": False, "score": 0.0, "reason": "wrong_answer"},
    ]  # fmt: skip
    write_jsonl(run / "predictions.jsonl", lines)
    rows = collect(load_run(run)).rows
    assert [(ORDER[r[CATEGORY]], r[SCORE]) for r in rows] == [("error", None), ("failed", 0.0)]
