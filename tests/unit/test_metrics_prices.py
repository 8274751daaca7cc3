"""The price table: built-in, overrides, lookups; unknown prices stay unknown."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._prices import Price, builtin_table, load_price_table


def test_builtin_table_is_dated_and_priced_per_million_tokens() -> None:
    table = builtin_table()
    assert table.sources[0].startswith("builtin:20")
    price = table.lookup("openai/gpt-4.1-mini")
    assert isinstance(price, Price) and 0 < price.input < price.output
    assert table.cost("gpt-4.1-mini", 1_000_000, 0) == pytest.approx(price.input)


@pytest.mark.parametrize(
    ("model", "key"),
    [
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("openai/gpt-4o-mini", "gpt-4o-mini"),
        ("anthropic/claude-3-5-haiku-20241022", "claude-3-5-haiku"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
    ],
)
def test_snapshots_and_provider_prefixes_fall_back_to_the_listed_name(model: str, key: str) -> None:
    table = builtin_table()
    assert table.lookup(model) == table.prices[key]


@pytest.mark.parametrize("model", ["openai/mock-model", "gpt-4o-mini-x", "local/llama"])
def test_unknown_models_have_no_price(model: str) -> None:
    table = builtin_table()
    assert table.lookup(model) is None
    assert table.cost(model, 10, 10) is None


def test_a_price_file_and_config_pricing_override_the_builtin_table(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(
        "models:\n  mock-model: {input: 1.0, output: 2.0}\n  gpt-4o: {input: 9, output: 9}\n"
    )
    table = load_price_table(
        path, {"gpt-4o": {"input": 5, "output": 5}, "judge": {"input": 1, "output": 1}}
    )
    assert table.lookup("openai/mock-model") == Price(1.0, 2.0)
    assert table.lookup("gpt-4o") == Price(9.0, 9.0)  # the file wins over config
    assert table.lookup("judge") == Price(1.0, 1.0)
    assert table.sources[1:] == ("config:pricing", str(path))


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("models:\n  m: {input: 1}\n", "numeric input and output"),
        ("models:\n  m: {input: -1, output: 1}\n", "negative"),
        ("models:\n  m: 3\n", "must be"),
        ("currency: EUR\nmodels: {}\n", "USD"),
        ("- a\n", "mapping"),
    ],
)
def test_bad_price_files_name_the_problem(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_price_table(path)


def test_missing_price_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--price-table"):
        load_price_table(tmp_path / "nope.yaml")
