"""The run recorder: the only writer of a run directory, and it knows nothing of pytest.

It streams. A result (an ``EvalResult``, as the item runner built it) is written (and
redacted) as it arrives — one ``predictions.jsonl`` line per epoch, its attempts, its
transcript — and only counted in the metrics accumulators, which read the very lines
written (so a summary recomputed from the files equals the run's); per item it keeps one
bit (recorded or not), so the items that never finished can be named at the end. The
pytest layer and the HTTP service feed it the same way, through ``pipeline.driver``:
:meth:`RunRecorder.open` once the dataset is accepted, :meth:`record` /
:meth:`record_invalid` per item, :meth:`finalize` once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_legaleval.errors import ConfigError, DatasetRejected
from pytest_legaleval.formats import DatasetInfo, DatasetStream, Entry
from pytest_legaleval.metrics._artifacts import (
    ATTEMPT_LOGS,
    FAILURES,
    FLAKY_RECORDS,
    HUMAN_LABELS_VALIDATION,
    INCOMPLETE_RECORDS,
    INPUT_DATASET,
    METRICS_BY_SLICE,
    METRICS_SUMMARY,
    PREDICTIONS,
    RECORD_VALIDATION,
    REGRESSIONS,
    RUN_MANIFEST,
    TRANSCRIPTS,
    FinishedRun,
)
from pytest_legaleval.metrics._artifacts import artifacts as table
from pytest_legaleval.metrics._epoch_summary import EpochSummary
from pytest_legaleval.metrics._prices import PriceTable
from pytest_legaleval.metrics._slices import SliceAccumulator
from pytest_legaleval.metrics._stats import (
    BOOTSTRAP_CONFIDENCE,
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
)
from pytest_legaleval.metrics._summary import MetricsAccumulator
from pytest_legaleval.records import EvalResult, PredictionLine, Provenance, Record
from pytest_legaleval.run import artifacts
from pytest_legaleval.run.directory import RunDirectory
from pytest_legaleval.run.manifest import (
    RunConfig,
    build_manifest,
    package_version,
    terminal_status,
    utc_now,
)
from pytest_legaleval.run.redaction import Redactor
from pytest_legaleval.run.tally import (
    RunTally,
    is_official_policy,
    line_figures,
    merge_slice_blocks,
)

if TYPE_CHECKING:
    from pytest_legaleval.metrics._human_labels import LabelFile

__all__ = ["DENOMINATORS", "DatasetSource", "ResultListener", "RunRecorder"]

DENOMINATORS = ("total_records", "valid_records", "evaluated_records", "failed_records",
                "skipped_records", "invalid_records", "cancelled_records")  # fmt: skip
"""The manifest's copy of the metrics' denominators."""

ResultListener = Callable[[EvalResult, Provenance | None], None]
"""Called with every recorded result and its record's provenance (users' sinks)."""


@dataclass(slots=True)
class DatasetSource:
    """The accepted datasets of a run, what they hold, and their entries in file order."""

    datasets: list[DatasetInfo]
    """One entry per dataset file (id, version, sha256, counts)."""
    entries: Iterable[Entry]
    """Every entry (valid or rejected record), in file order; may be a second stream."""
    record_count: int
    """Valid records in all files."""
    selected_records: int
    """Records the run evaluates (after shard, sample and limit)."""


class RunRecorder:
    """Writes ``<run_dir>/<run_id>/`` as results arrive.

    Args:
        config: what the manifest says about the run's configuration.
        redactor: applied to every line and document before it is written.
        prices: the price table for cost.
        listeners: extra callbacks for every recorded result (after it is written).
        labels: human labels (``--human-labels``): the judge audit is computed at the end.

    """

    def __init__(
        self,
        config: RunConfig,
        *,
        redactor: Redactor,
        prices: PriceTable,
        listeners: Sequence[ResultListener] = (),
        labels: LabelFile | None = None,
    ) -> None:
        self._config = config
        self._labels = labels
        self._reads_lines = labels is not None or config.judge_epochs > 1
        """Figures that need every prediction line (read back from the file at the end)."""
        self._run_id = config.run_id
        self._redactor = redactor
        self._prices = prices
        self._listeners = list(listeners)
        self._directory: RunDirectory | None = None
        self._tally = RunTally(
            prices=prices,
            slice_by=config.slice_by,
            epochs=config.epochs,
            reducer=config.epoch_reducer,
            cluster_by=config.cluster_by,
        )
        self._transitions: list[dict[str, str]] = [{"state": "queued", "at": utc_now()}]
        self._status: str | None = None
        self._run_error: str | None = None
        self._final: tuple[dict[str, Any], dict[str, Any]] | None = None
        self._batches: Mapping[str, Any] | None = None
        """``--batch``: the engine's batch counters when it stopped (batches submitted,
        resumed, still pending and the oldest one's age); the manifest's ``batches``."""
        self._version = package_version() or "unknown"
        self._datasets: list[DatasetInfo] = []
        self._selected_records = 0
        self._recorded = bytearray()
        """One flag per item index: a result was recorded, or the item was deselected."""
        self._pending_marks: list[int] = []
        self._retried = False
        self._figures: tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]] | None = None
        """The figures as last computed; dropped by every new line (computed once per run
        when the gates and the end of the run both ask with no result between)."""

    # Read-only views: the recorder's state changes only through its own methods.

    @property
    def config(self) -> RunConfig:
        """What the manifest says about the run's configuration."""
        return self._config

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self._run_id

    @property
    def labels(self) -> LabelFile | None:
        """The human labels of ``--human-labels``, else ``None``."""
        return self._labels

    @property
    def redactor(self) -> Redactor:
        """What every written line and document goes through."""
        return self._redactor

    @property
    def prices(self) -> PriceTable:
        """The price table for cost."""
        return self._prices

    @property
    def directory(self) -> RunDirectory | None:
        """The run directory, once :meth:`open` created it."""
        return self._directory

    @property
    def transitions(self) -> tuple[Mapping[str, str], ...]:
        """The states of §3 noted so far, each with its time, oldest first."""
        return tuple(self._transitions)

    @property
    def status(self) -> str | None:
        """The terminal status, once :meth:`finalize` has run."""
        return self._status

    @property
    def run_error(self) -> str | None:
        """Why the run failed outside any item (the first reason), else ``None``."""
        return self._run_error

    @property
    def final(self) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The summary and slices written at the end, once :meth:`finalize` has run."""
        return self._final

    @property
    def batches(self) -> Mapping[str, Any] | None:
        """``--batch``: the engine's batch counters noted by :meth:`note_batches`."""
        return self._batches

    def note_batches(self, counters: Mapping[str, Any] | None) -> None:
        """Keep ``--batch``'s counters for the manifest (``None``: the run used none)."""
        self._batches = dict(counters) if counters is not None else None

    @property
    def summary(self) -> MetricsAccumulator:
        """The run's metrics accumulator."""
        return self._tally.summary

    @property
    def slices(self) -> SliceAccumulator:
        """The per-slice accumulator."""
        return self._tally.slices

    @property
    def created_at(self) -> str:
        """When the run was queued."""
        return self._transitions[0]["at"]

    @property
    def items(self) -> int:
        """Items the run evaluates (known once open)."""
        return len(self._recorded)

    def transition(self, state: str) -> None:
        """Note a state of §3 (``validating``, ``running``, …) with its time."""
        self._transitions.append({"state": state, "at": utc_now()})

    def resume_history(self, history: Sequence[Mapping[str, str]]) -> None:
        """Start from an earlier attempt's states (a service run resumed after a restart)."""
        self._transitions = [{"state": step["state"], "at": step["at"]} for step in history]

    def fail(self, reason: str) -> None:
        """The run failed outside any item (``reason`` goes to the manifest; the first wins)."""
        self._run_error = self._run_error or reason

    # -- open ------------------------------------------------------------------------------

    def open(self, source: Callable[[], DatasetSource]) -> bool:
        """Create the run directory once the dataset is known to be accepted.

        ``source`` reads (or re-streams) the datasets; a dataset-level rejection or an
        unreadable dataset leaves nothing written and returns ``False``.
        """
        self.transition("validating")
        try:
            found = source()
        except (DatasetRejected, ConfigError):
            return False
        directory = RunDirectory.create(self._config.run_dir, self._run_id, self._redactor)
        self._directory = directory
        self._datasets = found.datasets
        self._selected_records = found.selected_records
        self._recorded = bytearray(found.selected_records * len(self._config.models))
        for index in self._pending_marks:  # deselections before the directory opened
            self.mark_recorded(index)
        self._pending_marks.clear()

        def records() -> Iterator[Record]:
            for entry in found.entries:
                line = artifacts.validation_line(entry)
                # One batch, flushed once below (with input_dataset.json) before any result.
                directory.append(RECORD_VALIDATION, line, flush=False)
                if isinstance(entry, Record):
                    yield entry

        head, lines = artifacts.input_dataset(
            self._run_id, found.datasets, records(), found.record_count
        )
        try:
            directory.write_json_stream(INPUT_DATASET, head, "records", lines)
        except (DatasetRejected, ConfigError) as exc:
            self._run_error = f"the dataset changed while the run started: {exc}"
        entries = found.entries
        if isinstance(entries, DatasetStream) and entries.datasets != found.datasets:
            self._run_error = self._run_error or (
                "the dataset changed while the run started: its checksum differs between reads"
            )
        directory.flush()
        for row in table():  # the per-item files exist even when no item writes to them
            if row.writer == "record":
                directory.touch(row.name)
        self.transition("running")
        directory.write_json(RUN_MANIFEST, self._manifest())
        return True

    # -- per item ---------------------------------------------------------------------------

    def mark_recorded(self, index: int) -> None:
        """Note that item ``index`` needs no line (recorded, or deselected)."""
        if self._directory is None:
            self._pending_marks.append(index)
        elif 0 <= index < len(self._recorded):
            self._recorded[index] = 1

    def is_recorded(self, index: int) -> bool:
        """Whether item ``index`` has its line (or needs none)."""
        return 0 <= index < len(self._recorded) and bool(self._recorded[index])

    def _write(self, name: str, line: dict[str, Any]) -> None:
        assert self._directory is not None
        self._figures = None
        if self._run_error is not None:
            return
        try:
            self._directory.append(name, line)
        except OSError as exc:  # storage outage: the run fails, the evaluation carries on
            self._run_error = f"cannot write {name}: {exc}"

    def record_invalid(self, rejection: Mapping[str, Any], item_id: str) -> None:
        """An invalid record's item (``ItemSpec.rejection()``)."""
        self.mark_recorded(rejection["index"])
        self._figures = None
        dataset = rejection["dataset"] or rejection["source_stem"]
        key = ("invalid", dataset, rejection["source_index"])  # one record for all its models
        self._tally.add_invalid(key, dataset=dataset, model=rejection["model"])
        self._write(FAILURES, artifacts.invalid_failure_line(self._run_id, item_id, rejection))

    def record(
        self,
        result: EvalResult,
        item_id: str,
        test_outcome: str,
        record: Provenance | None,
    ) -> None:
        """One item's result; ``record`` is its provenance (``ItemSpec.provenance()``).

        With epochs, each epoch's result is a prediction line of its own; the item's
        reduced result is what the counts and the failures read.
        """
        if record is not None:
            self.mark_recorded(record.index)
        self._figures = None
        generation_settings = self._config.generation_settings.get(result.model, {})
        item_line: PredictionLine | None = None
        for epoch in result.epochs or (result,):
            data = epoch.to_dict()
            attempts = data["attempts"]
            if len(attempts) > 1 and not self._retried:
                self._retried = True
                self.transition("retrying")
            for line in artifacts.attempt_lines(self._run_id, item_id, data):
                self._write(ATTEMPT_LOGS, line)
            item_line = artifacts.prediction_line(
                self._run_id, item_id, data, test_outcome,
                record=record,
                generation_settings=generation_settings,
                version=self._version,
            )  # fmt: skip
            self._write(PREDICTIONS, dict(item_line))
            if epoch.transcript is not None:
                self._write(TRANSCRIPTS, artifacts.transcript_line(self._run_id, item_id, epoch))
            self._tally.add_epoch(
                item_line,
                tags=record.tags if record else (),
                metadata=record.metadata if record else None,
            )
            if result.epochs:
                # The epoch is the unit of account: every epoch line without a verdict is a
                # failures.jsonl line of its own, as error_rate counts it.
                failure = artifacts.failure_line(
                    self._run_id, item_id, item_line, record.source_index if record else None
                )
                if failure is not None:
                    self._write(FAILURES, {**failure, "epoch": item_line.get("epoch")})
        assert item_line is not None
        if result.epochs:
            item_line = artifacts.prediction_line(
                self._run_id, item_id, result.to_dict(), test_outcome,
                record=record,
                generation_settings=generation_settings,
                version=self._version,
            )  # fmt: skip
        else:
            failure = artifacts.failure_line(
                self._run_id, item_id, item_line, record.source_index if record else None
            )
            if failure is not None:
                self._write(FAILURES, failure)
        if is_official_policy(result.policy_id) or (
            result.judge is not None and len(result.judge.models) > 1
        ):
            self._reads_lines = True  # the benchmarks block, or a judge panel's agreement
        self._tally.add_item(
            item_line,
            tags=record.tags if record else (),
            metadata=record.metadata if record else None,
        )
        for listener in self._listeners:
            listener(result, record)

    # -- finalize ----------------------------------------------------------------------------

    def _manifest(self) -> dict[str, Any]:
        summary = self._final[0] if self._final else self.summary.to_dict(resamples=1)
        body = build_manifest(
            config=self._config,
            datasets=self._datasets,
            transitions=self._transitions,
            status=self._status or self._transitions[-1]["state"],
            selection={
                **self._config.selection,
                "selected_records": self._selected_records,
                "items": len(self._recorded),
            },
            evaluators=self._tally.evaluators,
            denominators={key: summary[key] for key in DENOMINATORS},
            error=self._run_error,
        )
        if self._batches is not None:
            body["batches"] = dict(self._batches)
        return body

    @property
    def epoch_summary(self) -> EpochSummary:
        """The run's epoch and uncertainty figures (for the terminal summary)."""
        return self._tally.epochs

    @property
    def seed(self) -> int:
        """The seed of the bootstrap intervals."""
        return self._config.seed if self._config.seed is not None else BOOTSTRAP_SEED

    def figures(self) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
        """The run's figures as they stand.

        ``metrics_summary.json``'s, ``metrics_by_slice.json``'s, and the human-label rows
        left out. What only all the lines together give (the official benchmarks, the judge audit,
        the judges' consistency) is computed from ``predictions.jsonl`` as written. Computed
        once for the lines recorded so far: the gates and :meth:`finalize` share them.
        """
        if self._figures is not None:
            return self._figures
        seed = self.seed
        metrics = {"run_id": self._run_id, "metrics_version": "1", "computed_at": utc_now()}
        summary = {
            **metrics,
            "models": list(self._config.models),
            "price_table": list(self._prices.sources),
            "bootstrap": {
                "seed": seed,
                "resamples": BOOTSTRAP_RESAMPLES,
                "confidence": BOOTSTRAP_CONFIDENCE,
            },
            **self._tally.summary_block(seed),
        }
        by_slice = {**metrics, **self._tally.slices_block(seed)}
        errors: list[dict[str, Any]] = []
        if self._reads_lines and self._directory is not None:
            from pytest_legaleval.metrics._runfiles import prediction_lines

            self._directory.flush()
            blocks, slice_blocks, errors = line_figures(
                prediction_lines(Path(self._directory.path) / PREDICTIONS),
                labels=self._labels,
                reducer=self._config.epoch_reducer,
                consistency=self._config.judge_epochs > 1 or len(self._config.judge_models) > 1,
                seed=seed,
            )
            summary.update(blocks)
            merge_slice_blocks(by_slice, slice_blocks)
        self._figures = (summary, by_slice, errors)
        return self._figures

    def write_regressions(self, lines: Iterable[Mapping[str, Any]]) -> None:
        """``regressions.jsonl``: the items worse than in the ``--baseline`` run.

        The gates compare; the recorder writes (it is the run directory's only writer),
        before :meth:`finalize` checksums and seals the directory.
        """
        if self._directory is None:
            return
        try:
            for line in lines:
                self._directory.append(REGRESSIONS, dict(line), flush=False)
            self._directory.touch(REGRESSIONS)
            self._directory.flush()
        except OSError as exc:
            self._run_error = self._run_error or f"cannot write {REGRESSIONS}: {exc}"

    def _write_derived(self, summary: Mapping[str, Any], by_slice: Mapping[str, Any]) -> None:
        """The registered artifacts computed from the finished run (``metrics._artifacts``)."""
        from pytest_legaleval.metrics._runfiles import prediction_lines

        directory = self._directory
        assert directory is not None
        predictions = Path(directory.path) / PREDICTIONS
        finished = FinishedRun(
            self._run_id, summary, by_slice, lambda: prediction_lines(predictions)
        )
        for row in table():
            if row.derive is None:
                continue
            directory.flush()
            try:
                lines = row.derive(finished)
                for line in lines or ():
                    directory.append(row.name, dict(line), flush=False)
            except Exception as exc:
                self._run_error = self._run_error or f"cannot compute {row.name}: {exc!r}"
                continue
            if lines is not None:
                directory.touch(row.name)

    def finalize(self, interrupted: bool) -> None:
        """Write the metrics and the final manifest, checksum and seal the directory."""
        directory = self._directory
        if directory is None:
            return
        self.transition("finalizing")
        summary, by_slice, label_errors = self.figures()
        self._final = (summary, by_slice)
        self._status = terminal_status(
            # an errored epoch is a failure even where the item still got a verdict
            failed_records=summary["failed_records"] + (summary.get("errored_epochs") or 0),
            interrupted=interrupted,
            run_error=self._run_error,
        )
        try:
            if self._config.epochs > 1:
                for line in self._tally.flaky_lines():
                    directory.append(FLAKY_RECORDS, line, flush=False)
                directory.touch(FLAKY_RECORDS)
                for line in self._tally.epochs.incomplete_lines():
                    directory.append(INCOMPLETE_RECORDS, line, flush=False)
                directory.touch(INCOMPLETE_RECORDS)
            if self._labels is not None:
                for error in label_errors:
                    directory.append(HUMAN_LABELS_VALIDATION, error, flush=False)
                directory.touch(HUMAN_LABELS_VALIDATION)
            directory.write_json(METRICS_SUMMARY, self._final[0])
            directory.write_json(METRICS_BY_SLICE, self._final[1])
            self._write_derived(*self._final)
        except OSError as exc:
            self._run_error = self._run_error or f"cannot write the metrics: {exc}"
            self._status = "failed"
        self.transition(self._status)
        directory.write_json(RUN_MANIFEST, self._manifest())
        directory.finalize()
