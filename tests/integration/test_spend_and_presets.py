"""Sessions with --max-cost, --estimate-only and provider presets, against the mock server."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_legaleval.engine.presets import PRESETS, base_url_variable
from pytest_legaleval.formats import load_dataset
from pytest_legaleval.metrics._power import plan as power_plan
from pytest_legaleval.metrics._power import record_fields
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from .conftest import mcq_row, read_jsonl, run_dirs, write_jsonl

PRICES = "models:\n  mock-model: {input: 1000, output: 1000}\n"  # $0.001 per token


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer(latency=0.0) as srv:
        srv.add_reply(r"\[ans=B\]", "Answer: B")
        yield srv


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for preset in PRESETS.values():
        monkeypatch.delenv(preset.api_key_env, raising=False)
        monkeypatch.delenv(base_url_variable(preset.name), raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _dataset(path: Path, n: int) -> Path:
    rows = [mcq_row(f"q{i:03d}", prompt=f"Question q{i:03d} [ans=B]?") for i in range(n)]
    return write_jsonl(path, rows)


def _args(server: MockOpenAIServer, data: Path, *extra: str) -> list[str]:
    return [
        "--dataset",
        str(data),
        "--model",
        "openai/mock-model",
        "--base-url",
        server.base_url,
        "--run-dir",
        "runs",
        "--no-cache",
        "--retry-delays",
        "0.01",
        *extra,
    ]


def test_max_cost_stops_the_run_and_finalizes_it(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    data = _dataset(pytester.path / "d.jsonl", 30)
    (pytester.path / "prices.yaml").write_text(PRICES)
    result = pytester.runpytest(
        *_args(server, data, "--concurrency", "1", "--max-new-tokens", "8"),
        "--price-table",
        "prices.yaml",
        "--max-cost",
        "0.2",
    )
    result.stdout.fnmatch_lines(["legaleval estimate: 30 calls*", "*--max-cost $0.2000*"])
    sent = server.stats()["requests"]
    assert 0 < sent < 30
    (run,) = run_dirs(pytester.path / "runs")
    predictions = read_jsonl(run / "predictions.jsonl")
    assert len(predictions) == 30
    stopped = [p for p in predictions if p["reason"] == "budget"]
    assert len(stopped) == 30 - sent
    assert all("--max-cost $0.2000 reached" in p["explanation"] for p in stopped)
    failures = read_jsonl(run / "failures.jsonl")
    assert {(f["failure_type"], f["reason"]) for f in failures} == {("cancelled", "budget")}
    assert len(failures) == len(stopped)
    manifest = json.loads((run / "run_manifest.json").read_text())
    assert manifest["status"] == "completed_with_failures"
    assert (run / "metrics_summary.json").exists() and (run / "SHA256SUMS").exists()


def test_max_cost_without_a_price_is_a_usage_error(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    data = _dataset(pytester.path / "d.jsonl", 2)
    result = pytester.runpytest(*_args(server, data, "--max-cost", "1"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--max-cost needs a price*'openai/mock-model'*"])
    assert server.stats()["requests"] == 0


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["n0", "n2"])
def test_estimate_only_makes_no_call(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer, workers: list[str]
) -> None:
    data = _dataset(pytester.path / "d.jsonl", 12)
    (pytester.path / "prices.yaml").write_text(PRICES)
    result = pytester.runpytest_subprocess(
        *_args(server, data, "--estimate-only", "--price-table", "prices.yaml"), *workers
    )
    assert result.ret == pytest.ExitCode.OK
    # The estimate and the power plan, nothing else: no session header, no "!!! Exit" banner.
    lines = result.stdout.lines
    blank = lines.index("")
    assert len(lines[:blank]) == 4, lines
    assert re.fullmatch(
        r"legaleval estimate: 12 calls, about [\d,]+ input \+ 3,072 output tokens, "
        r"\$3\.\d{4} \(prices: builtin:[\d-]+, prices\.yaml\)",
        lines[0],
    ), lines[0]
    assert re.fullmatch(
        r"  openai/mock-model \(generation\): 12 calls, [\d,]+ in \+ 3,072 out tokens, "
        r"\$3\.\d{4}",
        lines[1],
    ), lines[1]
    assert lines[2].startswith("  output per answer: 256 tokens (default: ")
    assert re.fullmatch(
        r"  live \$3\.\d{4} \| batch \$1\.\d{4} \(--batch would save \$1\.\d{4}; results "
        r"within 24 h\)",
        lines[3],
    ), lines[3]
    # How small a difference a comparison of this plan can detect: legaleval plan's block
    # for the same 12 records, one epoch, no baseline.
    records = load_dataset([data]).records
    planned = power_plan([record_fields(r) for r in records], epochs=1).render()
    assert lines[blank + 1 : -1] == planned.rstrip("\n").split("\n")
    assert lines[blank + 1].startswith("plan: 12 records, records independent")
    assert lines[-1] == "--estimate-only: no call was made"
    assert "Exit" not in result.stderr.str() and "!!!" not in result.stderr.str()
    assert server.stats()["requests"] == 0
    assert not run_dirs(pytester.path / "runs")


def test_estimate_only_without_a_price_says_price_unknown(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    data = _dataset(pytester.path / "d.jsonl", 3)
    result = pytester.runpytest_subprocess(*_args(server, data, "--estimate-only"))
    assert result.ret == pytest.ExitCode.OK
    assert re.search(
        r" output tokens, price unknown \(prices: builtin:[\d-]+\)$", result.stdout.lines[0]
    )
    assert "$0.0000" not in result.stdout.str() and "at least" not in result.stdout.str()
    result.stdout.fnmatch_lines(["  no price for openai/mock-model: add it with --price-table"])


def test_estimate_only_with_a_bad_dataset_is_a_usage_error(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    result = pytester.runpytest_subprocess(
        *_args(server, pytester.path / "missing.jsonl", "--estimate-only")
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --dataset *missing.jsonl: no such file or directory"])


def test_a_preset_model_is_routed_by_its_models_entry(
    pytester: pytest.Pytester,
    suite: Path,
    server: MockOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-session-test-0123456789")
    server.update_config(api_key="sk-ant-session-test-0123456789")
    data = _dataset(pytester.path / "d.jsonl", 3)
    (pytester.path / "legaleval.yaml").write_text(
        f"models:\n  anthropic/claude-sonnet-4-5:\n    base_url: {server.base_url}\n"
    )
    result = pytester.runpytest(
        "--dataset",
        str(data),
        "--model",
        "anthropic/claude-sonnet-4-5",
        "--run-dir",
        "runs",
        "--no-cache",
        "--temperature",
        "0.1",
        "--top-p",
        "0.5",
    )
    result.assert_outcomes(passed=3)
    body = server.last_request()
    assert body is not None and body["model"] == "claude-sonnet-4-5"
    assert body["temperature"] == 0.1 and "top_p" not in body  # one of the two, not both
    (run,) = run_dirs(pytester.path / "runs")
    files = "".join(p.read_text() for p in run.iterdir() if p.is_file())
    assert "sk-ant-session-test-0123456789" not in files


def test_a_preset_without_its_key_is_a_usage_error_naming_it(
    pytester: pytest.Pytester, suite: Path
) -> None:
    data = _dataset(pytester.path / "d.jsonl", 1)
    result = pytester.runpytest(
        "--dataset", str(data), "--model", "gemini/gemini-2.5-flash", "--run-dir", "runs"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*GEMINI_API_KEY is not set*LEGALEVAL_GEMINI_BASE_URL*"])


@pytest.mark.parametrize("judge", [False, True], ids=["answers", "with-judge"])
def test_a_cancelled_item_s_spend_is_the_summary_s_cost(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer, judge: bool
) -> None:
    """What a budget-cancelled item says was spent is the summary's cost, to the cent's
    hundredth; the judge's structured-output probe is named beside it."""
    rows = [mcq_row(f"q{i:02d}", prompt=f"Question q{i:02d} [ans=B]?") for i in range(12)]
    if judge:  # judged first: their answers, judge calls and the probe come before the cap
        rows[:0] = [
            {"schema_version": "legal_eval_v1", "id": f"r{i}", "dataset": "t",
             "task_type": "reference_qa", "prompt": f"Open question {i}: what is a tort?",
             "reference_answers": ["A civil wrong."]}
            for i in range(2)
        ]  # fmt: skip
    data = write_jsonl(pytester.path / "d.jsonl", rows)
    (pytester.path / "prices.yaml").write_text(PRICES)
    extra = ["--judge-model", "openai/mock-model", "--judge-max-tokens", "64"] if judge else []
    pytester.runpytest(
        *_args(server, data, "--concurrency", "1", "--max-new-tokens", "8", *extra),
        "--price-table", "prices.yaml", "--max-cost", "1.2" if judge else "0.2",
    )  # fmt: skip
    (run,) = run_dirs(pytester.path / "runs")
    predictions = read_jsonl(run / "predictions.jsonl")
    stopped = [p["explanation"] for p in predictions if p["reason"] == "budget"]
    assert stopped, [p["reason"] for p in predictions]
    cost = json.loads((run / "metrics_summary.json").read_text())["cost_usd"]
    for explanation in stopped:
        assert f"; spent ${cost:.4f} on answers" in explanation, (cost, explanation)
        assert ("structured-output probes" in explanation) is judge
