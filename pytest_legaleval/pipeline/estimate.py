"""What a run will call and roughly cost, before it pays anything (``--estimate-only``).

Pure: the pytest layer prints :meth:`CostEstimate.lines` before the first call, and stops
there with ``--estimate-only``.

How it counts:

* Generation: one call per item (record × ``--model``) that the run would send, so not
  the items skipped before any call (a judged record without a judge) nor those whose
  attachment files are missing. Input tokens are counted from the prompt the run sends
  (``grading._prompts.build_messages``) with the engine's estimator
  (``engine.ratelimit.estimate_prompt_tokens``: about 4 characters per token); output
  tokens are ``--max-new-tokens`` (else the model's ``models:`` value, else
  ``engine.ratelimit.DEFAULT_OUTPUT_TOKENS``) — a ceiling, most answers are shorter.
* Judging: per judged item, one call per judge question (``grading._judge.build_tasks``:
  one per rubric criterion, else one) and judge, on an answer as long as the output
  budget (the real answer with ``--responses``); output ``--judge-max-tokens``. Re-asks of
  unparseable replies and the structured-output probes are not counted.
* Prices: the run's price table (``metrics._prices``); a model without one shows ``?`` and
  the total is a lower bound. Cache hits cost nothing, so a rerun costs less.

Also the checks of ``--max-cost``: every model called needs a price
(:func:`budget_prices`).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_legaleval.engine.ratelimit import DEFAULT_OUTPUT_TOKENS, estimate_prompt_tokens
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._prices import PriceTable, load_price_table
from pytest_legaleval.pipeline.settings import Settings
from pytest_legaleval.records import Record

if TYPE_CHECKING:
    from pytest_legaleval.formats import RejectedRecord
    from pytest_legaleval.pipeline.plan import RunPlan

__all__ = [
    "CallEstimate",
    "CostEstimate",
    "budget_prices",
    "called_models",
    "estimate_run",
    "plan_entries",
    "run_prices",
]


@dataclass(frozen=True, slots=True)
class CallEstimate:
    """The planned calls of one model for one purpose."""

    model: str
    purpose: str
    """``generation`` or ``judge``."""
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    """``None`` when the model has no price."""
    batch_cost_usd: float | None = None
    """The same calls through a Batch API (``--batch``): the batch share of the price."""


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """A run's planned calls and their estimated cost."""

    rows: tuple[CallEstimate, ...]
    answer_tokens: int
    """Output tokens assumed per answer."""
    answer_tokens_source: str
    """Where :attr:`answer_tokens` came from (``--max-new-tokens``, ``default`` …)."""
    prices_source: str
    max_cost_usd: float | None = None
    not_called: tuple[tuple[str, int], ...] = ()
    """``(why, items)``: the items that make no call, and why (so a 0 explains itself)."""
    batch: bool = False
    """The run uses ``--batch``: its calls are priced at the batch share."""

    @property
    def calls(self) -> int:
        """Calls in total."""
        return sum(row.calls for row in self.rows)

    @property
    def cost_usd(self) -> float:
        """The cost of the calls whose model has a price."""
        return sum(row.cost_usd or 0.0 for row in self.rows)

    @property
    def batch_cost_usd(self) -> float:
        """The cost of the priced calls through a Batch API."""
        return sum(row.batch_cost_usd or 0.0 for row in self.rows)

    @property
    def unpriced(self) -> tuple[str, ...]:
        """Models called without a price."""
        return tuple(dict.fromkeys(r.model for r in self.rows if r.cost_usd is None and r.calls))

    def lines(self) -> list[str]:
        """The terminal lines (no secrets: model names, counts and money only)."""
        total_in = sum(row.input_tokens for row in self.rows)
        total_out = sum(row.output_tokens for row in self.rows)
        if not self.unpriced:
            total = f"${self.cost_usd:.4f}"
        elif any(row.cost_usd is not None and row.calls for row in self.rows):
            total = f"${self.cost_usd:.4f} + price unknown for {', '.join(self.unpriced)}"
        else:
            total = "price unknown"  # a sum over no price says nothing: never "$0.0000"
        out = [
            f"legaleval estimate: {self.calls:,} calls, about {total_in:,} input + "
            f"{total_out:,} output tokens, {total} (prices: {self.prices_source})"
        ]
        for why, items in self.not_called:
            out.append(f"  no call for {items:,} item{'s' if items != 1 else ''}: {why}")
        for row in self.rows:
            cost = "price unknown" if row.cost_usd is None else f"${row.cost_usd:.4f}"
            out.append(
                f"  {row.model} ({row.purpose}): {row.calls:,} calls, {row.input_tokens:,} in + "
                f"{row.output_tokens:,} out tokens, {cost}"
            )
        out.append(
            f"  output per answer: {self.answer_tokens} tokens ({self.answer_tokens_source}); "
            "cache hits cost nothing, judge re-asks are not counted"
        )
        if self.cost_usd or self.batch_cost_usd:
            saved = self.cost_usd - self.batch_cost_usd
            tail = (
                f"this run uses --batch: ${saved:.4f} less"
                if self.batch
                else f"--batch would save ${saved:.4f}; results within 24 h"
            )
            out.append(f"  live ${self.cost_usd:.4f} | batch ${self.batch_cost_usd:.4f} ({tail})")
        if self.unpriced:
            out.append(f"  no price for {', '.join(self.unpriced)}: add it with --price-table")
        if self.max_cost_usd is not None:
            verdict = "above" if self.cost_usd > self.max_cost_usd else "within"
            out.append(
                f"  --max-cost ${self.max_cost_usd:.4f}: the estimate is {verdict} the cap "
                "(calls stop before the spend would pass it)"
            )
        return out


def _config_pricing(config_file: str | None) -> Any:
    if not config_file:
        return None
    from pytest_legaleval.util.safe_yaml import load_yaml

    try:
        data = load_yaml(Path(config_file).read_text(encoding="utf-8"), source=config_file)
    except (OSError, ConfigError, UnicodeDecodeError):
        return None  # the settings resolver has already reported an unreadable file
    return data.get("pricing") if isinstance(data, dict) else None


def run_prices(settings: Settings) -> PriceTable:
    """The run's price table: built in, the YAML ``pricing:``, then ``--price-table``.

    Raises:
        ConfigError: an unreadable or malformed table.

    """
    return load_price_table(settings.price_table, _config_pricing(settings.config_file))


def called_models(settings: Settings) -> tuple[str, ...]:
    """The models this run may call: ``--model`` (unless ``--responses``) and the judges."""
    models = () if settings.responses else settings.model
    return tuple(dict.fromkeys((*models, *settings.judge_model)))


def budget_prices(settings: Settings, table: PriceTable) -> dict[str, tuple[float, float]]:
    """USD per million ``(input, output)`` tokens of every model called, for ``--max-cost``.

    ``local/`` models are free and need no price.

    Raises:
        ConfigError: a model called has no price (naming every such model).

    """
    prices: dict[str, tuple[float, float]] = {}
    missing: list[str] = []
    for model in called_models(settings):
        if model.startswith("local/"):
            continue
        price = table.lookup(model)
        if price is None:
            missing.append(model)
        else:
            prices[model] = (price.input, price.output)
    if missing:
        raise ConfigError(
            f"--max-cost needs a price for every model called; none for "
            f"{', '.join(repr(m) for m in missing)}: add them to --price-table FILE or to the "
            "pricing: section of legaleval.yaml ({input: USD, output: USD} per million tokens)"
        )
    return prices


def _answer_tokens(settings: Settings, model: str) -> tuple[int, str]:
    if settings.max_new_tokens is not None:
        return settings.max_new_tokens, "--max-new-tokens"
    value = (settings.per_model.get(model) or {}).get("max_new_tokens")
    if isinstance(value, int) and value > 0:
        return value, f"models: {model}"
    return DEFAULT_OUTPUT_TOKENS, "default: set --max-new-tokens to bound it"


class _Tally:
    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], list[int]] = {}

    def add(self, model: str, purpose: str, calls: int, tokens_in: int, tokens_out: int) -> None:
        row = self.rows.setdefault((model, purpose), [0, 0, 0])
        row[0] += calls
        row[1] += tokens_in
        row[2] += tokens_out

    def estimate(self, table: PriceTable) -> tuple[CallEstimate, ...]:
        out = []
        for (model, purpose), (calls, tokens_in, tokens_out) in self.rows.items():
            free = model.startswith("local/")
            cost = 0.0 if free else table.cost(model, tokens_in, tokens_out)
            batch = 0.0 if free else table.cost(model, tokens_in, tokens_out, batch=True)
            out.append(CallEstimate(model, purpose, calls, tokens_in, tokens_out, cost, batch))
        return tuple(out)


def _own_chars(record: Record, previous: str | None) -> int:
    """The characters of a record's own text that its prompt carries."""
    return (
        len(record.prompt)
        + len(record.context)
        + sum(len(c.id) + len(c.text) for c in record.choices)
        + sum(len(m.content) for m in record.messages)
        + len(previous or "")
    )


class _Framing:
    """A prompt's tokens without building every prompt.

    The engine counts a prompt's tokens from its characters. What a policy adds around a
    record's own text (system prompt, scaffold, labels, one line per choice) depends only on
    the record's shape, so the prompt is built once per policy and shape and the framing's
    characters are reused; records with attachments are built whole (their text is read).
    """

    def __init__(self, build: Any, roots: Sequence[str]) -> None:
        self._build = build
        self._roots = roots
        self._framing: dict[tuple[Any, ...], tuple[int, int]] = {}

    def prompt_tokens(self, record: Record, policy: Any, previous: str | None) -> int:
        if record.attachments:
            return estimate_prompt_tokens(self._messages(record, policy, previous))
        key = (
            policy.id,
            len(record.choices),
            bool(record.context),
            tuple(m.role for m in record.messages),
            record.messages[-1].content == record.prompt if record.messages else None,
            previous is not None,
        )
        found = self._framing.get(key)
        if found is None:
            messages = self._messages(record, policy, previous)
            chars = sum(len(m.get("content", "")) for m in messages)
            found = self._framing[key] = (chars - _own_chars(record, previous), len(messages))
        extra, count = found
        return (_own_chars(record, previous) + extra) // 4 + 4 * count

    def _messages(self, record: Record, policy: Any, previous: str | None) -> list[dict[str, str]]:
        return list(
            self._build(record, policy, previous_response=previous, attachment_roots=self._roots)
        )


def _judge_prompt_tokens(record: Record, answer: str, plan: RunPlan) -> list[int]:
    from pytest_legaleval.grading._judge import build_tasks
    from pytest_legaleval.grading._panel import JUDGE_SYSTEM_PROMPT

    policy = plan.grading.policy(record)
    return [
        estimate_prompt_tokens(
            [
                {"role": "system", "content": task.system or JUDGE_SYSTEM_PROMPT},
                {"role": "user", "content": task.prompt},
            ]
        )
        for task in build_tasks(record, answer, policy)
    ]


def plan_entries(
    plan: RunPlan, *, stream: bool = False, selected: bool = True
) -> Iterator[Record | RejectedRecord]:
    """The entries of ``plan`` in file order: those selected (its items'), else all.

    ``stream``: read the files one entry at a time instead of loading them (an xdist
    controller, which never holds the dataset), with the same selection as
    ``pipeline.selection.select``. A plan already loaded is read from memory.
    """
    s = plan.settings
    if not selected and plan.dataset.partial:
        stream = True  # a shard's load holds only its own entries: read the files for all
    elif plan.dataset.loaded is not None or not stream:
        yield from plan.dataset.selected if selected else plan.dataset.load().entries
        return
    from pytest_legaleval.formats import DatasetStream
    from pytest_legaleval.pipeline.selection import entry_key, in_shard
    from pytest_legaleval.pipeline.sources import dataset_paths

    files = DatasetStream(dataset_paths(s.dataset, s.protocol), s.dataset_format)
    if not selected:
        yield from files
        return
    shard = s.shard
    keep: set[int] | None = None
    if s.sample is not None:
        count = sum(1 for e in files if shard is None or in_shard(entry_key(e), shard))
        if s.sample < count:
            rng = random.Random(s.seed if s.seed is not None else 0)
            keep = set(rng.sample(range(count), s.sample))
    index = taken = 0
    for entry in files:
        if shard is not None and not in_shard(entry_key(entry), shard):
            continue
        index += 1
        if keep is not None and index - 1 not in keep:
            continue
        if s.limit is not None and taken >= s.limit:
            return
        taken += 1
        yield entry


def _records(plan: RunPlan, stream: bool) -> Iterator[tuple[Record, str]]:
    models = plan.models
    entries = (
        plan.stream_selected() if stream and plan.dataset.loaded is None else plan_entries(plan)
    )
    for entry in entries:
        if isinstance(entry, Record):
            for model in models:
                yield entry, model


def estimate_run(
    plan: RunPlan, table: PriceTable | None = None, *, stream: bool = False
) -> CostEstimate:
    """The planned calls of ``plan`` and their estimated cost (see the module).

    ``stream``: see :func:`plan_entries` (an xdist controller streams the dataset).

    Raises:
        DatasetRejected: the dataset is rejected (nothing would be called).
        ConfigError: an unreadable dataset, price table or impossible selection.

    """
    from pytest_legaleval.grading._prompts import build_messages

    s = plan.settings
    table = table if table is not None else run_prices(s)
    tally = _Tally()
    judges = s.judge_model
    conversation: Mapping[tuple[str, str, int], str] = (
        plan.conversation.responses if plan.conversation is not None else {}
    )
    first_conversation_model = plan.conversation.models[0] if plan.conversation else None
    answer_tokens, answer_source = DEFAULT_OUTPUT_TOKENS, "default"
    framing = _Framing(build_messages, s.attachments_root)
    epochs = s.epochs
    skipped: dict[str, int] = {}

    def skip(why: str) -> None:
        skipped[why] = skipped.get(why, 0) + 1

    for record, model in _records(plan, stream):
        if record.attachments and plan.attachment_errors(record):
            skip("attachments refused or missing (the item is an error at setup)")
            continue  # an error at setup: never sent
        needs_judge = plan.grading.grader(record).needs_judge
        tokens, answer_source = _answer_tokens(s, model)
        answer_tokens = tokens
        answer: str | None = None
        if plan.responses is not None:
            answer = plan.responses.get(record.id, model)
            if answer is None:
                skip("no answer in --responses (missing_response)")
                continue  # missing_response: nothing to judge
            if needs_judge and not judges and not s.judgments:
                skip(f"{record.task_type} records need --judge-model (answers are not judged)")
        else:
            if needs_judge and not judges and not s.generate_ungraded:
                skip(f"{record.task_type} records need --judge-model (skipped before any call)")
                continue  # skipped before any call
            previous = conversation.get((record.id, model, 0))
            if previous is None and first_conversation_model is not None:
                previous = conversation.get((record.id, first_conversation_model, 0))
            policy = plan.grading.policy(record)
            prompt_tokens = framing.prompt_tokens(record, policy, previous)
            tally.add(model, "generation", epochs, epochs * prompt_tokens, epochs * tokens)
        if needs_judge and judges:
            prompts = _judge_prompt_tokens(record, answer or "x" * (4 * tokens), plan)
            times = epochs * s.judge_epochs
            for judge in judges:
                tally.add(
                    judge,
                    "judge",
                    times * len(prompts),
                    times * sum(prompts),
                    times * len(prompts) * s.judge_max_tokens,
                )
    return CostEstimate(
        tally.estimate(table),
        answer_tokens,
        answer_source,
        ", ".join(table.sources) or "none",
        s.max_cost,
        tuple(sorted(skipped.items())),
        bool(getattr(s, "batch", False)),
    )
