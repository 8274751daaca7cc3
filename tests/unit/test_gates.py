from __future__ import annotations

import math
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._gates import (
    GATE_GRAMMAR,
    METRICS,
    block_from_rows,
    default_gates,
    evaluate_gates,
    metric_value,
    parse_gate,
    parse_gates,
)
from pytest_legaleval.metrics._prices import Price, PriceTable
from pytest_legaleval.metrics._runfiles import slice_finder
from pytest_legaleval.metrics._stats import wilson_interval


def row(
    record_id: str,
    outcome: str = "passed",
    *,
    reason: str | None = None,
    score: float | None = None,
    dataset: str = "lexam",
    model: str = "openai/a",
    **extra: Any,
) -> dict[str, Any]:
    if reason is None:
        reason = {"passed": "correct", "failed": "wrong_answer"}.get(outcome, "engine_error")
    if score is None and outcome in ("passed", "failed"):
        score = 1.0 if outcome == "passed" else 0.0
    return {
        "record_id": record_id,
        "dataset": dataset,
        "model": model,
        "task_type": "mcq",
        "outcome": outcome,
        "passed": {"passed": True, "failed": False}.get(outcome),
        "score": score,
        "reason": reason,
        **extra,
    }


# -- grammar ----------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", list(METRICS))
@pytest.mark.parametrize("op", [">=", ">", "<=", "<", "=="])
def test_every_metric_and_operator_parses(metric: str, op: str) -> None:
    gate = parse_gate(f"{metric}{op}0.25")
    assert (gate.metric, gate.op, gate.threshold, gate.slice) == (metric, op, 0.25, ())


@pytest.mark.parametrize(
    ("text", "conditions"),
    [
        ("dataset=lexam:pass_rate>=0.6", (("dataset", "lexam"),)),
        ("model=openai/x:mean_score>=0.5", (("model", "openai/x"),)),
        # a model name with a colon: the expression is after the last one
        ("model=ollama/llama3:8b:pass_rate>0.5", (("model", "ollama/llama3:8b"),)),
        ("task_type=mcq:error_rate<=0.1", (("task_type", "mcq"),)),
        ("tag=contracts:pass_rate>=0.5", (("tag", "contracts"),)),
        ("policy=lexam_de:pass_rate>=0.5", (("policy", "lexam_de"),)),
        ("metadata.jurisdiction=CH:pass_rate>=0.5", (("metadata.jurisdiction", "CH"),)),
        (
            "dataset=lexam, model=openai/x : pass_rate >= 0.5",
            (("dataset", "lexam"), ("model", "openai/x")),
        ),
    ],
)
def test_slice_forms(text: str, conditions: tuple[tuple[str, str], ...]) -> None:
    assert parse_gate(text).slice == conditions


def test_percent_and_exponent_thresholds() -> None:
    assert parse_gate("pass_rate>=80%").threshold == pytest.approx(0.8)
    assert parse_gate("cost_usd<1e1").threshold == 10.0
    assert parse_gate("p95_latency_ms<=1500").threshold == 1500.0


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("pass_rate", "METRIC OP NUMBER"),
        ("pass_rate=>0.8", "METRIC OP NUMBER"),
        ("pass_rate>=high", "METRIC OP NUMBER"),
        ("accuracy>=0.8", "unknown metric 'accuracy'"),
        ("lexam:pass_rate>=0.8", "not KEY=VALUE"),
        ("suite=x:pass_rate>=0.8", "unknown slice key 'suite'"),
        ("dataset=:pass_rate>=0.8", "not KEY=VALUE"),
    ],
)
def test_malformed_expressions_show_the_grammar(text: str, why: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_gate(text)
    message = str(info.value)
    assert why in message
    assert GATE_GRAMMAR in message
    assert "accepted grammar" in message


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("pass_rate >= 60", "pass_rate is a share between 0 and 1, got 60; did you mean 60% "
                            "(that is, 0.6)?"),
        ("dataset=x:mean_score>=80", "did you mean 80%"),
        ("error_rate<=150%", "error_rate is a share between 0% and 100%, got 150%"),
        ("invalid_rate<-0.5", "invalid_rate is a share between 0 and 1 (or 0% and 100%), got -0.5"),
        ("pass_rate_ci_low>=1e3", "got 1e3"),
        ("judge_error_rate<=2", "did you mean 2%"),
    ],
)  # fmt: skip
def test_a_rate_threshold_outside_zero_to_one_is_refused_at_parse_time(text: str, why: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_gate(text)
    assert why in str(info.value) and GATE_GRAMMAR in str(info.value)


def test_rate_bounds_and_unbounded_metrics() -> None:
    assert parse_gate("pass_rate>=60%").threshold == pytest.approx(0.6)
    assert parse_gate("pass_rate>=1").threshold == 1.0
    assert parse_gate("error_rate<=0").threshold == 0.0
    assert parse_gate("p95_latency_ms<=1500").threshold == 1500.0
    assert parse_gate("cost_usd<250").threshold == 250.0


def test_parse_gates_raises_on_the_first_bad_one() -> None:
    with pytest.raises(ConfigError, match="nope"):
        parse_gates(["pass_rate>=0.5", "nope>1"])


# -- default gates ----------------------------------------------------------------------------


def test_default_gates_only_with_gates_and_replaced_by_user_gates() -> None:
    assert default_gates([]) == []
    defaults = default_gates(parse_gates(["pass_rate>=0.5"]))
    assert [(g.text, g.default) for g in defaults] == [
        ("invalid_rate==0", True),
        ("error_rate==0", True),
    ]
    assert [g.metric for g in default_gates(parse_gates(["error_rate<=0.1"]))] == ["invalid_rate"]
    # a slice gate does not replace the whole-run default
    sliced = default_gates(parse_gates(["dataset=a:error_rate<=0.1"]))
    assert [g.metric for g in sliced] == ["invalid_rate", "error_rate"]


# -- metrics from rows ------------------------------------------------------------------------


ROWS = [
    row("1", "passed", score=1.0, latency_ms=100.0),
    row("2", "passed", score=0.8, latency_ms=200.0),
    row("3", "failed", score=0.2, latency_ms=300.0),
    row("4", "error", reason="judge_error", latency_ms=400.0),
    row("5", "failed", reason="missing_response", score=0.0),
    row("6", "skipped", reason="needs_judge", score=None, dataset="other"),
]
INVALID = [{"dataset": "lexam", "record_id": "7", "model": "openai/a"}]


def test_computed_block_counts_like_the_summary() -> None:
    block = block_from_rows(ROWS, invalid=1)
    assert metric_value(block, "pass_rate") == (True, 2 / 3, wilson_interval(2, 3), 3)
    found, low, _, n = metric_value(block, "pass_rate_ci_low")
    assert found and low == pytest.approx(wilson_interval(2, 3)[0]) and n == 3  # type: ignore[index]
    _, mean, interval, n = metric_value(block, "mean_score")
    assert mean == pytest.approx(2.0 / 3) and n == 3
    assert interval is not None and interval[0] <= mean <= interval[1]
    # judge errors over judged items: only the judge_error row was judged here
    assert metric_value(block, "judge_error_rate")[1:] == (1.0, wilson_interval(1, 1), 1)
    # errors over valid items: the judge error and the missing response, of 6
    assert metric_value(block, "error_rate")[1:] == (2 / 6, wilson_interval(2, 6), 6)
    assert metric_value(block, "invalid_rate")[1:] == (1 / 7, wilson_interval(1, 7), 7)
    # linear interpolation over 100, 200, 300, 400 ms
    assert metric_value(block, "p95_latency_ms")[1] == pytest.approx(385.0)


def test_cost_needs_a_price_for_every_model() -> None:
    prices = PriceTable({"a": Price(1.0, 2.0)})
    usage = {"input_tokens": 1000, "output_tokens": 500, "total_tokens": 1500}
    priced = block_from_rows([row("1", model="openai/a", **usage)], prices=prices)
    assert metric_value(priced, "cost_usd")[1] == pytest.approx(0.002)
    unknown = block_from_rows(
        [row("1", model="openai/a", **usage), row("2", model="b", **usage)], prices=prices
    )
    assert metric_value(unknown, "cost_usd")[1] is None  # unknown, never 0


@pytest.mark.parametrize(
    ("gate", "passed"),
    [
        ("pass_rate>=0.66", True),
        ("pass_rate>=0.67", False),
        ("pass_rate_ci_low>0.3", False),
        ("pass_rate_ci_low>0.2", True),
        ("mean_score>0.66", True),
        ("mean_score>0.67", False),
        ("judge_error_rate<=1", True),
        ("judge_error_rate<1", False),
        ("error_rate<=0.34", True),
        ("error_rate==0", False),
        ("invalid_rate<0.15", True),
        ("invalid_rate==0", False),
        ("p95_latency_ms<=385", True),
        ("p95_latency_ms<385", False),
        ("cost_usd<1", False),  # no prices: no value, so the gate fails
        ("dataset=other:pass_rate>=0", False),  # no verdict in that slice: no value, fails
        ("dataset=other:error_rate==0", True),
        ("dataset=nothing:pass_rate>=0", False),
        ("model=openai/a:pass_rate>0.6", True),
    ],
)
def test_each_metric_gate_passes_and_fails(gate: str, passed: bool) -> None:
    (result,) = evaluate_gates([parse_gate(gate)], ROWS, INVALID)
    assert result.passed is passed, result.describe()


def test_a_gate_without_value_says_why() -> None:
    (empty,) = evaluate_gates([parse_gate("dataset=nothing:pass_rate>=0")], ROWS)
    assert empty.value is None and "no items" in empty.note
    assert "no value (no items in this slice)" in empty.describe()
    (cost,) = evaluate_gates([parse_gate("cost_usd<1")], [row("1", input_tokens=5)])
    assert cost.value is None and not cost.passed
    assert "not available" in cost.note


def test_slice_by_tag_and_metadata_from_rows() -> None:
    rows = [
        row("1", "passed", tags=["contracts"], metadata={"jurisdiction": "CH"}),
        row("2", "failed", tags=["contracts", "tort"], metadata={"jurisdiction": "DE"}),
        row("3", "failed", tags=[], metadata={"jurisdiction": "CH"}),
    ]
    gates = parse_gates(["tag=contracts:pass_rate==0.5", "metadata.jurisdiction=CH:pass_rate==0.5"])
    assert [r.passed for r in evaluate_gates(gates, rows)] == [True, True]


def test_summary_values_win_and_their_interval_is_shown() -> None:
    summary = {
        "pass_rate": 0.9,
        "pass_rate_ci": {"low": 0.85, "high": 0.95},
        "evaluated_records": 200,
        "latency_ms": {"p50": 10, "p95": 50, "count": 200},
    }
    gates = parse_gates(["pass_rate>=0.88", "pass_rate_ci_low>=0.85", "p95_latency_ms<=50"])
    results = evaluate_gates(gates, ROWS, summary=summary)
    assert [r.passed for r in results] == [True, True, True]
    assert results[0].interval == (0.85, 0.95)
    assert "0.9000 (95% CI 0.8500–0.9500), n=200" in results[0].describe()
    # a summary field holding null is a missing value, never a pass
    (missing,) = evaluate_gates([parse_gate("cost_usd<=1")], ROWS, summary={"cost_usd": None})
    assert not missing.passed


def test_slice_file_values_win_for_one_condition_slices() -> None:
    slices = {"slices": [{"dimension": "dataset", "value": "lexam", "pass_rate": 0.1}]}
    find = slice_finder(slices)
    (res,) = evaluate_gates([parse_gate("dataset=lexam:pass_rate>=0.5")], ROWS, slice_entry=find)
    assert res.value == 0.1 and not res.passed
    nested = slice_finder({"dataset": {"lexam": {"pass_rate": 0.7}}})
    (res,) = evaluate_gates([parse_gate("dataset=lexam:pass_rate>=0.5")], ROWS, slice_entry=nested)
    assert res.value == 0.7 and res.passed


def test_nan_never_passes() -> None:
    (res,) = evaluate_gates([parse_gate("mean_score<=1")], ROWS, summary={"mean_score": math.nan})
    assert not res.passed


def test_to_dict_is_json_safe() -> None:
    import json

    (res,) = evaluate_gates([parse_gate("dataset=lexam:pass_rate>=0.5")], ROWS)
    data = json.loads(json.dumps(res.to_dict()))
    assert data["slice"] == {"dataset": "lexam"} and data["passed"] is True


def test_the_ci_examples_use_valid_gates() -> None:
    import re
    from pathlib import Path

    examples = Path(__file__).resolve().parents[2] / "examples" / "ci"
    found = []
    for path in examples.glob("*.yml"):
        found += re.findall(r'--gate "([^"]+)"', path.read_text(encoding="utf-8"))
    assert len(found) >= 6
    parse_gates(found)
