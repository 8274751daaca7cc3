"""What a run's metrics are counted from: its items, as their prediction lines.

One tally for a run being recorded (``run.recorder``) and for a run rebuilt from its shards
(``run.merge``), so both write the same ``metrics_summary.json`` and
``metrics_by_slice.json`` for the same lines. An item counts once, by its reduced line
(``metrics.epochs``: with ``--epochs K`` its K epoch lines give one verdict); the epoch
figures (pass@k, flaky records) and the uncertainty block read every epoch line.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from pytest_legaleval.metrics.epoch_summary import EpochSummary
from pytest_legaleval.metrics.prices import PriceTable
from pytest_legaleval.metrics.slices import SliceAccumulator
from pytest_legaleval.metrics.summary import MetricsAccumulator
from pytest_legaleval.run.manifest import EvaluatorLog

__all__ = ["RunTally"]


class RunTally:
    """The accumulators of one run's metrics.

    Args:
        prices: the price table for cost.
        slice_by: extra slice dimensions (``metadata.KEY``).
        epochs: the planned samples per item.
        reducer: how an item's epochs become its verdict.
        cluster_by: the field the uncertainty block clusters records by.

    """

    def __init__(
        self,
        *,
        prices: PriceTable,
        slice_by: Sequence[str] = (),
        epochs: int = 1,
        reducer: str = "mean",
        cluster_by: str | None = None,
    ) -> None:
        self.summary = MetricsAccumulator(prices=prices)
        self.slices = SliceAccumulator(slice_by, prices, self.summary.records.index)
        self.epochs = EpochSummary(epochs=epochs, reducer=reducer, cluster_by=cluster_by)
        self.evaluators = EvaluatorLog()

    def add_epoch(self, line: Mapping[str, Any]) -> None:
        """One epoch's prediction line (the epoch figures read every one)."""
        self.epochs.add(line)

    def add_item(
        self,
        line: Mapping[str, Any],
        *,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """One item, by its (reduced) prediction line."""
        self.summary.add(line)
        self.slices.add(line, tags=tags, metadata=metadata)
        self.evaluators.add(line)

    def add_invalid(self, key: Hashable, *, dataset: str, model: str) -> None:
        """An invalid record's item (``key`` names the record, once for all its models)."""
        self.summary.add_invalid(key)
        self.slices.add_invalid(dataset=dataset, model=model, key=key)

    def summary_block(self, seed: int) -> dict[str, Any]:
        """The figures of ``metrics_summary.json``.

        The counts, and the epoch and uncertainty figures for the run and per model
        (``by_model``).
        """
        return {
            **self.summary.to_dict(seed=seed),
            **self.epochs.to_dict(),
            "by_model": self.epochs.by_model(),
        }

    def slices_block(self, seed: int) -> dict[str, Any]:
        """``metrics_by_slice.json``'s figures."""
        return self.slices.to_dict(seed=seed)

    def flaky_lines(self) -> list[dict[str, Any]]:
        """The ``flaky_records.jsonl`` lines."""
        return self.epochs.flaky_lines()
