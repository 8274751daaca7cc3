"""The one YAML loader: alias bombs refused before anything large is built, tags refused."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_legaleval.datasets.config import load_dataset_config
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.grading._policies import load_policy_file
from pytest_legaleval.metrics._prices import load_price_table
from pytest_legaleval.util import safe_yaml
from pytest_legaleval.util.safe_yaml import load_yaml


def bomb(levels: int, key: str = "x", indent: str = "") -> str:
    """``levels`` anchors, each a list of nine aliases of the one before: 9**levels leaves."""
    lines = [f'{indent}l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        lines.append(f"{indent}l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * 9)}]")
    lines.append(f"{indent}{key}: *l{levels - 1}")
    return "\n".join(lines) + "\n"


def peak_bytes(action: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        action()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_an_alias_bomb_is_refused_with_small_memory() -> None:
    text = bomb(30)  # 9**30 leaves if anything expanded it

    def load() -> None:
        with pytest.raises(ConfigError) as info:
            load_yaml(text, source="legaleval.yaml")
        message = str(info.value)
        assert message.startswith("legaleval.yaml: refused at line ")
        assert "aliases expand it to more than 1,000,000" in message

    assert peak_bytes(load) < 2 * 1024 * 1024


def test_an_alias_that_contains_itself_is_refused() -> None:
    with pytest.raises(ConfigError, match="an alias refers to a node that contains it"):
        load_yaml("a: &a [1, *a]\n", source="x.yaml")


def test_moderate_anchors_and_merge_keys_still_work() -> None:
    text = "defaults: &d {temperature: 0.2, max_tokens: 64}\nmodels:\n  a: {<<: *d, seed: 1}\n"
    assert load_yaml(text, source="x.yaml") == {
        "defaults": {"temperature": 0.2, "max_tokens": 64},
        "models": {"a": {"temperature": 0.2, "max_tokens": 64, "seed": 1}},
    }
    assert load_yaml(bomb(5), source="x.yaml")["x"][0][0][0][0] == ["lol"] * 9  # 59,049 leaves
    assert load_yaml("", source="x.yaml") is None
    assert load_yaml("text: '5 * 3'", source="x.yaml") == {"text": "5 * 3"}


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("a: !!python/object/apply:os.system [echo hi]\n", "could not determine a constructor"),
        ("a: !!python/name:os.system\n", "could not determine a constructor"),
        ("--- 1\n--- 2\n", "expected a single document"),
        ("a: *nowhere\n", "undefined alias"),
        ("a: [1, 2\n", "not valid YAML"),
    ],
)
def test_unsafe_or_broken_documents_are_config_errors_naming_the_file(text: str, why: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_yaml(text, source="policy.yaml")
    assert str(info.value).startswith("policy.yaml: ") and why in str(info.value)


def test_the_pure_python_parser_is_bounded_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safe_yaml, "_SAFE_LOADER", yaml.SafeLoader)
    with pytest.raises(ConfigError, match="aliases expand"):
        load_yaml(bomb(12), source="x.yaml")
    with pytest.raises(ConfigError, match=r"nested too deeply|not valid YAML"):
        load_yaml("[" * 5000 + "]" * 5000, source="x.yaml")
    assert load_yaml("a: &a 1\nb: *a\n", source="x.yaml") == {"a": 1, "b": 1}


def test_policies_prices_and_dataset_configs_use_it(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("id: p1\n" + bomb(7, key="mcq_instructions"))
    prices = tmp_path / "prices.yaml"
    prices.write_text(bomb(7, key="models"))
    config = tmp_path / "config.yaml"
    config.write_text("dataset:\n" + bomb(7, key="version", indent="  "))
    for path, load in (
        (policy, lambda: load_policy_file(policy)),
        (prices, lambda: load_price_table(prices)),
        (config, lambda: load_dataset_config(config)),
    ):

        def refused(load: Callable[[], Any] = load, path: Path = path) -> None:
            with pytest.raises(ConfigError) as info:
                load()
            assert str(path) in str(info.value) and "aliases expand" in str(info.value)

        # 9**7 leaves: a str() of them alone would take tens of megabytes
        assert peak_bytes(refused) < 2 * 1024 * 1024, path
