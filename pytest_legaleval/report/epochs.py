"""One verdict per item when a run sampled it several times (``--epochs K``).

``predictions.jsonl`` then has one line per epoch (an ``epoch`` field, 0-based) for the same
record × model. The report shows each item once, with the verdict of every epoch listed and
one reduced verdict. The reduction is the metrics' own (:func:`~pytest_legaleval.metrics.
epochs.reduce_verdict`, with the run's ``--epoch-reducer``), so the page counts what
``metrics_summary.json`` counts; the report keeps only a compact :class:`EpochLine` per
line, not the lines themselves (a run of 50,000 items × K epochs is streamed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pytest_legaleval.metrics._epochs import (
    DEFAULT_REDUCER,
    REDUCERS,
    epoch_verdict,
    reduce_verdict,
)
from pytest_legaleval.records import PredictionLine

__all__ = ["EpochLine", "EpochVerdict", "epoch_line", "epoch_of", "reduce_epochs"]


@dataclass(frozen=True, slots=True)
class EpochLine:
    """One epoch's line of an item, as the report classified it."""

    epoch: int
    """The line's ``epoch`` (0 when the line has none)."""
    category: str
    """``passed``, ``failed``, ``error``, ``skipped`` or ``invalid``."""
    score: float | None
    """The line's score (``None`` without a verdict)."""
    threshold: float | None
    """The pass threshold the grader used (``details.threshold``), if any."""
    line: int
    """Its line number in ``predictions.jsonl`` (1-based)."""
    verdict: bool | None = None
    """Its own pass or fail; ``None`` for an epoch without a verdict (an error, a skip),
    which the reducers leave out."""


@dataclass(frozen=True, slots=True)
class EpochVerdict:
    """The item's one verdict over its epochs."""

    category: str
    score: float | None
    line: int
    """The line whose texts the item shows (an epoch with the reduced verdict)."""


def epoch_of(value: object) -> int:
    """A line's ``epoch`` field as a number (0 when absent or not a non-negative integer).

    The report shows a bad value as epoch 0 rather than refusing the run: it is a viewer.
    """
    return value if type(value) is int and value > 0 else 0


def _finite(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def epoch_line(row: PredictionLine, category: str, line: int) -> EpochLine:
    """The compact form of one prediction line (``category`` from ``item_category``)."""
    details = row.get("details")
    threshold = _finite(details.get("threshold")) if isinstance(details, Mapping) else None
    return EpochLine(
        epoch=epoch_of(row.get("epoch")),
        category=category,
        score=_finite(row.get("score")) if category in ("passed", "failed") else None,
        threshold=threshold,
        line=line,
        verdict=epoch_verdict(row),
    )


def reduce_epochs(lines: Sequence[EpochLine], reducer: str = DEFAULT_REDUCER) -> EpochVerdict:
    """The item's verdict over its epochs, as ``metrics._epochs`` reduces them.

    The verdict epochs' passes (and, for ``mean``, their scores against the grader's
    threshold) go to :func:`~pytest_legaleval.metrics._epochs.reduce_verdict`; the score is
    their mean. The texts shown are those of the first epoch whose own verdict equals the
    reduced one; an item none of whose epochs has a verdict keeps its first epoch's
    category and texts. A single line is its own verdict.
    """
    ordered = sorted(lines, key=lambda e: (e.epoch, e.line))
    if len(ordered) == 1:
        only = ordered[0]
        return EpochVerdict(only.category, only.score, only.line)
    judged = [e for e in ordered if e.verdict is not None]
    if not judged:
        return EpochVerdict(ordered[0].category, None, ordered[0].line)
    scores = [Fraction(e.score if e.score is not None else int(bool(e.verdict))) for e in judged]
    threshold = next((e.threshold for e in judged if e.threshold is not None), None)
    passes = [bool(e.verdict) for e in judged]
    passed = reduce_verdict(passes, scores, reducer if reducer in REDUCERS else DEFAULT_REDUCER,
                            threshold)  # fmt: skip
    shown = next((e for e in judged if e.verdict == passed), judged[0])
    score = round(float(sum(scores, Fraction(0)) / len(scores)), 4)
    return EpochVerdict("passed" if passed else "failed", score, shown.line)
