"""Token prices: the built-in table (``prices.yaml``), overridable; unknown prices stay unknown.

A price is USD per million input and output tokens. A model that no table lists has no
price, and its cost is ``None`` — never 0, which would read as "free".

Two discounts apply where a call earned them: input tokens the provider served from its
prompt cache cost ``cached_input`` (an entry without it bills them at the input price: no
discount is assumed), and a call answered through a Batch API (``--batch``) costs the
entry's ``batch`` share of the whole, else its provider's
(``engine.presets.BATCH_PRICE_FACTORS``: half for OpenAI, Together AI and Groq).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from pytest_legaleval.engine.presets import BATCH_PRICE_FACTORS, DEFAULT_BATCH_FACTOR
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.util.safe_yaml import load_yaml

__all__ = ["Price", "PriceTable", "batch_factor", "load_price_table"]

_SNAPSHOT = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cached_input: float | None = None
    """Input tokens served from the provider's prompt cache (``None``: the input price)."""
    batch: float | None = None
    """The share of the price a Batch API call costs (``None``: the provider's share)."""

    def cost(
        self,
        input_tokens: int | None,
        output_tokens: int | None,
        cached_input_tokens: int | None = None,
        batch_factor: float | None = None,
    ) -> float:
        """Cost of one call's tokens (missing counts count as 0 tokens).

        ``cached_input_tokens`` (part of ``input_tokens``) cost ``cached_input``;
        ``batch_factor``: the call went through a Batch API at this share of the price.
        """
        tokens_in = input_tokens or 0
        cached = min(max(cached_input_tokens or 0, 0), tokens_in)
        cached_price = self.input if self.cached_input is None else self.cached_input
        usd = (
            (tokens_in - cached) * self.input
            + cached * cached_price
            + (output_tokens or 0) * self.output
        ) / 1e6
        return usd if batch_factor is None else usd * batch_factor


def _parse_models(models: Any, origin: str) -> dict[str, Price]:
    if not isinstance(models, Mapping):
        raise ConfigError(f"{origin}: 'models' must map model names to {{input, output}}")
    out: dict[str, Price] = {}
    for name, entry in models.items():
        if not isinstance(entry, Mapping) or set(entry) - {
            "input", "output", "cached_input", "batch",
        }:  # fmt: skip
            raise ConfigError(
                f"{origin}: models[{name!r}] must be {{input: USD, output: USD}} per million "
                f"tokens (optionally cached_input: USD and batch: a share in (0, 1]), got "
                f"{entry!r}"
            )
        try:
            price_in, price_out = float(entry["input"]), float(entry["output"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"{origin}: models[{name!r}] needs numeric input and output prices ({exc})"
            ) from exc
        if not (0 <= price_in < float("inf") and 0 <= price_out < float("inf")):
            raise ConfigError(f"{origin}: models[{name!r}] has a negative or infinite price")
        cached = _optional(entry, "cached_input", name, origin, 0.0, float("inf"))
        batch = _optional(entry, "batch", name, origin, 0.0, 1.0)
        if batch == 0.0:
            raise ConfigError(f"{origin}: models[{name!r}].batch must be in (0, 1]")
        out[str(name)] = Price(price_in, price_out, cached, batch)
    return out


def _optional(
    entry: Mapping[str, Any], key: str, name: object, origin: str, low: float, high: float
) -> float | None:
    if entry.get(key) is None:
        return None
    try:
        value = float(entry[key])
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{origin}: models[{name!r}].{key} must be a number ({exc})") from None
    if not low <= value <= high or value == float("inf"):
        raise ConfigError(f"{origin}: models[{name!r}].{key} must be in [{low}, {high}]")
    return value


def batch_factor(model: str, price: Price | None = None) -> float:
    """The share of the price a Batch API call of ``model`` (``PROVIDER/NAME``) costs."""
    if price is not None and price.batch is not None:
        return price.batch
    return BATCH_PRICE_FACTORS.get(model.split("/", 1)[0], DEFAULT_BATCH_FACTOR)


@dataclass(frozen=True)
class PriceTable:
    """Prices by model name, with where they came from."""

    prices: Mapping[str, Price] = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    """``builtin:<as_of>``, then each override file or ``config:pricing``."""
    _found: dict[str, Price | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Answers already looked up (a run asks for the same few models on every item)."""

    def lookup(self, model: str) -> Price | None:
        """The price of ``model``: exact, without provider prefix, then undated; else None.

        A name with several prefixes (``openrouter/anthropic/claude-sonnet-4``) is also looked
        up without each of them in turn.
        """
        try:
            return self._found[model]
        except KeyError:
            pass
        if len(self._found) >= 1024:  # names come from data: bound what is kept
            self._found.clear()
        price = self._found[model] = self._search(model)
        return price

    def _search(self, model: str) -> Price | None:
        candidates = [model]
        rest = model
        while "/" in rest:
            rest = rest.split("/", 1)[1]
            candidates.append(rest)
        for name in list(candidates):
            undated = _SNAPSHOT.sub("", name)
            if undated != name:
                candidates.append(undated)
        for name in candidates:
            price = self.prices.get(name)
            if price is not None:
                return price
        return None

    def cost(
        self,
        model: str,
        input_tokens: int | None,
        output_tokens: int | None,
        *,
        cached_input_tokens: int | None = None,
        batch: bool = False,
    ) -> float | None:
        """Cost of tokens of ``model``; ``None`` when its price is unknown.

        ``cached_input_tokens``: the part of the input served from the prompt cache;
        ``batch``: the call went through a Batch API (:func:`batch_factor`).
        """
        price = self.lookup(model)
        if price is None:
            return None
        factor = batch_factor(model, price) if batch else None
        return price.cost(input_tokens, output_tokens, cached_input_tokens, factor)

    def merged(self, models: Mapping[str, Price], source: str) -> PriceTable:
        """A new table in which ``models`` override this one's entries."""
        return PriceTable({**self.prices, **models}, (*self.sources, source))


def _document(data: Any, origin: str) -> Mapping[str, Any]:
    """Accept ``{models: {...}}`` (with optional currency/unit/as_of) or a bare model map."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{origin}: a price table must be a mapping")
    if "models" not in data:
        return {"models": data}
    currency = data.get("currency", "USD")
    unit = data.get("unit", "per_million_tokens")
    if currency != "USD" or unit != "per_million_tokens":
        raise ConfigError(
            f"{origin}: only currency USD and unit per_million_tokens are supported, got "
            f"{currency!r} / {unit!r}"
        )
    return data


def builtin_table() -> PriceTable:
    """The table shipped with the package."""
    text = (files("pytest_legaleval.metrics") / "prices.yaml").read_text(encoding="utf-8")
    data = _document(load_yaml(text, source="built-in prices.yaml"), "built-in prices.yaml")
    models = _parse_models(data["models"], "built-in prices.yaml")
    return PriceTable(models, (f"builtin:{data.get('as_of', 'unknown')}",))


def load_price_table(path: str | Path | None = None, config_pricing: Any = None) -> PriceTable:
    """The built-in table, overridden by a config ``pricing:`` mapping, then by ``path``."""
    table = builtin_table()
    if config_pricing is not None:
        data = _document(config_pricing, "legaleval config 'pricing'")
        table = table.merged(_parse_models(data["models"], "config 'pricing'"), "config:pricing")
    if path is not None:
        origin = f"--price-table {path}"
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{origin}: cannot read it ({exc})") from None
        loaded = load_yaml(text, source=origin)
        data = _document(loaded, origin)
        table = table.merged(_parse_models(data["models"], origin), str(path))
    return table
