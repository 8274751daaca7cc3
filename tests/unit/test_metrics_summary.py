"""The metrics block: denominators, failure taxonomy, scores, latency, tokens, cost, judges."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_legaleval.metrics.prices import Price, PriceTable
from pytest_legaleval.metrics.summary import MetricsAccumulator, failure_type


def result(
    outcome: str = "passed",
    reason: str = "correct",
    *,
    score: float | None = None,
    model: str = "openai/gpt-4.1-mini",
    **extra: Any,
) -> dict[str, Any]:
    if score is None and outcome in ("passed", "failed"):
        score = 1.0 if outcome == "passed" else 0.0
    row: dict[str, Any] = {
        "record_id": "r",
        "dataset": "d",
        "task_type": "mcq",
        "model": model,
        "outcome": outcome,
        "passed": {"passed": True, "failed": False}.get(outcome),
        "score": score,
        "reason": reason,
        "details": {},
        "latency_ms": None,
        "input_tokens": None,
        "output_tokens": None,
        "total_tokens": None,
        "judge": None,
        "policy_id": "default",
    }
    row.update(extra)
    return row


def verdict(model: str, tokens_in: int, tokens_out: int, error: str | None = None) -> dict:
    return {
        "model": model,
        "score": None if error else 1.0,
        "criteria": [],
        "error": error,
        "raw": "not json" if error else None,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
    }


@pytest.mark.parametrize(
    ("row", "label"),
    [
        (result("failed", "wrong_answer"), None),
        (result("passed"), None),
        (result("skipped", "needs_judge"), None),
        (result("failed", "missing_response", score=0.0), "missing_response"),
        (result("error", "generation_error:rate_limited"), "generation_error:rate_limited"),
        (result("error", "timeout"), "timeout"),
        (result("error", "judge_error"), "judge_error"),
        (result("failed", "latency_exceeded"), "latency_exceeded"),
        (result("error", "cancelled"), "cancelled"),
        (result("error", "something_new"), "evaluation_error"),
    ],
)
def test_failure_taxonomy(row: dict[str, Any], label: str | None) -> None:
    assert failure_type(row) == label


def test_denominators_add_up_and_wrong_answers_are_not_failures() -> None:
    acc = MetricsAccumulator()
    for row in [
        result("passed"),
        result("passed"),
        result("failed", "wrong_answer"),
        result("skipped", "needs_judge"),
        result("failed", "missing_response", score=0.0),
        result("error", "cancelled"),
    ]:
        acc.add(row)
    acc.add_invalid()
    block = acc.to_dict(resamples=200)
    assert block["total_records"] == 7
    assert block["invalid_records"] == 1
    assert block["valid_records"] == 6
    assert (block["pass_count"], block["fail_count"]) == (2, 1)
    assert block["evaluated_records"] == 3
    assert block["error_records"] == 2 and block["cancelled_records"] == 1
    assert block["failed_records"] == 3
    assert block["skipped_records"] == 1
    assert block["total_records"] == (
        block["invalid_records"]
        + block["evaluated_records"]
        + block["error_records"]
        + block["skipped_records"]
    )
    assert block["pass_rate"] == pytest.approx(2 / 3)
    assert block["pass_rate_ci_low"] == block["pass_rate_ci"]["low"] < 2 / 3
    assert block["invalid_rate"] == pytest.approx(1 / 7)
    assert block["error_rate"] == pytest.approx(2 / 6)
    assert block["failures_by_type"] == {
        "cancelled": 1,
        "invalid_record": 1,
        "missing_response": 1,
    }
    assert block["outcomes_by_reason"]["wrong_answer"] == 1
    # the missing response's 0.0 is not a graded score
    assert block["scored_records"] == 3
    assert block["mean_score"] == pytest.approx(2 / 3)


def test_empty_block_has_nulls_not_zeros() -> None:
    block = MetricsAccumulator().to_dict()
    assert block["total_records"] == 0
    for key in ("pass_rate", "pass_rate_ci", "mean_score", "mean_score_ci", "p95_latency_ms",
                "cost_usd", "judge_error_rate", "invalid_rate", "error_rate"):  # fmt: skip
        assert block[key] is None, key


def test_all_passed_still_has_a_real_interval() -> None:
    acc = MetricsAccumulator()
    for _ in range(12):
        acc.add(result("passed"))
    block = acc.to_dict()
    assert block["pass_rate"] == 1.0
    assert block["pass_rate_ci_high"] == 1.0
    assert block["pass_rate_ci_low"] < 0.8


def test_latency_quantiles_and_score_distribution() -> None:
    acc = MetricsAccumulator()
    for i in range(1, 101):
        acc.add(result("passed", score=i / 100, latency_ms=float(i)))
    block = acc.to_dict(resamples=300)
    assert block["p50_latency_ms"] == pytest.approx(50.5)
    assert block["p95_latency_ms"] == pytest.approx(95.05)
    assert block["p99_latency_ms"] == pytest.approx(99.01)
    assert block["latency_ms"]["max"] == 100.0 and block["latency_ms"]["count"] == 100
    assert block["score_quantiles"]["p50"] == pytest.approx(0.505)
    assert sum(block["score_histogram"]["counts"]) == 100
    assert block["mean_score_ci_low"] < block["mean_score"] < block["mean_score_ci_high"]


def test_tokens_and_cost_from_the_price_table() -> None:
    prices = PriceTable({"gpt-4.1-mini": Price(0.40, 1.60), "judge-x": Price(2.0, 8.0)})
    acc = MetricsAccumulator(prices=prices)
    judge = {"models": ["judge-x"], "score": 1.0, "verdicts": [verdict("judge-x", 1000, 100)]}
    acc.add(result(input_tokens=1000, output_tokens=500, total_tokens=1500, judge=judge))
    acc.add(result(input_tokens=2000, output_tokens=0, total_tokens=2000))
    block = acc.to_dict()
    assert (block["input_tokens"], block["output_tokens"], block["total_tokens"]) == (
        3000,
        500,
        3500,
    )
    assert (block["judge_input_tokens"], block["judge_output_tokens"]) == (1000, 100)
    generation = (3000 * 0.40 + 500 * 1.60) / 1e6
    judging = (1000 * 2.0 + 100 * 8.0) / 1e6
    assert block["cost"]["generation_usd"] == pytest.approx(generation)
    assert block["cost"]["judge_usd"] == pytest.approx(judging)
    assert block["cost_usd"] == pytest.approx(generation + judging)


def test_an_unknown_price_makes_the_cost_null_never_zero() -> None:
    acc = MetricsAccumulator(prices=PriceTable({"gpt-4.1-mini": Price(0.4, 1.6)}))
    acc.add(result(input_tokens=10, output_tokens=5, total_tokens=15))
    acc.add(result(model="local/unknown-model", input_tokens=10, output_tokens=5))
    block = acc.to_dict()
    assert block["cost_usd"] is None
    assert block["cost"]["unpriced_models"] == ["local/unknown-model"]
    assert block["total_tokens"] == 30  # tokens still add up


def test_judge_error_rate_counts_judged_items_only() -> None:
    acc = MetricsAccumulator()
    judge_ok = {"models": ["j"], "score": 1.0, "verdicts": [verdict("j", 10, 5)]}
    judge_bad = {"models": ["j"], "score": None, "verdicts": [verdict("j", 10, 5, "unparseable")]}
    acc.add(result("passed", judge=judge_ok, task_type="reference_qa"))
    acc.add(result("passed", judge=judge_ok, task_type="reference_qa"))
    acc.add(result("error", "judge_error", judge=judge_bad, task_type="reference_qa"))
    acc.add(result("passed"))  # an MCQ item: never judged
    block = acc.to_dict()
    assert block["judged_records"] == 3
    assert block["judge_error_count"] == 1
    assert block["judge_error_rate"] == pytest.approx(1 / 3)
    assert block["failures_by_type"] == {"judge_error": 1}


def test_per_criterion_rates_for_rubrics() -> None:
    acc = MetricsAccumulator()
    for met_a, met_b in ((1.0, 0.0), (0.5, None), (1.0, 1.0)):
        criteria = [
            {"id": "a", "title": "Cites the statute", "weight": 1.0, "met": met_a},
            {"id": "b", "title": "No hallucinated case", "weight": -1.0, "met": met_b},
        ]
        acc.add(result("passed", score=0.8, details={"criteria": criteria}))
    crit = acc.to_dict()["criteria"]
    assert crit["a"] == {"title": "Cites the statute", "judged": 3, "unjudged": 0,
                         "met_rate": pytest.approx(2.5 / 3)}  # fmt: skip
    assert crit["b"]["judged"] == 2 and crit["b"]["unjudged"] == 1
    assert crit["b"]["met_rate"] == pytest.approx(0.5)


def test_criterion_ids_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_legaleval.metrics import summary

    monkeypatch.setattr(summary, "MAX_CRITERIA", 3)
    acc = MetricsAccumulator()
    acc.add(result(details={"criteria": [{"id": f"c{i}", "met": True} for i in range(5)]}))
    block = acc.to_dict()
    assert len(block["criteria"]) == 3 and block["criteria_dropped"] == 2
