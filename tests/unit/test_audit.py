"""The judge audit of prediction lines: its sets, figures, blocks and JSON shape.

Every figure is recomputed here from the lines and labels by hand (which items are labelled,
which unlabelled) and checked against scikit-learn and ppi-python to 1e-6.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._audit import AuditSettings, audit_block, judge_audit
from pytest_legaleval.metrics._audit_items import (
    collect_items,
    epoch_reducer,
    match_labels,
)
from pytest_legaleval.metrics._calibration import calibration_view
from pytest_legaleval.metrics._human_labels import labels_from_rows

from ..extras import needs_stats
from .audit_lines import line

TOL = 1e-6
FAST = AuditSettings(resamples=300)


def _run(seed: int, items: int = 150) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A run of two models and two policies with MCQ items and judge errors, and labels on
    a random fifth of its items (a judge that errs 15 % of the time, leaning to fail)."""
    rng = random.Random(seed)
    lines, rows = [], []
    for i in range(items):
        for model in ("m1", "m2"):
            rid = f"r{i}"
            truth = rng.random() < 0.45
            judged = truth if rng.random() > 0.15 else False
            kind = rng.random()
            if kind < 0.2:
                lines.append(line(rid, model, passed=truth, grader="mcq"))
            elif kind < 0.27:
                lines.append(line(rid, model, passed=None))
            else:
                score = min(1.0, max(0.0, (0.8 if judged else 0.3) + rng.gauss(0, 0.1)))
                policy = "p1" if i % 3 else "p2"
                lines.append(line(rid, model, passed=judged, score=score, policy=policy))
            if rng.random() < 0.2:
                human_score = min(1.0, max(0.0, (0.85 if truth else 0.25) + rng.gauss(0, 0.1)))
                rows.append(
                    {"record_id": rid, "model": model, "passed": truth, "score": human_score}
                )
    return lines, rows


def _reference_sets(
    lines: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]], model: str | None = None
) -> tuple[list[float], list[float], list[float]]:
    """Y, Ŷ, Ŷu by the issue's definition, without our code."""
    labels = {(r["record_id"], r["model"]): r["passed"] for r in rows}
    y, yhat, unlabelled = [], [], []
    for item in lines:
        if not item["grader"].startswith("judge") or item["passed"] is None:
            continue
        if model is not None and item["model"] != model:
            continue
        key = (item["record_id"], item["model"])
        if key in labels:
            y.append(float(labels[key]))
            yhat.append(float(item["passed"]))
        else:
            unlabelled.append(float(item["passed"]))
    return y, yhat, unlabelled


@needs_stats
@pytest.mark.parametrize("seed", range(8))
def test_the_pooled_audit_equals_scikit_learn_and_ppi_python(seed: int) -> None:
    import numpy as np
    import ppi_py
    from sklearn.metrics import cohen_kappa_score

    lines, rows = _run(seed)
    audit = judge_audit(lines, labels_from_rows(rows), settings=FAST)
    y, yhat, unlabelled = _reference_sets(lines, rows)
    block = audit.overall
    assert block["labelled"] == len(y) and block["unlabelled"] == len(unlabelled)
    assert block["cohen_kappa"] == pytest.approx(float(cohen_kappa_score(y, yhat)), abs=TOL)
    Y, Yh, Yu = (np.asarray(v) for v in (y, yhat, unlabelled))
    estimate = float(ppi_py.ppi_mean_pointestimate(Y, Yh, Yu)[0])
    low, high = ppi_py.ppi_mean_ci(Y, Yh, Yu, alpha=0.05)
    ppi = block["ppi_pass_rate"]
    assert ppi["estimate"] == pytest.approx(estimate, abs=TOL)
    assert ppi["ci95"] == pytest.approx([float(low[0]), float(high[0])], abs=TOL)
    assert block["agreement"] == pytest.approx(float(np.mean(Y == Yh)), abs=TOL)
    assert block["judge_pass_rate"] == pytest.approx(float(np.mean(np.r_[Yh, Yu])), abs=TOL)
    assert block["human_pass_rate"] == pytest.approx(float(np.mean(Y)), abs=TOL)
    classical = ppi_py.classical_mean_ci(Y, alpha=0.05)
    assert block["human_pass_rate_ci95"] == pytest.approx(list(classical), abs=TOL)
    for model in ("m1", "m2"):  # the per-model blocks, the same way
        y, yhat, unlabelled = _reference_sets(lines, rows, model)
        Y, Yh, Yu = (np.asarray(v) for v in (y, yhat, unlabelled))
        ours = audit.by_model[model]
        assert ours["cohen_kappa"] == pytest.approx(float(cohen_kappa_score(y, yhat)), abs=TOL)
        expected = float(ppi_py.ppi_mean_pointestimate(Y, Yh, Yu)[0])
        assert ours["ppi_pass_rate"]["estimate"] == pytest.approx(expected, abs=TOL)


@needs_stats
def test_the_score_figures_equal_krippendorff_and_ppi_python() -> None:
    import krippendorff
    import numpy as np
    import ppi_py

    lines, rows = _run(3)
    block = judge_audit(lines, labels_from_rows(rows), settings=FAST).overall
    scores = {(r["record_id"], r["model"]): r["score"] for r in rows}
    pairs, unlabelled = [], []
    for item in lines:
        if item["grader"].startswith("judge") and item["passed"] is not None:
            key = (item["record_id"], item["model"])
            if key in scores:
                pairs.append((item["score"], scores[key]))
            else:
                unlabelled.append(item["score"])
    data = np.array([[j for j, _ in pairs], [h for _, h in pairs]])
    alpha = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    assert block["krippendorff_alpha"] == pytest.approx(float(alpha), abs=TOL)
    Y, Yh, Yu = data[1], data[0], np.asarray(unlabelled)
    low, high = ppi_py.ppi_mean_ci(Y, Yh, Yu, alpha=0.05)
    assert block["ppi_mean_score"]["estimate"] == pytest.approx(
        float(ppi_py.ppi_mean_pointestimate(Y, Yh, Yu)[0]), abs=TOL
    )
    assert block["ppi_mean_score"]["ci95"] == pytest.approx([low[0], high[0]], abs=TOL)
    assert block["score_labelled"] == len(pairs)


def test_mcq_items_and_items_without_a_verdict_are_in_neither_set() -> None:
    lines = [
        line("a", passed=True),
        line("b", passed=False),
        line("c", passed=True),
        line("q", passed=True, grader="mcq"),
        line("e", passed=None),
        line("x", passed=False, grader="none", reason="missing_response"),
    ]
    rows = [
        {"record_id": r, "passed": True} for r in ("a", "q", "e")
    ]  # the MCQ and the judge error labels enter neither set
    audit = judge_audit(lines, labels_from_rows(rows), settings=FAST)
    assert (audit.overall["labelled"], audit.overall["unlabelled"]) == (1, 2)
    assert audit.labels["not_judge_graded"] == 1 and audit.labels["without_verdict"] == 1
    assert audit.overall["judge_pass_rate"] == pytest.approx(2 / 3)


def test_without_labels_every_figure_that_needs_them_is_null_with_a_reason() -> None:
    lines = [line("a", passed=True), line("b", passed=False)]
    audit = judge_audit(lines, labels_from_rows([]), settings=FAST)
    block = audit.summary_block()
    assert block["labelled"] == 0 and block["unlabelled"] == 2
    assert block["cohen_kappa"] is None and block["ppi_pass_rate"] is None
    assert "no judge-graded item" in block["notes"]["cohen_kappa"]
    assert block["judge_pass_rate"] == 0.5
    json.dumps(block, allow_nan=False)  # JSON has no NaN: nothing here may be one


def test_an_undefined_kappa_is_null_with_a_reason_and_the_rest_still_computes() -> None:
    lines = [line(f"r{i}", passed=True) for i in range(6)] + [line("u", passed=False)]
    rows = [{"record_id": f"r{i}", "passed": True} for i in range(4)]
    block = judge_audit(lines, labels_from_rows(rows), settings=FAST).overall
    assert block["cohen_kappa"] is None and block["cohen_kappa_ci95"] is None
    assert "chance agreement is 1" in block["notes"]["cohen_kappa"]
    assert block["agreement"] == 1.0 and block["agreement_ci95"] == [1.0, 1.0]
    # Cov(Y, Ŷ) = 0 (both constant on the labels), so λ = 0: the labels' mean, 1.
    assert block["ppi_pass_rate"]["lambda"] == 0.0
    assert block["ppi_pass_rate"]["estimate"] == pytest.approx(1.0)
    json.dumps(block, allow_nan=False)


def test_every_interval_is_a_list_beside_its_number() -> None:
    lines, rows = _run(5, items=60)
    block = judge_audit(lines, labels_from_rows(rows), settings=FAST).summary_block()
    for name in ("agreement", "cohen_kappa", "krippendorff_alpha"):
        assert isinstance(block[name], float)
        interval = block[f"{name}_ci95"]
        assert isinstance(interval, list) and len(interval) == 2 and interval[0] <= interval[1]
    for name in ("ppi_pass_rate", "ppi_mean_score"):
        assert isinstance(block[name]["estimate"], float)
        assert isinstance(block[name]["ci95"], list) and len(block[name]["ci95"]) == 2
    assert isinstance(block["labelled"], int)


def test_the_audit_is_seeded_and_deterministic() -> None:
    lines, rows = _run(6, items=60)
    first = judge_audit(lines, labels_from_rows(rows), settings=FAST).to_dict()
    again = judge_audit(list(reversed(lines)), labels_from_rows(rows), settings=FAST).to_dict()
    assert first == again  # the item order of the file does not matter either
    other = judge_audit(
        lines, labels_from_rows(rows), settings=AuditSettings(seed=9, resamples=300)
    )
    assert other.overall["cohen_kappa"] == first["judge_audit"]["cohen_kappa"]
    assert other.overall["cohen_kappa_ci95"] != first["judge_audit"]["cohen_kappa_ci95"]


def test_per_policy_and_per_criterion_blocks() -> None:
    criteria = [{"id": "c1", "met": 1.0, "rationale": "cites it"}, {"id": "c2", "met": 0.0}]
    lines = [
        line("a", passed=True, policy="p1", criteria=criteria),
        line("b", passed=False, policy="p1", criteria=[{"id": "c1", "met": 0.0}]),
        line("c", passed=True, policy="p2"),
    ]
    rows = [
        {"record_id": "a", "passed": True},
        {"record_id": "c", "passed": False},
        {"record_id": "a", "criterion_id": "c1", "passed": False},
        {"record_id": "b", "criterion_id": "c1", "passed": False},
        {"record_id": "a", "criterion_id": "c2", "passed": False},
    ]
    audit = judge_audit(lines, labels_from_rows(rows), settings=FAST)
    assert audit.by_policy["p1"]["labelled"] == 1 and audit.by_policy["p1"]["unlabelled"] == 1
    assert audit.by_policy["p2"]["confusion"]["judge_pass_human_fail"] == 1
    c1 = audit.by_criterion["c1"]
    assert c1["labelled"] == 2 and c1["confusion"]["judge_pass_human_fail"] == 1
    assert audit.criteria is not None and audit.criteria["labelled"] == 3
    block = audit.summary_block()
    assert set(block["by_criterion"]) == {"c1", "c2"}
    assert block["labels"]["used"] == 5


def test_epochs_are_reduced_as_the_run_reduces_them() -> None:
    lines = [
        line("a", passed=True, epoch=0),  # scores 0.9, 0.2, 0.9: mean 0.667 < 0.7
        line("a", passed=False, epoch=1),
        line("a", passed=True, epoch=2),
        line("b", passed=False, epoch=0),
        line("b", passed=True, epoch=1),  # a tie
    ]
    rows = [{"record_id": "a", "passed": True}, {"record_id": "b", "passed": True}]
    mean = collect_items(lines)  # the default: the run's default reducer, mean
    assert mean.verdicts[("a", "m1")].passed is False and mean.verdicts[("a", "m1")].epochs == 3
    assert mean.verdicts[("a", "m1")].score == pytest.approx(2.0 / 3.0)
    assert mean.verdicts[("b", "m1")].passed is False  # mean 0.55 < 0.7
    majority = collect_items(lines, epoch_reducer("majority"))
    assert majority.verdicts[("a", "m1")].passed is True  # 2 of 3
    assert majority.verdicts[("b", "m1")].passed is False  # a tie is no majority
    audit = judge_audit(lines, labels_from_rows(rows), reducer=epoch_reducer("majority"))
    assert audit.overall["agreement"] == 0.5
    anyone = judge_audit(lines, labels_from_rows(rows), reducer=epoch_reducer("any"))
    assert anyone.overall["agreement"] == 1.0
    with pytest.raises(ConfigError, match="unknown epoch reducer"):
        epoch_reducer("median")


def test_a_block_from_pairs_alone() -> None:
    block = audit_block([(True, True), (False, False), (True, False)], [True, False, False])
    assert block["confusion"] == {
        "judge_pass_human_pass": 1,
        "judge_pass_human_fail": 1,
        "judge_fail_human_pass": 0,
        "judge_fail_human_fail": 1,
    }
    assert block["judge_pass_rate"] == 0.5 and block["human_pass_rate"] == pytest.approx(1 / 3)
    assert block["score_labelled"] == 0 and block["ppi_mean_score"] is None


def test_the_calibration_view_lists_tables_and_disagreements() -> None:
    criteria = [{"id": "c1", "met": 1.0, "rationale": "names the statute"}]
    lines = [
        line("a", passed=True, score=0.9, policy="p1", criteria=criteria,
             verdicts=[{"model": "judge", "rationale": "complete and correct"}]),
        line("b", passed=False, policy="p1"),
        line("c", passed=True, policy="p2"),
    ]  # fmt: skip
    rows = [
        {"record_id": "a", "passed": False, "score": 0.3},
        {"record_id": "b", "passed": False},
        {"record_id": "c", "passed": True},
        {"record_id": "a", "criterion_id": "c1", "passed": False},
    ]
    items = collect_items(lines)
    view = calibration_view(items, match_labels(labels_from_rows(rows), items))
    assert view["axes"] == {"rows": "judge verdict", "columns": "human verdict"}
    pooled, p1, p2, crit = view["tables"]
    assert (pooled["policy_id"], pooled["labelled"], pooled["level"]) == (None, 3, "item")
    assert (p1["policy_id"], p1["labelled"], p2["policy_id"]) == ("p1", 2, "p2")
    assert (crit["level"], crit["criterion_id"], crit["labelled"]) == ("criterion", "c1", 1)
    assert view["disagreements_total"] == 2
    # Worst first: the criterion's disagreement has no human score (a full gap, 1), the
    # item's scores are 0.9 and 0.3 (a gap of 0.6).
    first, second = view["disagreements"]
    assert (first["record_id"], first["criterion_id"], first["judge_reason"]) == (
        "a",
        "c1",
        "names the statute",
    )
    assert (second["criterion_id"], second["judge_reason"]) == (None, "complete and correct")
    assert (second["human_score"], second["judge_score"], second["judge_passed"]) == (
        0.3,
        0.9,
        True,
    )
    json.dumps(view, allow_nan=False)
    assert calibration_view(items, match_labels(labels_from_rows(rows), items), limit=1)[
        "disagreements"
    ] == [first]


def test_a_kappa_gate_reads_the_audit_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate metrics the lead adds to metrics/_gates.py (see AUDIT_GATE_METRICS) find the
    figures where the summary block puts them; a poor judge fails the gate."""
    from pytest_legaleval.metrics import _gates as gates
    from pytest_legaleval.metrics._audit import AUDIT_GATE_METRICS

    for spec in AUDIT_GATE_METRICS:
        monkeypatch.setitem(gates.METRICS, spec["name"], gates.MetricSpec(**spec))
    good = [line(f"g{i}", passed=i % 2 == 0) for i in range(20)]
    poor = [line(f"g{i}", passed=i % 3 == 0) for i in range(20)]
    rows = [{"record_id": f"g{i}", "passed": i % 2 == 0} for i in range(20)]
    gate = gates.Gate("judge_audit.cohen_kappa>=0.6", "judge_audit.cohen_kappa", ">=", 0.6)
    for run, should_pass in ((good, True), (poor, False)):
        summary = {"judge_audit": judge_audit(run, labels_from_rows(rows)).summary_block()}
        (result,) = gates.evaluate_gates([gate], [], summary=summary)
        assert result.passed is should_pass
        assert result.n == 20 and result.interval is not None
        kappa = summary["judge_audit"]["cohen_kappa"]
        assert result.value == kappa and not math.isnan(kappa)


def test_the_terminal_summary_sets_judge_humans_and_ppi_side_by_side() -> None:
    from pytest_legaleval.metrics._audit_text import summary_lines

    lines, rows = _run(2, items=60)
    block = judge_audit(lines, labels_from_rows(rows), settings=FAST).summary_block()
    consistency = {
        "judge_epochs": 3,
        "flips": {"flip_rate": 0.125, "answers": 8, "max_flip_rate": 0.1,
                  "unstable_criteria": ["(item)"]},
        "panel": None,
    }  # fmt: skip
    text = summary_lines(block, consistency)
    assert text[0] == (
        f"judge audit: {block['labelled']} labelled and {block['unlabelled']} unlabelled "
        "judge-graded items"
    )
    pass_rate = next(x for x in text if x.strip().startswith("pass rate"))
    ppi = block["ppi_pass_rate"]
    assert pass_rate.split()[2:4] == [
        f"{block['judge_pass_rate']:.4f}",
        f"{block['human_pass_rate']:.4f}",
    ]
    assert f"{ppi['estimate']:.4f} [{ppi['ci95'][0]:.4f}, {ppi['ci95'][1]:.4f}]" in pass_rate
    assert any(f"Cohen's κ {block['cohen_kappa']:.3f}" in x for x in text)
    assert text[-1].startswith("judge consistency (3 judgings per answer): flip rate 0.125")
    empty = summary_lines(judge_audit(lines, labels_from_rows([])).summary_block())
    assert "n/a" in next(x for x in empty if "pass rate" in x)
