"""Attack: a dataset names files outside its folder to have them sent to the model.

Issue 17: ``"attachments": [{"path": "/proc/self/environ"}]`` sent the whole environment
(API keys included) to the endpoint. Now every such item is an ERROR with a record error
naming the path and the rule, and nothing outside the dataset's folder is read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_legaleval.testing.mock_openai import MockOpenAIServer

CANARY = "canary-7d2e61b0-adversarial"
SUITE = "def test_record(record, evaluation):\n    evaluation.check()\n"


def _row(record_id: str, path: str) -> dict[str, object]:
    return {
        "schema_version": "legal_eval_v1",
        "id": record_id,
        "dataset": "attack",
        "task_type": "mcq",
        "prompt": f"Question {record_id}: which clause applies?",
        "choices": [{"id": c, "text": f"clause {c}"} for c in "ABCD"],
        "correct_choice_ids": ["A"],
        "attachments": [{"path": path, "kind": "text", "title": "Exhibit"}],
    }


@pytest.mark.slow
def test_a_dataset_cannot_send_files_outside_its_folder_to_the_model(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The session runs in a subprocess, so its /proc/self/environ holds the canary.
    monkeypatch.setenv("LEGALEVAL_ADVERSARIAL_CANARY", CANARY)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    data = pytester.path / "data"
    (data / "docs").mkdir(parents=True)
    (data / "docs" / "exhibit.txt").write_text("EXHIBIT-TEXT-INSIDE")
    (pytester.path / "secret.txt").write_text(CANARY)
    (data / "link.txt").symlink_to(pytester.path / "secret.txt")
    os.mkfifo(data / "pipe.txt")
    rows = [
        _row("inside", "docs/exhibit.txt"),
        _row("environ", "/proc/self/environ"),
        _row("parent", "../secret.txt"),
        _row("absolute", str(pytester.path / "secret.txt")),
        _row("symlink", "link.txt"),
        _row("fifo", "pipe.txt"),
    ]
    dataset = data / "set.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    with MockOpenAIServer(latency=0.0) as server:
        server.add_reply("Question", "Answer: A")
        result = pytester.runpytest_subprocess(
            "--dataset", str(dataset), "--model", "openai/cand", "--base-url", server.base_url,
            "--run-dir", "runs", "--no-cache", "-p", "no:cacheprovider", timeout=120,
        )  # fmt: skip
        requests = json.dumps(server.requests())
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 1 and outcomes.get("errors") == 5, result.stdout.str()
    out = result.stdout.str()
    for rule in ("/proc, /sys or /dev", "'..' leads outside", "absolute path outside",
                 "a symlink in it points outside", "FIFO"):  # fmt: skip
        assert rule in out
    assert "EXHIBIT-TEXT-INSIDE" in requests
    assert requests.count("Question") == 1  # only the confined record was sent
    assert CANARY not in requests and CANARY not in out
    for path in Path(pytester.path / "runs").rglob("*"):
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path


def test_attachments_root_widens_the_allowed_folders_explicitly(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "unused-key-value")
    shared = pytester.path / "shared-docs"
    shared.mkdir()
    (shared / "exhibit.txt").write_text("SHARED-EXHIBIT-TEXT")
    data = pytester.path / "data"
    data.mkdir()
    dataset = data / "set.jsonl"
    dataset.write_text(json.dumps(_row("outside", "../shared-docs/exhibit.txt")) + "\n")
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    with MockOpenAIServer(latency=0.0) as server:
        base = [
            "--dataset", str(dataset), "--model", "openai/m", "--base-url", server.base_url,
            "--no-cache", "-p", "no:xdist",
        ]  # fmt: skip
        refused = pytester.runpytest(*base, "--run-dir", "a")
        refused.assert_outcomes(errors=1)
        assert server.stats()["requests"] == 0
        allowed = pytester.runpytest(*base, "--run-dir", "b", "--attachments-root", str(shared))
        assert server.stats()["requests"] == 1
        assert "SHARED-EXHIBIT-TEXT" in json.dumps(server.last_request()["messages"])
    assert allowed.ret in (0, 1)


def test_the_pipeline_and_the_estimate_apply_the_same_roots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pytest-free pipeline (the service's driver) and the cost estimate apply the
    allowed roots as a pytest session does: refused without, sent and counted with."""
    from pytest_legaleval.pipeline.driver import run_evaluation
    from pytest_legaleval.pipeline.estimate import estimate_run
    from pytest_legaleval.pipeline.plan import RunPlan
    from pytest_legaleval.pipeline.settings import resolve_settings

    monkeypatch.setenv("OPENAI_API_KEY", "unused-key-value")
    shared = tmp_path / "shared-docs"
    shared.mkdir()
    (shared / "exhibit.txt").write_text("SHARED-EXHIBIT-TEXT")
    (tmp_path / "data").mkdir()
    dataset = tmp_path / "data" / "set.jsonl"
    dataset.write_text(json.dumps(_row("outside", "../shared-docs/exhibit.txt")) + "\n")
    with MockOpenAIServer(latency=0.0) as server:
        server.add_reply("Question", "Answer: A")
        base = {"dataset": [str(dataset)], "model": ["openai/m"],
                "base_url": server.base_url, "cache": None}  # fmt: skip

        refused = resolve_settings({**base, "run_dir": str(tmp_path / "a")})
        assert estimate_run(RunPlan.build(refused)).rows == ()
        run_evaluation(refused, "refused")
        assert server.stats()["requests"] == 0
        (line,) = (tmp_path / "a" / "refused" / "predictions.jsonl").read_text().splitlines()
        assert "attachments must stay inside" in json.loads(line)["explanation"]

        allowed = resolve_settings(
            {**base, "run_dir": str(tmp_path / "b"), "attachments_root": [str(shared)]}
        )
        (row,) = estimate_run(RunPlan.build(allowed)).rows
        assert row.calls == 1
        run_evaluation(allowed, "allowed")
        assert server.stats()["requests"] == 1
        assert "SHARED-EXHIBIT-TEXT" in json.dumps(server.last_request()["messages"])
        (line,) = (tmp_path / "b" / "allowed" / "predictions.jsonl").read_text().splitlines()
        assert json.loads(line)["passed"] is True
