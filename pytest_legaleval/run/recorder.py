"""The controller's run recorder: the only writer of the run directory.

It streams: each result is written (and redacted) as it arrives and only counted in the
metrics accumulators; per item it keeps one bit (reported or not) for cancellation.
"""

from __future__ import annotations

import functools
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_legaleval.errors import ConfigError, DatasetRejected
from pytest_legaleval.evaluation import cancelled_result
from pytest_legaleval.formats import RejectedRecord
from pytest_legaleval.metrics.prices import PriceTable, load_price_table
from pytest_legaleval.metrics.slices import SliceAccumulator
from pytest_legaleval.metrics.stats import BOOTSTRAP_CONFIDENCE, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from pytest_legaleval.metrics.summary import MetricsAccumulator
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
from pytest_legaleval.session import ItemSpec, LegalEvalState

__all__ = ["RunRecorder", "utc_now"]

_PASSED_STAND_IN = pytest.TestReport(
    "legaleval::passed", ("", None, ""), {}, "passed", None, "call", []
)
"""Counted in the terminal reporter's ``passed`` list in place of reports nobody reads."""

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


def _key_env_vars(state: LegalEvalState) -> list[str]:
    settings = state.settings
    names = [settings.api_key_env]
    for values in settings.per_model.values():
        if isinstance(values.get("api_key_env"), str):
            names.append(values["api_key_env"])
    return names


class RunRecorder:
    """Writes ``<run-dir>/<run_id>/`` as results arrive; registered on the controller only."""

    def __init__(self, config: pytest.Config, state: LegalEvalState, run_id: str) -> None:
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
        self.summary = MetricsAccumulator(prices=self.prices)
        self.slices = SliceAccumulator(settings.slice_by, self.prices)
        self.evaluators = EvaluatorLog()
        self.transitions: list[dict[str, str]] = [{"state": "queued", "at": utc_now()}]
        self.status: str | None = None
        self.run_error: str | None = None
        self.final: tuple[dict[str, Any], dict[str, Any]] | None = None
        self._version = package_version() or "unknown"
        self._settings_by_model: dict[str, dict[str, Any]] = {}
        self._positions: dict[tuple[str, str], tuple[int, Record]] = {}
        self._rejected: dict[str, ItemSpec] = {}
        self._reported = bytearray()
        self._model_index: dict[str, int] = {}
        self._retried = False
        self._junit = bool(getattr(config.option, "xmlpath", None))
        self._junit_pending: dict[str, list[tuple[str, object]]] = {}

    @property
    def created_at(self) -> str:
        """When the run was queued."""
        return self.transitions[0]["at"]

    # -- lifecycle -------------------------------------------------------------------------

    def _transition(self, state: str) -> None:
        self.transitions.append({"state": state, "at": utc_now()})

    def _open(self) -> None:
        """Create the run directory once the dataset is known to be accepted."""
        self._transition("validating")
        try:
            loaded = self.state.load()
            items = self.state.items
        except (DatasetRejected, ConfigError):
            return  # collection reports it as an error, and nothing is written
        directory = RunDirectory.create(self.state.settings.run_dir, self.run_id, self.redactor)
        self.directory = directory
        models = self.state.models
        self._model_index = {m: i for i, m in enumerate(models)}
        self._reported = bytearray(len(items))
        for position in range(0, len(items), max(1, len(models))):
            spec = items[position]
            if isinstance(spec.entry, Record):
                self._positions[(spec.entry.dataset, spec.entry.id)] = (position, spec.entry)
        self._rejected = {s.item_id: s for s in items if isinstance(s.entry, RejectedRecord)}
        for entry in loaded.entries:
            directory.append("record_validation.jsonl", artifacts.validation_line(entry))
        head, records = artifacts.input_dataset(self.run_id, loaded.datasets, loaded.records)
        directory.write_json_stream("input_dataset.json", head, "records", records)
        for name in ("predictions.jsonl", "attempt_logs.jsonl", "failures.jsonl"):
            directory.touch(name)
        self._transition("running")
        directory.write_json("run_manifest.json", self._manifest())

    def _manifest(self) -> dict[str, Any]:
        settings = self.state.settings
        try:
            datasets = self.state.load().datasets
        except (DatasetRejected, ConfigError):
            datasets = []
        summary = self.final[0] if self.final else self.summary.to_dict(resamples=1)
        return build_manifest(
            run_id=self.run_id,
            request_id=self.state.request_id,
            settings=settings,
            models=self.state.models,
            datasets=datasets,
            transitions=self.transitions,
            status=self.status or self.transitions[-1]["state"],
            selection={
                "shard": str(settings.shard) if settings.shard else None,
                "sample": settings.sample,
                "seed": settings.seed,
                "limit": settings.limit,
                "selected_records": len(self.state.selected),
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
        if interrupted and self.run_error is None:
            self._cancel_unreported()
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

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        if not self.config.option.collectonly:
            self._open()
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
            self._finalize(interrupted or bool(session.shouldstop or session.shouldfail))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.directory is None:
            return
        if report.when == "teardown":
            props = self._junit_pending.pop(report.nodeid, None)
            if props:
                report.user_properties.extend(props)
            return
        invalid = getattr(report, "legaleval_invalid", None)
        if report.when == "setup" and invalid:
            self._record_invalid(str(invalid), report.nodeid)
            return
        result = getattr(report, "legaleval", None)
        if result is None:
            return
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            self._record(result, report.nodeid, report.outcome)

    @pytest.hookimpl(trylast=True, specname="pytest_runtest_logreport")
    def pytest_runtest_logreport_release(self, report: pytest.TestReport) -> None:
        """Slim the report once every plugin has seen it (memory stays flat at 50,000 items).

        pytest's terminal reporter keeps every report until the session ends. Without this,
        each result (answer text, details, attempts) would stay in memory with it, and so
        would two passed setup/teardown reports per item that nothing ever reads again (the
        reporter files them under the ``""`` category, which no summary shows). Passed and
        failed call reports lose only what the end-of-session summaries do not use: the
        keywords (read for skips only), the JUnit properties (junitxml has copied them) and
        xdist's routing fields.
        """
        if self.directory is None:
            return
        fields = report.__dict__
        fields.pop("legaleval", None)
        if report.when != "call" and report.passed:
            bucket = self._terminal_stats().get("")
            if bucket and bucket[-1] is report:
                bucket.pop()
        elif report.when == "call" and report.passed and not self._show_passed:
            # Nothing will print this report again (no -rp/-rP/-rA): only the count of the
            # "passed" list matters, so one shared stand-in takes its place.
            bucket = self._terminal_stats().get("passed")
            if bucket and bucket[-1] is report:
                bucket[-1] = _PASSED_STAND_IN
        elif report.when == "call" and not report.skipped:
            report.keywords = {}
            report.user_properties = []
            for name in ("node", "item_index", "testrun_uid", "worker_id", "$report_type"):
                fields.pop(name, None)

    @functools.cached_property
    def _show_passed(self) -> bool:
        chars = str(getattr(self.config.option, "reportchars", "") or "")
        return any(c in chars for c in "pPA")

    def _terminal_stats(self) -> dict[str, list[Any]]:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        stats = getattr(reporter, "stats", None)
        return stats if isinstance(stats, dict) else {}

    def _mark_reported(self, dataset: str, record_id: str, model: str) -> tuple[int, Record] | None:
        found = self._positions.get((dataset, record_id))
        if found is not None:
            index = found[0] + self._model_index.get(model, 0)
            if index < len(self._reported):
                self._reported[index] = 1
        return found

    def _write(self, name: str, line: dict[str, Any]) -> None:
        assert self.directory is not None
        if self.run_error is not None:
            return
        try:
            self.directory.append(name, line)
        except OSError as exc:  # storage outage: the run fails, pytest carries on
            self.run_error = f"cannot write {name}: {exc}"

    def _record_invalid(self, item_key: str, nodeid: str) -> None:
        spec = self._rejected.get(item_key)
        if spec is None or not isinstance(spec.entry, RejectedRecord):
            return
        entry = spec.entry
        dataset = entry.dataset or Path(entry.source.path).stem
        self.summary.add_invalid()
        self.slices.add_invalid(dataset=dataset, model=spec.model)
        self._write(
            "failures.jsonl", artifacts.invalid_failure_line(self.run_id, nodeid, entry, spec.model)
        )
        if self._junit:
            self._junit_pending[nodeid] = [
                ("passed", False), ("model", spec.model), ("run_id", self.run_id),
                ("reason", "invalid_record"),
            ]  # fmt: skip

    def _record(self, result: dict[str, Any], item_id: str, test_outcome: str) -> None:
        found = self._mark_reported(result["dataset"], result["record_id"], result["model"])
        record = found[1] if found else None
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
            self.run_id, item_id, result, record.source.index if record else None
        )
        if failure is not None:
            self._write("failures.jsonl", failure)
        self.summary.add(result)
        self.slices.add(
            result,
            tags=record.tags if record else (),
            metadata=record.metadata if record else None,
        )
        self.evaluators.add(result)
        if self._junit:
            self._junit_pending[item_id] = _junit_properties(self.run_id, result)

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        for item in items:
            spec = getattr(getattr(item, "callspec", None), "params", {}).get("record")
            if isinstance(spec, ItemSpec) and isinstance(spec.entry, Record):
                self._mark_reported(spec.entry.dataset, spec.entry.id, spec.model)

    def _cancel_unreported(self) -> None:
        """After Ctrl-C (or -x): every selected item without a result is recorded cancelled."""
        for index, spec in enumerate(self.state.items):
            entry = spec.entry
            if self._reported[index] or not isinstance(entry, Record):
                continue
            self._record(dict(cancelled_result(entry, spec.model)), spec.item_id, "cancelled")

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
