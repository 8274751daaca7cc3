"""Prediction lines as the metrics hold them: a slim copy, and the line of a reduced item.

``records.PredictionLine`` is the one type the metrics and gates take (read and checked by
``metrics._rundir_check.prediction_lines``). A reader that keeps every line of a run keeps a
slim copy of each (:func:`slim_line`); an item of several epochs is stood for by an
:class:`ItemLine`, its representative epoch's line with the :class:`Reduction`
(``metrics._epochs``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, Literal, TypedDict

from pytest_legaleval.metrics._clustered import slim_cluster_field
from pytest_legaleval.metrics._rundir_check import as_prediction_line
from pytest_legaleval.records import PredictionLine

__all__ = ["SLIM_KEYS", "ItemLine", "Reduction", "SlimKey", "slim_line"]


class Reduction(TypedDict, total=False):
    """What an item's reduced line adds to its representative epoch's (``--epochs K > 1``)."""

    epochs: int
    """Epoch lines of the item."""
    epoch_verdicts: int
    """Those with a verdict (``n``)."""
    epoch_passes: int
    """Those that passed (``c``)."""
    epoch_reducer: str
    """The reducer that gave the verdict."""
    pass_fraction: float | None
    """``c / n``."""


class ItemLine(PredictionLine, Reduction, total=False):
    """The line that stands for an item of several epochs (``metrics._epochs.EpochItem.line``).

    Its verdict is the reduced one and it carries the :class:`Reduction`; a one-epoch
    item's line is its only line, as read. Readers take either as a ``PredictionLine`` and
    read the reduction's keys with ``.get``.
    """


SlimKey = Literal[
    "dataset", "record_id", "model", "epoch", "outcome", "passed", "score", "reason",
    "explanation", "grader", "scoring",
]  # fmt: skip
SLIM_KEYS: Final[tuple[SlimKey, ...]] = (
    "dataset", "record_id", "model", "epoch", "outcome", "passed", "score", "reason",
    "explanation", "grader", "scoring",
)  # fmt: skip
"""The fields that reducing, pairing, the scoring check and ``regressions.jsonl`` read."""


def slim_line(
    row: PredictionLine, keys: Iterable[SlimKey] = SLIM_KEYS, cluster_by: str | None = None
) -> PredictionLine:
    """The part of a prediction line that the epoch figures and comparisons need.

    ``keys`` where the line has them, ``details.threshold`` (the ``mean`` reducer's) and,
    with ``cluster_by``, the field at that dotted path, nested as in the line: what a
    reader that holds every line of a run keeps of each (its memory stays small).
    """
    out: PredictionLine = {}
    for key in keys:
        if key in row:
            out[key] = row[key]
    details = row.get("details")
    if isinstance(details, Mapping) and "threshold" in details:
        out["details"] = {"threshold": details["threshold"]}
    if cluster_by:
        found = slim_cluster_field(row, cluster_by)
        if found:  # a part of the line's own field: checked as the line was
            return as_prediction_line({**found, **out}, f"the {cluster_by} field")
    return out
