"""``--epochs K`` and ``--cluster-by`` through real sessions, checked against the formulas.

Offline: five answers per record (``epoch`` 0…4) in a responses file, records clustered by
``metadata.exam``; the run's ``epochs``, ``pass_at_k``, ``pass_hat_k``, ``flaky_records``
and ``uncertainty`` are recomputed here by brute force from the answers' verdicts (every
k-subset enumerated; CR2 and the Bell–McCaffrey df as the issue writes them). Live: each
epoch is a call of its own with its own seed, and a second run on the same cache pays for
none of them.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
from pathlib import Path

import pytest

from pytest_legaleval.metrics._tdist import t_quantile
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from .conftest import mcq_row, read_jsonl, run_dirs, write_jsonl

K = 5
# record -> exam, and per epoch whether its answer is right (B) or wrong (C)
PLAN: dict[str, tuple[str, str]] = {
    # the records of an exam answer alike (high or low): clustered errors are wider
    "r00": ("e1", "11111"),
    "r01": ("e1", "11011"),
    "r02": ("e1", "11110"),
    "r03": ("e2", "00000"),
    "r04": ("e2", "01000"),
    "r05": ("e2", "00010"),
    "r06": ("e3", "00100"),
    "r07": ("e3", "10000"),
    "r08": ("e4", "11111"),
    "r09": ("e5", "11111"),
    "r10": ("e5", "10111"),
    "r11": ("e5", "01111"),
}


def _offline(pytester: pytest.Pytester, *extra: str) -> pytest.RunResult:
    rows = [mcq_row(r, metadata={"exam": exam}) for r, (exam, _) in PLAN.items()]
    data = write_jsonl(pytester.path / "d.jsonl", rows)
    answers = [
        {"record_id": r, "epoch": e, "response": f"Answer: {'B' if bit == '1' else 'C'}"}
        for r, (_, bits) in PLAN.items()
        for e, bit in enumerate(bits)
    ]
    responses = write_jsonl(pytester.path / "r.jsonl", answers)
    return pytester.runpytest(
        "--dataset", str(data), "--responses", str(responses), "--run-dir", "runs",
        "--epochs", str(K), *extra,
    )  # fmt: skip


def _pass_at_k(n: int, c: int, k: int) -> float:
    """Brute force: the share of k-subsets of the n answers with at least one pass."""
    subsets = list(itertools.combinations([1] * c + [0] * (n - c), k))
    return sum(any(s) for s in subsets) / len(subsets)


def _pass_hat_k(n: int, c: int, k: int) -> float:
    subsets = list(itertools.combinations([1] * c + [0] * (n - c), k))
    return sum(all(s) for s in subsets) / len(subsets)


def _uncertainty(x: list[float], clusters: list[str]) -> tuple[float, float, float, float]:
    """mean, naive se, CR2 se (V = Σ S_g² / (N² (1 − n_g/N))) and the BM df."""
    n = len(x)
    mean = sum(x) / n
    s2 = statistics.variance(x)
    groups = sorted(set(clusters))
    sizes = [clusters.count(g) for g in groups]
    sums = [sum(v - mean for v, c in zip(x, clusters, strict=True) if c == g) for g in groups]
    v = sum(s * s / (n * n * (1 - m / n)) for s, m in zip(sums, sizes, strict=True))
    u = [m * m / (n - m) for m in sizes]
    df = n * n / (sum(m * m for m in sizes) + sum(u) ** 2 - sum(w * w for w in u))
    return mean, math.sqrt(s2 / n), math.sqrt(v), df


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_five_epochs_clustered_by_exam_report_the_formulas(
    pytester: pytest.Pytester, suite: Path, workers: list[str]
) -> None:
    result = _offline(pytester, "--cluster-by", "metadata.exam", *workers)
    (run,) = run_dirs(pytester.path / "runs")
    lines = read_jsonl(run / "predictions.jsonl")
    assert len(lines) == len(PLAN) * K
    assert sorted((p["record_id"], p["epoch"]) for p in lines) == sorted(
        itertools.product(PLAN, range(K))
    )
    summary = json.loads((run / "metrics_summary.json").read_text(encoding="utf-8"))
    assert summary["epochs"] == K
    counts = {r: bits.count("1") for r, (_, bits) in PLAN.items()}
    for k in range(1, K + 1):
        want_at = statistics.fmean(_pass_at_k(K, c, k) for c in counts.values())
        want_hat = statistics.fmean(_pass_hat_k(K, c, k) for c in counts.values())
        assert summary["pass_at_k"][str(k)] == pytest.approx(want_at, abs=1e-12)
        assert summary["pass_hat_k"][str(k)] == pytest.approx(want_hat, abs=1e-12)
    flaky = [r for r, c in counts.items() if 0 < c < K]
    assert summary["flaky_records"] == len(flaky)
    listed = read_jsonl(run / "flaky_records.jsonl")
    assert sorted(line["record_id"] for line in listed) == sorted(flaky)
    x = [counts[r] / K for r in PLAN]
    exams = [exam for exam, _ in PLAN.values()]
    mean, se, se_clustered, df = _uncertainty(x, exams)
    block = summary["uncertainty"]
    assert block["cluster_by"] == "metadata.exam" and block["clusters"] == len(set(exams))
    assert block["mean"] == pytest.approx(mean, abs=1e-12)
    assert block["se"] == pytest.approx(se, abs=1e-12)
    assert block["se_clustered"] == pytest.approx(se_clustered, abs=1e-12)
    assert block["df"] == pytest.approx(df, rel=1e-12)
    q = t_quantile(0.975, df)  # checked against scipy in tests/unit/test_metrics_cr2.py
    raw = [mean - q * se_clustered, mean + q * se_clustered]
    assert block["ci95_raw"] == pytest.approx(raw, abs=1e-9)
    assert block["ci95"] == pytest.approx([max(0.0, raw[0]), min(1.0, raw[1])], abs=1e-9)
    assert block["clipped"] == (raw[0] < 0 or raw[1] > 1)
    assert summary["errored_epochs"] == 0 and summary["error_rate"] == 0.0
    assert se_clustered > se  # agreeing exams: the naive interval is too narrow
    # One item per record: the reduced verdict (mean of the epochs' scores >= 0.5).
    outcomes = result.parseoutcomes()
    passed = sum(c / K >= 0.5 for c in counts.values())
    assert outcomes["passed"] == passed and outcomes["failed"] == len(PLAN) - passed
    assert "clustered by metadata.exam" in result.stdout.str()


def test_epochs_without_a_verdict_are_counted_everywhere(
    pytester: pytest.Pytester, suite: Path
) -> None:
    # the issue: --epochs 3 with answers for epoch 0 only: 2 of 3 lines of every item are
    # missing_response. They count in error_rate, failures.jsonl, the status and the gate.
    rows = [mcq_row(r) for r in PLAN]
    data = write_jsonl(pytester.path / "d.jsonl", rows)
    answers = [{"record_id": r, "epoch": 0, "response": "Answer: B"} for r in PLAN]
    responses = write_jsonl(pytester.path / "r.jsonl", answers)
    result = pytester.runpytest(
        "--dataset", str(data), "--responses", str(responses), "--run-dir", "runs",
        "--epochs", "3", "--gate", "error_rate==0",
    )  # fmt: skip
    (run,) = run_dirs(pytester.path / "runs")
    summary = json.loads((run / "metrics_summary.json").read_text(encoding="utf-8"))
    lines = len(PLAN) * 3
    assert (summary["errored_epochs"], summary["epoch_lines"]) == (2 * len(PLAN), lines)
    assert summary["error_rate"] == pytest.approx(2 / 3)
    (model,) = summary["by_model"]
    assert summary["by_model"][model]["errored_epochs"] == 2 * len(PLAN)
    assert summary["by_model"][model]["error_rate"] == pytest.approx(2 / 3)
    by_slice = json.loads((run / "metrics_by_slice.json").read_text(encoding="utf-8"))
    for dimension in ("dataset", "model", "task_type"):
        (block,) = by_slice["slices"][dimension].values()
        assert block["error_rate"] == pytest.approx(2 / 3), dimension  # slice gates agree
    failures = read_jsonl(run / "failures.jsonl")
    assert len(failures) == 2 * len(PLAN)
    assert sorted({f["epoch"] for f in failures}) == [1, 2]
    assert {f["failure_type"] for f in failures} == {"missing_response"}
    # no item has all three verdicts: pass@k has no figure, and all are listed
    assert summary["pass_at_k_records"] == 0 and summary["incomplete_records"] == len(PLAN)
    assert summary["pass_at_k"] == {"1": None, "2": None, "3": None}
    incomplete = read_jsonl(run / "incomplete_records.jsonl")
    assert len(incomplete) == len(PLAN) and incomplete[0]["missing_epochs"] == [1, 2]
    manifest = json.loads((run / "run_manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "completed_with_failures"
    out = result.stdout.str()
    assert "FAILED gate error_rate==0" in out
    assert f"incomplete: {len(PLAN)} items lack a verdict in some epoch" in out
    assert f"status: completed_with_failures ({2 * len(PLAN)} of {lines} epoch lines" in out
    assert result.ret != 0


def test_one_epoch_keeps_the_file_as_it_was(pytester: pytest.Pytester, suite: Path) -> None:
    rows = [mcq_row(r) for r in PLAN]
    data = write_jsonl(pytester.path / "d.jsonl", rows)
    answers = [{"record_id": r, "response": "Answer: B"} for r in PLAN]
    responses = write_jsonl(pytester.path / "r.jsonl", answers)
    result = pytester.runpytest(
        "--dataset", str(data), "--responses", str(responses), "--run-dir", "runs"
    )
    result.assert_outcomes(passed=len(PLAN))
    (run,) = run_dirs(pytester.path / "runs")
    lines = read_jsonl(run / "predictions.jsonl")
    assert len(lines) == len(PLAN) and {p["epoch"] for p in lines} == {0}
    assert not (run / "flaky_records.jsonl").exists()
    summary = json.loads((run / "metrics_summary.json").read_text(encoding="utf-8"))
    assert summary["epochs"] == 1 and summary["pass_at_k"] == {"1": 1.0}


def test_a_missing_epoch_is_that_epochs_missing_response(
    pytester: pytest.Pytester, suite: Path
) -> None:
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1")])
    answers = [{"record_id": "q1", "epoch": e, "response": "Answer: B"} for e in (0, 2)]
    responses = write_jsonl(pytester.path / "r.jsonl", answers)
    result = pytester.runpytest(
        "--dataset", str(data), "--responses", str(responses), "--run-dir", "runs",
        "--epochs", "3",
    )  # fmt: skip
    result.assert_outcomes(passed=1)  # two verdicts, both passing: the item passes
    (run,) = run_dirs(pytester.path / "runs")
    by_epoch = {p["epoch"]: p for p in read_jsonl(run / "predictions.jsonl")}
    assert by_epoch[1]["reason"] == "missing_response" and by_epoch[1]["score"] is None
    assert by_epoch[1]["outcome"] == "error" and by_epoch[0]["passed"] is True


def test_each_live_epoch_is_a_call_of_its_own_and_a_resumed_run_repays_nothing(
    pytester: pytest.Pytester, suite: Path
) -> None:
    with MockOpenAIServer(latency=0.0) as server:
        server.add_reply(r"Question", "Answer: B")
        data = write_jsonl(pytester.path / "d.jsonl", [mcq_row(f"q{i}") for i in range(4)])
        args = [
            "--dataset", str(data), "--model", "openai/mock-model", "--base-url",
            server.base_url, "--cache", "cache.sqlite", "--epochs", "3", "--seed", "7",
        ]  # fmt: skip
        first = pytester.runpytest(*args, "--run-dir", "first")
        first.assert_outcomes(passed=4)
        assert server.stats()["requests"] == 12
        seeds = sorted(body["seed"] for body in server.requests())
        assert seeds == [7] * 4 + [8] * 4 + [9] * 4  # one seed per epoch
        again = pytester.runpytest(*args, "--run-dir", "second")
        again.assert_outcomes(passed=4)
        assert server.stats()["requests"] == 12  # every epoch answered from the cache
    (run,) = run_dirs(pytester.path / "second")
    lines = read_jsonl(run / "predictions.jsonl")
    assert len(lines) == 12 and all(p["details"]["cached"] for p in lines)


def test_live_epochs_that_failed_are_counted_in_error_rate_failures_and_gate(
    pytester: pytest.Pytester, suite: Path
) -> None:
    # the issue: against an endpoint failing 30 % of calls, 24 of 60 failed and error_rate
    # read 0.05 (items). A 400 is not retried: every fired fault is one epoch without a verdict.
    with MockOpenAIServer(latency=0.0, seed=3) as server:
        server.add_reply(r"Question", "Answer: B")
        fault = server.add_fault("400", rate=0.3)
        data = write_jsonl(pytester.path / "d.jsonl", [mcq_row(f"q{i}") for i in range(20)])
        result = pytester.runpytest(
            "--dataset", str(data), "--model", "openai/mock-model", "--base-url",
            server.base_url, "--no-cache", "--epochs", "3", "--run-dir", "runs",
        )  # fmt: skip
        failed = fault.fired
    assert 0 < failed < 60
    (run,) = run_dirs(pytester.path / "runs")
    summary = json.loads((run / "metrics_summary.json").read_text(encoding="utf-8"))
    assert (summary["errored_epochs"], summary["epoch_lines"]) == (failed, 60)
    assert summary["error_rate"] == pytest.approx(failed / 60)
    assert len(read_jsonl(run / "failures.jsonl")) == failed
    result.stdout.fnmatch_lines([f"*incomplete: * ({failed} of 60 epoch lines errored*"])


def test_a_two_item_runs_interval_is_clipped_to_zero_one(
    pytester: pytest.Pytester, suite: Path
) -> None:
    # the issue: a 2-item run printed "95% CI [-0.48, 1.48]"
    rows = [mcq_row("a"), mcq_row("b")]
    data = write_jsonl(pytester.path / "d.jsonl", rows)
    answers = [{"record_id": "a", "response": "Answer: B"}, {"record_id": "b", "response": "C"}]
    responses = write_jsonl(pytester.path / "r.jsonl", answers)
    result = pytester.runpytest(
        "--dataset", str(data), "--responses", str(responses), "--run-dir", "runs"
    )  # fmt: skip
    (run,) = run_dirs(pytester.path / "runs")
    block = json.loads((run / "metrics_summary.json").read_text(encoding="utf-8"))["uncertainty"]
    assert block["ci95"] == [0.0, 1.0] and block["clipped"] is True
    assert block["ci95_raw"][0] < -5 and block["df"] == 1.0
    assert block["method"] == "t interval, CR2 standard error, Bell-McCaffrey df"
    result.stdout.fnmatch_lines(
        ["pass rate, the run's interval: mean 0.5000, 95% CI [0.0000, 1.0000] (t interval, records "
         "independent: se 0.5000, df 1.0, n=2, clipped to [0, 1])"]
    )  # fmt: skip
