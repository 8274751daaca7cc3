"""``--baseline`` with epochs and clusters: lines matched on (record, model, epoch), verdicts
reduced per item, the gate deciding on the clustered paired difference of record means."""

from __future__ import annotations

import math
from typing import Any

import pytest

from pytest_legaleval.metrics._baseline import compare_runs, pair_fields

from .test_metrics_clustered import cr2_direct


def line(
    record_id: str, epoch: int | None, passed: bool | None, exam: str | None = None, **extra: Any
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "record_id": record_id,
        "dataset": "lexam",
        "model": "m",
        "outcome": {True: "passed", False: "failed", None: "error"}[passed],
        "passed": passed,
        "score": None if passed is None else float(passed),
        "reason": {True: "correct", False: "wrong_answer", None: "timeout"}[passed],
        "metadata": {"exam": exam} if exam else {},
        **extra,
    }
    if epoch is not None:
        row["epoch"] = epoch
    return row


def run(passes: dict[str, list[int]], exams: dict[str, str] | None = None) -> list[dict]:
    """Epoch lines: ``passes[record]`` is each epoch's 0/1."""
    exams = exams or {}
    return [line(r, e, bool(p), exams.get(r)) for r, ps in passes.items() for e, p in enumerate(ps)]


def test_one_epoch_without_clusters_is_todays_mcnemar() -> None:
    base = run({"a": [1], "b": [1], "c": [0]})
    cur = run({"a": [0], "b": [1], "c": [1]})
    result = compare_runs(base, cur)
    assert [c.change for c in result.changes] == ["pass_to_fail", "fail_to_pass"]
    assert result.method == "mcnemar" and result.pass_difference is None
    assert (result.regressions, result.improvements) == (1, 1)
    assert result.to_dict()["method"] == "mcnemar"
    assert "McNemar exact" in result.gate_lines()[1]


def test_epoch_lines_pair_by_item_and_give_record_means() -> None:
    base = run({"a": [1, 1, 1], "b": [1, 0, 1], "c": [0, 0, 0], "d": [1, 1, 0]})
    cur = run({"a": [1, 0, 0], "b": [1, 1, 1], "c": [0, 0, 1], "d": [1, 1, 0]})
    result = compare_runs(base, cur)
    assert result.method == "clustered"
    assert (result.baseline_epochs, result.current_epochs) == (3, 3)
    # items, not lines: 4 paired, flips on the mean-reduced verdicts (a: pass -> fail;
    # b and d pass in both, c fails in both: 1 of 3 is below one half)
    assert result.paired == 4 and result.regressions == 1 and result.improvements == 0
    assert (result.both_passed, result.both_failed) == (2, 1)
    diff = result.pass_difference
    assert diff is not None
    x_base = [1, 2 / 3, 0, 2 / 3]
    x_cur = [1 / 3, 1, 1 / 3, 2 / 3]
    diffs = [c - b for b, c in zip(x_base, x_cur, strict=True)]
    assert diff.delta == pytest.approx(sum(diffs) / 4)
    assert diff.se == pytest.approx(cr2_direct(diffs, range(4))[0])
    assert diff.cluster_by is None and diff.se_clustered == pytest.approx(diff.se)
    assert diff.df == pytest.approx(3.0)
    regressed = [c.to_dict() for c in result.regressed_items()]
    assert regressed[0]["record_id"] == "a"
    assert regressed[0]["current"]["epoch_passes"] == 1  # the reduced item's state
    assert regressed[0]["current"]["pass_fraction"] == pytest.approx(1 / 3)


def test_clusters_alone_switch_to_the_clustered_gate() -> None:
    exams = {f"q{i}": f"exam{i // 10}" for i in range(100)}
    base = run({f"q{i}": [1] for i in range(100)}, exams)
    # two whole exams regressed: McNemar calls it, the clustered interval does not
    cur = run({f"q{i}": [0 if i < 20 else 1] for i in range(100)}, exams)
    plain = compare_runs(base, cur, level=0.95)
    assert plain.method == "mcnemar" and plain.regressed(None, 0.05)
    clustered = compare_runs(base, cur, level=0.95, cluster_by="metadata.exam")
    assert clustered.method == "clustered" and clustered.p_value < 1e-5
    diff = clustered.pass_difference
    assert diff is not None and diff.clusters == 10
    assert diff.ci is not None and diff.ci[0] < 0 < diff.ci[1]
    assert not clustered.regressed(None, 0.05)
    assert "CR2 se clustered by metadata.exam, Bell-McCaffrey df" in clustered.gate_lines()[-1]
    assert clustered.gate_lines()[0].startswith("paired 100 items by (record, model, epoch)")


def test_the_clustered_gate_calls_a_real_regression() -> None:
    exams = {f"q{i}": f"exam{i % 10}" for i in range(100)}  # the drop spread over exams
    base = run({f"q{i}": [1, 1, 1, 1] for i in range(100)}, exams)
    cur = run({f"q{i}": [1, 0, 1, 0] if i % 2 else [1, 1, 1, 1] for i in range(100)}, exams)
    result = compare_runs(base, cur, level=0.95, cluster_by="metadata.exam")
    diff = result.pass_difference
    assert diff is not None and diff.delta == pytest.approx(-0.25)
    assert result.regressed(None, 0.05) and result.regressed(0.2, 0.05)
    assert not result.regressed(0.3, 0.05)  # the allowed drop is larger
    # mean reducer on 2 of 4 at MCQ's 0.5: still passed -> no item flipped at all
    assert result.regressions == 0
    # ... but the 50 items that lost half their passing epochs are listed as regressed
    fewer = [c for c in result.regressed_items() if c.change == "fewer_passes"]
    assert len(fewer) == 50 == len(result.regressed_items())
    assert fewer[0].to_dict()["current"]["epoch_passes"] == 2


def test_errored_epochs_are_left_out_of_the_record_means() -> None:
    base = [line("a", 0, True), line("a", 1, True), line("b", 0, True), line("b", 1, False)]
    cur = [line("a", 0, None), line("a", 1, True), line("b", 0, None), line("b", 1, None)]
    result = compare_runs(base, cur)
    # b has no verdict in this run: not paired; a is 1 -> 1
    assert result.paired == 1 and result.unverdicted == 1
    diff = result.pass_difference
    assert diff is not None and diff.n == 1 and diff.delta == 0.0


def test_an_old_one_epoch_baseline_pairs_with_an_epoch_run() -> None:
    base = [line("a", None, True), line("b", None, False)]
    cur = run({"a": [1, 0, 0, 0], "b": [1, 1, 1, 0]})
    result = compare_runs(base, cur)
    assert (result.baseline_epochs, result.current_epochs) == (1, 4)
    diff = result.pass_difference
    assert diff is not None
    assert diff.delta == pytest.approx(((0.25 - 1) + (0.75 - 0)) / 2)


def test_graded_scores_get_their_own_clustered_difference() -> None:
    def scored(record_id: str, epoch: int, score: float) -> dict[str, Any]:
        passed = score >= 0.6
        return {
            **line(record_id, epoch, passed, "E"),
            "score": score,
            "details": {"threshold": 0.6},
        }

    base = [scored(r, e, 0.9) for r in "abcdef" for e in range(2)]
    cur = [scored(r, e, 0.7 if e else 0.65) for r in "abcdef" for e in range(2)]
    result = compare_runs(base, cur, cluster_by="metadata.exam")
    assert not result.binary_scores
    scores = result.score_difference
    assert scores is not None and scores.delta == pytest.approx(0.675 - 0.9)
    # every item in exam E: one cluster measures no between-cluster variation, so there
    # is no interval (eq. 4 gave s/n = 0 here and called a regression on one exam)
    assert scores.clusters == 1 and scores.ci is None and scores.se_clustered is None
    assert scores.note is not None and "one cluster" in scores.note
    assert not result.regressed(None, 0.05)
    unclustered = compare_runs(base, cur)
    assert unclustered.score_difference is not None
    assert unclustered.regressed(None, 0.05)  # six records that all dropped: a regression
    assert result.pass_difference is not None and result.pass_difference.delta == 0.0


def test_binary_scores_are_judged_per_answer_not_per_mean() -> None:
    base = run({"a": [1, 0, 1], "b": [1, 1, 1]})
    cur = run({"a": [1, 1, 0], "b": [0, 1, 1]})
    result = compare_runs(base, cur)
    assert result.binary_scores  # reduced scores are 2/3, but every answer scored 0 or 1


def test_pair_fields_keep_epoch_threshold_and_the_cluster_field() -> None:
    row = {
        **line("a", 2, True, "Tax"),
        "details": {"threshold": 0.7, "chosen": ["B"]},
        "model_response": "x" * 10_000,
    }
    slim = pair_fields(row, "metadata.exam")
    assert slim["epoch"] == 2 and slim["details"] == {"threshold": 0.7}
    assert slim["metadata"] == {"exam": "Tax"} and "model_response" not in slim
    assert "metadata" not in pair_fields(row)


def test_the_to_dict_names_the_method_and_both_differences() -> None:
    base = run({"a": [1, 1], "b": [0, 1]}, {"a": "X", "b": "Y"})
    cur = run({"a": [0, 1], "b": [0, 0]}, {"a": "X", "b": "Y"})
    data = compare_runs(base, cur, cluster_by="metadata.exam", reducer="all").to_dict()
    assert data["method"] == "clustered" and data["epoch_reducer"] == "all"
    assert data["epochs"] == {"baseline": 2, "current": 2}
    assert data["pass_difference"]["delta"] == pytest.approx(-0.5)
    assert data["pass_difference"]["clusters"] == 2
    assert math.isfinite(data["pass_difference"]["se"])
