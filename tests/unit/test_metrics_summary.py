"""The metrics block: denominators, failure taxonomy, scores, latency, tokens, cost, judges."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_legaleval.metrics._prices import Price, PriceTable
from pytest_legaleval.metrics._summary import MetricsAccumulator, failure_type, item_category


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
    for i, row in enumerate(
        [
            result("passed"),
            result("passed"),
            result("failed", "wrong_answer"),
            result("failed", "no_answer_extracted"),  # the model's fault: failed, no error
            result("skipped", "needs_judge"),
            result("failed", "missing_response", score=0.0),
            result("error", "cancelled"),
        ]
    ):
        acc.add({**row, "record_id": f"r{i}"})
    acc.add_invalid(("d", "bad"))
    block = acc.to_dict(resamples=200)
    assert block["total_items"] == 8
    assert (block["invalid_items"], block["valid_items"]) == (1, 7)
    assert (block["passed_items"], block["failed_items"]) == (2, 2)
    assert (block["pass_count"], block["fail_count"]) == (2, 2)
    assert block["evaluated_items"] == 4
    assert block["error_items"] == 2 and block["cancelled_items"] == 1
    assert block["skipped_items"] == 1
    assert block["total_items"] == sum(
        block[f"{k}_items"] for k in ("passed", "failed", "error", "skipped", "invalid")
    )
    # one model: a record per item
    assert block["total_records"] == 8
    assert block["failed_records"] == 3  # the invalid record, the missing and the cancelled
    assert block["evaluated_records"] == 4 and block["skipped_records"] == 1
    assert block["pass_rate"] == pytest.approx(2 / 4)
    assert block["pass_rate_ci_low"] == block["pass_rate_ci"]["low"] < 2 / 4
    assert block["invalid_rate"] == pytest.approx(1 / 8)
    assert block["error_rate"] == pytest.approx(2 / 7)
    assert block["failures_by_type"] == {
        "cancelled": 1,
        "invalid_record": 1,
        "missing_response": 1,
    }
    assert block["outcomes_by_reason"]["wrong_answer"] == 1
    # the missing response's 0.0 is not a graded score
    assert block["scored_items"] == 4
    assert block["mean_score"] == pytest.approx(2 / 4)


def test_records_count_once_across_models_and_fail_when_any_item_failed() -> None:
    """125 records x 8 models are 1000 items and 125 records (the §3.3 denominators)."""
    acc = MetricsAccumulator()
    models = [f"m{i}" for i in range(8)]
    for n in range(125):
        for model in models:
            if n == 0 and model == "m3":
                row = result("error", "judge_error", model=model)
            elif n == 1:
                row = result("skipped", "skipped", model=model)
            elif n % 3 == 0:
                row = result("failed", "wrong_answer", model=model)
            else:
                row = result("passed", model=model)
            acc.add({**row, "record_id": f"q{n}"})
    for _ in models:  # one invalid record, rejected once per model
        acc.add_invalid(("invalid", "d", 7))
    block = acc.to_dict(resamples=50)
    assert block["total_items"] == 1008 and block["total_records"] == 126
    assert block["invalid_items"] == 8 and block["invalid_records"] == 1
    assert block["error_items"] == 1 and block["error_records"] == 1
    # the record with one judge error failed (§3.3) though 7 of its items got a verdict
    assert block["failed_records"] == 2
    assert block["skipped_records"] == 1 and block["skipped_items"] == 8
    assert block["evaluated_records"] == 123
    assert block["valid_records"] == 125
    assert block["total_records"] == (
        block["evaluated_records"] + block["failed_records"] + block["skipped_records"]
    )
    wrong = sum(1 for n in range(2, 125) if n % 3 == 0) * 8 + 7  # record 0's other models
    assert block["failed_items"] == wrong
    assert block["passed_items"] == 1008 - 8 - 1 - 8 - wrong


def test_records_without_a_key_each_count_once() -> None:
    acc = MetricsAccumulator()
    acc.add_invalid()
    acc.add_invalid()
    block = acc.to_dict()
    assert (block["total_records"], block["invalid_records"], block["failed_records"]) == (2, 2, 2)
    assert block["valid_records"] == 0


def test_attachment_warnings_are_counted_and_quoted() -> None:
    acc = MetricsAccumulator(warning_examples=2)
    scan = {"attachment_warnings": ["scan.pdf: the PDF has no text layer"]}
    for model in ("a", "b", "c"):
        acc.add(result("passed", model=model, record_id="q1", details=scan))
    acc.add(result("passed", record_id="q2"))
    block = acc.to_dict()
    assert block["attachment_warning_items"] == 3
    assert block["attachment_warning_records"] == 1
    assert block["attachment_warnings"] == [
        {"dataset": "d", "record_id": "q1", "model": m, "warnings": scan["attachment_warnings"]}
        for m in ("a", "b")
    ]


@pytest.mark.parametrize(
    ("row", "category"),
    [
        (result("passed"), "passed"),
        (result("failed", "wrong_answer"), "failed"),
        (result("failed", "no_answer_extracted"), "failed"),
        (result("failed", "below_threshold"), "failed"),
        (result("failed", "missing_response", score=0.0), "error"),
        (result("error", "generation_error:bad_request"), "error"),
        (result("error", "timeout"), "error"),
        (result("error", "judge_error"), "error"),
        (result("error", "cancelled"), "error"),
        (result("error", "whatever"), "error"),
        (result("error", "invalid_record"), "invalid"),
        (result("skipped", "needs_judge"), "skipped"),
    ],
)
def test_item_categories(row: dict[str, Any], category: str) -> None:
    assert item_category(row) == category


def test_empty_block_has_nulls_not_zeros() -> None:
    block = MetricsAccumulator().to_dict()
    assert block["total_records"] == 0 and block["total_items"] == 0
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
    acc.add(result("passed", judge=judge_ok, task_type="reference_qa", record_id="a"))
    acc.add(result("passed", judge=judge_ok, task_type="reference_qa", record_id="b"))
    acc.add(result("error", "judge_error", judge=judge_bad, task_type="reference_qa"))
    acc.add(result("passed", record_id="mcq"))  # an MCQ item: never judged
    block = acc.to_dict()
    assert block["judged_items"] == 3 and block["judged_records"] == 3
    assert block["judge_error_count"] == 1
    assert block["judge_error_rate"] == pytest.approx(1 / 3)
    assert block["failures_by_type"] == {"judge_error": 1}


def test_replayed_verdicts_count_as_judged() -> None:
    # --judgments: verdicts replayed from a file carry no judge block (no call was made);
    # the audit saw judge_error_rate 1.0 where it was 12 of 1,080
    acc = MetricsAccumulator()
    replayed = {"replayed_from": {"file": "judgments.jsonl", "line": 1}}
    for i in range(1068):
        acc.add(result("passed", details=replayed, task_type="rubric_qa", record_id=f"r{i}"))
    for i in range(12):
        acc.add(result("error", "judge_error", task_type="rubric_qa", record_id=f"e{i}"))
    block = acc.to_dict()
    assert block["judged_items"] == 1080 and block["judge_error_count"] == 12
    assert block["judge_error_rate"] == pytest.approx(12 / 1080)


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
    from pytest_legaleval.metrics import _summary as summary

    monkeypatch.setattr(summary, "MAX_CRITERIA", 3)
    acc = MetricsAccumulator()
    acc.add(result(details={"criteria": [{"id": f"c{i}", "met": True} for i in range(5)]}))
    block = acc.to_dict()
    assert len(block["criteria"]) == 3 and block["criteria_dropped"] == 2


def test_error_rate_counts_epoch_lines_when_they_are_fed() -> None:
    acc = MetricsAccumulator()
    acc.add(result("passed"))  # the item's reduced verdict: passed
    for epoch, reason in enumerate(("correct", "missing_response", "timeout")):
        outcome = "passed" if reason == "correct" else "error"
        acc.add_epoch({**result(outcome, reason), "epoch": epoch})
    acc.add_epoch(result("error", "invalid_record"))  # an invalid record's line: not a unit
    block = acc.to_dict()
    assert block["error_items"] == 0  # the item has a verdict
    assert block["error_rate"] == pytest.approx(2 / 3)  # two of its three epochs do not
    assert MetricsAccumulator().to_dict()["error_rate"] is None
