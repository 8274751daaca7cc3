"""The epoch and uncertainty figures of a run, accumulated line by line for the summary.

:class:`EpochSummary` is what the recorder feeds every ``predictions.jsonl`` line
(``records.PredictionLine``) to, and what ``metrics_summary.json`` takes ``epochs``, ``pass_at_k``,
``pass_hat_k``, ``flaky_records`` and ``uncertainty`` from — for the run and per model. It
keeps only the few fields the figures need per line, so a large run stays small in memory.

Units: per model, a unit is a record (its mean over verdict epochs of ``passed``); for the
run, a unit is an item (record × model), clustered by the cluster field when one is given —
items of one record under several models then share their record's cluster.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._artifacts import FLAKY_RECORDS, INCOMPLETE_RECORDS
from pytest_legaleval.metrics._clustered import (
    Uncertainty,
    cluster_key,
    cluster_value,
    clustered_uncertainty,
)
from pytest_legaleval.metrics._epochs import (
    DEFAULT_REDUCER,
    REDUCERS,
    EpochFigures,
    EpochItem,
    epoch_figures,
    flaky_line,
    group_items,
    incomplete_line,
)
from pytest_legaleval.metrics._lines import SlimKey, slim_line
from pytest_legaleval.records import PredictionLine

__all__ = ["EpochSummary"]

_KEPT: tuple[SlimKey, ...] = (
    "record_id", "dataset", "model", "epoch", "outcome", "passed", "score", "reason",
)  # fmt: skip


class EpochSummary:
    """Accumulates a run's lines; answers the epoch figures and the uncertainty block.

    Args:
        epochs: the planned K (``--epochs``); the figures are keyed up to it.
        reducer: the ``--epoch-reducer`` (the verdict per item; does not change the figures,
            which are over all verdict epochs).
        cluster_by: the ``--cluster-by`` dotted field, or ``None``.

    """

    def __init__(
        self, *, epochs: int = 1, reducer: str = DEFAULT_REDUCER, cluster_by: str | None = None
    ) -> None:
        if reducer not in REDUCERS:
            raise ConfigError(
                f"unknown epoch reducer {reducer!r}; choose one of {', '.join(REDUCERS)}"
            )
        self.epochs = epochs
        self.reducer = reducer
        self.cluster_by = cluster_by or None
        self._rows: list[PredictionLine] = []
        self._grouped: dict[Any, EpochItem] | None = None

    def add(self, row: PredictionLine) -> None:
        """One prediction line (any epoch; a later line of the same epoch wins)."""
        self._rows.append(slim_line(row, _KEPT, self.cluster_by))
        self._grouped = None

    def extend(self, rows: Iterable[PredictionLine]) -> None:
        """:meth:`add` every row."""
        for row in rows:
            self.add(row)

    def items(self, model: str | None = None) -> list[EpochItem]:
        """The items (all, or one model's), in order of their first line."""
        if self._grouped is None:
            self._grouped = group_items(self._rows, self.reducer)
        found = self._grouped.values()
        return [i for i in found if model is None or i.key[2] == model]

    def models(self) -> list[str]:
        """The models seen, sorted (results arrive in any order under xdist)."""
        return sorted({item.key[2] for item in self.items()})

    def figures(self, model: str | None = None) -> EpochFigures:
        """``epochs``, ``pass_at_k``, ``pass_hat_k`` and the flaky items."""
        return epoch_figures(self.items(model), self.epochs)

    def uncertainty(self, model: str | None = None) -> Uncertainty | None:
        """The ``uncertainty`` block over the items' pass fractions (``None``: no verdict).

        Per model (or in a run of one model) the units are records. For the run of several
        models they are items, and two models' answers to one record are not independent:
        the items are clustered by ``--cluster-by`` when given, else by their record.
        """
        judged = [item for item in self.items(model) if item.n]
        values = [item.c / item.n for item in judged]
        several = model is None and len({item.key[2] for item in judged}) > 1
        unit = "item" if several else "record"
        if self.cluster_by:
            clusters = [self._cluster(item) for item in judged]
            return clustered_uncertainty(values, clusters, cluster_by=self.cluster_by, unit=unit)
        if several:
            by_record: list[str | None] = [
                cluster_key([item.key[0], item.key[1]]) for item in judged
            ]
            return clustered_uncertainty(values, by_record, cluster_by="record", unit=unit)
        return clustered_uncertainty(values, None, unit=unit)

    def _cluster(self, item: EpochItem) -> str | None:
        assert self.cluster_by is not None
        for line in item.lines.values():
            key = cluster_key(cluster_value(line, self.cluster_by))
            if key is not None:
                return key
        return None

    def to_dict(self, model: str | None = None) -> dict[str, Any]:
        """The summary's fields (all items, or one model's).

        ``epochs``, ``pass_at_k``, ``pass_hat_k``, ``flaky_records`` (a count) and
        ``uncertainty`` (``None`` without a verdict).
        """
        figures = self.figures(model)
        block = figures.to_dict()
        block["error_rate"] = figures.error_rate
        found = self.uncertainty(model)
        block["uncertainty"] = found.to_dict() if found is not None else None
        return block

    def by_model(self) -> dict[str, dict[str, Any]]:
        """:meth:`to_dict` of every model."""
        return {model: self.to_dict(model) for model in self.models()}

    def flaky_lines(self) -> list[dict[str, Any]]:
        """The ``flaky_records.jsonl`` lines, sorted by (dataset, record_id, model)."""
        flaky = sorted((i for i in self.items() if i.flaky), key=lambda i: i.key)
        return [flaky_line(item) for item in flaky]

    def incomplete_lines(self) -> list[dict[str, Any]]:
        """The ``incomplete_records.jsonl`` lines, sorted by (dataset, record_id, model)."""
        figures = self.figures()
        keys = set(figures.incomplete)
        found = sorted((i for i in self.items() if i.key in keys), key=lambda i: i.key)
        return [incomplete_line(item, figures.epochs) for item in found]

    def terminal_lines(self) -> list[str]:
        """What the terminal summary prints about epochs and the interval shown."""
        lines = []
        figures = self.figures()
        if figures.epochs > 1:
            k = str(figures.epochs)
            at, hat = figures.pass_at_k, figures.pass_hat_k
            lines.append(
                f"epochs: {figures.epochs} (reducer {self.reducer}); pass@1 {_f(at['1'])}, "
                f"pass@{k} {_f(at[k])}, pass^{k} {_f(hat[k])} over the "
                f"{figures.pass_at_k_records} items with a verdict in every epoch; flaky "
                f"records {len(figures.flaky)}" + (f" ({FLAKY_RECORDS})" if figures.flaky else "")
            )
            if figures.incomplete:
                lines.append(
                    f"incomplete: {len(figures.incomplete)} items lack a verdict in some epoch "
                    f"({figures.errored_epochs} of {figures.epoch_lines} epoch lines errored; "
                    f"listed in {INCOMPLETE_RECORDS}, left out of pass@k)"
                )
        found = self.uncertainty()
        if found is not None:
            # With one epoch this is the table's pass rate again: named as the run's own
            # (clustered, t) interval, beside the table's Wilson one over items.
            name = (
                "pass rate over epochs" if figures.epochs > 1 else "pass rate, the run's interval"
            )
            lines.append(f"{name}: {found.describe()}")
        return lines


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"
