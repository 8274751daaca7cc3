"""Streaming aggregation of item results into one block of metrics.

One :class:`MetricsAccumulator` holds counts, token and cost sums, and two compact float
arrays (scores of graded items, latencies) — nothing else per item. The same block shape is
used for the whole run (``metrics_summary.json``) and for every slice
(``metrics_by_slice.json``); ``schemas/metrics_summary.schema.json`` documents each field.

Counts follow one vocabulary (``metrics/_counts.py``): ``*_items`` fields count items (record
× model), ``*_records`` fields count distinct records with the Dataset Contract §3.3 meaning.
Rates are of items. The classification of one item lives in ``metrics/_items.py``
(re-exported here).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_legaleval.metrics._counts import (
    CANCELLED,
    CATEGORIES,
    JUDGED,
    SCORED,
    WARNED,
    RecordIndex,
    RecordTally,
    flag_of,
)
from pytest_legaleval.metrics._items import (
    FAILURE_TYPES,
    ItemFacts,
    attachment_warnings,
    failure_type,
    item_category,
    item_facts,
    record_key,
)
from pytest_legaleval.metrics._prices import PriceTable
from pytest_legaleval.metrics._stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    bootstrap_mean_interval,
    histogram,
    quantile,
    wilson_interval,
)
from pytest_legaleval.records import PredictionLine

__all__ = [
    "FAILURE_TYPES",
    "MAX_CRITERIA",
    "WARNING_EXAMPLES",
    "ItemFacts",
    "MetricsAccumulator",
    "attachment_warnings",
    "failure_type",
    "item_category",
    "item_facts",
    "record_key",
    "wilson_interval",
]

MAX_CRITERIA = 200
"""Distinct rubric criterion ids tracked per block; more are counted, not listed (rubric ids
unique per record would otherwise grow with the dataset)."""

_QUANTILES = (("min", 0.0), ("p05", 0.05), ("p25", 0.25), ("p50", 0.5), ("p75", 0.75),
              ("p95", 0.95), ("max", 1.0))  # fmt: skip


WARNING_EXAMPLES = 5
"""Attachment warnings quoted per block (``attachment_warnings``); all are counted."""


def _rate(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


@dataclass
class _Criterion:
    title: str
    judged: int = 0
    unjudged: int = 0
    met_sum: float = 0.0


@dataclass
class MetricsAccumulator:
    """Counts, sums and two float arrays that grow one item result at a time."""

    prices: PriceTable | None = None
    index: RecordIndex | None = None
    """Shared by the accumulators of one run (``SliceAccumulator``); a private one if None."""
    warning_examples: int = WARNING_EXAMPLES
    items: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    cancelled: int = 0
    judged: int = 0
    judge_errors: int = 0
    warned: int = 0
    warnings: list[dict[str, Any]] = field(default_factory=list)
    records: RecordTally = field(init=False)
    reasons: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    scores: array[float] = field(default_factory=lambda: array("d"))
    latencies: array[float] = field(default_factory=lambda: array("d"))
    tokens: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("input", "output", "total", "judge_input", "judge_output"), 0
        )
    )
    cost_generation: float = 0.0
    cost_judge: float = 0.0
    cost_batch: float = 0.0
    """What the calls answered through a Batch API cost (at the batch price)."""
    cost_live_equivalent: float = 0.0
    """What every priced token would have cost as live calls (prompt-cache discount kept)."""
    cache_tokens: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("cached_input", "judge_cached_input", "batch_input", "batch_output",
             "judge_batch_input", "judge_batch_output"), 0,
        )
    )  # fmt: skip
    usage_items: int = 0
    judge_usage_items: int = 0
    unpriced: set[str] = field(default_factory=set)
    criteria: dict[str, _Criterion] = field(default_factory=dict)
    criteria_dropped: int = 0
    epoch_lines: int = 0
    """Epoch lines of valid items seen by :meth:`add_epoch` (0: none, items count)."""
    errored_epochs: int = 0
    """Those without a verdict."""

    def __post_init__(self) -> None:
        self.records = RecordTally(self.index if self.index is not None else RecordIndex())

    # -- input ---------------------------------------------------------------------------

    def add_epoch(self, line: PredictionLine) -> None:
        """Count one epoch's prediction line for ``error_rate`` (the epoch is the unit).

        With ``--epochs K`` an item whose reduced verdict exists may still have epochs
        without one; ``error_rate`` is then errored epoch lines / epoch lines, so it, the
        gates and ``failures.jsonl`` agree on every line.
        """
        failure = failure_type(line)
        if failure == "invalid_record":
            return
        self.epoch_lines += 1
        self.errored_epochs += failure is not None

    def add_invalid(self, key: Hashable | None = None) -> None:
        """Count an item whose record failed validation.

        ``key`` names the record, so that its items under several models count one record;
        without it the item counts as a record of its own.
        """
        self.items["invalid"] += 1
        self.records.mark(key, flag_of("invalid"))
        self._bump(self.reasons, "invalid_record")
        self._bump(self.failures, "invalid_record")

    def add(self, result: PredictionLine, facts: ItemFacts | None = None) -> None:
        """Count one item, by its ``predictions.jsonl`` line (reduced, with epochs).

        ``facts`` are :func:`item_facts` of ``result``, when the caller has them already (a
        slice accumulator counts one item in several blocks).
        """
        facts = facts if facts is not None else item_facts(result)
        self._bump(self.reasons, str(result.get("reason") or ""))
        failure, category = facts.failure, facts.category
        self.items[category] += 1
        flags = flag_of(category)
        if failure is not None:
            self.cancelled += failure == "cancelled"
            flags |= CANCELLED if failure == "cancelled" else 0
            self._bump(self.failures, failure)
        if category in ("passed", "failed"):
            score = result.get("score")
            if isinstance(score, int | float) and math.isfinite(score):
                self.scores.append(float(score))
                flags |= SCORED
        latency = result.get("latency_ms")
        if isinstance(latency, int | float) and math.isfinite(latency):
            self.latencies.append(float(latency))
        self._add_usage(result)
        if self._add_judge(result, failure == "judge_error"):
            flags |= JUDGED
        criteria = (result.get("details") or {}).get("criteria")
        if isinstance(criteria, list):
            self._add_criteria(criteria)
        if facts.warnings:
            flags |= WARNED
            self._add_warnings(result, facts)
        self.records.mark(facts.key, flags)

    def _add_warnings(self, result: PredictionLine, facts: ItemFacts) -> None:
        self.warned += 1
        if len(self.warnings) < self.warning_examples:
            dataset, record_id = facts.key
            self.warnings.append(
                {
                    "dataset": dataset,
                    "record_id": record_id,
                    "model": result.get("model"),
                    "warnings": facts.warnings,
                }
            )

    @staticmethod
    def _bump(counter: dict[str, int], key: str) -> None:
        counter[key] = counter.get(key, 0) + 1

    def _add_usage(self, result: PredictionLine) -> None:
        tokens_in, tokens_out = result.get("input_tokens"), result.get("output_tokens")
        total = result.get("total_tokens")
        if tokens_in is None and tokens_out is None and total is None:
            return
        self.usage_items += 1
        self.tokens["input"] += tokens_in or 0
        self.tokens["output"] += tokens_out or 0
        self.tokens["total"] += total if total is not None else (tokens_in or 0) + (tokens_out or 0)
        details = result.get("details") or {}
        cached = _count(details.get("cached_input_tokens"))
        batch = details.get("batch") is True
        self.cache_tokens["cached_input"] += cached
        if batch:
            self.cache_tokens["batch_input"] += tokens_in or 0
            self.cache_tokens["batch_output"] += tokens_out or 0
        self._price(str(result.get("model")), tokens_in, tokens_out, cached, batch, judge=False)

    def _price(
        self,
        model: str,
        tokens_in: int | None,
        tokens_out: int | None,
        cached: int = 0,
        batch: bool = False,
        *,
        judge: bool,
    ) -> None:
        """Price one call's tokens at its tier (batch or live; prompt-cache tokens apart)."""
        if not self.prices:
            self.unpriced.add(model)
            return
        cost = self.prices.cost(model, tokens_in, tokens_out, cached_input_tokens=cached)
        if cost is None:
            self.unpriced.add(model)
            return
        self.cost_live_equivalent += cost
        if batch:
            cost = (
                self.prices.cost(
                    model, tokens_in, tokens_out, cached_input_tokens=cached, batch=True
                )
                or 0.0
            )
            self.cost_batch += cost
        if judge:
            self.cost_judge += cost
        else:
            self.cost_generation += cost

    def _add_judge(self, result: PredictionLine, judge_error: bool) -> bool:
        judge = result.get("judge")
        details = result.get("details")
        # A verdict replayed from --judgments carries no judge block (no call was made) but
        # was judged all the same: without it only the failed replays counted as judged,
        # and judge_error_rate read 1.0 where it was 12 of 1,080.
        replayed = isinstance(details, Mapping) and "replayed_from" in details
        if judge is None and not judge_error and not replayed:
            return False
        self.judged += 1
        self.judge_errors += judge_error
        for verdict in (judge or {}).get("verdicts") or []:
            tokens_in, tokens_out = verdict.get("input_tokens"), verdict.get("output_tokens")
            if tokens_in is None and tokens_out is None:
                continue
            self.judge_usage_items += 1
            self.tokens["judge_input"] += tokens_in or 0
            self.tokens["judge_output"] += tokens_out or 0
            self._price_verdict(verdict, tokens_in or 0, tokens_out or 0)
        return True

    def _price_verdict(self, verdict: Mapping[str, Any], tokens_in: int, tokens_out: int) -> None:
        """A judge's calls, split into those answered by a batch and those answered live.

        Its prompt-cache tokens are shared between the two in proportion to their input.
        """
        model = str(verdict.get("model"))
        cached = min(_count(verdict.get("cached_input_tokens")), tokens_in)
        batch_in = min(_count(verdict.get("batch_input_tokens")), tokens_in)
        batch_out = min(_count(verdict.get("batch_output_tokens")), tokens_out)
        self.cache_tokens["judge_cached_input"] += cached
        self.cache_tokens["judge_batch_input"] += batch_in
        self.cache_tokens["judge_batch_output"] += batch_out
        batch_cached = round(cached * batch_in / tokens_in) if tokens_in else 0
        if batch_in or batch_out:
            self._price(model, batch_in, batch_out, batch_cached, True, judge=True)
        live_in, live_out = tokens_in - batch_in, tokens_out - batch_out
        if live_in or live_out or not (batch_in or batch_out):
            self._price(model, live_in, live_out, cached - batch_cached, False, judge=True)

    def _add_criteria(self, criteria: list[Any]) -> None:
        for entry in criteria:
            if not isinstance(entry, Mapping) or not isinstance(entry.get("id"), str):
                continue
            stats = self.criteria.get(entry["id"])
            if stats is None:
                if len(self.criteria) >= MAX_CRITERIA:
                    self.criteria_dropped += 1
                    continue
                stats = self.criteria[entry["id"]] = _Criterion(str(entry.get("title") or ""))
            met = entry.get("met")
            if isinstance(met, bool | int | float) and not isinstance(met, str):
                stats.judged += 1
                stats.met_sum += float(met)
            else:
                stats.unjudged += 1

    # -- output --------------------------------------------------------------------------

    @property
    def total(self) -> int:
        """Items counted."""
        return sum(self.items.values())

    @property
    def evaluated(self) -> int:
        """Items that got a graded pass/fail verdict."""
        return self.items["passed"] + self.items["failed"]

    def _item_fields(self) -> dict[str, int]:
        items = self.items
        return {
            "total_items": self.total,
            "valid_items": self.total - items["invalid"],
            "invalid_items": items["invalid"],
            "evaluated_items": self.evaluated,
            "passed_items": items["passed"],
            "failed_items": items["failed"],
            "error_items": items["error"],
            "skipped_items": items["skipped"],
            "cancelled_items": self.cancelled,
            "scored_items": len(self.scores),
            "judged_items": self.judged,
            "attachment_warning_items": self.warned,
        }

    def _cost(self) -> dict[str, Any]:
        known = self.prices is not None and not self.unpriced and self.usage_items > 0
        total = self.cost_generation + self.cost_judge
        return {
            "generation_usd": self.cost_generation if known else None,
            "judge_usd": self.cost_judge if known else None,
            "total_usd": total if known else None,
            "batch_usd": self.cost_batch if known else None,
            "live_usd": total - self.cost_batch if known else None,
            "live_equivalent_usd": self.cost_live_equivalent if known else None,
            "saved_usd": self.cost_live_equivalent - total if known else None,
            "unpriced_models": sorted(self.unpriced),
            "items_with_usage": self.usage_items,
            **{f"{name}_tokens": count for name, count in self.cache_tokens.items()},
        }

    def to_dict(
        self, *, seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES
    ) -> dict[str, Any]:
        """The block's JSON body (see ``metrics_summary.schema.json``)."""
        passed, failed = self.items["passed"], self.items["failed"]
        wilson = wilson_interval(passed, self.evaluated)
        scores = sorted(self.scores)
        boot = bootstrap_mean_interval(scores, seed=seed, resamples=resamples)
        latencies = sorted(self.latencies)
        items = self._item_fields()
        records = self.records.to_dict()
        cost = self._cost()
        block: dict[str, Any] = {
            **records,
            **items,
            "pass_count": passed,
            "fail_count": failed,
            "pass_rate": _rate(passed, self.evaluated),
            "fail_rate": _rate(failed, self.evaluated),
            "pass_rate_ci": (
                {"low": wilson[0], "high": wilson[1], "method": "wilson", "confidence": 0.95}
                if wilson
                else None
            ),
            "pass_rate_ci_low": wilson[0] if wilson else None,
            "pass_rate_ci_high": wilson[1] if wilson else None,
            "mean_score": math.fsum(scores) / len(scores) if scores else None,
            "mean_score_ci": boot.to_dict() if boot else None,
            "mean_score_ci_low": boot.low if boot else None,
            "mean_score_ci_high": boot.high if boot else None,
            "score_quantiles": (
                {name: quantile(scores, q) for name, q in _QUANTILES} if scores else None
            ),
            "score_histogram": histogram(scores) if scores else None,
            "latency_ms": (
                {
                    "count": len(latencies),
                    "mean": math.fsum(latencies) / len(latencies),
                    "p50": quantile(latencies, 0.5),
                    "p95": quantile(latencies, 0.95),
                    "p99": quantile(latencies, 0.99),
                    "max": latencies[-1],
                }
                if latencies
                else None
            ),
            "p50_latency_ms": quantile(latencies, 0.5),
            "p95_latency_ms": quantile(latencies, 0.95),
            "p99_latency_ms": quantile(latencies, 0.99),
            # No item reported usage (pre-computed responses): unknown, not 0.
            "input_tokens": self.tokens["input"] if self.usage_items else None,
            "output_tokens": self.tokens["output"] if self.usage_items else None,
            "total_tokens": self.tokens["total"] if self.usage_items else None,
            "judge_input_tokens": self.tokens["judge_input"] if self.judge_usage_items else None,
            "judge_output_tokens": self.tokens["judge_output"] if self.judge_usage_items else None,
            "cost_usd": cost["total_usd"],
            "cost": cost,
            "judge_error_count": self.judge_errors,
            "judge_error_rate": _rate(self.judge_errors, self.judged),
            "invalid_rate": _rate(items["invalid_items"], items["total_items"]),
            "error_rate": (
                _rate(self.errored_epochs, self.epoch_lines)
                if self.epoch_lines
                else _rate(items["error_items"], items["valid_items"])
            ),
            "criteria": {
                cid: {
                    "title": c.title,
                    "judged": c.judged,
                    "unjudged": c.unjudged,
                    "met_rate": c.met_sum / c.judged if c.judged else None,
                }
                for cid, c in sorted(self.criteria.items())
            },
            "criteria_dropped": self.criteria_dropped,
            "outcomes_by_reason": dict(sorted(self.reasons.items())),
            "failures_by_type": dict(sorted(self.failures.items())),
            "attachment_warnings": list(self.warnings),
        }
        return block


def _count(value: Any) -> int:
    """A token count from a result (anything else counts 0)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
