"""What the controller (or the single process) says before any worker starts or call is paid.

The planned calls and their estimated cost, and the rows of ``--responses`` /
``--conversation-from`` that match no record (a warning; none matching is a usage error).
``--estimate-only`` gives the estimate and ends there, exit status 0, before any session
starts (:func:`estimate_main`, from ``pytest_cmdline_main``): no worker, no collection, no
banner.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable

import pytest

from pytest_legaleval.errors import ConfigError, DatasetRejected, ResponsesError
from pytest_legaleval.pipeline.plan import RunPlan
from pytest_legaleval.pytest import tricks
from pytest_legaleval.pytest.state import STATE_KEY, distributing
from pytest_legaleval.records import Record
from pytest_legaleval.run.console import printable

__all__ = ["before_any_call", "check_figures", "estimate_main", "power_lines"]


def estimate_main(config: pytest.Config) -> int | None:
    """``--estimate-only``: print the estimate and return exit status 0; else ``None``.

    Called as ``pytest_cmdline_main``, before pytest configures a session: the plan is
    built here (settings, the users' graders, the price table), the response rows are
    checked, and the estimate goes to stdout, warnings to stderr. A usage error is
    pytest's (``ERROR: …``, exit 4). Any other session gets ``None`` and runs as usual.
    """
    if config.getoption("help", False) or config.getoption("version", 0):
        return None
    from pytest_legaleval.pytest.options import resolve
    from pytest_legaleval.pytest.session import build_plan

    try:
        settings = resolve(config)
    except ConfigError:
        return None  # the session's configuration reports it
    if not (settings.active and settings.estimate_only):
        return None
    notes: list[Warning] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            plan = build_plan(config, settings, local_servers=False)
            _check_response_rows(config, plan, notes.append, stream=False)
            check_figures(plan, notes.append, stream=False)
            from pytest_legaleval.pipeline.estimate import estimate_run

            lines = estimate_run(plan).lines()
            lines += power_lines(plan)
        except (ConfigError, ResponsesError, DatasetRejected) as exc:
            raise pytest.UsageError(getattr(exc, "message", str(exc))) from None
    for line in lines:
        print(printable(line))
    for found in [*(c.message for c in caught), *notes]:
        print(printable(f"{type(found).__name__}: {found}"), file=sys.stderr)
    print(printable("--estimate-only: no call was made"))
    return 0


def power_lines(plan: RunPlan) -> list[str]:
    """The power planner's block for the planned run (``legaleval plan``'s text).

    Over the selected records, with the run's ``--epochs`` and ``--cluster-by``, and the
    variances of ``--baseline`` when the run has one (else the planner's stated defaults).

    Raises:
        ConfigError: the baseline run cannot be read.

    """
    from pytest_legaleval.metrics._power import plan as power_plan
    from pytest_legaleval.metrics._power import record_fields

    s = plan.settings
    records = [record_fields(e) for e in plan.dataset.selected if isinstance(e, Record)]
    if not records:
        return []
    rows = baseline_id = None
    if s.baseline:
        from pytest_legaleval.metrics._runfiles import load_run

        run = load_run(s.baseline)
        rows, baseline_id = (run.predictions or None), run.run_id
    try:
        found = power_plan(records, epochs=s.epochs, cluster_by=s.cluster_by,
                           baseline_rows=rows, baseline_id=baseline_id)  # fmt: skip
    except ConfigError as exc:  # one cluster, one record: nothing to plan, and why
        return ["", f"plan: {exc}"]
    return ["", *found.render().rstrip("\n").split("\n")]


def before_any_call(session: pytest.Session, *, checks: bool = True, estimate: bool = True) -> None:
    """What is said before any worker starts or call is paid.

    ``checks``: the rows of ``--responses`` / ``--conversation-from`` / ``--judgments``
    that match no record (a warning; none matching is a usage error), before any worker
    starts. ``estimate``: the planned calls and their estimated cost; an xdist controller
    gives it while its workers start up.
    """
    config = session.config
    state = config.stash.get(STATE_KEY, None)
    if state is None or hasattr(config, "workerinput") or config.option.collectonly:
        return

    # Loading the plan here warns (unknown policy ids) outside pytest's capture: the
    # warnings are handed to pytest, which shows them in its summary as before.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if checks:
                _check_response_rows(
                    config, state, lambda w: _warn(config, w), stream=_streams(config)
                )
                check_figures(state, lambda w: _warn(config, w), stream=_streams(config))
            if estimate:
                _estimate(config, state)
        finally:
            for found in caught:
                _warn(config, found.message)


def _warn(config: pytest.Config, message: Warning | str) -> None:
    """Hand a warning to pytest, its text through the terminal sanitizer (it quotes data)."""
    if not isinstance(message, Warning):
        message = UserWarning(message)
    text = str(message)
    shown = printable(text, multiline=True)
    if shown != text:
        try:
            message = type(message)(shown)
        except TypeError:  # a warning class with another signature
            message = UserWarning(shown)
    config.issue_config_time_warning(message, stacklevel=3)


def _estimate(config: pytest.Config, state: RunPlan) -> None:
    s = state.settings
    if not (s.judge_model or state.responses is None):
        return  # pre-computed answers graded without a judge: nothing is paid
    from pytest_legaleval.pipeline.estimate import estimate_run

    try:
        fresh = state.dataset.loaded is None
        # A single process loads its dataset here, for good (collection reuses it): as in
        # collection, no collections while it is built, and frozen before they come back.
        with tricks.collector_paused():
            lines = estimate_run(state, stream=_streams(config)).lines()
            if fresh and state.dataset.loaded is not None:
                tricks.freeze()
    except (ConfigError, DatasetRejected):
        return  # collection reports it, as without an estimate
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    for line in lines:
        if reporter is not None:
            reporter.write_line(printable(line))
        else:
            print(printable(line))


def _streams(config: pytest.Config) -> bool:
    """An xdist controller reads the dataset as a stream: it never holds it."""
    return distributing(config)


def _check_response_rows(
    config: pytest.Config, state: RunPlan, warn: Callable[[Warning], None], *, stream: bool
) -> None:
    """Rows of --responses / --conversation-from that match no record: a warning; all: an error."""
    from pytest_legaleval.pipeline.responses import ResponsesWarning, match_responses

    tables = [("--responses", state.responses), ("--conversation-from", state.conversation)]
    if all(table is None for _, table in tables) and not state.settings.judgments:
        return
    from pytest_legaleval.pipeline.estimate import plan_entries

    try:
        entries = plan_entries(state, stream=stream, selected=False)
        ids = [e.id if isinstance(e, Record) else e.record_id for e in entries]
    except (ConfigError, DatasetRejected):
        return  # collection reports it
    for flag, table in tables:
        if table is None:
            continue
        found = match_responses(table, ids)
        try:
            found.check(flag)
        except ResponsesError as exc:
            raise pytest.UsageError(str(exc)) from None
        warning = found.warning()
        if warning is not None:
            warn(ResponsesWarning(f"{flag}: {warning}"))
    if state.settings.judgments:
        _check_judgments(state.settings.judgments, {i for i in ids if i is not None}, warn)


def check_figures(state: RunPlan, warn: Callable[[Warning], None], *, stream: bool) -> None:
    """``--cluster-by`` and the gates against the records, before any call (usage errors).

    A cluster field no record has, a gated slice no record is in and a gate path no
    summary has are usage errors that list what exists; records without the cluster field
    are counted in a warning.
    """
    s = state.settings
    if not s.cluster_by and not s.gate:
        return
    from pytest_legaleval.metrics._gates import parse_gates
    from pytest_legaleval.metrics._power import record_fields
    from pytest_legaleval.metrics._run_checks import RecordFields, check_gate_paths
    from pytest_legaleval.pipeline.estimate import plan_entries
    from pytest_legaleval.pipeline.responses import ResponsesWarning

    try:
        gates = parse_gates(s.gate)
        check_gate_paths(gates)
        fields = RecordFields(s.cluster_by, gates)
        fresh = state.dataset.loaded is None
        # As the estimate does: a single process loads its dataset here for good
        # (collection reuses it), without collections while it is built, then frozen.
        with tricks.collector_paused():
            for entry in plan_entries(state, stream=stream):
                if isinstance(entry, Record):
                    fields.add(record_fields(entry))
        if fresh and state.dataset.loaded is not None:
            tricks.freeze()
        lacking = fields.check_cluster_field()
        models = list(s.model) or (list(state.responses.models) if state.responses else [])
        fields.check_gate_slices(gates, models)
    except DatasetRejected:
        return  # collection reports it
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    if lacking:
        warn(
            ResponsesWarning(
                f"--cluster-by {s.cluster_by}: {lacking} of {fields.records} records lack the "
                "field; each is a cluster of its own (counted as unclustered)"
            )
        )


_SHOWN = 5


def _check_judgments(path: str, ids: set[str], warn: Callable[[Warning], None]) -> None:
    """The verdict file's bad lines, and verdicts that match no record: a warning; none: error."""
    from pytest_legaleval.grading._verdicts import read_verdicts
    from pytest_legaleval.pipeline.responses import ResponsesWarning

    try:
        with open(path, "rb") as handle:
            found = read_verdicts(handle)
    except OSError as exc:
        raise pytest.UsageError(f"--judgments {path}: cannot be read ({exc})") from None
    unmatched = sorted({record for record, _, _ in found.verdicts if record not in ids})
    if found.verdicts and len(unmatched) == len({r for r, _, _ in found.verdicts}):
        raise pytest.UsageError(
            f"--judgments {path}: none of its {len(found.verdicts)} verdicts names a record "
            f"of the dataset (e.g. {unmatched[0]!r}); is it the verdict file of this dataset?"
        )
    notes = []
    if found.problems:
        shown = "; ".join(str(p) for p in found.problems[:_SHOWN])
        notes.append(f"{len(found.problems)} unusable lines ({shown})")
    if unmatched:
        notes.append(
            f"verdicts for {len(unmatched)} records not in the dataset "
            f"(e.g. {', '.join(map(repr, unmatched[:_SHOWN]))})"
        )
    if notes:
        warn(ResponsesWarning(f"--judgments {path}: {'; '.join(notes)}"))
