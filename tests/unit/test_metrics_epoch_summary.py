"""The summary's epoch and uncertainty figures for a clustered run with five answers per record,
each checked against an independent computation (the "done when" of the issue, in small)."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics.artifacts import FLAKY_RECORDS
from pytest_legaleval.metrics.cr2 import bell_mccaffrey_df
from pytest_legaleval.metrics.epoch_summary import EpochSummary
from pytest_legaleval.metrics.epochs import flaky_line
from pytest_legaleval.metrics.tdist import t_quantile

from .test_metrics_clustered import cr2_direct
from .test_metrics_epochs import brute_pass_at_k, brute_pass_hat_k

EPOCHS = 5


def clustered_run(seed: int = 3) -> tuple[list[dict[str, Any]], dict[tuple[str, str], list[bool]]]:
    """60 records in 12 exams, two models, five epochs; one epoch of one record errored."""
    rng = random.Random(seed)
    rows = []
    outcomes: dict[tuple[str, str], list[bool]] = {}
    for model, skill in (("m1", 0.0), ("m2", 0.15)):
        for exam in range(12):
            ease = rng.uniform(0.1, 0.8) + skill
            for r in range(5):
                record_id = f"e{exam}q{r}"
                for epoch in range(EPOCHS):
                    passed = rng.random() < ease
                    row = {
                        "record_id": record_id,
                        "dataset": "lexam",
                        "model": model,
                        "epoch": epoch,
                        "outcome": "passed" if passed else "failed",
                        "passed": passed,
                        "score": float(passed),
                        "reason": "correct" if passed else "wrong_answer",
                        "metadata": {"exam": f"exam{exam}", "blob": "x" * 200},
                        "model_response": "Answer: B",
                    }
                    if (model, record_id, epoch) == ("m1", "e0q0", 4):
                        row.update(outcome="error", passed=None, score=None, reason="timeout")
                    else:
                        outcomes.setdefault((model, record_id), []).append(passed)
                    rows.append(row)
    return rows, outcomes


@pytest.fixture
def summary() -> tuple[EpochSummary, dict[tuple[str, str], list[bool]]]:
    rows, outcomes = clustered_run()
    acc = EpochSummary(epochs=EPOCHS, cluster_by="metadata.exam")
    rng = random.Random(0)
    rng.shuffle(rows)  # results arrive in any order
    acc.extend(rows)
    return acc, outcomes


def expected_block(outcomes: dict[tuple[str, str], list[bool]], model: str | None) -> dict:
    chosen = {k: v for k, v in outcomes.items() if model is None or k[0] == model}
    block: dict[str, Any] = {"pass_at_k": {}, "pass_hat_k": {}}
    complete = [v for v in chosen.values() if len(v) == EPOCHS]
    block["pass_at_k_records"] = len(complete)
    block["incomplete_records"] = len(chosen) - len(complete)
    for k in range(1, EPOCHS + 1):
        usable = complete  # one set for every k: the items with a verdict in all K epochs
        block["pass_at_k"][str(k)] = float(sum(brute_pass_at_k(v, k) for v in usable) / len(usable))
        block["pass_hat_k"][str(k)] = float(
            sum(brute_pass_hat_k(v, k) for v in usable) / len(usable)
        )
    block["flaky_records"] = sum(1 for v in chosen.values() if 0 < sum(v) < len(v))
    x = [sum(v) / len(v) for v in chosen.values()]
    labels = [f"exam{k[1].split('q')[0][1:]}" for k in chosen]
    se, se_c = cr2_direct(x, labels)
    df = bell_mccaffrey_df([labels.count(c) for c in set(labels)])
    assert df is not None
    q = t_quantile(0.975, df)
    mean = sum(x) / len(x)
    block["uncertainty"] = {
        "cluster_by": "metadata.exam",
        "clusters": 12,
        "mean": mean,
        "se": se,
        "se_clustered": se_c,
        "df": df,
        "ci95": [max(0.0, mean - q * se_c), min(1.0, mean + q * se_c)],
        "n": len(x),
        "unclustered": 0,
        "unit": "item" if model is None else "record",
    }
    return block


@pytest.mark.parametrize("model", [None, "m1", "m2"])
def test_every_figure_equals_its_independent_computation(
    summary: tuple[EpochSummary, dict], model: str | None
) -> None:
    acc, outcomes = summary
    got = acc.to_dict(model)
    want = expected_block(outcomes, model)
    assert got["epochs"] == EPOCHS
    assert got["flaky_records"] == want["flaky_records"]
    assert got["pass_at_k_records"] == want["pass_at_k_records"]
    assert got["incomplete_records"] == want["incomplete_records"]
    # the one timeout of m1's e0q0 (epoch 4) is counted wherever m1 is
    errored = 0 if model == "m2" else 1
    lines = 60 * EPOCHS * (2 if model is None else 1)
    assert (got["errored_epochs"], got["epoch_lines"]) == (errored, lines)
    assert got["error_rate"] == pytest.approx(errored / lines)
    for name in ("pass_at_k", "pass_hat_k"):
        assert list(got[name]) == ["1", "2", "3", "4", "5"]
        assert got[name] == pytest.approx(want[name], rel=1e-12)
    unc, ref = got["uncertainty"], want["uncertainty"]
    for key in ("cluster_by", "clusters", "n", "unclustered", "unit"):
        assert unc[key] == ref[key]
    for key in ("mean", "se", "se_clustered", "df"):
        assert unc[key] == pytest.approx(ref[key], rel=1e-12)
    assert unc["ci95"] == pytest.approx(ref["ci95"], rel=1e-12)
    assert unc["se_clustered"] > unc["se"]  # exams cluster, by construction


def test_per_model_blocks_and_the_flaky_artifact(summary: tuple[EpochSummary, dict]) -> None:
    acc, outcomes = summary
    assert list(acc.by_model()) == ["m1", "m2"]
    lines = acc.flaky_lines()
    assert len(lines) == acc.to_dict()["flaky_records"]
    keys = [(x["dataset"], x["record_id"], x["model"]) for x in lines]
    assert keys == sorted(keys)
    assert all(0 < x["passes"] < x["verdicts"] for x in lines)
    (incomplete,) = acc.incomplete_lines()
    assert (incomplete["record_id"], incomplete["model"]) == ("e0q0", "m1")
    assert incomplete["missing_epochs"] == [4] and incomplete["reasons"] == {"4": "timeout"}
    errored = next(i for i in acc.items("m1") if i.key[1] == "e0q0")
    assert (len(errored.lines), errored.n, errored.errored) == (5, 4, 1)  # the timeout sits out
    assert flaky_line(errored)["outcomes"][4] == "error"
    assert errored.c == sum(outcomes[("m1", "e0q0")])


def test_the_terminal_lines_name_the_figures_and_the_interval(
    summary: tuple[EpochSummary, dict],
) -> None:
    acc, _ = summary
    epochs_line, incomplete_line, interval_line = acc.terminal_lines()
    block = acc.to_dict()
    assert f"pass@5 {block['pass_at_k']['5']:.3f}" in epochs_line
    assert "over the 119 items with a verdict in every epoch" in epochs_line
    assert incomplete_line == (
        "incomplete: 1 items lack a verdict in some epoch (1 of 600 epoch lines errored; "
        "listed in incomplete_records.jsonl, left out of pass@k)"
    )
    assert f"flaky records {block['flaky_records']} ({FLAKY_RECORDS})" in epochs_line
    assert "clustered by metadata.exam: 12 clusters" in interval_line
    ratio = block["uncertainty"]["se_clustered"] / block["uncertainty"]["se"]
    assert f"{ratio:.2f}× the naive se" in interval_line


def test_one_epoch_without_clusters_reads_as_today() -> None:
    acc = EpochSummary()
    acc.extend(
        {"record_id": f"r{i}", "outcome": "passed" if i % 2 else "failed"} for i in range(10)
    )
    block = acc.to_dict()
    assert block["epochs"] == 1 and block["flaky_records"] == 0
    assert block["pass_at_k"] == {"1": 0.5} == block["pass_hat_k"]
    unc = block["uncertainty"]
    assert unc["cluster_by"] is None and unc["clusters"] == 10
    assert unc["se"] == pytest.approx(math.sqrt(0.25 * 10 / 9 / 10))
    assert unc["se_clustered"] == pytest.approx(unc["se"]) and unc["df"] == pytest.approx(9.0)
    (line,) = acc.terminal_lines()
    assert line.split(":")[0] == "pass rate, the run's interval"
    assert "records independent" in acc.terminal_lines()[0]
    assert EpochSummary().to_dict()["uncertainty"] is None  # no verdict at all
    with pytest.raises(ConfigError, match="unknown epoch reducer"):
        EpochSummary(reducer="median")


def test_several_models_without_a_field_cluster_items_by_record() -> None:
    # two models answer the same 30 records; a hard record is hard for both
    acc = EpochSummary()
    for r in range(30):
        for model in ("m1", "m2"):
            passed = r % 3 != 0 or (model == "m2" and r % 2 == 0)
            outcome = "passed" if passed else "failed"
            acc.add({"record_id": f"r{r}", "model": model, "outcome": outcome})
    run = acc.to_dict()["uncertainty"]
    x = [i.c / i.n for i in acc.items()]
    labels = [i.key[1] for i in acc.items()]
    assert run["cluster_by"] == "record" and run["clusters"] == 30 and run["n"] == 60
    assert run["unit"] == "item"
    assert run["se_clustered"] == pytest.approx(cr2_direct(x, labels)[1])
    assert run["df"] == pytest.approx(29.0)  # 30 equal clusters of two
    assert run["se_clustered"] > run["se"]  # the items of one record move together
    per_model = acc.by_model()["m1"]["uncertainty"]
    assert per_model["cluster_by"] is None and per_model["unit"] == "record"
    assert "clustered by record: 30 clusters" in acc.terminal_lines()[0]
