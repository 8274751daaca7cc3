"""The controller's gatekeeper: gates and the baseline comparison decide the exit status.

Exit policy (documented in the README):

- Without ``--gate`` and ``--baseline`` pytest's rules apply: a failed record fails the run.
- With them, the gates decide. Failed records stay FAILED items (and JUnit failures), but
  the exit status is 0 when every gate holds and 1 when one does not. Data and engine
  errors reach the gates through their rates: unless a gate names them, the implicit gates
  ``invalid_rate==0`` and ``error_rate==0`` apply, so broken data never passes silently.
- A failure that is not a record's (an ordinary test, a teardown error) keeps exit 1;
  usage errors (4), a rejected dataset (a collection error, 2), an interrupted run (2) and
  internal errors (3) keep their codes. A rejected dataset is never 0.

The gates are evaluated inside the recorder's run loop, after the last result and before
the run directory is finalized, so ``regressions.jsonl`` is part of the checksummed,
read-only run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._artifacts import PREDICTIONS, REGRESSIONS, RUN_MANIFEST
from pytest_legaleval.metrics._baseline import (
    Comparison,
    check_same_scoring,
    compare_runs,
    pair_fields,
)
from pytest_legaleval.metrics._gates import Gate, GateResult, default_gates, evaluate_gates
from pytest_legaleval.metrics._rundir_check import RunDirectoryError, checked_json, verify_run_dir
from pytest_legaleval.metrics._runfiles import prediction_lines
from pytest_legaleval.pipeline.plan import RunPlan
from pytest_legaleval.pytest.recorder_plugin import RecorderPlugin, terminal_writer
from pytest_legaleval.pytest.state import RECORDER_KEY
from pytest_legaleval.records import PredictionLine

__all__ = ["SHOWN_REGRESSIONS", "Baseline", "Gatekeeper", "load_baseline"]

SHOWN_REGRESSIONS = 20
"""Regressed records named in the terminal; ``regressions.jsonl`` has all of them."""


@dataclasses.dataclass(frozen=True, slots=True)
class Baseline:
    """The baseline run: its id and the paired fields of its predictions."""

    run_id: str
    path: Path
    predictions: list[PredictionLine]


def load_baseline(path: str, cluster_by: str | None = None) -> Baseline:
    """The baseline run directory, or a ``ConfigError`` that says what to pass.

    Only the fields pairing needs are kept (the cluster field's too), read line by line.
    """
    root = Path(path)
    if not root.is_dir():
        raise ConfigError(f"--baseline {path}: no such run directory")
    try:
        # Checked before trusted (metrics._rundir_check): checksums, then every line.
        verify_run_dir(root)
        manifest = checked_json(root / RUN_MANIFEST)
        predictions = [pair_fields(row, cluster_by) for row in prediction_lines(root / PREDICTIONS)]
    except RunDirectoryError as exc:
        raise ConfigError(f"--baseline {path}: {exc}") from None
    if not isinstance(manifest, dict):
        raise ConfigError(
            f"--baseline {path}: not a run directory (no readable {RUN_MANIFEST}); pass "
            "the directory of one run, e.g. legaleval-runs/run_01J…"
        )
    if not predictions:
        raise ConfigError(f"--baseline {path}: the run has no {PREDICTIONS} lines")
    return Baseline(str(manifest.get("run_id") or root.name), root, predictions)


class _Lines:
    """A ``predictions.jsonl`` that can be iterated more than once, one typed line at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __iter__(self) -> Iterator[PredictionLine]:
        return prediction_lines(self.path)


class Gatekeeper:
    """Registered on the controller when ``--gate`` or ``--baseline`` is given."""

    def __init__(self, state: RunPlan, gates: list[Gate], baseline: Baseline | None):
        self.state = state
        self.gates = [*gates, *default_gates(gates)]
        self.baseline = baseline
        self.results: list[GateResult] | None = None
        self.comparison: Comparison | None = None
        self.regressed = False
        self.scoring_mismatch: str | None = None
        """Why the baseline could not be paired (rubrics scored under other rules)."""
        self.run_path: Path | None = None
        self.stopped = False
        self._other_failures = 0
        """Failures outside the records (from the recorder): they keep exit status 1."""

    def _recorder(self, session: pytest.Session) -> RecorderPlugin | None:
        return session.config.stash.get(RECORDER_KEY, None)

    def _evaluate(self, plugin: RecorderPlugin | None) -> None:
        if plugin is None or plugin.directory is None:
            return  # the dataset was rejected: no run, nothing to gate
        self._other_failures = plugin.other_failures
        recorder = plugin.recorder
        directory = plugin.directory
        self.run_path = Path(directory.path)
        # JSONL lines reach the file within 0.2 s (run.directory): all of them before reading.
        directory.flush()
        predictions = self.run_path / PREDICTIONS
        # The recorder's figures as they stand: the values gated on are the ones
        # metrics_summary.json and metrics_by_slice.json are about to hold (the official
        # benchmarks and the judge audit included).
        summary, by_slice, _ = recorder.figures()
        slices = by_slice.get("slices") or {}

        def slice_entry(conditions: tuple[tuple[str, str], ...]) -> dict[str, Any] | None:
            if len(conditions) != 1:
                return None
            key, value = conditions[0]
            found = slices.get(key, {}).get(value)
            return found if isinstance(found, dict) else None

        # The prediction rows are read only for what the figures cannot answer (several
        # slice conditions at once), and only in the fields needed.
        needs_rows = any(gate.slice and slice_entry(gate.slice) is None for gate in self.gates)
        self.results = evaluate_gates(
            self.gates,
            _Lines(predictions) if needs_rows else (),
            plugin.invalid,
            summary=summary,
            slice_entry=slice_entry,
            prices=recorder.prices,
        )
        if self.baseline is not None:
            settings = self.state.settings
            current = [
                pair_fields(row, settings.cluster_by) for row in prediction_lines(predictions)
            ]
            if not settings.allow_scoring_mismatch:
                try:
                    check_same_scoring(self.baseline.predictions, current)
                except ConfigError as exc:
                    self.scoring_mismatch = str(exc)
                    self.regressed = True
                    return
            self.comparison = compare_runs(
                self.baseline.predictions,
                current,
                level=1 - settings.regression_alpha,
                cluster_by=settings.cluster_by,
                reducer=settings.epoch_reducer,
            )
            # nothing in common proves nothing: a renamed dataset must not pass silently
            self.regressed = self.comparison.paired == 0 or self.comparison.regressed(
                settings.max_regression, settings.regression_alpha
            )
            recorder.write_regressions(
                change.to_dict()
                for change in self.comparison.changes
                if change.change != "fail_to_pass"
            )

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        """Evaluate after the last result, before the recorder finalizes the run.

        ``trylast`` makes this wrapper run inside the recorder's.
        """
        try:
            result = yield
        except (pytest.Session.Failed, pytest.Session.Interrupted):
            # -x / --maxfail stopped a run that had started: a partial run proves nothing
            # either way. (Collection errors also interrupt, before any run: no message.)
            plugin = self._recorder(session)
            self.stopped = plugin is not None and plugin.directory is not None
            raise
        if session.shouldstop or session.shouldfail:
            self.stopped = True  # -x / --maxfail: a partial run proves nothing either way
        elif not session.config.option.collectonly:
            self._evaluate(self._recorder(session))
        return result

    @property
    def passed(self) -> bool | None:
        """Every gate held and nothing regressed; ``None`` when nothing was evaluated."""
        if self.results is None:
            return None
        return all(r.passed for r in self.results) and not self.regressed

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Apply the exit policy (see the module docstring)."""
        verdict = self.passed
        status = session.exitstatus
        if verdict is None or status not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            return
        if not verdict:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif self._other_failures == 0:
            session.exitstatus = pytest.ExitCode.OK

    # -- reporting -------------------------------------------------------------------------

    def _baseline_lines(self, write: Any) -> None:
        if self.scoring_mismatch is not None:
            write(f"FAILED regression gate: {self.scoring_mismatch}")
            return
        cmp = self.comparison
        if cmp is None or self.baseline is None:
            return
        s = self.state.settings
        delta = cmp.pass_rate_delta
        ci = cmp.mean_score_delta_ci
        write(
            f"baseline {self.baseline.run_id}: {cmp.paired} paired items, "
            f"{cmp.regressions} pass→fail, {cmp.improvements} fail→pass"
            + (f", pass rate {delta:+.1%}" if delta is not None else "")
        )
        for line in cmp.gate_lines():
            write(f"  {line}")
        if cmp.mean_score_delta is not None:
            write(
                f"  mean score {cmp.mean_score_delta:+.4f}"
                + (
                    f" ({1 - s.regression_alpha:.0%} paired bootstrap CI {ci[0]:+.4f}–{ci[1]:+.4f})"
                    if ci
                    else ""
                )
            )
        if cmp.only_in_baseline or cmp.only_in_current or cmp.unverdicted:
            write(
                f"  only in baseline: {cmp.only_in_baseline}, only in this run: "
                f"{cmp.only_in_current}, without a verdict in one run: {cmp.unverdicted}"
            )
        limit = (
            f"drop > {s.max_regression or 0:g} with the whole interval below 0"
            if cmp.method == "clustered"
            else f"drop > {s.max_regression or 0:g} with p < {s.regression_alpha:g}"
        )
        if cmp.paired == 0:
            write("FAILED regression gate: no item in common with the baseline")
        else:
            write(f"{'FAILED' if self.regressed else 'passed'} regression gate ({limit})")
        worse = ("pass_to_fail", "pass_to_error", "fewer_passes")
        regressed = [c for c in cmp.changes if c.change in worse]
        for change in regressed[:SHOWN_REGRESSIONS]:
            dataset, record_id, model = change.key
            now = change.current or {}
            write(f"  regressed {dataset}/{record_id} [{model}]: {now.get('reason')}")
        if len(regressed) > SHOWN_REGRESSIONS:
            write(f"  … {len(regressed) - SHOWN_REGRESSIONS} more in {REGRESSIONS}")
        if self.run_path is not None:
            write(f"regressions: {self.run_path / REGRESSIONS}")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Every gate with its value and interval, the baseline verdict, regressed records."""
        if self.stopped:
            terminalreporter.write_sep("=", "legaleval gates")
            terminalreporter.write_line(
                "gates not evaluated: the run stopped early (-x, --maxfail or an "
                "interruption); pytest's exit status stands",
                yellow=True,
            )
        if self.results is None:
            return
        write = terminal_writer(terminalreporter)  # record ids, slice values: data
        terminalreporter.write_sep("=", "legaleval gates")
        for result in self.results:
            write(f"{'passed' if result.passed else 'FAILED'} gate {result.describe()}")
        self._baseline_lines(write)
        failed = [r for r in self.results if not r.passed]
        if failed or self.regressed:
            names = [r.gate.text for r in failed] + (
                ["baseline regression"] if self.regressed else []
            )
            write(f"gates FAILED: {', '.join(names)} (exit status 1)", red=True, bold=True)
        elif self._other_failures:
            write(
                f"all gates passed; {self._other_failures} failure(s) outside the records "
                "keep exit status 1",
                yellow=True,
            )
        else:
            write("all gates passed (failed records do not fail the run)", green=True)
