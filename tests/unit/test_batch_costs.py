"""Batch and prompt-cache pricing: ``Price``, the price table, the summary's cost block.

Each figure is checked against a computation written out here from the per-million prices
(not through the code under test), including the edge cases: more cached tokens than
input, a judge whose calls were partly batched and partly live, a table's own batch share.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.engine.batch_store import format_age
from pytest_legaleval.engine.openai_reply import parse_completion
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._prices import Price, PriceTable, batch_factor, load_price_table
from pytest_legaleval.metrics._summary import MetricsAccumulator
from pytest_legaleval.run.batch_text import batch_lines


def _item(model: str, tokens_in: int, tokens_out: int, **details: Any) -> dict[str, Any]:
    return {
        "record_id": "r", "dataset": "d", "task_type": "mcq", "model": model,
        "outcome": "passed", "passed": True, "score": 1.0, "reason": "correct",
        "input_tokens": tokens_in, "output_tokens": tokens_out,
        "total_tokens": tokens_in + tokens_out, "details": details,
    }  # fmt: skip


def test_price_with_cached_input_and_batch_share() -> None:
    price = Price(2.0, 8.0, cached_input=0.5)
    assert price.cost(1000, 100) == pytest.approx((1000 * 2.0 + 100 * 8.0) / 1e6)
    assert price.cost(1000, 100, 400) == pytest.approx((600 * 2.0 + 400 * 0.5 + 800) / 1e6)
    assert price.cost(1000, 100, 400, 0.5) == pytest.approx((1200 + 200 + 800) / 1e6 / 2)
    # More cached tokens than input cannot be billed: at most the whole input is cached.
    assert price.cost(10, 0, 50) == pytest.approx(10 * 0.5 / 1e6)
    # Without a cached price, cached tokens cost the input price: no discount is invented.
    assert Price(2.0, 8.0).cost(1000, 0, 1000) == pytest.approx(1000 * 2.0 / 1e6)


def test_batch_share_comes_from_the_provider_unless_the_table_says() -> None:
    assert batch_factor("openai/gpt-4.1") == 0.5
    assert batch_factor("groq/llama") == 0.5
    assert batch_factor("openai/x", Price(1.0, 1.0, batch=0.6)) == 0.6
    table = PriceTable({"m": Price(1.0, 2.0, batch=0.75), "n": Price(1.0, 2.0)})
    assert table.cost("openai/m", 1000, 1000, batch=True) == pytest.approx(3000 * 0.75 / 1e6)
    assert table.cost("openai/n", 1000, 1000, batch=True) == pytest.approx(3000 * 0.5 / 1e6)


def test_price_files_take_cached_input_and_batch(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("models:\n  m: {input: 1, output: 2, cached_input: 0.25, batch: 0.4}\n")
    price = load_price_table(path).lookup("openai/m")
    assert price == Price(1.0, 2.0, 0.25, 0.4)
    for bad, message in (
        ("batch: 0", "batch"),
        ("batch: 2", "batch"),
        ("cached_input: -1", "cached"),
    ):
        path.write_text(f"models:\n  m: {{input: 1, output: 2, {bad}}}\n")
        with pytest.raises(ConfigError, match=message):
            load_price_table(path)
    assert load_price_table().lookup("openai/gpt-4.1-mini") == Price(0.40, 1.60, 0.10)


def test_summary_cost_block_splits_batch_live_and_cached() -> None:
    prices = PriceTable({"gen": Price(2.0, 8.0, cached_input=0.5), "judge": Price(1.0, 4.0)})
    acc = MetricsAccumulator(prices=prices)
    judge = {"models": ["judge"], "score": 1.0, "verdicts": [{
        "model": "judge", "score": 1.0, "criteria": [], "error": None, "raw": None,
        "input_tokens": 3000, "output_tokens": 300, "cached_input_tokens": 1500,
        "batch_input_tokens": 2000, "batch_output_tokens": 200,
    }]}  # fmt: skip
    acc.add({**_item("openai/gen", 1000, 100, batch=True, cached_input_tokens=200), "judge": judge})
    acc.add(_item("openai/gen", 500, 50, batch=False))
    cost = acc.to_dict()["cost"]
    gen_batch = ((800 * 2.0 + 200 * 0.5 + 100 * 8.0) / 1e6) * 0.5
    gen_live = (500 * 2.0 + 50 * 8.0) / 1e6
    # The judge: 2000 of 3000 input tokens batched, so 1000 of its 1500 cached ones.
    judge_batch = ((2000 * 1.0 + 200 * 4.0) / 1e6) * 0.5
    judge_live = (1000 * 1.0 + 100 * 4.0) / 1e6
    assert cost["generation_usd"] == pytest.approx(gen_batch + gen_live)
    assert cost["judge_usd"] == pytest.approx(judge_batch + judge_live)
    assert cost["batch_usd"] == pytest.approx(gen_batch + judge_batch)
    assert cost["live_usd"] == pytest.approx(gen_live + judge_live)
    live_equivalent = 2 * gen_batch + gen_live + 2 * judge_batch + judge_live
    assert cost["live_equivalent_usd"] == pytest.approx(live_equivalent)
    assert cost["saved_usd"] == pytest.approx(gen_batch + judge_batch)
    assert (cost["cached_input_tokens"], cost["judge_cached_input_tokens"]) == (200, 1500)
    assert (cost["batch_input_tokens"], cost["batch_output_tokens"]) == (1000, 100)
    assert (cost["judge_batch_input_tokens"], cost["judge_batch_output_tokens"]) == (2000, 200)


def test_summary_without_batches_keeps_its_old_figures() -> None:
    acc = MetricsAccumulator(prices=PriceTable({"gen": Price(2.0, 8.0)}))
    acc.add(_item("openai/gen", 1000, 100))
    cost = acc.to_dict()["cost"]
    assert cost["total_usd"] == cost["live_usd"] == cost["live_equivalent_usd"]
    assert cost["batch_usd"] == 0 and cost["saved_usd"] == 0


@pytest.mark.parametrize(
    ("usage", "cached"),
    [
        ({"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": 4}}, 4),
        ({"prompt_tokens": 9, "prompt_cache_hit_tokens": 3, "prompt_cache_miss_tokens": 6}, 3),
        ({"prompt_tokens": 9, "cache_read_input_tokens": 2}, 2),
        ({"prompt_tokens": 9, "prompt_tokens_details": {"audio_tokens": 0}}, None),
        ({"prompt_tokens": 9}, None),
    ],
)
def test_prompt_cache_tokens_of_each_vendor(usage: dict[str, Any], cached: int | None) -> None:
    body = {"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}], "usage": usage}
    assert parse_completion(json.dumps(body).encode()).cached_input_tokens == cached


def test_terminal_lines_say_what_is_pending_and_how_to_collect_it() -> None:
    stats = {"batches_created": 2, "batches_resumed": 1, "batch_answers": 9,
             "batch_retries": 1, "batch_live_fallbacks": 0, "batches_pending": 1,
             "batch_oldest_pending_s": 3725.0}  # fmt: skip
    lines = batch_lines(stats, {"batch_usd": 0.5, "saved_usd": 0.5})
    assert lines[0] == (
        "batches: 2 batches submitted, resumed 1 batch from the cache (not paid again), "
        "9 answers, 1 requests retried in a new batch"
    )
    assert "1 batch still pending, the oldest 1h 02m old" in lines[1]
    assert "same --cache" in lines[1]
    assert lines[2] == "batches: $0.5000 at the batch price, $0.5000 saved"
    assert [format_age(s) for s in (5, 65, 3600)] == ["5s", "1m 05s", "1h 00m"]
    assert batch_lines({"batches_created": 0, "batch_no_api_calls": 3}, {})[1] == (
        "batches: 3 calls went live: their provider has no Batch API (--batch serves openai/, "
        "together/ and groq/)"
    )
    # A live run says nothing of batches; an xdist controller (no engine) says the cost.
    assert batch_lines({}, {"batch_usd": 0.0, "saved_usd": 0.0}) == []
    assert batch_lines({}, {"batch_usd": 1.0, "saved_usd": 1.0}) == [
        "batches: $1.0000 at the batch price, $1.0000 saved"
    ]


def test_batch_options_from_yaml_and_the_command_line(tmp_path: Path) -> None:
    from pytest_legaleval.pipeline.settings import resolve_settings

    config = tmp_path / "legaleval.yaml"
    config.write_text("batch: true\nbatch_poll: 0.5\nbatch_max_wait: 3600\n", encoding="utf-8")
    settings = resolve_settings({}, config_file=config)
    assert (settings.batch, settings.batch_poll, settings.batch_max_wait) == (True, 0.5, 3600.0)
    assert settings.batch_attempts == 2 and settings.sources["batch"] == "yaml"
    cli = resolve_settings({"batch_poll": "2", "batch_attempts": "4"}, config_file=config)
    assert (cli.batch_poll, cli.batch_attempts) == (2.0, 4)
    for bad in ({"batch_poll": "0"}, {"batch_attempts": "0"}, {"batch_max_wait": "-1"}):
        with pytest.raises(ConfigError):
            resolve_settings(bad)


def test_the_estimate_shows_live_and_batch_cost_side_by_side() -> None:
    from pytest_legaleval.pipeline.estimate import CallEstimate, CostEstimate

    table = PriceTable({"gpt-4.1": Price(2.0, 8.0)})
    # PRBench's README figure: 18,700 judge calls of 2,000 input and 200 output tokens.
    tokens_in, tokens_out = 18_700 * 2_000, 18_700 * 200
    live = table.cost("openai/gpt-4.1", tokens_in, tokens_out)
    batch = table.cost("openai/gpt-4.1", tokens_in, tokens_out, batch=True)
    assert (live, batch) == (pytest.approx(104.72), pytest.approx(52.36))
    row = CallEstimate("openai/gpt-4.1", "judge", 18_700, tokens_in, tokens_out, live, batch)
    planned = CostEstimate((row,), 256, "default", "builtin")
    assert (
        "  live $104.7200 | batch $52.3600 (--batch would save $52.3600; results within 24 h)"
        in (planned.lines())
    )
    chosen = CostEstimate((row,), 256, "default", "builtin", batch=True)
    assert any("this run uses --batch: $52.3600 less" in line for line in chosen.lines())
