"""The controller's run recorder: the only writer of the run directory.

It streams: each result is written (and redacted) as it arrives and only counted in the
metrics accumulators; per item it keeps one bit (reported or not) for cancellation.
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_legaleval.errors import ConfigError, DatasetRejected
from pytest_legaleval.formats import DatasetInfo, DatasetStream, Entry
from pytest_legaleval.metrics.prices import PriceTable, load_price_table
from pytest_legaleval.metrics.slices import SliceAccumulator
from pytest_legaleval.metrics.stats import BOOTSTRAP_CONFIDENCE, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from pytest_legaleval.metrics.summary import MetricsAccumulator
from pytest_legaleval.pipeline.plan import ItemSpec, RunPlan
from pytest_legaleval.pipeline.results import cancelled_result, unfinished_result
from pytest_legaleval.pipeline.selection import entry_key, selected_count
from pytest_legaleval.pipeline.selection import in_shard as in_shard_of
from pytest_legaleval.pytest import slimming, tricks
from pytest_legaleval.records import Record
from pytest_legaleval.run import artifacts
from pytest_legaleval.run.console import summary_lines
from pytest_legaleval.run.directory import RunDirectory
from pytest_legaleval.run.manifest import (
    EvaluatorLog,
    build_manifest,
    generation_settings,
    package_version,
    terminal_status,
    utc_now,
)
from pytest_legaleval.run.redaction import Redactor

__all__ = ["RunRecorder", "utc_now"]

_DENOMINATORS = ("total_records", "valid_records", "evaluated_records", "failed_records",
                 "skipped_records", "invalid_records", "cancelled_records")  # fmt: skip


def _config_pricing(config_file: str | None) -> Any:
    if not config_file:
        return None
    try:
        data = yaml.safe_load(Path(config_file).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None  # the settings resolver has already reported an unreadable file
    return data.get("pricing") if isinstance(data, dict) else None


def _key_env_vars(state: RunPlan) -> list[str]:
    settings = state.settings
    names = [settings.api_key_env]
    for values in settings.per_model.values():
        if isinstance(values.get("api_key_env"), str):
            names.append(values["api_key_env"])
    return names


class RunRecorder:
    """Writes ``<run-dir>/<run_id>/`` as results arrive; registered on the controller only."""

    def __init__(self, config: pytest.Config, state: RunPlan, run_id: str) -> None:
        self.config = config
        self.state = state
        self.run_id = run_id
        settings = state.settings
        try:
            self.prices: PriceTable = load_price_table(
                settings.price_table, _config_pricing(settings.config_file)
            )
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.redactor = Redactor.for_settings(settings.redact, _key_env_vars(state))
        self.directory: RunDirectory | None = None
        self._open_tried = False
        self.summary = MetricsAccumulator(prices=self.prices)
        self.slices = SliceAccumulator(settings.slice_by, self.prices, self.summary.records.index)
        self.evaluators = EvaluatorLog()
        self.transitions: list[dict[str, str]] = [{"state": "queued", "at": utc_now()}]
        self.status: str | None = None
        self.run_error: str | None = None
        self.final: tuple[dict[str, Any], dict[str, Any]] | None = None
        self._version = package_version() or "unknown"
        self._settings_by_model: dict[str, dict[str, Any]] = {}
        self._datasets: list[DatasetInfo] = []
        self._selected_records = 0
        self._record_count = 0
        self._reported = bytearray()
        """One flag per item (``ItemSpec.index``): a result arrived, or it was deselected."""
        self._deselected: list[int] = []
        """Items deselected before the run directory opened (collection comes first)."""
        self._retried = False
        self._junit = bool(getattr(config.option, "xmlpath", None))
        self._junit_pending: dict[str, list[tuple[str, object]]] = {}
        self._progress: slimming.ItemProgress | None = None
        self._reasons: dict[str, str] = {}
        self._unfinished: dict[str, tuple[str, str]] = {}
        """Node id → (pytest outcome, why) of items that never reached their evaluation."""
        self._collected: list[str] | None = None
        """A single process's collection (node ids); an xdist controller asks its scheduler."""

    @property
    def created_at(self) -> str:
        """When the run was queued."""
        return self.transitions[0]["at"]

    # -- lifecycle -------------------------------------------------------------------------

    def _transition(self, state: str) -> None:
        self.transitions.append({"state": state, "at": utc_now()})

    def _dataset_source(self) -> Iterable[Entry]:
        """Note the datasets and counts, and return the entries to write, in file order.

        The recorder keeps no record: a process that collected the items reuses its loaded
        dataset; an xdist controller, which collects nothing, streams the files twice: here
        for the verdict and the counts, then again (iterating the stream returned) to write
        them into the run directory.

        Raises:
            DatasetRejected: a dataset-level failure (nothing is written then).
            ConfigError: an unreadable dataset or an impossible selection.

        """
        state = self.state
        settings = state.settings
        loaded = state.loaded
        if loaded is not None:
            state.items  # noqa: B018 - a selection error is raised here, as in collection
            self._datasets = loaded.datasets
            self._selected_records = len(state.selected)
            self._record_count = len(loaded.records)
            return loaded.entries
        stream = DatasetStream(list(settings.dataset), settings.dataset_format)
        in_shard = records = 0
        for entry in stream:
            records += isinstance(entry, Record)
            if settings.shard is None or in_shard_of(entry_key(entry), settings.shard):
                in_shard += 1
        self._datasets = list(stream.datasets)
        self._record_count = records
        self._selected_records = selected_count(
            in_shard, sample=settings.sample, limit=settings.limit
        )
        return stream

    def _open(self) -> None:
        """Create the run directory once the dataset is known to be accepted."""
        self._transition("validating")
        try:
            source = self._dataset_source()
        except (DatasetRejected, ConfigError):
            return  # collection reports it as an error, and nothing is written
        directory = RunDirectory.create(self.state.settings.run_dir, self.run_id, self.redactor)
        self.directory = directory
        self._reported = bytearray(self._selected_records * len(self.state.models))
        for index in self._deselected:  # collection (and deselection) came first
            self._mark_reported(index)
        self._deselected.clear()

        def records() -> Iterator[Record]:
            for entry in source:
                line = artifacts.validation_line(entry)
                # One batch, flushed once below (with input_dataset.json) before any result.
                directory.append("record_validation.jsonl", line, flush=False)
                if isinstance(entry, Record):
                    yield entry

        head, lines = artifacts.input_dataset(
            self.run_id, self._datasets, records(), self._record_count
        )
        try:
            directory.write_json_stream("input_dataset.json", head, "records", lines)
        except (DatasetRejected, ConfigError) as exc:
            self.run_error = f"the dataset changed while the run started: {exc}"
        if isinstance(source, DatasetStream) and source.datasets != self._datasets:
            self.run_error = self.run_error or (
                "the dataset changed while the run started: its checksum differs between reads"
            )
        directory.flush()
        for name in ("predictions.jsonl", "attempt_logs.jsonl", "failures.jsonl"):
            directory.touch(name)
        self._transition("running")
        directory.write_json("run_manifest.json", self._manifest())

    def _manifest(self) -> dict[str, Any]:
        settings = self.state.settings
        summary = self.final[0] if self.final else self.summary.to_dict(resamples=1)
        return build_manifest(
            run_id=self.run_id,
            request_id=self.state.request_id,
            settings=settings,
            models=self.state.models,
            datasets=self._datasets,
            transitions=self.transitions,
            status=self.status or self.transitions[-1]["state"],
            selection={
                "shard": str(settings.shard) if settings.shard else None,
                "sample": settings.sample,
                "seed": settings.seed,
                "limit": settings.limit,
                "selected_records": self._selected_records,
                "items": len(self._reported),
            },
            evaluators=self.evaluators,
            denominators={key: summary[key] for key in _DENOMINATORS},
            error=self.run_error,
        )

    def _finalize(self, interrupted: bool) -> None:
        directory = self.directory
        if directory is None:
            return
        self._record_unfinished(cancel=interrupted and self.run_error is None)
        self._transition("finalizing")
        seed = self.state.settings.seed if self.state.settings.seed is not None else BOOTSTRAP_SEED
        metrics = {"run_id": self.run_id, "metrics_version": "1", "computed_at": utc_now()}
        summary = {
            **metrics,
            "models": list(self.state.models),
            "price_table": list(self.prices.sources),
            "bootstrap": {
                "seed": seed,
                "resamples": BOOTSTRAP_RESAMPLES,
                "confidence": BOOTSTRAP_CONFIDENCE,
            },
            **self.summary.to_dict(seed=seed),
        }
        self.final = (summary, {**metrics, **self.slices.to_dict(seed=seed)})
        self.status = terminal_status(
            failed_records=summary["failed_records"],
            interrupted=interrupted,
            run_error=self.run_error,
        )
        try:
            directory.write_json("metrics_summary.json", self.final[0])
            directory.write_json("metrics_by_slice.json", self.final[1])
        except OSError as exc:
            self.run_error = self.run_error or f"cannot write the metrics: {exc}"
            self.status = "failed"
        self._transition(self.status)
        directory.write_json("run_manifest.json", self._manifest())
        directory.finalize()

    # -- hooks -----------------------------------------------------------------------------

    def _ensure_open(self) -> None:
        """Open the run directory on first need: the first report, or the end of the run.

        Not when the run loop starts: the model calls go out first. Until the first calls
        are in flight every core is busy starting up (the SDK import; under xdist the
        workers' start-up and collection), while waiting for answers leaves part of the CPU
        idle: reading the dataset and writing ``input_dataset.json`` fit in there.
        """
        if self._open_tried or self.config.option.collectonly:
            return
        self._open_tried = True
        self._open()
        if self.config.pluginmanager.has_plugin("dsession"):
            # An xdist controller runs no test code: what exists now (modules, plugins,
            # configuration, the open run directory) lives until it ends. Frozen, it is not
            # scanned again by the run's full collections or by the two pytest makes after
            # the last result (~78 ms -> ~4 ms there). A process that runs tests froze
            # before its first test instead (after the load and the evaluator's start).
            tricks.freeze()
        tricks.preload_summary_imports(self.config)
        if self.directory is not None:
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            self._progress = slimming.track_progress(reporter, len(self._reported))
            slimming.keep_subtest_counts_small(self.config)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        if not self.config.pluginmanager.has_plugin("dsession"):
            self._collected = [item.nodeid for item in session.items]
        interrupted = False
        try:
            return (yield)
        except (KeyboardInterrupt, session.Failed):
            # Ctrl-C, and -x / --maxfail (session.Failed / session.Interrupted): the items
            # that never ran are cancelled.
            interrupted = True
            raise
        except Exception as exc:
            self.run_error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self._ensure_open()
            self._finalize(interrupted or bool(session.shouldstop or session.shouldfail))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._ensure_open()
        if self.directory is None:
            return
        if self._progress is not None:
            found = getattr(report, "legaleval_record", None) or getattr(
                report, "legaleval_invalid", None
            )
            self._progress.next_index = found["index"] if found else None
        if report.when == "teardown":
            props = self._junit_pending.pop(report.nodeid, None)
            if props:
                report.user_properties.extend(props)
            return
        invalid = getattr(report, "legaleval_invalid", None)
        if report.when == "setup" and invalid:
            self._record_invalid(invalid, report.nodeid)
            return
        result = getattr(report, "legaleval", None)
        if result is None:
            when: str = report.when  # xdist reports a crashed worker's item as "???"
            unfinished = (when == "setup" and not report.passed) or when == "???"
            if unfinished and report.nodeid.endswith("]"):  # a record item is parametrized
                # Skipped, errored in a fixture before its evaluation, or lost with its
                # worker. Recorded when the run ends, once the records are at hand (an xdist
                # controller loads none until then).
                self._unfinished[report.nodeid] = (report.outcome, _why(report))
            return
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            self._record(result, report.nodeid, report.outcome, report.legaleval_record)

    @pytest.hookimpl(trylast=True, specname="pytest_runtest_logreport")
    def pytest_runtest_logreport_release(self, report: pytest.TestReport) -> None:
        """Slim the report once every plugin has seen it (memory stays flat at 50,000 items).

        The result is on disk; pytest's terminal reporter keeps every report until the
        session ends, so it keeps only what its summaries print (``run.slimming``).
        """
        if self.directory is None:
            return
        slimming.release(
            report,
            self._terminal_stats(),
            show_passed=self._show_passed,
            collection=self._xdist_collection,
            reasons=self._reasons,
        )

    @functools.cached_property
    def _xdist_collection(self) -> list[str] | None:
        dsession = self.config.pluginmanager.get_plugin("dsession")
        collection = getattr(getattr(dsession, "sched", None), "collection", None)
        return collection if isinstance(collection, list) else None

    @functools.cached_property
    def _show_passed(self) -> bool:
        chars = str(getattr(self.config.option, "reportchars", "") or "")
        return any(c in chars for c in "pPA")

    def _terminal_stats(self) -> dict[str, list[Any]]:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        stats = getattr(reporter, "stats", None)
        return stats if isinstance(stats, dict) else {}

    def _mark_reported(self, index: int) -> None:
        if 0 <= index < len(self._reported):
            self._reported[index] = 1

    def _write(self, name: str, line: dict[str, Any]) -> None:
        assert self.directory is not None
        if self.run_error is not None:
            return
        try:
            self.directory.append(name, line)
        except OSError as exc:  # storage outage: the run fails, pytest carries on
            self.run_error = f"cannot write {name}: {exc}"

    def _record_invalid(self, rejection: dict[str, Any], nodeid: str) -> None:
        """An invalid record's item (``ItemSpec.rejection()``)."""
        self._mark_reported(rejection["index"])
        model = rejection["model"]
        dataset = rejection["dataset"] or rejection["source_stem"]
        key = ("invalid", dataset, rejection["source_index"])  # one record for all its models
        self.summary.add_invalid(key)
        self.slices.add_invalid(dataset=dataset, model=model, key=key)
        self._write(
            "failures.jsonl", artifacts.invalid_failure_line(self.run_id, nodeid, rejection)
        )
        if self._junit:
            self._junit_pending[nodeid] = [
                ("passed", False), ("model", model), ("run_id", self.run_id),
                ("reason", "invalid_record"),
            ]  # fmt: skip

    def _record(
        self,
        result: dict[str, Any],
        item_id: str,
        test_outcome: str,
        record: dict[str, Any] | None,
    ) -> None:
        """One item's result; ``record`` is its ``ItemSpec.provenance()``."""
        if record is not None:
            self._mark_reported(record["index"])
        attempts = result.get("attempts") or []
        if len(attempts) > 1 and not self._retried:
            self._retried = True
            self._transition("retrying")
        for line in artifacts.attempt_lines(self.run_id, item_id, result):
            self._write("attempt_logs.jsonl", line)
        model = result["model"]
        params = self._settings_by_model.get(model)
        if params is None:
            params = self._settings_by_model[model] = generation_settings(
                self.state.settings, model
            )
        self._write(
            "predictions.jsonl",
            artifacts.prediction_line(
                self.run_id, item_id, result, test_outcome,
                record=record, generation_settings=params, version=self._version,
            ),
        )  # fmt: skip
        failure = artifacts.failure_line(
            self.run_id, item_id, result, record["source_index"] if record else None
        )
        if failure is not None:
            self._write("failures.jsonl", failure)
        self.summary.add(result)
        self.slices.add(
            result,
            tags=record["tags"] if record else (),
            metadata=record["metadata"] if record else None,
        )
        self.evaluators.add(result)
        if self._junit:
            self._junit_pending[item_id] = _junit_properties(self.run_id, result)

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Deselected items (``-k``, ``-m``) are not cancelled by an early stop."""
        for item in items:
            spec = getattr(getattr(item, "callspec", None), "params", {}).get("record")
            if isinstance(spec, ItemSpec):
                self._deselected.append(spec.index)

    def _record_unfinished(self, *, cancel: bool) -> None:
        """Record the selected items that have no result yet, so every one has its line.

        An item that pytest skipped, that errored in a fixture before its evaluation, or whose
        xdist worker crashed gets a result saying so (``unfinished_result``). With
        ``cancel`` (Ctrl-C, -x) every other selected item without a result is recorded
        cancelled. Only now does an xdist controller load the records (to name them). Its
        workers deselected items themselves (``-k``, ``-m``): those are the items missing
        from the collection the workers sent. Items whose test never asked for an
        evaluation (a suite that only checks ``record``) stay without a line.
        """
        if not self._unfinished and not cancel:
            return
        self.state.warn_policies = False  # the collecting processes have warned already
        try:
            items = self.state.items
        except (DatasetRejected, ConfigError):
            return
        collection = self._xdist_collection or self._collected
        nodeids = _nodeids_by_item_id(collection) if collection else None
        causes = {_item_id(nodeid): (nodeid, *cause) for nodeid, cause in self._unfinished.items()}
        for spec in items:
            entry = spec.entry
            if spec.index < len(self._reported) and self._reported[spec.index]:
                continue
            if not isinstance(entry, Record):
                continue
            if nodeids is not None and spec.item_id not in nodeids:
                continue
            found = causes.get(spec.item_id)
            policy = self.state.policies.for_record(entry)
            tag = (policy.id, policy.sha256)
            if found is not None:
                nodeid, outcome, why = found
                result = unfinished_result(entry, spec.model, outcome, why, tag)
            elif cancel:
                nodeid = nodeids[spec.item_id] if nodeids is not None else spec.item_id
                outcome, result = "cancelled", cancelled_result(entry, spec.model, tag)
            else:
                continue
            self._record(result.to_dict(), nodeid, outcome, spec.provenance())

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.directory is None or self.final is None:
            return
        summary, by_slice = self.final
        terminalreporter.write_sep("=", "legaleval")
        for line in summary_lines(summary, by_slice):
            terminalreporter.write_line(line)
        failures = summary["failures_by_type"]
        detail = ", ".join(f"{k} {v}" for k, v in failures.items())
        terminalreporter.write_line(f"status: {self.status}" + (f" ({detail})" if detail else ""))
        if summary["cost_usd"] is not None:
            terminalreporter.write_line(f"cost: ${summary['cost_usd']:.4f} (list prices)")
        if self.run_error:
            terminalreporter.write_line(f"run error: {self.run_error}")
        terminalreporter.write_line(f"run directory: {Path(self.directory.path)}")


def _item_id(nodeid: str) -> str:
    """A record item's id: the ``[...]`` of its node id."""
    return nodeid[nodeid.find("[") + 1 : -1] if nodeid.endswith("]") else nodeid


def _nodeids_by_item_id(collection: Iterable[str]) -> dict[str, str]:
    """The node ids of a collection's record items, by item id."""
    return {_item_id(nodeid): nodeid for nodeid in collection if nodeid.endswith("]")}


def _why(report: pytest.TestReport) -> str:
    """The one-line reason pytest gives for an item that did not run (skip, error, crash)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (path, line, reason)
        text = str(longrepr[2]).removeprefix("Skipped: ")
    else:
        crash = getattr(longrepr, "reprcrash", None)
        text = str(getattr(crash, "message", None) or longrepr or report.outcome)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[0] if lines else report.outcome)[:500]


def _junit_properties(run_id: str, result: dict[str, Any]) -> list[tuple[str, object]]:
    judge = result.get("judge") or {}
    return [
        ("score", "" if result.get("score") is None else result["score"]),
        ("passed", result.get("passed")),
        ("latency_ms", "" if result.get("latency_ms") is None else result["latency_ms"]),
        ("tokens", "" if result.get("total_tokens") is None else result["total_tokens"]),
        ("model", result.get("model")),
        ("judge", ",".join(judge.get("models") or []) or "none"),
        ("run_id", run_id),
        ("reason", result.get("reason")),
    ]
