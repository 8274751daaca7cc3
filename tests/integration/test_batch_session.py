"""``--batch`` in real pytest sessions against the mock's Files and Batches API (issue 37).

The mock answers batch lines with the same logic as live calls, so a batch run must give
the verdicts of a live run, while its failures (non-200 lines in both files, ``error``
lines, an expired batch, shuffled output) are retried and its cost is half the live
cost of the same tokens. A run killed with SIGKILL while its batch is ``in_progress`` and
started again with the same cache submits nothing new.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.metrics._prices import load_price_table
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from ..processes import wait_until
from .conftest import mcq_row, read_jsonl, run_dirs, write_jsonl

PRICES = "models:\n  mock: {input: 2.0, output: 8.0, cached_input: 0.5}\n"


def _judged_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for i in range(4):
        rows.append(
            {"schema_version": "legal_eval_v1", "id": f"ref{i}", "dataset": "j",
             "task_type": "reference_qa", "prompt": f"Question {i}: what is a tort?",
             "reference_answers": ["A civil wrong."]}
        )  # fmt: skip
        rows.append(
            {"schema_version": "legal_eval_v1", "id": f"rub{i}", "dataset": "j",
             "task_type": "rubric_qa", "prompt": f"Case {i}: may the tenant withhold rent?",
             "rubric": [{"id": "c1", "title": "Names § 536 BGB", "weight": 3},
                        {"id": "c2", "title": "Mentions notice", "weight": 2}]}
        )  # fmt: skip
    return rows


def _write_data(path: Path, mcq: int, judged: bool) -> list[str]:
    rows = [mcq_row(f"q{i:03d}", correct="ABCD"[i % 4]) for i in range(mcq)]
    if judged:
        rows += _judged_rows()
    write_jsonl(path / "d.jsonl", rows)
    (path / "prices.yaml").write_text(PRICES, encoding="utf-8")
    return ["--dataset", "d.jsonl", "--model", "openai/mock", "--price-table", "prices.yaml",
            "-p", "no:randomly", "-q"]  # fmt: skip


def _verdicts(run: Path) -> dict[str, tuple[Any, ...]]:
    return {
        p["record_id"]: (p["outcome"], p["reason"], p["score"], p["model_response"])
        for p in read_jsonl(run / "predictions.jsonl")
    }


def _summary(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "metrics_summary.json").read_text())
    return data


def test_batch_run_equals_live_run_and_costs_half(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    common = _write_data(pytester.path, 60, judged=True)
    judge = ["--judge-model", "openai/mock"]
    with MockOpenAIServer() as server:
        live = pytester.runpytest(
            *common, *judge, "--base-url", server.base_url, "--no-cache", "--run-dir", "live"
        )
        assert live.ret in (0, 1), live.stdout.str()
        live_calls = server.stats()["requests"]
        server.reset()
        # Hostile: failures in both files, error lines, a 500 line, an expired first batch.
        server.batch_knobs(
            failures_to="both",
            expire_next=1,
            partial=0.6,
            line_errors={
                r"q00[12]\?": "request_timeout",
                r"q01[0-3]\?": "batch_cancelled",
                r"536 BGB": "batch_expired",  # in the judges' prompts only
            },
        )
        server.add_fault("500", match=r"q02\d\?", times=10)  # once each
        server.add_fault("503", match=r"q03[0-4]\?", times=5)
        batch = pytester.runpytest(
            *common, *judge, "--base-url", server.base_url, "--batch", "--batch-poll", "0.05",
            "--cache", "c.sqlite", "--run-dir", "batch",
        )  # fmt: skip
        assert batch.ret in (0, 1), batch.stdout.str()
        stats = server.stats()
        batches = server.batch_stats()
    (live_run,) = run_dirs(pytester.path / "live")
    (batch_run,) = run_dirs(pytester.path / "batch")
    assert _verdicts(batch_run) == _verdicts(live_run)
    predictions = read_jsonl(batch_run / "predictions.jsonl")
    went_live = [(p["record_id"], p["attempts"]) for p in predictions if not p["details"]["batch"]]
    assert not went_live
    judged = [p for p in predictions if p["judge"]]
    assert len(judged) == 8
    for p in judged:
        for verdict in p["judge"]["verdicts"]:
            assert verdict["batch_input_tokens"] == verdict["input_tokens"] > 0
    # Nothing went live, not even the judge's structured-output probe.
    assert stats["requests"] == 0
    assert live_calls > 60
    assert batches["batches_created"] >= 3  # answers, their retries, then the judges
    assert batches["by_status"].get("expired") == 1
    attempts = read_jsonl(batch_run / "attempt_logs.jsonl")
    retried = {a["record_id"] for a in attempts if a["error_code"] is not None}
    assert {"q001", "q002", "q010", "q020", "q030", "q059"} <= retried
    judge_retries = [a for a in attempts if a["purpose"] == "judge" and a["error_code"]]
    assert judge_retries and all(a["batch_id"] for a in attempts if a["purpose"] == "judge")
    assert all(a["batch_id"] for a in attempts if a["purpose"] == "generation")

    live_cost, batch_cost = _summary(live_run)["cost"], _summary(batch_run)["cost"]
    assert live_cost["batch_usd"] == 0 and live_cost["live_usd"] == live_cost["total_usd"]
    assert batch_cost["batch_usd"] == pytest.approx(batch_cost["total_usd"])
    assert batch_cost["total_usd"] == pytest.approx(live_cost["total_usd"] / 2)
    assert batch_cost["saved_usd"] == pytest.approx(batch_cost["total_usd"])
    # The same figure from the predictions, priced independently of the summary.
    table = load_price_table(pytester.path / "prices.yaml")
    price = table.lookup("openai/mock")
    assert price is not None
    tokens_in = sum(p["input_tokens"] for p in predictions) + sum(
        v["input_tokens"] for p in judged for v in p["judge"]["verdicts"]
    )
    tokens_out = sum(p["output_tokens"] for p in predictions) + sum(
        v["output_tokens"] for p in judged for v in p["judge"]["verdicts"]
    )
    expected = (tokens_in * 2.0 + tokens_out * 8.0) / 1e6 * 0.5
    assert batch_cost["total_usd"] == pytest.approx(expected)
    # The terminal and the report say it.
    batch.stdout.fnmatch_lines(["batches: * batches submitted, * answers, *", "*saved"])
    from pytest_legaleval.cli import main as cli_main

    assert cli_main(["report", str(batch_run), "--out", str(pytester.path / "r.html")]) == 0
    page = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert f"{batch_cost['batch_usd']:.4f} at the batch price" in page


def test_batch_failures_end_with_a_verdict_or_a_named_error(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    common = _write_data(pytester.path, 12, judged=False)
    with MockOpenAIServer() as server:
        # The first batch fails naming lines 1 and 2 (they go live, the rest into a new
        # batch); a 400 line (live decides: a 400 again, a named error); a line omitted
        # from the files once; a line that times out in every batch, so it goes live after
        # its third.
        server.batch_knobs(
            fail_next=1,
            fail_lines=(1, 2),
            line_errors={r"q005\?": "request_timeout"},
            line_error_times=5,
            omit=r"q006\?",
            failures_to="output",
        )
        server.add_fault("400", match=r"q007\?")
        result = pytester.runpytest(
            *common, "--base-url", server.base_url, "--batch", "--batch-poll", "0.05",
            "--batch-attempts", "3", "--cache", "c.sqlite", "--run-dir", "runs",
            "--retry-delays", "0.01",
        )  # fmt: skip
        assert result.ret == 1, result.stdout.str()
        live_prompts = [r["messages"][-1]["content"] for r in server.requests()]
    (run,) = run_dirs(pytester.path / "runs")
    predictions = {p["record_id"]: p for p in read_jsonl(run / "predictions.jsonl")}
    assert len(predictions) == 12
    bad = predictions.pop("q007")
    assert bad["outcome"] == "error" and bad["reason"] == "generation_error:bad_request"
    assert all(p["reason"] in ("correct", "wrong_answer") for p in predictions.values())
    went_live = {f"q{i:03d}" for i in range(12) if any(f"q{i:03d}?" in t for t in live_prompts)}
    assert went_live == {"q000", "q001", "q005", "q007"}
    answered_live = {k for k, p in predictions.items() if not p["details"]["batch"]}
    assert answered_live == went_live - {"q007"}  # q007's live call failed too
    attempts = [a for a in read_jsonl(run / "attempt_logs.jsonl") if a["record_id"] == "q005"]
    assert [a["error_code"] for a in attempts] == ["service_unavailable", *["timeout"] * 2, None]
    assert [bool(a["batch_id"]) for a in attempts] == [True, True, True, False]


_CHILD_TIMEOUT = 120


def _stored_status(cache: Path) -> str | None:
    from pytest_legaleval.engine.batch_store import pending_batches
    from pytest_legaleval.errors import ConfigError

    try:
        rows = pending_batches(str(cache))
    except ConfigError:  # not created yet, or being created by the child
        return None
    return rows[0].status if rows else None


def _command(common: list[str], url: str) -> list[str]:
    return [sys.executable, "-m", "pytest", *common, "--base-url", url, "--batch",
            "--batch-poll", "0.05", "--cache", "c.sqlite", "--run-dir", "runs",
            "-p", "no:cacheprovider"]  # fmt: skip


def test_sigkill_while_in_progress_then_rerun_submits_nothing_new(
    pytester: pytest.Pytester, suite: Path
) -> None:
    common = _write_data(pytester.path, 30, judged=False)
    env = {**os.environ, "OPENAI_API_KEY": "test-key-not-secret"}
    env.pop("PYTEST_XDIST_WORKER", None)
    with MockOpenAIServer() as server:
        server.batch_knobs(hold=True)
        child = subprocess.Popen(
            _command(common, server.base_url),
            cwd=pytester.path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            # In progress at the provider, and known so in the cache (its last status seen).
            held = wait_until(
                lambda: _stored_status(pytester.path / "c.sqlite") == "in_progress", 60
            )
            assert held, server.batch_stats()
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(30)
        assert child.returncode == -signal.SIGKILL
        listed = subprocess.run(
            [sys.executable, "-m", "pytest_legaleval.cli", "batches", "--cache", "c.sqlite"],
            cwd=pytester.path, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert listed.returncode == 0, listed.stderr
        (batch_id,) = server.batch_stats()["batch_ids"]
        assert batch_id in listed.stdout and "in_progress" in listed.stdout
        server.release_batches()
        rerun = subprocess.run(
            _command(common, server.base_url),
            cwd=pytester.path, env=env, capture_output=True, text=True, timeout=_CHILD_TIMEOUT,
        )  # fmt: skip
        assert rerun.returncode in (0, 1), rerun.stdout[-3000:] + rerun.stderr[-3000:]
        stats, batches = server.stats(), server.batch_stats()
    assert batches["batches_created"] == 1 and batches["files_uploaded"] == 1
    assert batches["lines"] == 30
    assert stats["requests"] == 0
    runs = run_dirs(pytester.path / "runs")
    finished = [r for r in runs if (r / "metrics_summary.json").exists()]
    (run,) = finished
    predictions = read_jsonl(run / "predictions.jsonl")
    assert len(predictions) == 30
    assert all(p["reason"] in ("correct", "wrong_answer") for p in predictions)
    assert "resumed 1 batch" in rerun.stdout
    again = subprocess.run(
        [sys.executable, "-m", "pytest_legaleval.cli", "batches", "--cache", "c.sqlite"],
        cwd=pytester.path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert again.returncode == 0 and "no pending batches" in again.stdout


def test_the_service_driver_runs_batches_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_legaleval.pipeline.driver import run_evaluation
    from pytest_legaleval.pipeline.settings import resolve_settings

    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    write_jsonl(tmp_path / "d.jsonl", [mcq_row(f"s{i}") for i in range(6)])
    with MockOpenAIServer() as server:
        settings = resolve_settings(
            {"dataset": [str(tmp_path / "d.jsonl")], "model": ["openai/mock"],
             "base_url": server.base_url, "batch": "true", "batch_poll": "0.05",
             "cache": str(tmp_path / "c.sqlite"), "run_dir": str(tmp_path / "runs")}
        )  # fmt: skip
        outcome = run_evaluation(settings, "run_batch")
        assert server.batch_stats()["batches_created"] == 1
        assert server.stats()["requests"] == 0
    assert outcome.status in ("completed", "completed_with_failures")
    predictions = read_jsonl(tmp_path / "runs" / "run_batch" / "predictions.jsonl")
    assert len(predictions) == 6 and all(p["details"]["batch"] for p in predictions)
    manifest = json.loads((tmp_path / "runs" / "run_batch" / "run_manifest.json").read_text())
    assert manifest["batches"]["batches_created"] == 1
    assert manifest["batches"]["batches_pending"] == 0


def test_ctrl_c_while_waiting_says_what_is_pending(pytester: pytest.Pytester, suite: Path) -> None:
    common = _write_data(pytester.path, 10, judged=False)
    env = {**os.environ, "OPENAI_API_KEY": "test-key-not-secret"}
    env.pop("PYTEST_XDIST_WORKER", None)
    with MockOpenAIServer() as server:
        server.batch_knobs(hold=True)
        child = subprocess.Popen(
            _command(common, server.base_url),
            cwd=pytester.path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            held = wait_until(
                lambda: _stored_status(pytester.path / "c.sqlite") == "in_progress", 60
            )
            assert held, server.batch_stats()
        finally:
            child.send_signal(signal.SIGINT)
            out, _ = child.communicate(timeout=_CHILD_TIMEOUT)
        assert server.batch_stats()["cancels"] == 0  # the batch runs on at the provider
    assert "status: cancelled (cancelled 10)" in out, out[-3000:]
    assert "batches: 1 batch still pending, the oldest " in out
    assert "same --cache" in out
    (run,) = run_dirs(pytester.path / "runs")
    predictions = read_jsonl(run / "predictions.jsonl")
    assert len(predictions) == 10
    assert {p["reason"] for p in predictions} == {"cancelled"}
    # The run directory and its report say it too.
    batches = json.loads((run / "run_manifest.json").read_text())["batches"]
    assert batches["batches_pending"] == 1 and batches["batch_oldest_pending_s"] >= 0
    from pytest_legaleval.cli import main as cli_main

    assert cli_main(["report", str(run), "--out", str(pytester.path / "r.html")]) == 0
    page = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert "1 batch still pending, the oldest " in page
