"""``--judge-model openai/mock`` against the bundled mock works without a script (issue 30).

Reference, rubric and criteria records under the default, LBR and PRBench-paper policies
and LEXam's official judge, answered and judged by an unscripted mock server: every judged
item gets a verdict (no ``judge_error``), some pass and some fail, and a second run gives
the same verdicts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from .conftest import read_jsonl, run_dirs, write_jsonl


def _rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for policy in ("default", "prbench_v1", "prbench_paper_v1", "lexam_official"):
        for i in range(3):
            rows.append(
                {"schema_version": "legal_eval_v1", "id": f"{policy}-ref{i}", "dataset": "d",
                 "task_type": "reference_qa", "prompt": f"Question {i}: what is a tort?",
                 "reference_answers": ["A civil wrong."], "metadata": {"policy_id": policy}}
            )  # fmt: skip
            if policy == "lexam_official":
                continue
            rows.append(
                {"schema_version": "legal_eval_v1", "id": f"{policy}-rub{i}", "dataset": "d",
                 "task_type": "rubric_qa", "prompt": f"Case {i}: may the tenant withhold rent?",
                 "rubric": [{"id": "c1", "title": "Names § 536 BGB", "weight": 3},
                            {"id": "c2", "title": "Mentions notice", "weight": 2}],
                 "metadata": {"policy_id": policy}}
            )  # fmt: skip
    contract = {
        "dataset_id": "contract", "dataset_version": "1", "schema_version": "1.0",
        "records": [{"record_id": f"sum{i}", "input": {"prompt": f"Summarize clause {i}."},
                     "expected": {"required_criteria": ["accuracy", "clarity"]}}
                    for i in range(3)],
    }  # fmt: skip
    return [*rows, contract]


def _run(pytester: pytest.Pytester, server: MockOpenAIServer, run_dir: str) -> list[dict]:
    *rows, contract = _rows()
    write_jsonl(pytester.path / "d.jsonl", rows)
    (pytester.path / "contract.json").write_text(json.dumps(contract))
    result = pytester.runpytest(
        "--dataset", "d.jsonl", "--dataset", "contract.json", "--model", "openai/mock",
        "--judge-model", "openai/mock", "--base-url", server.base_url, "--no-cache",
        "--run-dir", run_dir, "-p", "no:randomly",
    )  # fmt: skip
    assert result.ret in (0, 1), result.stdout.str()
    (run,) = run_dirs(pytester.path / run_dir)
    return read_jsonl(run / "predictions.jsonl")


def test_an_unscripted_mock_judges_every_record(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    with MockOpenAIServer() as server:
        first = _run(pytester, server, "runs")
        again = _run(pytester, server, "again")
    assert len(first) == 24
    reasons = {p["reason"] for p in first}
    assert reasons <= {"correct", "below_threshold"}, [
        (p["record_id"], p["reason"], p["explanation"][:200])
        for p in first
        if p["reason"] not in ("correct", "below_threshold")
    ]
    assert {p["outcome"] for p in first} == {"passed", "failed"}
    assert all(p["judge"] for p in first)
    lexam = [p for p in first if p["record_id"].startswith("lexam_official")]
    assert all(p["details"]["official"]["unusable_replies"] == 0 for p in lexam)
    verdicts = {(p["record_id"], p["score"]) for p in first}
    assert verdicts == {(p["record_id"], p["score"]) for p in again}  # deterministic


def test_the_readme_s_records_run_with_their_responses_and_the_mock_judge(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ..unit.test_readme_records import _blocks

    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    blocks = _blocks()
    args = []
    rows = []
    for (task, kind), text in blocks.items():
        if kind == "response":
            rows.append(text)
        else:
            name = f"{task}.json" if text.startswith('{"dataset_id"') else f"{task}.jsonl"
            (pytester.path / name).write_text(text, encoding="utf-8")
            args += ["--dataset", name]
    (pytester.path / "responses.jsonl").write_text("".join(rows), encoding="utf-8")
    with MockOpenAIServer() as server:
        result = pytester.runpytest(
            *args, "--responses", "responses.jsonl", "--judge-model", "openai/mock",
            "--base-url", server.base_url, "--no-cache", "--run-dir", "runs",
        )  # fmt: skip
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 4, result.stdout.str()
