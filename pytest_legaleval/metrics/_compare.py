"""``legaleval compare RUN_A RUN_B``: metric deltas, per-slice deltas and flipped records.

RUN_A is the reference (e.g. the main branch), RUN_B the candidate; every delta is
B − A. Metric values come from each run's summary, and the paired part from their shared
items: McNemar and a bootstrap interval of the mean-score difference for runs of one epoch
without clusters; with epochs or a cluster field (``--cluster-by``, else the runs' own
``cluster_by`` setting) the paired difference of record means with clustered errors and a
cluster bootstrap (``metrics._baseline``). Epoch lines are reduced to one line per item
wherever one verdict per item is counted.

This module computes the comparison as data; ``run.compare_render`` writes it as text,
Markdown or JSON (rendering stays out of ``metrics``, below the terminal's sanitizer).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_legaleval.metrics._baseline import check_same_scoring, compare_runs
from pytest_legaleval.metrics._gates import METRICS, block_from_rows, metric_value
from pytest_legaleval.metrics._runfiles import (
    RunData,
    invalid_items,
    item_rows,
    run_cluster_by,
    run_reducer,
    slice_entries,
)
from pytest_legaleval.records import PredictionLine

__all__ = ["comparison"]

_SLICE_METRICS = ("pass_rate", "mean_score", "error_rate")


def _block(run: RunData, items: Sequence[PredictionLine]) -> Mapping[str, Any]:
    return run.summary or block_from_rows(items, invalid_items(run))


def _slices(
    run: RunData, items: Sequence[PredictionLine]
) -> dict[tuple[str, str], Mapping[str, Any]]:
    found = {(d, v): block for d, v, block in slice_entries(run.slices)}
    if found:
        return found
    invalid = invalid_items(run)
    for dimension in ("dataset", "model", "task_type"):
        for value in sorted({str(r.get(dimension)) for r in items}):
            rows = [r for r in items if str(r.get(dimension)) == value]
            bad = [r for r in invalid if str(r.get(dimension)) == value]
            found[(dimension, value)] = block_from_rows(rows, bad)
    return found


def _entry(block: Mapping[str, Any], metric: str) -> dict[str, Any]:
    _, value, interval, n = metric_value(block, metric)
    return {"value": value, "interval": list(interval) if interval else None, "n": n}


def _delta(a: dict[str, Any], b: dict[str, Any]) -> float | None:
    if a["value"] is None or b["value"] is None:
        return None
    return float(b["value"]) - float(a["value"])


def comparison(
    run_a: RunData,
    run_b: RunData,
    *,
    alpha: float = 0.05,
    allow_scoring_mismatch: bool = False,
    cluster_by: str | None = None,
    reducer: str | None = None,
) -> dict[str, Any]:
    """The JSON-safe comparison of two runs (B relative to A).

    ``cluster_by`` defaults to B's ``cluster_by`` setting, else A's; ``reducer`` (the epoch
    reducer) to B's, else ``mean``.

    Raises:
        ConfigError: the runs scored rubric items under different rules (unless
            ``allow_scoring_mismatch``); an unknown reducer; a line with a bad ``epoch``.

    """
    if not allow_scoring_mismatch:
        check_same_scoring(run_a.predictions, run_b.predictions)
    if cluster_by:  # named on the command line: a field no line has is a usage error
        from pytest_legaleval.metrics._run_checks import RecordFields

        fields = RecordFields(cluster_by, noun="prediction lines")
        fields.extend(run_a.predictions)
        fields.extend(run_b.predictions)
        fields.check_cluster_field()
    cluster_by = cluster_by or run_cluster_by(run_b) or run_cluster_by(run_a)
    reducer = reducer or run_reducer(run_b)
    items_a, items_b = item_rows(run_a, reducer), item_rows(run_b, reducer)
    block_a, block_b = _block(run_a, items_a), _block(run_b, items_b)
    metrics = {}
    for metric in METRICS:
        a, b = _entry(block_a, metric), _entry(block_b, metric)
        metrics[metric] = {"a": a, "b": b, "delta": _delta(a, b)}
    slices_a, slices_b = _slices(run_a, items_a), _slices(run_b, items_b)
    slices = []
    for key in sorted(set(slices_a) | set(slices_b)):
        row: dict[str, Any] = {"dimension": key[0], "value": key[1]}
        for metric in _SLICE_METRICS:
            a = _entry(slices_a[key], metric) if key in slices_a else _entry({}, metric)
            b = _entry(slices_b[key], metric) if key in slices_b else _entry({}, metric)
            row[metric] = {"a": a["value"], "b": b["value"], "delta": _delta(a, b)}
        row["n"] = {
            "a": _entry(slices_a.get(key, {}), "pass_rate")["n"],
            "b": _entry(slices_b.get(key, {}), "pass_rate")["n"],
        }
        slices.append(row)
    paired = compare_runs(
        run_a.predictions,
        run_b.predictions,
        level=1 - alpha,
        cluster_by=cluster_by,
        reducer=reducer,
    )
    changes: dict[str, list[dict[str, Any]]] = {}
    for change in paired.changes:
        changes.setdefault(change.change, []).append(change.to_dict())
    return {
        "run_a": {"run_id": run_a.run_id, "path": str(run_a.path)},
        "run_b": {"run_id": run_b.run_id, "path": str(run_b.path)},
        "alpha": alpha,
        "metrics": metrics,
        "paired": paired.to_dict(),
        "slices": slices,
        "changes": {
            name: changes.get(name, [])
            for name in (
                "pass_to_fail",
                "fail_to_pass",
                "pass_to_error",
                "fewer_passes",
                "only_in_baseline",
                "only_in_current",
            )
        },
    }
