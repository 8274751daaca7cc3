"""The report's data: compact rows for every item, metrics, and text previews on a budget.

``predictions.jsonl`` is read twice and never held: the first pass classifies each item
(the metrics' own :func:`item_category`), feeds the same accumulators as the recorder (so
every count on the page comes from one computation) and measures each item's texts; the
second pass cuts the texts to the preview length that keeps the page within
:data:`PAGE_BYTES`. Failures and errors get four times the preview of passed and skipped
items. The full texts stay in ``predictions.jsonl``; each item names its line.
"""

from __future__ import annotations

import bisect
import math
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_legaleval.metrics.counts import counts_of, is_item_block
from pytest_legaleval.metrics.runfiles import RunData, invalid_items, iter_jsonl, slice_entries
from pytest_legaleval.metrics.slices import SliceAccumulator
from pytest_legaleval.metrics.stats import BOOTSTRAP_SEED
from pytest_legaleval.metrics.summary import MetricsAccumulator, item_category
from pytest_legaleval.report.texts import (
    NO_TEXTS,
    PER_DETAIL,
    Tables,
    cut_texts,
    item_texts,
    other_cap,
    script_json,
    structure_size,
    text,
    text_lengths,
)

__all__ = ["MAX_PREVIEW", "ORDER", "PAGE_BYTES", "ReportData", "collect", "fit_preview"]

ORDER = ("failed", "error", "invalid", "passed", "skipped")
"""Categories in the order the item table opens with: failures and errors first."""
PAGE_BYTES = 9_500_000
"""What the whole page may weigh; previews shrink to fit (issue: < 10 MB at 50,000 items)."""
MAX_PREVIEW = 4000
"""Longest preview of one text (a response, an explanation, a judge's reason)."""
_PAGE_OVERHEAD = 250_000
"""Bytes of the page besides rows and previews: markup, style, script, slices, charts."""


@dataclass
class _Lengths:
    """Sorted text lengths of one priority class, with prefix sums, for the fitting."""

    values: array[int] = field(default_factory=lambda: array("q"))
    prefix: list[int] = field(default_factory=list)

    def freeze(self) -> None:
        ordered = sorted(self.values)
        self.values = array("q", ordered)
        self.prefix = [0]
        for value in ordered:
            self.prefix.append(self.prefix[-1] + value)

    def total(self, cap: int) -> int:
        """Characters shown when every text is cut to ``cap``."""
        below = bisect.bisect_left(self.values, cap)
        return self.prefix[below] + cap * (len(self.values) - below)


def fit_preview(urgent: _Lengths, other: _Lengths, budget: int) -> int:
    """The longest preview (of urgent items; others get a quarter) that fits ``budget``."""
    low, high = 0, MAX_PREVIEW
    while low < high:
        mid = (low + high + 1) // 2
        if urgent.total(mid) + other.total(other_cap(mid)) <= budget:
            low = mid
        else:
            high = mid - 1
    return low


@dataclass
class ReportData:
    """Everything the page shows, computed in one place."""

    summary: dict[str, Any]
    slices: dict[str, Any]
    models: list[str]
    records: list[str]
    datasets: list[str]
    reasons: list[str]
    criteria: list[list[Any]]
    judges: list[str]
    rows: list[list[Any]]
    """Per item, in ``details``' order: record, dataset, model (indexes into their tables),
    category (index into :data:`ORDER`), score, reason (index), latency ms, attachment
    warnings, line (in ``predictions.jsonl``; negative: in ``failures.jsonl``; 0: an invalid
    record known from ``record_validation.jsonl`` only)."""
    details: list[dict[str, Any]]
    preview: int
    """Characters of a failure's texts shown (a quarter for passed and skipped items)."""
    scores: array[float]
    latencies: array[float]

    @property
    def has_latency(self) -> bool:
        """Whether any item has a latency (pre-computed responses have none)."""
        return bool(self.latencies)

    @property
    def has_warnings(self) -> bool:
        """Whether any item has an attachment warning."""
        return bool(self.summary.get("attachment_warning_items"))

    @property
    def has_scores(self) -> bool:
        """Whether any graded item has a score."""
        return bool(self.scores)


def _utf8_size(value: Any) -> int:
    return len(script_json(value).encode("utf-8"))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return round(float(value), 4)


@dataclass
class _Pass:
    """What the first pass over the items gathers."""

    tables: Tables = field(default_factory=Tables)
    rows: list[list[Any]] = field(default_factory=list)
    urgent: _Lengths = field(default_factory=_Lengths)
    other: _Lengths = field(default_factory=_Lengths)
    structure: int = 0
    scores: array[float] = field(default_factory=lambda: array("d"))
    latencies: array[float] = field(default_factory=lambda: array("d"))
    invalid_texts: list[str] = field(default_factory=list)

    def item(self, row: Mapping[str, Any], line: int) -> None:
        category = item_category(row)
        texts = item_texts(row)
        for length, urgent in text_lengths(texts, category in ORDER[:3]):
            (self.urgent if urgent else self.other).values.append(length)
        self.structure += structure_size(texts)
        score, latency = _number(row.get("score")), _number(row.get("latency_ms"))
        if category in ("passed", "failed") and score is not None:
            self.scores.append(score)
        if latency is not None:
            self.latencies.append(latency)
        tables = self.tables
        self.rows.append(
            [
                tables.records(row.get("record_id")),
                tables.datasets(row.get("dataset", row.get("dataset_id"))),
                tables.models(row.get("model")),
                ORDER.index(category),
                score,
                tables.reasons(row.get("reason")),
                None if latency is None else round(latency),
                len(texts["warnings"]),
                line,
            ]
        )

    def invalid(self, item: Mapping[str, Any]) -> None:
        tables, message = self.tables, text(item.get("message"))
        self.urgent.values.append(len(message))
        self.structure += PER_DETAIL
        self.invalid_texts.append(message)
        line = item.get("line")
        self.rows.append(
            [
                tables.records(item.get("record_id")), tables.datasets(item.get("dataset")),
                tables.models(item.get("model")), ORDER.index("invalid"), None,
                tables.reasons("invalid_record"), None, 0, -line if line else 0,
            ]
        )  # fmt: skip


def _invalid_key(item: Mapping[str, Any]) -> tuple[str, str, Any]:
    return ("invalid", text(item.get("dataset")), item.get("index", item.get("record_id")))


def _slices_of(run: RunData, invalid: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    """``metrics_by_slice.json`` recomputed from the items (old vocabulary, or it disagrees)."""
    dims = (run.slices or {}).get("dimensions") if isinstance(run.slices, Mapping) else None
    keys = [d for d in dims or () if isinstance(d, str) and d.startswith("metadata.")]
    acc = SliceAccumulator(keys)  # its own record numbers: a third pass, after the summary
    for row in iter_jsonl(run.path / "predictions.jsonl"):
        acc.add(row, tags=row.get("tags") or (), metadata=row.get("metadata") or {})
    for item in invalid:
        acc.add_invalid(dataset=text(item.get("dataset")), model=text(item.get("model")),
                        key=_invalid_key(item))  # fmt: skip
    return acc.to_dict(seed=seed)


def _same_counts(written: Mapping[str, Any] | None, here: Mapping[str, Any]) -> bool:
    return (
        bool(written)
        and is_item_block(written or {})
        and counts_of(written or {}) == counts_of(here)
    )


def collect(run: RunData) -> ReportData:
    """Read the run's items (twice, streaming) into the page's data.

    The summary is recomputed from the items; the slices are ``metrics_by_slice.json``'s
    when the run wrote them in this vocabulary and its summary counts what the items say,
    and are recomputed otherwise (a third pass), so the page never shows two counts.
    """
    path = run.path / "predictions.jsonl"
    summary_acc = MetricsAccumulator()
    first = _Pass()
    for model in run.manifest.get("models") or []:
        first.tables.models(model)
    predicted: set[Any] = set()
    for line, row in enumerate(iter_jsonl(path), 1):
        predicted.add(row.get("item_id"))
        summary_acc.add(row)
        first.item(row, line)
    invalid = invalid_items(run, predicted)
    for item in invalid:
        summary_acc.add_invalid(_invalid_key(item))
        first.invalid(item)
    first.urgent.freeze()
    first.other.freeze()
    # Rows, page and the details' structure first; the previews get what is left. Texts
    # grow when escaped (quotes, newlines, markup) and non-ASCII letters take two bytes:
    # checked after the fact, and cut again in the rare case that was not enough.
    fixed = _utf8_size(first.rows) + _PAGE_OVERHEAD + first.structure
    room = max(PAGE_BYTES - fixed, 0) * 10 // 11
    for _ in range(3):
        preview = fit_preview(first.urgent, first.other, room)
        tables = Tables(criteria=first.tables.criteria, judges=first.tables.judges)
        details = _details(path, first, preview, tables)
        spare = PAGE_BYTES - _utf8_size(first.rows) - _PAGE_OVERHEAD - _utf8_size(details)
        if spare >= 0 or preview == 0:
            break
        room = max(room + spare * 11 // 10, 0)
    bootstrap = (run.summary or {}).get("bootstrap") or {}
    found_seed = bootstrap.get("seed")
    seed = found_seed if isinstance(found_seed, int) else BOOTSTRAP_SEED
    summary = summary_acc.to_dict(seed=seed)
    written = run.slices if isinstance(run.slices, Mapping) else None
    slices_ok = (
        written is not None
        and _same_counts(run.summary, summary)
        and all(is_item_block(block) for _, _, block in slice_entries(written))
    )
    return ReportData(
        summary=summary,
        slices=dict(written)
        if slices_ok and written is not None
        else _slices_of(run, invalid, seed),
        models=first.tables.models.values,
        records=first.tables.records.values,
        datasets=first.tables.datasets.values,
        reasons=first.tables.reasons.values,
        criteria=tables.criteria.values,
        judges=tables.judges.values,
        rows=first.rows,
        details=details,
        preview=preview,
        scores=first.scores,
        latencies=first.latencies,
    )


def _details(path: Path, first: _Pass, preview: int, tables: Tables) -> list[dict[str, Any]]:
    """Second pass: each item's texts cut to its preview length, in row order."""
    details: list[dict[str, Any]] = []
    for row, line in zip(first.rows, iter_jsonl(path), strict=False):
        if ORDER[row[3]] in ORDER[:3]:
            details.append(cut_texts(item_texts(line), preview, tables))
        else:
            details.append(cut_texts(item_texts(line), other_cap(preview), tables, urgent=False))
    for message in first.invalid_texts:
        details.append(cut_texts({**NO_TEXTS, "explanation": message}, preview, tables))
    return details
