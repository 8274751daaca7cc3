"""``legaleval merge``: join the run directories of ``--shard K/N`` runs into one run.

The shards must share datasets (by content hash), models and configuration, must not
overlap, and must together cover every item of the dataset. The merged directory is a run
like any other: the same artifacts (same schemas; with epochs, an item's epoch lines stay
together), its metrics recomputed from the items with the run's own tally
(``run.tally``) and seed, so they equal those of an unsharded run. A registered artifact
is combined by its row's merge rule (:mod:`~pytest_legaleval.run.merge_registered`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._artifacts import (
    ATTEMPT_LOGS,
    FAILURES,
    FLAKY_RECORDS,
    INCOMPLETE_RECORDS,
    INPUT_DATASET,
    METRICS_BY_SLICE,
    METRICS_SUMMARY,
    PREDICTIONS,
    RECORD_VALIDATION,
    RUN_MANIFEST,
    TRANSCRIPTS,
    FinishedRun,
    artifacts,
)
from pytest_legaleval.metrics._epochs import DEFAULT_REDUCER, group_items
from pytest_legaleval.metrics._prices import PriceTable, load_price_table
from pytest_legaleval.metrics._rundir_check import checked_json, verify_run_dir
from pytest_legaleval.metrics._runfiles import iter_jsonl, prediction_lines
from pytest_legaleval.metrics._stats import (
    BOOTSTRAP_CONFIDENCE,
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
)
from pytest_legaleval.records import PredictionLine
from pytest_legaleval.run.directory import RunDirectory
from pytest_legaleval.run.manifest import EvaluatorLog, utc_now
from pytest_legaleval.run.merge_registered import merge_registered
from pytest_legaleval.run.redaction import PII_KINDS, Redactor
from pytest_legaleval.run.tally import RunTally

__all__ = ["MergeError", "Shard", "load_shard", "merge_runs"]

LISTED = 20
"""Items named per problem in an error message."""

_RUN_SPECIFIC = frozenset({"run_id", "run_dir", "shard", "sources"})
"""Configuration keys that may differ between the shards of one run."""

Key = tuple[str, str, str]


class MergeError(ConfigError):
    """Shards that do not make one run; the message lists what is wrong."""


class Shard:
    """One shard's run directory, loaded."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # Checked before trusted: a shard edited after sealing is refused, naming the file.
        verify_run_dir(path)
        manifest = self._json(RUN_MANIFEST)
        if not isinstance(manifest, dict):
            raise MergeError(f"{path}: not a run directory (no {RUN_MANIFEST})")
        self.manifest: dict[str, Any] = manifest
        self.summary: dict[str, Any] = self._json(METRICS_SUMMARY) or {}
        self.input_dataset: dict[str, Any] | None = self._json(INPUT_DATASET)
        self.validation = list(iter_jsonl(path / RECORD_VALIDATION))
        self.predictions = list(prediction_lines(path / PREDICTIONS))
        self.attempts = list(iter_jsonl(path / ATTEMPT_LOGS))
        self.failures = list(iter_jsonl(path / FAILURES))
        transcripts = path / TRANSCRIPTS  # runs written before transcripts have none
        self.transcripts = list(iter_jsonl(transcripts)) if transcripts.is_file() else []

    def _json(self, name: str) -> Any:
        return checked_json(self.path / name)

    @property
    def run_id(self) -> str:
        """The shard's run id."""
        return str(self.manifest.get("run_id") or self.path.name)

    @property
    def shard(self) -> str | None:
        """``K/N`` of the shard, or ``None`` for an unsharded run."""
        value = (self.manifest.get("selection") or {}).get("shard")
        return str(value) if value else None

    def invalid_lines(self) -> list[dict[str, Any]]:
        """The ``failures.jsonl`` lines of invalid items."""
        return [f for f in self.failures if f.get("failure_type") == "invalid_record"]


def load_shard(path: str | Path) -> Shard:
    """Load one shard's run directory."""
    return Shard(Path(path))


def _invalid_key(dataset: Any, record_id: Any, index: Any, model: Any) -> Key:
    return (str(dataset), str(record_id) if record_id else f"#{index}", str(model))


def _identity(shard: Shard) -> dict[str, Any]:
    config = {
        k: v
        for k, v in (shard.manifest.get("configuration") or {}).items()
        if k not in _RUN_SPECIFIC
    }
    datasets = [
        (d.get("dataset_id"), d.get("dataset_version"), d.get("schema_version"), d.get("sha256"))
        for d in shard.manifest.get("datasets") or []
    ]
    return {"datasets": datasets, "models": shard.manifest.get("models"), "configuration": config}


def _check_compatible(shards: Sequence[Shard]) -> None:
    first = _identity(shards[0])
    for shard in shards[1:]:
        other = _identity(shard)
        for part in ("datasets", "models", "configuration"):
            if other[part] != first[part]:
                detail = ""
                if part == "configuration":
                    keys = sorted(
                        k
                        for k in set(first[part]) | set(other[part])
                        if first[part].get(k) != other[part].get(k)
                    )
                    detail = f" (differing keys: {', '.join(keys)})"
                raise MergeError(
                    f"{shard.path} and {shards[0].path} differ in {part}{detail}: shards "
                    "of one run share dataset, models and configuration"
                )
    counts = {s.shard.split("/")[1] for s in shards if s.shard}
    if len(counts) > 1:
        raise MergeError(f"the shards split the dataset differently: N = {sorted(counts)}")


def _expected(shard: Shard) -> tuple[list[Key], dict[Key, str]]:
    """Every item of the unsharded run in its order (file order, then model order).

    Also the dataset slice of each invalid item (a record without a dataset id: its file's
    stem, as the recorder counts it).
    """
    models = [str(m) for m in shard.manifest.get("models") or []]
    keys: list[Key] = []
    invalid_dataset: dict[Key, str] = {}
    for line in shard.validation:
        for model in models:
            if line.get("status") == "accepted":
                keys.append((str(line.get("dataset_id")), str(line.get("record_id")), model))
                continue
            key = _invalid_key(
                line.get("dataset_id"), line.get("record_id"), line.get("index"), model
            )
            keys.append(key)
            source = line.get("source") or {}
            invalid_dataset[key] = str(
                line.get("dataset_id") or Path(str(source.get("path") or "")).stem
            )
    return keys, invalid_dataset


def _listing(keys: Sequence[Key]) -> str:
    shown = ", ".join(f"{d}/{r} [{m}]" for d, r, m in keys[:LISTED])
    return shown + (f", … {len(keys) - LISTED} more" if len(keys) > LISTED else "")


def _collect(
    shards: Sequence[Shard],
) -> tuple[dict[Key, list[PredictionLine]], dict[Key, dict[str, Any]]]:
    """Each item's lines (one per epoch) and each invalid item's failure line."""
    predictions: dict[Key, list[PredictionLine]] = {}
    invalid: dict[Key, dict[str, Any]] = {}
    owner: dict[Key, str] = {}
    overlaps: list[Key] = []
    for shard in shards:
        for row in shard.predictions:
            key = (str(row.get("dataset")), str(row.get("record_id")), str(row.get("model")))
            if owner.get(key, shard.run_id) != shard.run_id:
                overlaps.append(key)
            owner[key] = shard.run_id
            predictions.setdefault(key, []).append(row)
        for line in shard.invalid_lines():
            key = _invalid_key(
                line.get("dataset_id"), line.get("record_id"), line.get("index"), line.get("model")
            )
            if key in owner:
                overlaps.append(key)
            owner[key] = shard.run_id
            invalid[key] = line
    if overlaps:
        raise MergeError(f"{len(overlaps)} items are in more than one shard: {_listing(overlaps)}")
    return predictions, invalid


def _prices(shard: Shard) -> PriceTable:
    config = shard.manifest.get("configuration") or {}
    pricing = None
    config_file = config.get("config_file")
    if config_file and Path(config_file).is_file():
        import yaml

        data = yaml.safe_load(Path(config_file).read_text(encoding="utf-8"))
        pricing = data.get("pricing") if isinstance(data, dict) else None
    table = load_price_table(config.get("price_table"), pricing)
    used = shard.summary.get("price_table")
    if used is not None and list(table.sources) != list(used):
        raise MergeError(
            f"cannot rebuild the price table the shards used ({used}); run merge where "
            "their --price-table and configuration files are"
        )
    return table


def _status(shards: Sequence[Shard], failed_records: int) -> str:
    states = {s.manifest.get("status") for s in shards}
    if "failed" in states:
        return "failed"
    if "cancelled" in states:
        return "cancelled"
    return "completed_with_failures" if failed_records else "completed"


def _sorted(rows: Sequence[Mapping[str, Any]], order: Mapping[Key, int], key_of: Any) -> list[Any]:
    return sorted(rows, key=lambda row: order.get(key_of(row), len(order)))


def merge_runs(
    run_dirs: Sequence[str | Path], out: str | Path, *, run_id: str | None = None
) -> Path:
    """Check the shards and write the merged run directory ``out``; return its path."""
    if len(run_dirs) < 2:
        raise MergeError("merge needs at least two run directories")
    shards = [load_shard(p) for p in run_dirs]
    _check_compatible(shards)
    predictions, invalid = _collect(shards)
    expected, invalid_dataset = _expected(shards[0])
    order = {key: i for i, key in enumerate(expected)}
    missing = [k for k in expected if k not in predictions and k not in invalid]
    if missing:
        raise MergeError(
            f"the shards do not cover the dataset: {len(missing)} of {len(expected)} items "
            f"missing: {_listing(missing)}"
        )
    extra = [k for k in (*predictions, *invalid) if k not in order]
    if extra:
        raise MergeError(f"{len(extra)} items are not in the dataset: {_listing(extra)}")

    target = Path(out)
    merged_id = run_id or target.name
    first = shards[0]
    config = first.manifest.get("configuration") or {}
    configured_seed = config.get("seed")
    seed: int = configured_seed if isinstance(configured_seed, int) else BOOTSTRAP_SEED
    prices = _prices(first)
    epochs = config.get("epochs")
    reducer = str(config.get("epoch_reducer") or DEFAULT_REDUCER)
    tally = RunTally(
        prices=prices,
        slice_by=config.get("slice_by") or (),
        epochs=epochs if isinstance(epochs, int) and epochs > 0 else 1,
        reducer=reducer,
        cluster_by=config.get("cluster_by") or None,
    )
    for key in expected:
        rows = predictions.get(key)
        if rows is None:
            dataset = invalid_dataset.get(key, key[0])
            record = ("invalid", dataset, key[1])  # one record for all its models
            tally.add_invalid(record, dataset=dataset, model=key[2])
            continue
        # The shards' lines, checked and typed as read (older versions lack keys: total=False).
        for row in rows:
            tally.add_epoch(row, tags=row.get("tags") or (), metadata=row.get("metadata") or {})
        (item,) = group_items(rows, reducer).values()
        reduced = item.line()
        tally.add_item(
            reduced, tags=reduced.get("tags") or (), metadata=reduced.get("metadata") or {}
        )

    def retag(row: Mapping[str, Any]) -> dict[str, Any]:
        return {**row, "run_id": merged_id}

    # What is copied is redacted again: a shard may carry what its own run never wrote.
    directory = RunDirectory.create(target.parent, target.name, _redactor(first))
    try:
        now = utc_now()
        for line in first.validation:
            directory.append(RECORD_VALIDATION, retag(line))
        if first.input_dataset is not None:
            directory.write_json(INPUT_DATASET, retag(first.input_dataset))
        rows = [row for lines in predictions.values() for row in lines]
        for row in _sorted(rows, order, _pred_key):
            directory.append(PREDICTIONS, retag(row))
        transcripts = [t for s in shards for t in s.transcripts]
        for row in _sorted(transcripts, order, _pred_key):
            directory.append(TRANSCRIPTS, retag(row))
        attempts = [a for s in shards for a in s.attempts]
        for row in _sorted(attempts, order, _attempt_key):
            directory.append(ATTEMPT_LOGS, retag(row))
        failures = [f for s in shards for f in s.failures]
        for row in _sorted(failures, order, _failure_key):
            directory.append(FAILURES, retag(row))
        for artifact in artifacts():  # a concatenated file exists even with no shard lines
            if artifact.merge == "concat":
                directory.touch(artifact.name)
        if any(len(lines) > 1 for lines in predictions.values()):
            for flaky in tally.flaky_lines():
                directory.append(FLAKY_RECORDS, flaky)
            directory.touch(FLAKY_RECORDS)
            for line in tally.epochs.incomplete_lines():
                directory.append(INCOMPLETE_RECORDS, line)
            directory.touch(INCOMPLETE_RECORDS)
        head = {"run_id": merged_id, "metrics_version": "1", "computed_at": now}
        summary = {
            **head,
            "models": list(first.manifest.get("models") or []),
            "price_table": list(prices.sources),
            "bootstrap": {
                "seed": seed,
                "resamples": BOOTSTRAP_RESAMPLES,
                "confidence": BOOTSTRAP_CONFIDENCE,
            },
            **tally.summary_block(seed),
        }
        directory.write_json(METRICS_SUMMARY, summary)
        by_slice = {**head, **tally.slices_block(seed)}
        directory.write_json(METRICS_BY_SLICE, by_slice)
        merged = Path(directory.path) / PREDICTIONS
        finished = FinishedRun(merged_id, summary, by_slice, lambda: prediction_lines(merged))
        try:
            merge_registered(directory, [s.path for s in shards], finished)
        except ConfigError as exc:
            raise MergeError(str(exc)) from None
        directory.write_json(
            RUN_MANIFEST, _manifest(shards, merged_id, summary, tally.evaluators, now)
        )
        directory.finalize()
    finally:
        directory.close()
    return directory.path


def _redactor(shard: Shard) -> Redactor:
    """The merged run's redactor: the shard's ``--redact`` kinds, every known key variable."""
    from pytest_legaleval.engine.presets import PRESETS

    config = shard.manifest.get("configuration")
    config = config if isinstance(config, Mapping) else {}
    kinds = [k for k in config.get("redact") or () if k in ("pii", *PII_KINDS)]
    names = ["OPENAI_API_KEY", *(p.api_key_env for p in PRESETS.values())]
    if isinstance(config.get("api_key_env"), str):
        names.append(config["api_key_env"])
    return Redactor.for_settings(kinds, names, urls=[os.environ.get("OPENAI_BASE_URL")])


def _pred_key(row: Mapping[str, Any]) -> Key:
    """An item's key (a transcript line names its item's record and model too)."""
    return (str(row.get("dataset")), str(row.get("record_id")), str(row.get("model")))


def _attempt_key(row: Mapping[str, Any]) -> Key:
    return (str(row.get("dataset_id")), str(row.get("record_id")), str(row.get("model")))


def _failure_key(row: Mapping[str, Any]) -> Key:
    return _invalid_key(
        row.get("dataset_id"), row.get("record_id"), row.get("index"), row.get("model")
    )


def _manifest(
    shards: Sequence[Shard],
    run_id: str,
    summary: Mapping[str, Any],
    evaluators: EvaluatorLog,
    now: str,
) -> dict[str, Any]:
    first = shards[0].manifest
    created = min(str(s.manifest.get("created_at")) for s in shards)
    started = min(
        (str(s.manifest["started_at"]) for s in shards if s.manifest.get("started_at")),
        default=None,
    )
    failed = int(summary["failed_records"]) + int(summary.get("errored_epochs") or 0)
    status = _status(shards, failed)
    transitions = [{"state": "queued", "at": created}]
    if started:
        transitions.append({"state": "running", "at": started})
    transitions += [{"state": "finalizing", "at": now}, {"state": status, "at": now}]
    selection = dict(first.get("selection") or {})
    selection.update(
        {
            "shard": None,
            "selected_records": sum(
                int((s.manifest.get("selection") or {}).get("selected_records") or 0)
                for s in shards
            ),
            "items": sum(
                int((s.manifest.get("selection") or {}).get("items") or 0) for s in shards
            ),
        }
    )
    configuration = {**(first.get("configuration") or {}), "shard": None, "run_id": run_id}
    denominators = {k: summary[k] for k in (first.get("denominators") or {}) if k in summary}
    return {
        **first,
        "run_id": run_id,
        "status": status,
        "created_at": created,
        "started_at": started,
        "completed_at": now,
        "state_transitions": transitions,
        "selection": selection,
        "configuration": configuration,
        "evaluators": evaluators.to_dict(),
        "denominators": denominators,
        "error": None,
        "merged_from": [
            {
                "run_id": s.run_id,
                "shard": s.shard,
                "path": str(s.path),
                "status": s.manifest.get("status"),
            }
            for s in shards
        ],
    }
