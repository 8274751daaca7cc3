"""Real pytest sessions against a hostile endpoint: one bad reply cannot stop a run.

On today's main a reply whose content holds a lone surrogate killed the cache writer (the
session hung until CI killed it, every record ``cancelled``) and, without a cache, was an
INTERNALERROR and a lost record. Here every record must get exactly one prediction line,
the good records pass, and the session ends, under ``-n 0`` and ``-n 2``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_legaleval.testing.mock_openai import HostileOpenAIServer

SUITE = """
def test_record(record, evaluation):
    evaluation.check()
"""
SESSION_TIMEOUT_S = 180  # a hang fails the test instead of stalling the suite
GOOD = ["q000", "q001", "q002", "q004", "q005"]


@pytest.fixture
def server() -> Iterator[HostileOpenAIServer]:
    with HostileOpenAIServer() as srv:
        srv.add_reply(r"\[ans=B\]", "Answer: B")
        yield srv


def _mcq(record_id: str) -> dict[str, Any]:
    return {
        "schema_version": "legal_eval_v1",
        "id": record_id,
        "dataset": "t",
        "task_type": "mcq",
        "prompt": f"Question {record_id} [ans=B]?",
        "choices": [{"id": c, "text": f"option {c}"} for c in "ABCD"],
        "correct_choice_ids": ["B"],
    }


def _session(
    pytester: pytest.Pytester, server: HostileOpenAIServer, *extra: str
) -> tuple[pytest.RunResult, list[dict[str, Any]]]:
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    data = pytester.path / "d.jsonl"
    rows = [_mcq(f"q{i:03d}") for i in range(6)]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    result = pytester.runpytest_subprocess(
        "--dataset",
        str(data),
        "--model",
        "openai/mock-model",
        "--base-url",
        server.base_url,
        "--run-dir",
        "runs",
        "--retry-delays",
        "0.01,0.03,0.07",
        *extra,
        timeout=SESSION_TIMEOUT_S,
    )
    runs = sorted(p for p in (pytester.path / "runs").iterdir() if p.is_dir())
    assert len(runs) == 1, result.stdout.str()
    lines = (runs[0] / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    return result, [json.loads(line) for line in lines if line]


@pytest.mark.slow
@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["n0", "n2"])
@pytest.mark.parametrize(
    "cache", [["--cache", "cache.sqlite"], ["--no-cache"]], ids=["cache", "nocache"]
)
def test_a_lone_surrogate_reply_costs_nothing_but_its_own_record(
    pytester: pytest.Pytester, server: HostileOpenAIServer, workers: list[str], cache: list[str]
) -> None:
    server.add_hostile("lone_surrogate", match="q003", content="Answer: B")
    result, predictions = _session(pytester, server, *cache, *workers)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    assert "Traceback" not in output
    assert sorted(p["record_id"] for p in predictions) == [f"q{i:03d}" for i in range(6)]
    by_id = {p["record_id"]: p for p in predictions}
    assert all(by_id[record]["outcome"] == "passed" for record in GOOD), output
    hostile = by_id["q003"]
    assert hostile["outcome"] in ("passed", "failed", "error")
    assert "\ufffd" in (hostile.get("model_response") or hostile.get("response") or "\ufffd")
    assert result.ret in (0, 1)


@pytest.mark.slow
def test_invalid_replies_are_records_with_reasons_and_not_retried(
    pytester: pytest.Pytester, server: HostileOpenAIServer
) -> None:
    server.add_hostile("empty_choices", match="q001")
    server.add_hostile("invalid_json", match="q002")
    server.add_hostile(
        "usage",
        match="q003",
        content="Answer: B",
        usage={"prompt_tokens": -5, "completion_tokens": 10**30},
    )
    result, predictions = _session(pytester, server, "--no-cache", "-p", "no:xdist")
    assert "INTERNALERROR" not in result.stdout.str()
    by_id = {p["record_id"]: p for p in predictions}
    assert len(predictions) == 6
    for record in ("q001", "q002"):
        assert by_id[record]["reason"] == "generation_error:invalid_response"
        assert server.count_for(record) == 1
    assert by_id["q003"]["outcome"] == "passed"
    assert by_id["q003"]["input_tokens"] is None and by_id["q003"]["output_tokens"] is None
    (warned,) = by_id["q003"]["attempts"]
    assert len(warned["warnings"]) == 2
