"""The estimate of a run's calls and cost, and the checks of ``--max-cost`` (no pytest)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.engine import GenerationResult
from pytest_legaleval.engine.ratelimit import DEFAULT_OUTPUT_TOKENS, estimate_prompt_tokens
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.grading._judge import build_tasks
from pytest_legaleval.grading._panel import JUDGE_SYSTEM_PROMPT
from pytest_legaleval.grading._policies import PolicyBook
from pytest_legaleval.grading._prompts import build_messages
from pytest_legaleval.metrics._items import failure_type
from pytest_legaleval.metrics._prices import Price, PriceTable
from pytest_legaleval.pipeline.estimate import (
    CallEstimate,
    CostEstimate,
    budget_prices,
    estimate_run,
    plan_entries,
)
from pytest_legaleval.pipeline.plan import RunPlan
from pytest_legaleval.pipeline.results import generation_failed
from pytest_legaleval.pipeline.settings import Settings, parse_shard
from pytest_legaleval.records import Record
from pytest_legaleval.run.artifacts import failure_line

TABLE = PriceTable({"gpt-4.1-mini": Price(0.4, 1.6), "judge-m": Price(2.0, 8.0)}, ("test",))

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _rows() -> list[dict[str, Any]]:
    mcq = [
        {
            "schema_version": "legal_eval_v1",
            "id": f"m{i}",
            "dataset": "t",
            "task_type": "mcq",
            "prompt": f"Which option, question {i}? " + "word " * (10 * i),
            "choices": [{"id": c, "text": f"option {c}"} for c in "ABCD"],
            "correct_choice_ids": ["B"],
        }
        for i in range(3)
    ]
    rubric = {
        "schema_version": "legal_eval_v1",
        "id": "r0",
        "dataset": "t",
        "task_type": "rubric_qa",
        "prompt": "Explain the rule.",
        "rubric": [
            {"id": "c1", "title": "names the rule", "weight": 1},
            {"id": "c2", "title": "applies it", "weight": 2},
        ],
    }
    return [*mcq, rubric]


def _plan(tmp_path: Path, **values: Any) -> RunPlan:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows()), encoding="utf-8")
    return RunPlan.build(Settings(dataset=(str(data),), **values))


def _records(plan: RunPlan) -> list[Record]:
    return [e for e in plan.dataset.load().entries if isinstance(e, Record)]


def test_generation_calls_are_counted_from_the_prompts(tmp_path: Path) -> None:
    plan = _plan(tmp_path, model=("openai/gpt-4.1-mini",), max_new_tokens=100)
    estimate = estimate_run(plan, TABLE)
    # Without a judge, the rubric record is skipped before any call.
    (row,) = estimate.rows
    mcq = [r for r in _records(plan) if r.task_type == "mcq"]
    prompt_tokens = sum(
        estimate_prompt_tokens(build_messages(r, plan.grading.policy(r))) for r in mcq
    )
    assert (row.model, row.purpose, row.calls) == ("openai/gpt-4.1-mini", "generation", 3)
    assert (row.input_tokens, row.output_tokens) == (prompt_tokens, 300)
    assert row.cost_usd == pytest.approx((prompt_tokens * 0.4 + 300 * 1.6) / 1e6)
    assert estimate.answer_tokens_source == "--max-new-tokens"
    lines = estimate.lines()
    assert lines[0].startswith(f"legaleval estimate: 3 calls, about {prompt_tokens:,} input")
    assert "(prices: test)" in lines[0]


def test_judge_calls_are_one_per_question_and_judge(tmp_path: Path) -> None:
    plan = _plan(
        tmp_path,
        model=("openai/gpt-4.1-mini",),
        judge_model=("openai/judge-m", "openai/other"),
        judge_max_tokens=50,
    )
    estimate = estimate_run(plan, TABLE)
    rows = {(r.model, r.purpose): r for r in estimate.rows}
    assert rows[("openai/gpt-4.1-mini", "generation")].calls == 4
    assert rows[("openai/gpt-4.1-mini", "generation")].output_tokens == 4 * DEFAULT_OUTPUT_TOKENS
    (rubric,) = [r for r in _records(plan) if r.task_type == "rubric_qa"]
    tasks = build_tasks(rubric, "x" * 4 * DEFAULT_OUTPUT_TOKENS, plan.grading.policy(rubric))
    judge_in = sum(
        estimate_prompt_tokens(
            [
                {"role": "system", "content": t.system or JUDGE_SYSTEM_PROMPT},
                {"role": "user", "content": t.prompt},
            ]
        )
        for t in tasks
    )
    judge = rows[("openai/judge-m", "judge")]
    assert (judge.calls, judge.input_tokens, judge.output_tokens) == (2, judge_in, 100)
    assert rows[("openai/other", "judge")].cost_usd is None  # no price
    assert estimate.unpriced == ("openai/other",)
    assert estimate.lines()[0].startswith("legaleval estimate: 8 calls")
    assert " + price unknown for openai/other (prices: " in estimate.lines()[0]
    assert "openai/other (judge): 2 calls, " in "\n".join(estimate.lines())
    assert "tokens, price unknown\n" in "\n".join(estimate.lines())


def test_an_unpriced_model_says_price_unknown_not_zero() -> None:
    rows = (CallEstimate("openai/m", "generation", 3, 159, 768, None),)
    estimate = CostEstimate(rows, 256, "default", "builtin:2025-08-15")
    lines = estimate.lines()
    assert lines[0] == (
        "legaleval estimate: 3 calls, about 159 input + 768 output tokens, price unknown "
        "(prices: builtin:2025-08-15)"
    )
    assert lines[1] == "  openai/m (generation): 3 calls, 159 in + 768 out tokens, price unknown"
    assert "$0.0000" not in "\n".join(lines)


def test_the_cap_is_compared_with_the_estimate(tmp_path: Path) -> None:
    plan = _plan(tmp_path, model=("openai/gpt-4.1-mini",), max_cost=1e-9)
    assert "is above the cap" in estimate_run(plan, TABLE).lines()[-1]
    plan = _plan(tmp_path, model=("openai/gpt-4.1-mini",), max_cost=5.0)
    assert "is within the cap" in estimate_run(plan, TABLE).lines()[-1]


def test_max_cost_needs_a_price_for_every_model_called() -> None:
    settings = Settings(
        dataset=("d",), model=("openai/gpt-4.1-mini", "anthropic/new-model", "local/smol")
    )
    with pytest.raises(ConfigError, match=r"none for 'anthropic/new-model': add them"):
        budget_prices(settings, TABLE)
    answers = Settings(dataset=("d",), responses="r.jsonl", model=("openai/unpriced",))
    assert budget_prices(answers, TABLE) == {}  # nothing generated: nothing to price
    ok = Settings(dataset=("d",), model=("openai/gpt-4.1-mini", "local/smol"))
    assert budget_prices(ok, TABLE) == {"openai/gpt-4.1-mini": (0.4, 1.6)}


def _cancelled(message: str, reason: str | None) -> GenerationResult:
    return GenerationResult(
        text=None,
        finish_reason=None,
        error_code="cancelled",
        error_message=message,
        attempts=(),
        input_tokens=None,
        output_tokens=None,
        latency_ms=None,
        cached=False,
        cache_key="k",
        model="openai/m",
        first_attempt_at=None,
        last_attempt_at=None,
        cancel_reason=reason,
    )


def test_a_call_the_budget_stopped_is_a_cancelled_failure_with_reason_budget(
    tmp_path: Path,
) -> None:
    (record, *_) = _records(_plan(tmp_path, model=("openai/m",)))
    message = "not sent: --max-cost $0.5000 reached; spent $0.4990, this call would cost $0.002"
    result = generation_failed(
        record, "openai/m", _cancelled(message, "budget"), policy=PolicyBook().get("default")
    )
    assert (result.outcome, result.reason, result.explanation) == ("error", "budget", message)
    line = failure_line("run", "t/m0", result.to_dict())
    assert line is not None
    assert (line["failure_type"], line["reason"], line["stage"]) == ("cancelled", "budget", "run")
    assert "--max-cost $0.5000" in line["message"]
    plain = generation_failed(record, "openai/m", _cancelled("cancelled", None), policy=None)
    assert plain.reason == "cancelled" and failure_type(plain.to_dict()) == "cancelled"


@pytest.mark.parametrize(
    "selection",
    [{}, {"limit": 2}, {"sample": 3, "seed": 5}, {"shard": parse_shard("2/3")},
     {"shard": parse_shard("1/2"), "sample": 1, "limit": 1}],
)  # fmt: skip
def test_a_streamed_plan_selects_what_a_loaded_one_does(
    tmp_path: Path, selection: dict[str, Any]
) -> None:
    """The xdist controller streams the dataset; it must estimate the same items."""
    streamed = _plan(tmp_path, model=("openai/gpt-4.1-mini",), **selection)
    ids = [e.id for e in plan_entries(streamed, stream=True) if isinstance(e, Record)]
    assert streamed.dataset.loaded is None  # nothing was held
    loaded = _plan(tmp_path, model=("openai/gpt-4.1-mini",), **selection)
    assert ids == [e.id for e in loaded.dataset.selected if isinstance(e, Record)]
    assert estimate_run(streamed, TABLE, stream=True) == estimate_run(loaded, TABLE)
    every = [e.id for e in plan_entries(streamed, stream=True, selected=False)]  # type: ignore[union-attr]
    assert every == ["m0", "m1", "m2", "r0"]


def test_the_estimate_counts_each_prompt_exactly_without_building_each() -> None:
    """Framing is built once per policy and record shape, and gives every prompt's count."""
    from pytest_legaleval.engine.ratelimit import estimate_prompt_tokens
    from pytest_legaleval.formats import load_dataset
    from pytest_legaleval.grading._policies import PolicyBook
    from pytest_legaleval.grading._prompts import build_messages
    from pytest_legaleval.pipeline.estimate import _Framing

    from ..lbr_run import records as lbr_records

    book = PolicyBook()
    records = list(lbr_records().values())
    for path in ("legal_mcq.jsonl", "legal_judged.jsonl"):
        records += load_dataset([str(EXAMPLES / path)]).records
    calls: list[int] = []

    def build(*args: object, **kwargs: object) -> list[dict[str, str]]:
        calls.append(1)
        return build_messages(*args, **kwargs)  # type: ignore[arg-type]

    framing = _Framing(build, ())
    for record in records:
        policy = book.for_record(record)
        exact = estimate_prompt_tokens(build_messages(record, policy))
        assert framing.prompt_tokens(record, policy, None) == exact, record.id
        previous = "an earlier answer"
        exact = estimate_prompt_tokens(build_messages(record, policy, previous_response=previous))
        assert framing.prompt_tokens(record, policy, previous) == exact, record.id
    assert len(calls) < len(records)  # most prompts were counted, not built
