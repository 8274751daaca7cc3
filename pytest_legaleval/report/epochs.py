"""One verdict per item when a run sampled it several times (``--epochs K``).

``predictions.jsonl`` then has one line per epoch (an ``epoch`` field, 0-based) for the same
record × model. The report shows each item once, with the verdict of every epoch listed and
one reduced verdict; :func:`reduce_epochs` is that reduction, in one place, so the metrics'
own reducer (``metrics/epochs.py``) can replace it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["EpochLine", "EpochVerdict", "epoch_of", "reduce_epochs"]

_GRADED = ("passed", "failed")
_DEFAULT_THRESHOLD = 0.5
"""What the ``mean`` reducer compares with when an item has no threshold (MCQ)."""


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


@dataclass(frozen=True, slots=True)
class EpochVerdict:
    """The item's one verdict over its epochs."""

    category: str
    score: float | None
    line: int
    """The line whose texts the item shows (an epoch with the reduced verdict)."""


def epoch_of(value: object) -> int:
    """A line's ``epoch`` field as a number (0 when absent or not a non-negative integer)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def reduce_epochs(lines: Sequence[EpochLine]) -> EpochVerdict:
    """The ``mean`` reducer: the mean score over graded epochs against the threshold.

    As issue #27 defines the default (``--epoch-reducer mean``): an item passes when the
    mean of its graded epochs' scores reaches the policy's threshold (0.5 where it has
    none). Epochs without a verdict (errors, skips) do not vote; an item none of whose
    epochs got one keeps the first epoch's category. The texts shown are those of the
    first epoch whose own verdict equals the reduced one. A single line is its own verdict.
    """
    ordered = sorted(lines, key=lambda e: (e.epoch, e.line))
    if len(ordered) == 1:
        only = ordered[0]
        return EpochVerdict(only.category, only.score, only.line)
    graded = [e for e in ordered if e.category in _GRADED]
    if not graded:
        first = ordered[0]
        return EpochVerdict(first.category, None, first.line)
    scores = [e.score if e.score is not None else float(e.category == "passed") for e in graded]
    mean = sum(scores) / len(scores)
    threshold = next((e.threshold for e in graded if e.threshold is not None), _DEFAULT_THRESHOLD)
    category = "passed" if mean >= threshold else "failed"
    shown = next((e for e in graded if e.category == category), graded[0])
    return EpochVerdict(category, round(mean, 4), shown.line)
