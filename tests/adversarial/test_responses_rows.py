"""Real pytest sessions on a hostile --responses file: one bad row cannot stop a run.

On main before this change a row whose text held a lone surrogate (``"Answer: B \\ud83d"``)
was an INTERNALERROR when its prediction line was written: the run lost every record after
it. Here every record gets exactly one prediction line, the repaired row keeps a warning,
NUL and control characters pass through as sent, and the session ends normally, under
``-n 0`` and ``-n 2``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

SUITE = """
def test_record(record, evaluation):
    evaluation.check()
"""
ROWS = [
    r'{"record_id": "q000", "response": "Answer: B \ud83d"}',
    r'{"record_id": "q001", "model": "prefilled", "response": "Answer: B \u0000\u0007\u001b[2J"}',
    r'{"record_id": "q002\udfff", "response": "Answer: B"}',
    r'{"record_id": "q003", "response": "Answer: B \udc80\ud800 end", "latency_s": 1.0}',
    r'{"record_id": "q004", "response": "Answer: B"}',
]


def _mcq(record_id: str) -> dict[str, Any]:
    return {
        "schema_version": "legal_eval_v1",
        "id": record_id,
        "dataset": "t",
        "task_type": "mcq",
        "prompt": f"Question {record_id}?",
        "choices": [{"id": c, "text": f"option {c}"} for c in "ABCD"],
        "correct_choice_ids": ["B"],
    }


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["n0", "n2"])
def test_a_lone_surrogate_in_a_responses_row_loses_no_record(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    data = pytester.path / "d.jsonl"
    data.write_text(
        "".join(json.dumps(_mcq(f"q{i:03d}")) + "\n" for i in range(6)), encoding="utf-8"
    )
    responses = pytester.path / "r.jsonl"
    responses.write_text("".join(row + "\n" for row in ROWS), encoding="utf-8")
    args = ["--dataset", str(data), "--responses", str(responses), "--run-dir", "runs"]
    result = pytester.runpytest_subprocess(
        *args, "--junitxml", "junit.xml", "-rA", *workers, timeout=180
    )
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # q002 and q005 have no response
    (run,) = [p for p in (pytester.path / "runs").iterdir() if p.is_dir()]
    lines = (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    predictions = {p["record_id"]: p for p in map(json.loads, lines)}
    assert len(lines) == 6 and sorted(predictions) == [f"q{i:03d}" for i in range(6)]
    repaired = predictions["q000"]
    assert repaired["model_response"] == "Answer: B \ufffd" and repaired["passed"]
    assert repaired["details"]["response_warnings"] == [
        "response: 1 lone surrogate(s) replaced by U+FFFD"
    ]
    assert predictions["q001"]["model_response"] == "Answer: B \x00\x07\x1b[2J"
    assert predictions["q003"]["latency_ms"] == 1000.0 and predictions["q003"]["passed"]
    for missing in ("q002", "q005"):  # the cleaned id "q002\ufffd" matches no record
        assert predictions[missing]["reason"] == "missing_response"
    assert "1 of 5 rows" in output and "match no record" in output
    manifest = json.loads((run / "run_manifest.json").read_text())
    assert manifest["status"] == "completed_with_failures"
    (pytester.path / "junit.xml").read_text(encoding="utf-8")  # written, and valid UTF-8
