"""A killed xdist worker does not shrink the run, nor pay for a live worker's calls.

Before: the dead worker's items went to a survivor, run one call at a time (62.7 s instead
of 27.7 s), and the replacement xdist started prefetched gw0's share, paying twice.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from pytest_legaleval.testing.mock_openai import MockOpenAIServer

SUITE = "def test_record(record, evaluation):\n    evaluation.check()\n"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]


_CRASH_GW1_EARLY = """
import os
from pathlib import Path


def pytest_runtest_call(item):
    flag = Path(__file__).with_name("crashed")
    if os.environ.get("PYTEST_XDIST_WORKER") == "gw1" and not flag.exists():
        flag.write_text("once")
        os._exit(3)  # gw1 dies on its first item, its whole share still ahead
"""


@pytest.mark.slow
def test_a_crashed_worker_s_items_keep_their_concurrency(pytester: pytest.Pytester) -> None:
    """The replacement prefetches the dead worker's items: many calls in flight, none twice."""
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    rows = [
        {
            "schema_version": "legal_eval_v1",
            "id": f"q{i:03d}",
            "dataset": "t",
            "task_type": "mcq",
            "prompt": f"Question q{i:03d}?",
            "choices": [{"id": c, "text": f"option {c}"} for c in "AB"],
            "correct_choice_ids": ["A"],
        }
        for i in range(40)
    ]
    data = pytester.path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    pytester.makeconftest(_CRASH_GW1_EARLY)
    with MockOpenAIServer(latency=0.3) as server:
        server.add_reply("Question", "Answer: A")
        result = pytester.runpytest_subprocess(
            "--dataset", str(data), "--model", "openai/m", "--base-url", server.base_url,
            "--run-dir", "runs", "--no-cache", "--concurrency", "20", "-n", "2",
        )  # fmt: skip
        stats = server.stats()
        per_record = [server.count_for(f"q{i:03d}?") for i in range(40)]
    result.stdout.fnmatch_lines(["*replacing crashed worker gw1*"])
    (run,) = [p for p in (pytester.path / "runs").iterdir() if p.is_dir()]
    lines = {p["record_id"]: p for p in _jsonl(run / "predictions.jsonl")}
    assert len(lines) == 40
    assert sum(line["reason"] == "evaluation_error" for line in lines.values()) == 1
    assert sum(line["outcome"] == "passed" for line in lines.values()) == 39
    # gw0's 20 items, gw1's 20 asked by gw1 before it died, and again by its replacement
    # (no cache): at most twice each, and gw0's never twice.
    assert max(per_record) <= 2 and all(per_record[i] == 1 for i in range(0, 40, 2))
    # The replacement asked for the 19 orphans together, not one after the other: their
    # calls overlap (sequential calls never would, however fast or slow the machine).
    intervals = []
    for attempt in _jsonl(run / "attempt_logs.jsonl"):
        if int(attempt["record_id"][1:]) % 2:  # gw1's share: the orphans, asked again
            start = datetime.fromisoformat(attempt["started_at"].replace("Z", "+00:00"))
            intervals.append((start, start + timedelta(milliseconds=attempt["latency_ms"])))
    assert len(intervals) == 19
    overlap = max(sum(s <= start < e for s, e in intervals) for start, _ in intervals)
    assert overlap >= 5, overlap
    assert stats["requests"] == sum(per_record)
