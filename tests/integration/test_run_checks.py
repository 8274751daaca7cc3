"""Mistakes found before the spend, never silently (issue #36): a cluster field no record has,
a gated slice no record is in, a gate path no summary has — usage errors (exit 4) that list
what exists, before any run directory is written; a run that evaluated nothing exits 1 and
says why, and ``--estimate-only`` says why a count is 0. Real pytest sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import mcq_row, read_jsonl, run_dirs, run_eval, write_jsonl


def _data(pytester: pytest.Pytester) -> tuple[Path, Path]:
    rows = [
        mcq_row(f"q{i}", dataset="lexam", metadata={"course": f"c{i % 3}"} if i < 5 else {})
        for i in range(6)
    ]
    data = write_jsonl(pytester.path / "d.jsonl", rows)
    answers = [{"record_id": r["id"], "response": "Answer: B"} for r in rows]
    return data, write_jsonl(pytester.path / "r.jsonl", answers)


def _nothing_written(pytester: pytest.Pytester) -> bool:
    return not any((run / "predictions.jsonl").exists() for run in run_dirs(pytester.path / "runs"))


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_a_cluster_field_no_record_has_is_a_usage_error(
    pytester: pytest.Pytester, suite: Path, workers: list[str]
) -> None:
    data, responses = _data(pytester)
    result = run_eval(pytester, data, responses, "--cluster-by", "metadata.coures", *workers)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--cluster-by metadata.coures: none of the 6 records has this field*"
         "did you mean metadata.course?*"]
    )  # fmt: skip
    assert _nothing_written(pytester)


def test_records_lacking_the_field_are_counted_in_a_warning(
    pytester: pytest.Pytester, suite: Path
) -> None:
    data, responses = _data(pytester)
    result = run_eval(pytester, data, responses, "--cluster-by", "metadata.course")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*--cluster-by metadata.course: 1 of 6 records lack the field*"])
    (run,) = run_dirs(pytester.path / "runs")
    summary = json.loads((run / "metrics_summary.json").read_text(encoding="utf-8"))
    assert summary["uncertainty"]["unclustered"] == 1 and summary["uncertainty"]["clusters"] == 4


@pytest.mark.parametrize(
    ("gate", "message"),
    [
        ("dataset=lexm:pass_rate>=0.5", "*no record of this run has dataset='lexm'*"
         "did you mean 'lexam'?*the run's dataset values: lexam*"),
        ("metadata.course=c9:pass_rate>=0.5", "*metadata.course='c9'*values: c0, c1, c2*"),
        ("benchmarsk.legalbench.score>=0.5", "*metrics_summary.json has no field "
         "'benchmarsk'; did you mean benchmarks?*"),
    ],
)  # fmt: skip
def test_gates_that_can_only_fail_are_refused_before_the_run(
    pytester: pytest.Pytester, suite: Path, gate: str, message: str
) -> None:
    data, responses = _data(pytester)
    result = run_eval(pytester, data, responses, "--gate", gate)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert _nothing_written(pytester)


def test_a_gate_on_an_existing_slice_runs(pytester: pytest.Pytester, suite: Path) -> None:
    data, responses = _data(pytester)
    result = run_eval(pytester, data, responses, "--gate", "metadata.course=c1:pass_rate>=0.5")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*passed gate metadata.course=c1:pass_rate>=0.5*"])


def _rubric_rows(count: int) -> list[dict[str, object]]:
    return [
        {
            "schema_version": "legal_eval_v1",
            "id": f"r{i}",
            "dataset": "t",
            "task_type": "reference_qa",
            "prompt": "Why?",
            "reference_answers": ["because"],
        }
        for i in range(count)
    ]


def test_a_run_that_evaluated_nothing_exits_1_and_says_why(
    pytester: pytest.Pytester, suite: Path
) -> None:
    rows = _rubric_rows(6)
    data = write_jsonl(pytester.path / "d.jsonl", rows)
    answers = write_jsonl(
        pytester.path / "r.jsonl", [{"record_id": r["id"], "response": "x"} for r in rows]
    )
    result = run_eval(pytester, data, answers)
    result.assert_outcomes(skipped=6)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*nothing evaluated: 6 items need --judge-model (graded by an LLM judge)*"]
    )  # fmt: skip
    (run,) = run_dirs(pytester.path / "runs")
    assert len(read_jsonl(run / "predictions.jsonl")) == 6
    # the estimate says why its count is 0
    estimate = run_eval(pytester, data, answers, "--estimate-only")
    assert estimate.ret == pytest.ExitCode.OK
    estimate.stdout.fnmatch_lines(
        ["legaleval estimate: 0 calls*",
         "  no call for 6 items: reference_qa records need --judge-model*"]
    )  # fmt: skip
