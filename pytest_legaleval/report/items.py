"""The first pass over ``predictions.jsonl``: one row per item, its epochs, its text lengths.

An item is a record × model; a run with ``--epochs K`` has K lines per item. This pass
keeps, per line, a compact row and the lengths of its texts; once every line is read,
:meth:`ItemPass.reduce` gives each item one verdict (:func:`~pytest_legaleval.report.epochs.
reduce_epochs`) and counts the texts of the line each item shows into the page's budget.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_legaleval.metrics._epochs import DEFAULT_REDUCER
from pytest_legaleval.metrics._summary import item_category
from pytest_legaleval.records import PredictionLine
from pytest_legaleval.report.budget import MAX_TITLE, Budget
from pytest_legaleval.report.epochs import EpochLine, epoch_line, reduce_epochs
from pytest_legaleval.report.texts import (
    PER_DETAIL,
    Table,
    Tables,
    item_texts,
    structure_size,
    text,
    text_lengths,
)

__all__ = ["NO_RESPONSE", "ORDER", "ItemPass", "number"]

ORDER = ("failed", "error", "invalid", "passed", "skipped")
"""Categories in the order the item table opens with: failures and errors first."""
URGENT = frozenset(ORDER[:3])
NO_RESPONSE = -1
"""The response hash of an item without a response (``hash`` never returns -1)."""
# Row fields (report.js reads them by position).
R, DS, M, CAT, SCORE, REASON, LAT, WARN, LINE, Q = range(10)


def number(value: Any) -> float | None:
    """A finite number rounded for the page, else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return round(float(value), 4)


@dataclass
class ItemPass:
    """What the first pass over the items gathers (see the module's docstring)."""

    reducer: str = DEFAULT_REDUCER
    """The run's ``--epoch-reducer``."""
    budget: Budget = field(default_factory=Budget)
    tables: Tables = field(default_factory=Tables)
    questions: Table = field(default_factory=Table)
    """``(dataset, record_id)`` of each record shown: rows point to its element."""
    rows: list[list[Any]] = field(default_factory=list)
    """One row per item (after :meth:`reduce`), fields ``R`` … ``Q``."""
    epochs: list[list[list[Any]]] = field(default_factory=list)
    """Per row: ``[epoch, category index, score, line]`` of each epoch (empty: one line)."""
    item_ids: list[tuple[str, int]] = field(default_factory=list)
    """Per row: ``(item_id, epoch)`` of the line shown."""
    responses: list[int] = field(default_factory=list)
    """Per row: the hash of the shown line's response (:data:`NO_RESPONSE` for none)."""
    shown: dict[int, int] = field(default_factory=dict)
    """Line number -> row, for the line each item shows."""
    structure: int = 0
    titles: set[int] = field(default_factory=set)
    invalid_texts: list[str] = field(default_factory=list)
    # per line, until reduce()
    _lines: list[list[Any]] = field(default_factory=list)
    _ids: list[tuple[str, int]] = field(default_factory=list)
    _hashes: array[int] = field(default_factory=lambda: array("q"))
    _sizes: array[int] = field(default_factory=lambda: array("q"))
    _starts: array[int] = field(default_factory=lambda: array("q", [0]))
    _lengths: array[int] = field(default_factory=lambda: array("q"))
    _kinds: array[int] = field(default_factory=lambda: array("b"))
    _groups: dict[tuple[str, str, str], list[EpochLine]] = field(default_factory=dict)

    def item(self, row: PredictionLine, line: int) -> None:
        """Read one ``predictions.jsonl`` line (``line`` is its 1-based number)."""
        category = item_category(row)
        texts = item_texts(row)
        for length, main in text_lengths(texts, True):
            self._lengths.append(length)
            self._kinds.append(1 if main else 0)
        self._starts.append(len(self._lengths))
        self._sizes.append(structure_size(texts))
        for criterion in texts["criteria"]:
            self.count_title(criterion["title"], criterion["weight"])
        response = texts["response"]
        has_response = row.get("model_response", row.get("response")) is not None
        self._hashes.append(hash(response) if has_response else NO_RESPONSE)
        # An item without a verdict shows no score, whatever an older run wrote for it.
        score = number(row.get("score")) if category in ("passed", "failed") else None
        latency = number(row.get("latency_ms"))
        dataset, record_id = row.get("dataset", row.get("dataset_id")), row.get("record_id")
        epoch = epoch_line(row, category, line)
        self._ids.append((text(row.get("item_id")), epoch.epoch))
        tables = self.tables
        self._lines.append(
            [
                tables.records(record_id),
                tables.datasets(dataset),
                tables.models(row.get("model")),
                ORDER.index(category),
                score,
                tables.reasons(row.get("reason")),
                None if latency is None else round(latency),
                len(texts["warnings"]),
                line,
                self.questions((text(dataset), text(record_id))),
            ]
        )
        item = (text(dataset), text(record_id), text(row.get("model")))
        self._groups.setdefault(item, []).append(epoch)

    def count_title(self, title: str, weight: Any) -> None:
        """Count a criterion's title once (the page writes each distinct title once)."""
        key = hash((title[:MAX_TITLE], weight))
        if key not in self.titles:
            self.titles.add(key)
            self.budget.add("title", min(len(title), MAX_TITLE))

    def reduce(self) -> None:
        """One row per item, with its reduced verdict; count the shown lines' texts."""
        for lines in self._groups.values():
            verdict = reduce_epochs(lines, self.reducer)
            index = verdict.line - 1
            row = list(self._lines[index])
            row[CAT], row[SCORE] = ORDER.index(verdict.category), verdict.score
            several = len(lines) > 1 or any(e.epoch for e in lines)
            self.epochs.append(
                [[e.epoch, ORDER.index(e.category), e.score, e.line]
                 for e in sorted(lines, key=lambda e: (e.epoch, e.line))] if several else []
            )  # fmt: skip
            self.shown[verdict.line] = len(self.rows)
            self.rows.append(row)
            self.item_ids.append(self._ids[index])
            self.responses.append(self._hashes[index])
            self.structure += self._sizes[index] + (24 * len(lines) if several else 0)
            urgent = verdict.category in URGENT
            for at in range(self._starts[index], self._starts[index + 1]):
                main = urgent and (self._kinds[at] == 1)
                self.budget.add("urgent" if main else "other", self._lengths[at])
        self._lines, self._ids, self._groups = [], [], {}
        self._hashes, self._sizes = array("q"), array("q")
        self._starts, self._lengths, self._kinds = array("q", [0]), array("q"), array("b")

    def invalid(self, item: Mapping[str, Any]) -> None:
        """An invalid item known from ``failures.jsonl`` or ``record_validation.jsonl``."""
        tables, message = self.tables, text(item.get("message"))
        self.budget.add("urgent", len(message))
        self.structure += PER_DETAIL
        self.invalid_texts.append(message)
        line = item.get("line")
        dataset, record_id = item.get("dataset"), item.get("record_id")
        self.rows.append(
            [
                tables.records(record_id), tables.datasets(dataset),
                tables.models(item.get("model")), ORDER.index("invalid"), None,
                tables.reasons("invalid_record"), None, 0, -line if line else 0,
                self.questions((text(dataset), text(record_id))),
            ]
        )  # fmt: skip
        self.epochs.append([])
        self.item_ids.append((text(item.get("item_id")), 0))
        self.responses.append(NO_RESPONSE)

    def verdict_line(self, row: int, line: PredictionLine) -> PredictionLine:
        """The shown ``line`` of ``row`` with the item's reduced verdict (for the counts)."""
        if not self.epochs[row]:
            return line
        category, score = ORDER[self.rows[row][CAT]], self.rows[row][SCORE]
        if category not in ("passed", "failed"):
            return line
        return {**line, "outcome": category, "passed": category == "passed", "score": score}

    def urgent_rows(self) -> list[bool]:
        """Per row: whether it is a failure, an error or invalid."""
        return [ORDER[row[CAT]] in URGENT for row in self.rows]

    def urgent_questions(self) -> list[bool]:
        """Per record element: whether any of its items is urgent (its texts get more room)."""
        out = [False] * len(self.questions.values)
        for row in self.rows:
            if ORDER[row[CAT]] in URGENT:
                out[row[Q]] = True
        return out
