"""Reading a finished run directory back: the artifacts that gates, compare and report use.

A run with ``--epochs K > 1`` has one ``predictions.jsonl`` line per epoch; a reader that
needs one verdict per item reads :func:`item_rows` (the lines reduced per item, see
``metrics._epochs``) instead of ``RunData.predictions``. Runs written before epochs existed
read as runs of one epoch.

``predictions.jsonl`` is read with :func:`prediction_lines` (``metrics._rundir_check``): every
line checked and typed ``records.PredictionLine``, the one type the metrics and gates take.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._artifacts import (
    FAILURES,
    METRICS_BY_SLICE,
    METRICS_SUMMARY,
    PREDICTIONS,
    RECORD_VALIDATION,
    RUN_MANIFEST,
)
from pytest_legaleval.metrics._epochs import DEFAULT_REDUCER, REDUCERS, epoch_of, reduce_rows
from pytest_legaleval.metrics._rundir_check import (
    checked_json,
    checked_lines,
    prediction_lines,
    verify_run_dir,
)
from pytest_legaleval.records import PredictionLine

__all__ = [
    "RunData",
    "invalid_items",
    "item_rows",
    "iter_jsonl",
    "load_run",
    "prediction_lines",
    "run_cluster_by",
    "run_epochs",
    "run_reducer",
    "slice_entries",
    "slice_finder",
]


def iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The objects of a JSONL file, one per non-empty line (a missing file yields none).

    Every line is checked (``metrics._rundir_check``): a corrupt one is a
    ``RunDirectoryError`` (a ``ConfigError``) naming the file and line. Prediction lines
    are read with :func:`prediction_lines`, which types them.
    """
    return checked_lines(path)


def _read_json(path: Path) -> Any:
    return checked_json(path)


@dataclass(frozen=True, slots=True)
class RunData:
    """The artifacts of one run directory, loaded."""

    path: Path
    manifest: dict[str, Any]
    summary: dict[str, Any] | None
    slices: Any
    predictions: list[PredictionLine]
    validation: list[dict[str, Any]]
    failures: list[dict[str, Any]]

    @property
    def run_id(self) -> str:
        """The run id (the directory name when the manifest lacks it)."""
        return str(self.manifest.get("run_id") or self.path.name)


def load_run(path: str | Path, *, with_predictions: bool = True) -> RunData:
    """Load a run directory; a path that is not one raises ``ConfigError``.

    Without ``with_predictions`` the predictions are left in the file (``predictions`` is
    empty): a reader that streams ``predictions.jsonl`` itself keeps its memory flat.

    The directory is checked first (``metrics._rundir_check``): its ``SHA256SUMS``, then
    every line as it is read; any problem is a ``RunDirectoryError`` naming the file.
    """
    root = Path(path)
    verify_run_dir(root)
    manifest = _read_json(root / RUN_MANIFEST)
    if not isinstance(manifest, dict):
        raise ConfigError(
            f"{root}: not a run directory (no {RUN_MANIFEST}); pass the directory of one "
            "run, e.g. legaleval-runs/run_01J…"
        )
    summary = _read_json(root / METRICS_SUMMARY)
    return RunData(
        path=root,
        manifest=manifest,
        summary=summary if isinstance(summary, dict) else None,
        slices=_read_json(root / METRICS_BY_SLICE),
        predictions=list(prediction_lines(root / PREDICTIONS)) if with_predictions else [],
        validation=list(iter_jsonl(root / RECORD_VALIDATION)),
        failures=list(iter_jsonl(root / FAILURES)),
    )


def _configured(run: RunData, name: str) -> Any:
    """A setting of the run's resolved configuration (``run_manifest.json``), or ``None``."""
    configuration = run.manifest.get("configuration")
    return configuration.get(name) if isinstance(configuration, Mapping) else None


def run_epochs(run: RunData) -> int:
    """K: the larger of the run's ``epochs`` setting and its highest epoch + 1.

    Runs written before epochs existed have neither: 1.
    """
    configured = _configured(run, "epochs")
    seen = max((epoch_of(row) + 1 for row in run.predictions), default=1)
    if type(configured) is int and configured >= 1:
        return max(configured, seen)
    return seen


def run_cluster_by(run: RunData) -> str | None:
    """The run's ``cluster_by`` setting (a dotted field), or ``None``."""
    value = _configured(run, "cluster_by")
    return value if isinstance(value, str) and value else None


def run_reducer(run: RunData) -> str:
    """The run's ``epoch_reducer`` setting, or the default (``mean``)."""
    value = _configured(run, "epoch_reducer")
    return value if value in REDUCERS else DEFAULT_REDUCER


def item_rows(run: RunData, reducer: str | None = None) -> list[PredictionLine]:
    """One prediction line per item, the epoch lines reduced with ``reducer``.

    ``reducer`` defaults to the run's own; a one-epoch run's lines come back as they are.
    """
    return reduce_rows(run.predictions, reducer or run_reducer(run))


def invalid_items(run: RunData, predicted: Container[Any] | None = None) -> list[dict[str, Any]]:
    """One row per invalid item of the run that has no ``predictions.jsonl`` line.

    A row has ``dataset``, ``record_id``, ``model``, ``index``, ``item_id``, ``message`` and
    ``line``. ``failures.jsonl`` lists them when it has ``invalid_record`` lines (``line`` is
    the line number there); otherwise every rejected record of ``record_validation.jsonl``
    counts once per model (exact for runs without shard, sample or limit). An item whose record was
    valid but cannot be asked (its attachment file is missing) has a prediction line as well
    as a failure line: it is left out, as its prediction counts it. ``predicted`` holds the
    ``item_id`` of every prediction line (default: those of ``run.predictions``).
    """
    if predicted is None:
        predicted = {p.get("item_id") for p in run.predictions}
    rows = [
        {
            "dataset": f.get("dataset") or f.get("dataset_id"),
            "record_id": f.get("record_id"),
            "model": f.get("model"),
            "index": f.get("index"),
            "item_id": f.get("item_id"),
            "message": f.get("message"),
            "line": number,
        }
        for number, f in enumerate(run.failures, 1)
        if "invalid_record" in (f.get("reason"), f.get("category"), f.get("taxonomy"))
        and (f.get("item_id") is None or f.get("item_id") not in predicted)
    ]
    if rows or any(f.get("reason") == "invalid_record" for f in run.failures):
        return rows
    models = run.manifest.get("models") or [None]
    return [
        {
            "dataset": v.get("dataset_id"),
            "record_id": v.get("record_id"),
            "model": model,
            "index": v.get("index"),
            "item_id": None,
            "message": "; ".join(
                str(e.get("message")) for e in v.get("errors") or [] if isinstance(e, Mapping)
            ),
            "line": None,
        }
        for v in run.validation
        if v.get("status") == "rejected"
        for model in models
    ]


def slice_entries(slices: Any) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """``(dimension, value, metrics)`` of every slice, whichever layout the file uses.

    Accepted layouts: ``{"slices": [...]}`` or a list of entries that carry their
    ``dimension``/``key`` and ``value``; or nested ``{dimension: {value: metrics}}``
    (optionally under ``"slices"`` or ``"by"``).
    """
    if isinstance(slices, Mapping):
        inner = slices.get("slices", slices.get("by"))
        if inner is not None:
            yield from slice_entries(inner)
            return
        for dimension, values in slices.items():
            if isinstance(values, Mapping):
                for value, metrics in values.items():
                    if isinstance(metrics, Mapping):
                        yield str(dimension), str(value), metrics
    elif isinstance(slices, list):
        for entry in slices:
            if not isinstance(entry, Mapping):
                continue
            dimension = entry.get("dimension", entry.get("key", entry.get("slice")))
            value = entry.get("value")
            metrics = entry.get("metrics", entry)
            if dimension is not None and value is not None and isinstance(metrics, Mapping):
                yield str(dimension), str(value), metrics


_ALIASES = {"policy": ("policy", "policy_id"), "tag": ("tag", "tags")}


def slice_finder(
    slices: Any,
) -> Callable[[tuple[tuple[str, str], ...]], Mapping[str, Any] | None]:
    """A function that finds the metrics of a one-condition slice, or ``None``."""
    table: dict[tuple[str, str], Mapping[str, Any]] = {}
    for dimension, value, metrics in slice_entries(slices):
        table[(dimension, value)] = metrics

    def find(conditions: tuple[tuple[str, str], ...]) -> Mapping[str, Any] | None:
        if len(conditions) != 1:
            return None
        key, value = conditions[0]
        for name in _ALIASES.get(key, (key,)):
            if (name, value) in table:
                return table[(name, value)]
        return None

    return find
