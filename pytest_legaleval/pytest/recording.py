"""The controller's recording plugin: pytest's reports in, the run recorder fed.

The run directory itself is written by :class:`pytest_legaleval.run.recorder.RunRecorder`,
which knows nothing of pytest. This plugin opens it at the first report (after the first
model calls are out), hands it every item's result as the reports arrive (xdist carries
them from the workers), records items that ended without one (skipped, errored before
their evaluation, lost with a crashed worker, cancelled), adds the JUnit properties,
slims pytest's kept reports, and prints the summary.
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError, DatasetRejected
from pytest_legaleval.pipeline.plan import ItemSpec, RunPlan
from pytest_legaleval.pipeline.results import cancelled_result, unfinished_result
from pytest_legaleval.pytest import slimming, tricks
from pytest_legaleval.pytest.collection import nothing_to_run
from pytest_legaleval.records import EvalResult, Record
from pytest_legaleval.run.console import summary_lines
from pytest_legaleval.run.directory import RunDirectory
from pytest_legaleval.run.recorder import RunRecorder

__all__ = ["RecordingPlugin"]


class RecordingPlugin:
    """Feeds ``<run-dir>/<run_id>/`` from the reports; registered on the controller only."""

    def __init__(self, config: pytest.Config, state: RunPlan, run_id: str) -> None:
        self.config = config
        self.state = state
        self.run_id = run_id
        try:
            prices = state.prices()
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.recorder = RunRecorder(
            state.run_config(run_id),
            redactor=state.redactor(),
            prices=prices,
            listeners=[self._call_result_hook],
        )
        self._open_tried = False
        self._junit = bool(getattr(config.option, "xmlpath", None))
        self._junit_pending: dict[str, list[tuple[str, object]]] = {}
        self._progress: slimming.ItemProgress | None = None
        self._reasons: dict[str, str] = {}
        self._unfinished: dict[str, tuple[str, str]] = {}
        """Node id → (pytest outcome, why) of items that never reached their evaluation."""
        self._collected: list[str] | None = None
        """A single process's collection (node ids); an xdist controller asks its scheduler."""

    @property
    def directory(self) -> RunDirectory | None:
        """The open run directory (``None`` until the first report, or when rejected)."""
        return self.recorder.directory

    @property
    def run_error(self) -> str | None:
        """Why the run failed outside its records, if it did."""
        return self.recorder.run_error

    @property
    def status(self) -> str | None:
        """The terminal status, once finalized."""
        return self.recorder.status

    def _call_result_hook(
        self, result: Mapping[str, Any], record: Mapping[str, Any] | None
    ) -> None:
        hook = self.config.hook.pytest_legaleval_result
        if not hook.get_hookimpls():  # nobody listens: no result is rebuilt for nothing
            return
        hook(
            result=EvalResult.from_dict(result),
            record=record,
            run_id=self.run_id,
            config=self.config,
        )

    # -- lifecycle -------------------------------------------------------------------------

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
        self.recorder.open(self.state.dataset_source)
        if self.config.pluginmanager.has_plugin("dsession"):
            # An xdist controller runs no test code: what exists now (modules, plugins,
            # configuration, the open run directory) lives until it ends. Frozen, it is not
            # scanned again by the run's full collections or by the two pytest makes after
            # the last result. A process that runs tests froze
            # before its first test instead (after the load and the evaluator's start).
            tricks.freeze()
        tricks.preload_summary_imports(self.config)
        if self.directory is not None:
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            self._progress = slimming.track_progress(reporter, self.recorder.items)
            slimming.keep_subtest_counts_small(self.config)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        if not self.config.pluginmanager.has_plugin("dsession"):
            self._collected = [item.nodeid for item in session.items]
        interrupted = no_items = False
        try:
            return (yield)
        except (KeyboardInterrupt, session.Failed):
            # Ctrl-C, and -x / --maxfail (session.Failed / session.Interrupted): the items
            # that never ran are cancelled.
            interrupted = True
            raise
        except Exception as exc:
            # An xdist controller's check that the workers collected a record item: no run.
            no_items = isinstance(exc, pytest.UsageError) and nothing_to_run(self.config)
            if not no_items:
                self.recorder.run_error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            if not (no_items and self.directory is None):
                self._ensure_open()
                self._finalize(interrupted or bool(session.shouldstop or session.shouldfail))

    def _finalize(self, interrupted: bool) -> None:
        if self.directory is None:
            return
        self._record_unfinished(cancel=interrupted and self.run_error is None)
        self.recorder.finalize(interrupted)

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

    def _record_invalid(self, rejection: dict[str, Any], nodeid: str) -> None:
        """An invalid record's item (``ItemSpec.rejection()``)."""
        self.recorder.record_invalid(rejection, nodeid)
        if self._junit:
            self._junit_pending[nodeid] = [
                ("passed", False), ("model", rejection["model"]), ("run_id", self.run_id),
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
        self.recorder.record(result, item_id, test_outcome, record)
        if self._junit:
            redact = self.recorder.redactor
            self._junit_pending[item_id] = [
                (name, redact.text(value) if isinstance(value, str) else value)
                for name, value in _junit_properties(self.run_id, result)
            ]

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Deselected items (``-k``, ``-m``) are not cancelled by an early stop."""
        for item in items:
            spec = getattr(getattr(item, "callspec", None), "params", {}).get("record")
            if isinstance(spec, ItemSpec):
                self.recorder.mark_recorded(spec.index)

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
            if self.recorder.is_recorded(spec.index):
                continue
            if not isinstance(entry, Record):
                continue
            if nodeids is not None and spec.item_id not in nodeids:
                continue
            found = causes.get(spec.item_id)
            policy = self.state.policies.for_record(entry)
            tag = policy
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
        final = self.recorder.final
        if self.directory is None or final is None:
            return
        summary, by_slice = final
        terminalreporter.write_sep("=", "legaleval")
        for line in summary_lines(summary, by_slice):
            terminalreporter.write_line(line)
        failures = summary["failures_by_type"]
        detail = ", ".join(f"{k} {v}" for k, v in failures.items())
        terminalreporter.write_line(f"status: {self.status}" + (f" ({detail})" if detail else ""))
        if summary["cost_usd"] is not None:
            terminalreporter.write_line(f"cost: ${summary['cost_usd']:.4f} (list prices)")
        if self.run_error:
            terminalreporter.write_line(f"run error: {self.recorder.redactor.text(self.run_error)}")
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
