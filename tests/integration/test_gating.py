"""Gates, the baseline regression gate and the exit policy in real pytest sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_legaleval.metrics._gates import GATE_GRAMMAR
from pytest_legaleval.validation import schema_validator

from .conftest import EXAMPLES, copy_in, mcq_row, read_jsonl, run_dirs, run_eval, write_jsonl


def _dataset(pytester: pytest.Pytester, n: int = 10, **extra_by_id: dict) -> Path:
    rows = [mcq_row(f"q{i}", dataset="lexam" if i < 6 else "bench", **extra_by_id.get(f"q{i}", {}))
            for i in range(n)]  # fmt: skip
    return write_jsonl(pytester.path / "data.jsonl", rows)


def _responses(pytester: pytest.Pytester, wrong: set[str], n: int = 10, name: str = "r") -> Path:
    rows = [
        {"record_id": f"q{i}", "response": "Answer: A" if f"q{i}" in wrong else "Answer: B"}
        for i in range(n)
    ]
    return write_jsonl(pytester.path / f"{name}.jsonl", rows)


@pytest.fixture
def data(pytester: pytest.Pytester, suite: Path) -> Path:
    return _dataset(pytester)


# -- exit policy --------------------------------------------------------------------------------


def test_without_gates_a_failed_record_fails_the_run(pytester: pytest.Pytester, data: Path) -> None:
    result = run_eval(pytester, data, _responses(pytester, {"q1"}))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "legaleval gates" not in result.stdout.str()


def test_passing_gates_decide_even_with_failed_records(
    pytester: pytest.Pytester, data: Path
) -> None:
    result = run_eval(
        pytester, data, _responses(pytester, {"q1", "q7"}), "--gate", "pass_rate>=0.8",
        "--junitxml", "junit.xml",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=8, failed=2)  # failed records stay visible
    result.stdout.fnmatch_lines(
        [
            "*legaleval gates*",
            "passed gate pass_rate>=0.8: 0.8000 (95% CI 0.4902–0.9433), n=10",
            "passed gate invalid_rate==0 (default)*",
            "passed gate error_rate==0 (default)*",
            "all gates passed*",
        ]
    )
    junit = (pytester.path / "junit.xml").read_text()
    assert junit.count("<failure") == 2


def test_a_failed_gate_is_named_with_value_and_interval(
    pytester: pytest.Pytester, data: Path
) -> None:
    result = run_eval(
        pytester, data, _responses(pytester, {"q1", "q7"}),
        "--gate", "pass_rate>=0.5", "--gate", "pass_rate_ci_low>=0.6",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "passed gate pass_rate>=0.5: 0.8000 (95% CI 0.4902–0.9433), n=10",
            "FAILED gate pass_rate_ci_low>=0.6: 0.4902, n=10",
            "gates FAILED: pass_rate_ci_low>=0.6 (exit status 1)",
        ]
    )


def test_all_records_passing_but_gate_failing_exits_1(
    pytester: pytest.Pytester, data: Path
) -> None:
    result = run_eval(
        pytester, data, _responses(pytester, set()), "--gate", "pass_rate_ci_low>=0.9"
    )
    result.assert_outcomes(passed=10)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize(
    ("gate", "ok"),
    [
        ("dataset=lexam:pass_rate>=0.8", True),  # q0..q5: one wrong of six
        ("dataset=lexam:pass_rate>=0.9", False),
        ("dataset=bench:pass_rate==1", True),
        ("task_type=mcq:mean_score>=0.8", True),
        ("task_type=mcq:mean_score>0.9", False),
        ("metadata.jurisdiction=CH:pass_rate==0", True),  # only q1
        ("policy=default:error_rate==0", True),
        ("judge_error_rate<=0", False),  # nothing was judged: no value, fails
        ("error_rate<=0", True),
        ("invalid_rate==0", True),
        ("p95_latency_ms<=1", False),  # prefilled responses have no latency
        ("cost_usd<=1", False),  # no usage, no cost
    ],
)
def test_slice_and_metric_gates(
    pytester: pytest.Pytester, suite: Path, gate: str, ok: bool
) -> None:
    data = _dataset(
        pytester, q1={"metadata": {"jurisdiction": "CH"}}, q2={"metadata": {"jurisdiction": "DE"}}
    )
    result = run_eval(pytester, data, _responses(pytester, {"q1"}), "--gate", gate)
    expected = pytest.ExitCode.OK if ok else pytest.ExitCode.TESTS_FAILED
    assert result.ret == expected, result.stdout.str()
    result.stdout.fnmatch_lines([f"{'passed' if ok else 'FAILED'} gate {gate}*"])


def test_tag_slice_on_contract_records(pytester: pytest.Pytester, suite: Path) -> None:
    (data,) = copy_in(pytester, EXAMPLES / "contract_reference.json")
    ids = [r["record_id"] for r in json.loads(data.read_text())["records"]]
    responses = write_jsonl(
        pytester.path / "r.jsonl", [{"record_id": i, "response": "x"} for i in ids[1:]]
    )  # the first record has no response: an error in its tag's slice
    strict = run_eval(pytester, data, responses, "--gate", "tag=rule_qa:error_rate==0")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines([f"FAILED gate tag=rule_qa:error_rate==0: {1 / 6:.4f}*n=6"])
    lenient = run_eval(
        pytester, data, responses, "--gate", "tag=rule_qa:error_rate<=0.2",
        "--gate", "error_rate<=0.2",
    )  # fmt: skip
    # the gates hold, but no record here was evaluated (reference records without a judge,
    # one without a response): a run that measured nothing exits 1 and says why
    lenient.stdout.fnmatch_lines(["passed gate tag=rule_qa:error_rate<=0.2*"])
    lenient.stdout.fnmatch_lines(["nothing evaluated: 5 items need --judge-model*"])
    assert lenient.ret == pytest.ExitCode.TESTS_FAILED, lenient.stdout.str()


def test_a_slice_no_record_is_in_is_a_usage_error_before_the_run(
    pytester: pytest.Pytester, suite: Path
) -> None:
    data = _dataset(pytester)
    result = run_eval(
        pytester, data, _responses(pytester, {"q1"}), "--gate", "dataset=nothing:pass_rate>=0"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no record of this run has dataset='nothing'*"])


def test_model_slice_with_two_models(pytester: pytest.Pytester, data: Path) -> None:
    rows = [
        {"record_id": f"q{i}", "model": model, "response": "Answer: B"}
        for i in range(10)
        for model in ("openai/good", "ollama/llama3:8b")
    ]
    rows[1]["response"] = "Answer: C"  # q0 of the second model is wrong
    responses = write_jsonl(pytester.path / "two.jsonl", rows)
    result = run_eval(
        pytester, data, responses,
        "--gate", "model=openai/good:pass_rate==1",
        "--gate", "model=ollama/llama3:8b:pass_rate>=0.95",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "passed gate model=openai/good:pass_rate==1: 1 *n=10",
            "FAILED gate model=ollama/llama3:8b:pass_rate>=0.95: 0.9000*n=10",
        ]
    )


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_malformed_gate_is_a_usage_error_with_the_grammar(
    pytester: pytest.Pytester, data: Path, workers: list[str]
) -> None:
    """Workers skip the gate check: the controller rejects the gate before they start."""
    result = run_eval(
        pytester, data, _responses(pytester, set()), "--gate", "accuracy>=0.8", *workers
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "unknown metric 'accuracy'" in err
    assert GATE_GRAMMAR.splitlines()[0] in err
    assert not run_dirs(pytester.path / "runs")


def test_gates_from_the_yaml_config(pytester: pytest.Pytester, data: Path) -> None:
    config = pytester.path / "legaleval.yaml"
    config.write_text('gates:\n  - "pass_rate>=0.95"\n  - "dataset=lexam:pass_rate>=0.5"\n')
    result = run_eval(pytester, data, _responses(pytester, {"q1"}))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["FAILED gate pass_rate>=0.95: 0.9000*", "passed gate dataset=lexam:pass_rate>=0.5*"]
    )


def test_invalid_records_fail_the_default_gate(pytester: pytest.Pytester, suite: Path) -> None:
    rows = [mcq_row(f"q{i}") for i in range(4)]
    rows.append({**mcq_row("bad"), "correct_choice_ids": ["Z"]})
    data = write_jsonl(pytester.path / "data.jsonl", rows)
    responses = _responses(pytester, set(), n=4)
    strict = run_eval(pytester, data, responses, "--gate", "pass_rate>=0.5")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(["FAILED gate invalid_rate==0 (default): 0.2000*n=5"])
    lenient = run_eval(
        pytester, data, responses, "--gate", "pass_rate>=0.5", "--gate", "invalid_rate<=0.2"
    )
    assert lenient.ret == pytest.ExitCode.OK
    lenient.stdout.fnmatch_lines(["passed gate invalid_rate<=0.2: 0.2000*"])
    lenient.assert_outcomes(passed=4, errors=1)  # the invalid record stays an ERROR item


def test_missing_responses_reach_the_error_rate(pytester: pytest.Pytester, data: Path) -> None:
    responses = _responses(pytester, set(), n=9)  # q9 has no response
    result = run_eval(pytester, data, responses, "--gate", "pass_rate>=0.5")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED gate error_rate==0 (default): 0.1000*"])
    allowed = run_eval(
        pytester, data, responses, "--gate", "pass_rate>=0.5", "--gate", "error_rate<=0.1"
    )
    assert allowed.ret == pytest.ExitCode.OK


def test_rejected_dataset_never_exits_0(pytester: pytest.Pytester, suite: Path) -> None:
    data = pytester.path / "data.jsonl"
    data.write_text("this is not json\n")
    result = run_eval(
        pytester, data, _responses(pytester, set()), "--gate", "invalid_rate<=1",
        "--gate", "error_rate<=1",
    )  # fmt: skip
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
    assert "legaleval gates" not in result.stdout.str()


def test_a_failure_outside_the_records_keeps_exit_1(pytester: pytest.Pytester, data: Path) -> None:
    pytester.makepyfile(test_other="def test_plain():\n    assert 1 == 2\n")
    result = run_eval(pytester, data, _responses(pytester, {"q1"}), "--gate", "pass_rate>=0.5")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*all gates passed; 1 failure(s) outside the records*"])


def test_a_run_stopped_early_is_not_gated(pytester: pytest.Pytester, data: Path) -> None:
    result = run_eval(pytester, data, _responses(pytester, {"q1"}), "--gate", "pass_rate>=0", "-x")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["gates not evaluated: the run stopped early*"])


def test_gates_with_xdist(pytester: pytest.Pytester, data: Path) -> None:
    responses = _responses(pytester, {"q1"})
    args = ["--dataset", str(data), "--responses", str(responses), "--run-dir", "runs"]
    result = pytester.runpytest_subprocess(*args, "-n", "2", "--gate", "pass_rate>=0.85")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["passed gate pass_rate>=0.85: 0.9000*n=10"])


# -- baseline ------------------------------------------------------------------------------------


def _run(pytester: pytest.Pytester, data: Path, responses: Path, *extra: str) -> Path:
    before = set(run_dirs(pytester.path / "runs"))
    run_eval(pytester, data, responses, *extra)
    (new,) = set(run_dirs(pytester.path / "runs")) - before
    return new


@pytest.mark.slow
def test_baseline_regression_is_gated_and_listed(pytester: pytest.Pytester, suite: Path) -> None:
    n = 30
    data = _dataset(pytester, n)
    base = _run(pytester, data, _responses(pytester, set(), n, "base"), "--run-id", "main")
    worse = {f"q{i}" for i in range(8)}  # 8 pass→fail flips, 0 back: p = 2/2^8
    responses = _responses(pytester, worse, n, "cand")
    result = run_eval(pytester, data, responses, "--baseline", str(base))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "baseline main: 30 paired items, 8 pass→fail, 0 fail→pass, pass rate -26.7%",
            "  McNemar exact p=0.007812 on 30 paired items (one answer per item, records "
            "independent)",
            "FAILED regression gate (drop > 0 with p < 0.05)",
            "  regressed lexam/q0 [prefilled]: wrong_answer",
            "*regressions: runs/run_*/regressions.jsonl",
        ]
    )
    run = max(run_dirs(pytester.path / "runs"), key=lambda p: p.stat().st_mtime)
    lines = read_jsonl(run / "regressions.jsonl")
    assert sorted(line["record_id"] for line in lines) == sorted(worse)
    validator = schema_validator("regression")
    for line in lines:
        validator.validate(line)
    assert "regressions.jsonl" in (run / "SHA256SUMS").read_text()
    # the same drop within --max-regression passes; a stricter alpha passes too
    allowed = run_eval(
        pytester, data, responses, "--baseline", str(base), "--max-regression", "0.3"
    )
    assert allowed.ret == pytest.ExitCode.OK
    strict = run_eval(
        pytester, data, responses, "--baseline", str(base), "--regression-alpha", "0.005"
    )
    assert strict.ret == pytest.ExitCode.OK


def test_records_in_one_run_only_are_reported(pytester: pytest.Pytester, suite: Path) -> None:
    data = _dataset(pytester, 10)
    base = _run(pytester, data, _responses(pytester, set(), 10, "base"), "--run-id", "main")
    smaller = write_jsonl(
        pytester.path / "small.jsonl",
        [mcq_row(f"q{i}", dataset="lexam" if i < 6 else "bench") for i in range(2, 12)],
    )
    responses = _responses(pytester, set(), 12, "cand")
    result = run_eval(pytester, smaller, responses, "--baseline", str(base))
    assert result.ret == pytest.ExitCode.OK  # nothing regressed on the 8 shared items
    result.stdout.fnmatch_lines(["  only in baseline: 2, only in this run: 2*"])
    run = max(run_dirs(pytester.path / "runs"), key=lambda p: p.stat().st_mtime)
    changes = {
        (line["record_id"], line["change"]) for line in read_jsonl(run / "regressions.jsonl")
    }
    assert changes == {
        ("q0", "only_in_baseline"), ("q1", "only_in_baseline"),
        ("q10", "only_in_current"), ("q11", "only_in_current"),
    }  # fmt: skip


def test_a_baseline_without_shared_items_fails(pytester: pytest.Pytester, suite: Path) -> None:
    data = _dataset(pytester, 4)
    base = _run(pytester, data, _responses(pytester, set(), 4, "base"), "--run-id", "main")
    other = write_jsonl(pytester.path / "other.jsonl", [mcq_row(f"x{i}") for i in range(4)])
    responses = write_jsonl(
        pytester.path / "x.jsonl", [{"record_id": f"x{i}", "response": "B"} for i in range(4)]
    )
    result = run_eval(pytester, other, responses, "--baseline", str(base))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED regression gate: no item in common with the baseline"])


def test_baseline_must_be_a_run_directory(pytester: pytest.Pytester, data: Path) -> None:
    result = run_eval(pytester, data, _responses(pytester, set()), "--baseline", "nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--baseline nope: no such run directory" in result.stderr.str()
    (pytester.path / "empty").mkdir()
    result = run_eval(pytester, data, _responses(pytester, set()), "--baseline", "empty")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "not a run directory" in result.stderr.str()


def test_regressions_jsonl_only_with_a_baseline(pytester: pytest.Pytester, data: Path) -> None:
    run_eval(pytester, data, _responses(pytester, set()), "--gate", "pass_rate>=0.5")
    (run,) = run_dirs(pytester.path / "runs")
    assert not (run / "regressions.jsonl").exists()
    assert json.loads((run / "run_manifest.json").read_text())["status"] == "completed"
