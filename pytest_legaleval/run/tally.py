"""What a run's metrics are counted from: its items, as their prediction lines.

One tally for a run being recorded (``run.recorder``) and for a run rebuilt from its shards
(``run.merge``), so both write the same ``metrics_summary.json`` and
``metrics_by_slice.json`` for the same lines. An item counts once, by its reduced line
(``metrics._epochs``: with ``--epochs K`` its K epoch lines give one verdict); the epoch
figures (pass@k, flaky records) and the uncertainty block read every epoch line.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_legaleval.grading._protocols import protocol_for_policy
from pytest_legaleval.metrics._epoch_summary import EpochSummary
from pytest_legaleval.metrics._prices import PriceTable
from pytest_legaleval.metrics._slices import SliceAccumulator
from pytest_legaleval.metrics._summary import MetricsAccumulator
from pytest_legaleval.records import PredictionLine
from pytest_legaleval.run.manifest import EvaluatorLog

if TYPE_CHECKING:
    from pytest_legaleval.metrics._human_labels import LabelFile

__all__ = [
    "RunTally",
    "is_official_policy",
    "line_figures",
    "merge_slice_blocks",
]


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

    def add_epoch(
        self,
        line: PredictionLine,
        *,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """One epoch's prediction line (the epoch figures and ``error_rate`` read every one)."""
        self.epochs.add(line)
        self.summary.add_epoch(line)
        self.slices.add_epoch(line, tags=tags, metadata=metadata)

    def add_item(
        self,
        line: PredictionLine,
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


# -- figures that read every line -------------------------------------------------------------


def is_official_policy(policy_id: object) -> bool:
    """Whether ``policy_id`` is a registered protocol's: the run then has a ``benchmarks`` block.

    The registry (``grading._protocols``) is asked, so a protocol registered by a user or a
    later benchmark gets its figures without a list to keep up to date here.
    """
    return protocol_for_policy(policy_id) is not None


def line_figures(
    lines: Iterable[PredictionLine],
    *,
    labels: LabelFile | None,
    reducer: str,
    consistency: bool,
    seed: int,
) -> tuple[dict[str, Any], dict[str, dict[str, dict[str, Any]]], list[dict[str, Any]]]:
    """The figures computed from all of a run's prediction lines at once.

    ``benchmarks`` (official protocols' figures, when a line was graded under one),
    ``judge_audit`` (with ``labels``; per model and per policy in the slices),
    ``judge_consistency`` (with ``consistency``: re-judged answers or a judge panel).

    Returns:
        The summary's blocks; the slices' blocks (``{"model": {m: {...}}, "policy": …}``);
        the label rows left out (``record_errors`` entries).

    """
    from pytest_legaleval.metrics._benchmarks import benchmark_figures

    rows = list(lines)
    summary: dict[str, Any] = {}
    slices: dict[str, dict[str, dict[str, Any]]] = {}
    errors: list[dict[str, Any]] = []
    benchmarks = benchmark_figures(rows)
    if benchmarks:
        summary["benchmarks"] = benchmarks
    if labels is not None:
        from pytest_legaleval.metrics._audit import AuditSettings, judge_audit
        from pytest_legaleval.metrics._audit_items import epoch_reducer

        audit = judge_audit(
            rows, labels, reducer=epoch_reducer(reducer), settings=AuditSettings(seed=seed)
        )
        summary["judge_audit"] = audit.summary_block()
        slices["model"] = {m: {"judge_audit": b} for m, b in audit.by_model.items()}
        slices["policy"] = {p: {"judge_audit": b} for p, b in audit.by_policy.items()}
        errors = list(audit.record_errors)
    if consistency:
        from pytest_legaleval.metrics._judge_consistency import consistency_from_lines

        summary["judge_consistency"] = consistency_from_lines(rows)
    return summary, slices, errors


def merge_slice_blocks(
    by_slice: dict[str, Any], blocks: Mapping[str, Mapping[str, Mapping[str, Any]]]
) -> None:
    """Add per-slice blocks (``judge_audit`` per model and policy) to the slices' figures."""
    slices = by_slice.setdefault("slices", {})
    for dimension, values in blocks.items():
        target = slices.setdefault(dimension, {})
        for value, block in values.items():
            target.setdefault(value, {}).update(block)
