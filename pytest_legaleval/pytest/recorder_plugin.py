"""The controller's recording plugin: pytest's reports in, the run session fed.

The run directory itself is written by ``pipeline.driver.RunSession`` (and the recorder
under it), which know nothing of pytest. This plugin opens the session at the first report
(after the first model calls are out), hands it every item's result as the reports arrive
(xdist carries them from the workers), records items that ended without one (skipped,
errored before their evaluation, lost with a crashed worker, cancelled), adds the JUnit
properties, and prints the summary.

How a result reaches it: see ``pytest/carrier.py``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError, DatasetRejected
from pytest_legaleval.metrics._counts import nothing_evaluated
from pytest_legaleval.pipeline.driver import RunSession, outcome_of
from pytest_legaleval.pipeline.plan import ItemSpec, RunPlan
from pytest_legaleval.pytest import tricks
from pytest_legaleval.pytest.carrier import Carried, carried
from pytest_legaleval.pytest.collection import nothing_to_run
from pytest_legaleval.pytest.preflight import deferring_sigint, recording_whole
from pytest_legaleval.pytest.state import BATCH_STATS_KEY, RUNNER_KEY, distributing
from pytest_legaleval.records import EvalResult, Provenance
from pytest_legaleval.run.batch_text import batch_lines
from pytest_legaleval.run.console import benchmark_lines, printable, summary_lines
from pytest_legaleval.run.directory import RunDirectory

__all__ = ["RecorderPlugin", "terminal_writer"]


class RecorderPlugin:
    """Feeds ``<run-dir>/<run_id>/`` from the reports; registered on the controller only.

    Raises:
        ConfigError: an unreadable price table.

    """

    def __init__(self, config: pytest.Config, plan: RunPlan, run_id: str) -> None:
        self.config = config
        self.plan = plan
        self.run_id = run_id
        self.session = RunSession(plan, run_id, listeners=[self._call_result_hook])
        self.recorder = self.session.recorder
        self._pending: dict[str, Carried] = {}
        """Single process: the results of reports not logged yet, by node id."""
        self._invalid: list[dict[str, Any]] = []
        """The invalid records' items (for the gates' ``invalid_rate``)."""
        self._other_failures = 0
        """Failed reports that are no record item's (an ordinary test, a teardown error)."""
        self._open_tried = False
        xml_path = config.getoption("xmlpath", None)
        self._junit = os.path.abspath(xml_path) if xml_path else None
        """The JUnit file (``--junitxml``), absolute: the working directory may change."""
        self._junit_pending: dict[str, list[tuple[str, object]]] = {}
        self._unfinished: dict[str, tuple[str, str]] = {}
        """Node id → (pytest outcome, why) of items that never reached their evaluation."""
        self._collected: list[str] | None = None
        """A single process's collection (node ids); an xdist controller asks its scheduler."""

    @property
    def invalid(self) -> tuple[Mapping[str, Any], ...]:
        """The invalid records' items (for the gates' ``invalid_rate``)."""
        return tuple(self._invalid)

    @property
    def other_failures(self) -> int:
        """Failed reports that are no record item's (an ordinary test, a teardown error)."""
        return self._other_failures

    def hold(self, nodeid: str, found: Carried) -> None:
        """Keep an item's result until its report is logged (single process only)."""
        self._pending[nodeid] = found

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

    def _call_result_hook(self, result: EvalResult, record: Provenance | None) -> None:
        hook = self.config.hook.pytest_legaleval_result
        if hook.get_hookimpls():  # nobody listens: nothing to call
            hook(result=result, record=record, run_id=self.run_id, config=self.config)

    # -- lifecycle -------------------------------------------------------------------------

    def _ensure_open(self) -> None:
        """Open the run directory on first need: the first report, or the end of the run.

        Not when the run loop starts: the model calls go out first. Until the first calls
        are in flight every core is busy starting up (under xdist the workers' start-up and
        collection), while waiting for answers leaves part of the CPU idle: reading the
        dataset and writing ``input_dataset.json`` fit in there.
        """
        if self._open_tried or self.config.option.collectonly:
            return
        self._open_tried = True
        self.session.open()
        if distributing(self.config):
            # An xdist controller runs no test code: what exists now (modules, plugins,
            # configuration, the open run directory) lives until it ends.
            tricks.freeze()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        if not distributing(self.config):
            self._collected = [item.nodeid for item in session.items]
        interrupted = no_items = False
        try:
            with deferring_sigint():
                return (yield)
        except KeyboardInterrupt:
            # Ctrl-C or SIGTERM: the answers that arrived are kept, the rest is cancelled.
            interrupted = True
            self._record_arrived()
            raise
        except session.Failed:
            # -x / --maxfail (session.Failed / session.Interrupted): the items that never
            # ran are cancelled.
            interrupted = True
            raise
        except Exception as exc:
            # An xdist controller's check that the workers collected a record item: no run.
            no_items = isinstance(exc, pytest.UsageError) and nothing_to_run(self.config)
            if not no_items:
                self.recorder.fail(f"{type(exc).__name__}: {exc}")
            raise
        finally:
            if not (no_items and self.directory is None):
                self._ensure_open()
                self._finalize(interrupted or bool(session.shouldstop or session.shouldfail))

    def _finalize(self, interrupted: bool) -> None:
        if self.directory is None:
            return
        self._record_unfinished(cancel=interrupted and self.run_error is None)
        self.recorder.note_batches(self.config.stash.get(BATCH_STATS_KEY, None))
        self.session.finish(interrupted)

    def _record_arrived(self) -> None:
        """An interrupted run keeps the answers that arrived (``pytest/interrupt.py``)."""
        self._ensure_open()
        if self.directory is None:
            return
        if distributing(self.config):
            from pytest_legaleval.pytest.interrupt import collect_spooled
            from pytest_legaleval.pytest.xdist_hooks import scheduler_of

            scheduler = scheduler_of(self.config)
            workers = len(scheduler.nodes) if scheduler is not None else 0
            arrived = collect_spooled(self.config, workers)
        else:
            runner = self.config.stash.get(RUNNER_KEY, None)
            names = _nodeids_by_item_id(self._collected or ())
            arrived = [
                (names[spec.item_id], spec.provenance(), result)
                for spec, result in (runner.finished() if runner is not None else ())
                if spec.item_id in names
            ]
        for nodeid, provenance, result in arrived:
            if not self.recorder.is_recorded(provenance["index"]):
                self._record(result, nodeid, outcome_of(result), provenance)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._ensure_open()
        found = carried(self._pending, report) if report.when != "teardown" else None
        if found is None and report.failed:
            self._other_failures += 1  # a failure that is no record's verdict
        if self.directory is None:
            return
        if report.when == "teardown":
            props = self._junit_pending.pop(report.nodeid, None)
            if props:
                report.user_properties.extend(props)
            return
        if found is None:
            when: str = report.when  # xdist reports a crashed worker's item as "???"
            unfinished = (when == "setup" and not report.passed) or when == "???"
            if unfinished and report.nodeid.endswith("]"):  # a record item is parametrized
                # Skipped, errored in a fixture before its evaluation, or lost with its
                # worker. Recorded when the run ends, once the records are at hand (an xdist
                # controller loads none until then).
                self._unfinished[report.nodeid] = (report.outcome, _why(report))
            return
        if found.result is None:
            self._record_invalid(found.provenance, report.nodeid)
            return
        self._record(found.result, report.nodeid, report.outcome, found.provenance)

    def _record_invalid(self, rejection: Mapping[str, Any], nodeid: str) -> None:
        """An invalid record's item (``ItemSpec.rejection()``)."""
        with recording_whole():  # an interrupt waits for the item's lines
            self.recorder.record_invalid(rejection, nodeid)
            self._invalid.append(
                {
                    "dataset": rejection["dataset"],
                    "record_id": rejection["record_id"],
                    "model": rejection["model"],
                }
            )
            if self._junit:
                # No verdict: no score and no pass flag, as for every error (never a 0 or False).
                self._junit_pending[nodeid] = [
                    ("score", ""), ("passed", ""), ("model", rejection["model"]),
                    ("run_id", self.run_id), ("reason", "invalid_record"),
                ]  # fmt: skip

    def _record(
        self,
        result: EvalResult,
        item_id: str,
        test_outcome: str,
        record: Mapping[str, Any] | None,
    ) -> None:
        """One item's result; ``record`` is its ``ItemSpec.provenance()``."""
        if record is not None and not isinstance(record, Provenance):
            record = Provenance.from_dict(record)
        with recording_whole():  # an interrupt waits for the item's lines
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

    def _xdist_collection(self) -> list[str] | None:
        from pytest_legaleval.pytest.xdist_hooks import scheduler_of

        scheduler = scheduler_of(self.config)
        collection = getattr(scheduler, "collection", None)
        return collection if isinstance(collection, list) else None

    def _record_unfinished(self, *, cancel: bool) -> None:
        """Record the selected items that have no result yet, so every one has its line.

        An item that pytest skipped, that errored in a fixture before its evaluation, or
        whose xdist worker crashed gets a result saying so. With ``cancel`` (Ctrl-C, -x)
        every other selected item without a result is recorded cancelled. Only now does an
        xdist controller load the records (to name them). Its workers deselected items
        themselves (``-k``, ``-m``): those are the items missing from the collection the
        workers sent. Items whose test never asked for an evaluation (a suite that only
        checks ``record``) stay without a line.
        """
        if not self._unfinished and not cancel:
            return
        try:
            items = self.plan.items
        except (DatasetRejected, ConfigError):
            return
        collection = self._xdist_collection() or self._collected
        nodeids = _nodeids_by_item_id(collection) if collection else None
        causes = {_item_id(nodeid): cause for nodeid, cause in self._unfinished.items()}
        names = nodeids
        if names is None:
            names = {spec.item_id: spec.item_id for spec in items}
            names.update({_item_id(nodeid): nodeid for nodeid in self._unfinished})
        self.session.record_missing(items, causes=causes, cancel=cancel, item_ids=names)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """After pytest wrote the JUnit file and the gates decided: the CI surfaces.

        Each record's JUnit classname and answer (``pytest/junit.py``); under GitHub
        Actions the job summary (``pytest/job_summary.py``).
        """
        if self.directory is None or self.status is None:
            return
        if self._nothing_evaluated() is not None and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a run that measured nothing
        if self._junit is not None:
            from pytest_legaleval.pytest.junit import rewrite_junit

            prefix = self.config.getoption("junitprefix", None)
            rewrite_junit(self._junit, self.directory.path, prefix)
        if os.environ.get("GITHUB_STEP_SUMMARY"):
            from pytest_legaleval.pytest.job_summary import write_job_summary

            write_job_summary(self, session)

    def _nothing_evaluated(self) -> str | None:
        """Why the run evaluated no item, when it evaluated none (the exit status is 1)."""
        final = self.recorder.final
        if final is None:
            return None
        return nothing_evaluated(final[0], generate_ungraded=self.plan.settings.generate_ungraded)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        final = self.recorder.final
        if self.directory is None or final is None:
            return
        summary, by_slice = final
        write = terminal_writer(terminalreporter)
        terminalreporter.write_sep("=", "legaleval")
        for line in summary_lines(summary, by_slice):
            write(line)
        for line in self.recorder.epoch_summary.terminal_lines():
            write(line)
        for line in benchmark_lines(summary.get("benchmarks") or {}):
            write(line)
        audit, consistency = summary.get("judge_audit"), summary.get("judge_consistency")
        if audit is not None or consistency:
            from pytest_legaleval.metrics._audit_text import consistency_lines
            from pytest_legaleval.metrics._audit_text import summary_lines as audit_lines

            found = audit_lines(audit, consistency) if audit else consistency_lines(consistency)
            for line in found:
                write(line)
        why = self._nothing_evaluated()
        if why is not None:
            write(f"nothing evaluated: {why}", red=True, bold=True)
        failures = summary["failures_by_type"]
        detail = ", ".join(f"{k} {v}" for k, v in failures.items())
        errored = summary.get("errored_epochs")
        if summary.get("epochs", 1) > 1 and errored:  # epochs without a verdict, of any item
            detail += f"{'; ' if detail else ''}{errored} of {summary['epoch_lines']} epoch lines"
            detail += " without a verdict"
        write(f"status: {self.status}" + (f" ({detail})" if detail else ""))
        if summary["cost_usd"] is not None:
            write(f"cost: ${summary['cost_usd']:.4f} (list prices)")
        batches = self.config.stash.get(BATCH_STATS_KEY, {})
        for line in batch_lines(batches, summary.get("cost") or {}):
            write(line)
        if self.run_error:
            write(f"run error: {self.recorder.redactor.text(self.run_error)}")
        write(f"run directory: {Path(self.directory.path)}")


def terminal_writer(terminalreporter: Any) -> Callable[..., None]:
    """``terminalreporter.write_line`` for text from data: every line through ``printable``.

    Each line is one line (a newline in data is shown escaped); markup keywords pass on.
    """

    def write(line: str, **markup: bool) -> None:
        terminalreporter.write_line(printable(line), **markup)

    return write


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


def _junit_properties(run_id: str, result: EvalResult) -> list[tuple[str, object]]:
    judge = result.judge
    return [
        ("score", "" if result.score is None else result.score),
        ("passed", "" if result.passed is None else result.passed),
        ("latency_ms", "" if result.latency_ms is None else result.latency_ms),
        ("tokens", "" if result.total_tokens is None else result.total_tokens),
        ("model", result.model),
        ("judge", ",".join(judge.models) if judge is not None and judge.models else "none"),
        ("run_id", run_id),
        ("reason", result.reason),
    ]
