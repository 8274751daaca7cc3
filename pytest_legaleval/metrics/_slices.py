"""Metrics per slice: dataset, task type, tag, policy, model and ``metadata.KEY``.

Each slice is a :class:`~pytest_legaleval.metrics._summary.MetricsAccumulator` fed as results
arrive, so ``metrics_by_slice.json`` is computed without keeping results.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

from pytest_legaleval.metrics._counts import RecordIndex
from pytest_legaleval.metrics._prices import PriceTable
from pytest_legaleval.metrics._stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from pytest_legaleval.metrics._summary import MetricsAccumulator, item_facts
from pytest_legaleval.records import PredictionLine

__all__ = ["BASE_DIMENSIONS", "MISSING", "SliceAccumulator", "metadata_value"]

BASE_DIMENSIONS: tuple[str, ...] = ("dataset", "task_type", "tag", "policy", "model")
"""Dimensions every run slices by; ``--slice-by metadata.KEY`` adds more."""

MISSING = "(none)"
"""The slice value of an item that has no value for a dimension (no policy, no metadata key)."""


def metadata_value(metadata: Mapping[str, Any], dotted: str) -> str:
    """The slice value of ``metadata.a.b`` in a record's metadata (``MISSING`` when absent).

    Non-string scalars are written as JSON would (``true``, ``3``); lists and objects are not
    slice values and count as missing.
    """
    value: Any = metadata
    for part in dotted.split(".")[1:]:
        if not isinstance(value, Mapping) or part not in value:
            return MISSING
        value = value[part]
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return MISSING


class SliceAccumulator:
    """``dimension -> value -> MetricsAccumulator``, grown one item at a time."""

    def __init__(
        self,
        metadata_keys: Sequence[str] = (),
        prices: PriceTable | None = None,
        index: RecordIndex | None = None,
    ):
        """Slices by the base dimensions and ``metadata_keys``.

        ``index`` numbers the records for all slices; pass the run summary's
        (``MetricsAccumulator.records.index``) to keep one for the whole run.
        """
        self.metadata_keys = tuple(metadata_keys)
        self.dimensions = (*BASE_DIMENSIONS, *self.metadata_keys)
        self.prices = prices
        self.index = index if index is not None else RecordIndex()
        self.slices: dict[str, dict[str, MetricsAccumulator]] = {d: {} for d in self.dimensions}

    def _slice(self, dimension: str, value: str) -> MetricsAccumulator:
        by_value = self.slices[dimension]
        acc = by_value.get(value)
        if acc is None:
            # Attachment warnings are quoted in the run's summary only, counted in each slice.
            acc = by_value[value] = MetricsAccumulator(
                prices=self.prices, index=self.index, warning_examples=0
            )
        return acc

    def _targets(
        self,
        *,
        dataset: str,
        model: str,
        task_type: str | None,
        policy: str | None,
        tags: Iterable[str],
        metadata: Mapping[str, Any] | None,
    ) -> list[MetricsAccumulator]:
        targets = [self._slice("dataset", dataset), self._slice("model", model)]
        if task_type is None:  # an invalid record: its other attributes are untrustworthy
            return targets
        targets.append(self._slice("task_type", task_type))
        targets.append(self._slice("policy", policy or MISSING))
        targets.extend(self._slice("tag", tag) for tag in dict.fromkeys(tags))
        for key in self.metadata_keys:
            targets.append(self._slice(key, metadata_value(metadata or {}, key)))
        return targets

    def add(
        self,
        result: PredictionLine,
        *,
        tags: Iterable[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Count one item result in every slice it belongs to."""
        facts = item_facts(result)
        for acc in self._targets(
            dataset=str(result.get("dataset")),
            model=str(result.get("model")),
            task_type=str(result.get("task_type")),
            policy=result.get("policy_id"),
            tags=tags,
            metadata=metadata,
        ):
            acc.add(result, facts)

    def add_epoch(
        self,
        line: PredictionLine,
        *,
        tags: Iterable[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Count one epoch line in every slice its item belongs to (``error_rate``)."""
        for acc in self._targets(
            dataset=str(line.get("dataset")),
            model=str(line.get("model")),
            task_type=str(line.get("task_type")),
            policy=line.get("policy_id"),
            tags=tags,
            metadata=metadata,
        ):
            acc.add_epoch(line)

    def add_invalid(self, *, dataset: str, model: str, key: Hashable | None = None) -> None:
        """Count an invalid item in its dataset and model slices (only those are known).

        ``key`` names its record (see ``MetricsAccumulator.add_invalid``).
        """
        for acc in self._targets(
            dataset=dataset, model=model, task_type=None, policy=None, tags=(), metadata=None
        ):
            acc.add_invalid(key)

    def to_dict(
        self, *, seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES
    ) -> dict[str, Any]:
        """``{"dimensions": [...], "slices": {dimension: {value: block}}}``, values sorted."""
        return {
            "dimensions": list(self.dimensions),
            "slices": {
                dimension: {
                    value: acc.to_dict(seed=seed, resamples=resamples)
                    for value, acc in sorted(by_value.items())
                }
                for dimension, by_value in self.slices.items()
            },
        }
