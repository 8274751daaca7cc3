"""What the controller (or the single process) says before any worker starts or call is paid.

The planned calls and their estimated cost (``--estimate-only`` stops there with exit
status 0), and the rows of ``--responses`` / ``--conversation-from`` that match no record
(a warning; none matching is a usage error).
"""

from __future__ import annotations

import pytest

from pytest_legaleval.errors import ConfigError, DatasetRejected, ResponsesError
from pytest_legaleval.pipeline.plan import RunPlan
from pytest_legaleval.pytest import tricks
from pytest_legaleval.pytest.state import STATE_KEY
from pytest_legaleval.records import Record
from pytest_legaleval.run.console import printable

__all__ = ["before_any_call", "estimate_only"]


def estimate_only(config: pytest.Config) -> bool:
    """Whether this session only estimates (``--estimate-only``) and calls nothing."""
    state = config.stash.get(STATE_KEY, None)
    return state is not None and bool(state.settings.estimate_only)


def before_any_call(session: pytest.Session, *, checks: bool = True, estimate: bool = True) -> None:
    """What is said before any worker starts or call is paid.

    ``checks``: the rows of ``--responses`` / ``--conversation-from`` / ``--judgments``
    that match no record (a warning; none matching is a usage error), before any worker
    starts. ``estimate``: the planned calls and their estimated cost; an xdist controller
    gives it while its workers start up. ``--estimate-only`` stops after the estimate with
    exit status 0 (``pipeline.estimate``).
    """
    config = session.config
    state = config.stash.get(STATE_KEY, None)
    if state is None or hasattr(config, "workerinput") or config.option.collectonly:
        return
    import warnings

    # Loading the plan here warns (unknown policy ids) outside pytest's capture: the
    # warnings are handed to pytest, which shows them in its summary as before.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if checks:
                _check_response_rows(config, state)
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
    if not (s.estimate_only or s.judge_model or state.responses is None):
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
    except (ConfigError, DatasetRejected) as exc:
        if s.estimate_only:
            raise pytest.UsageError(getattr(exc, "message", str(exc))) from None
        return  # collection reports it, as without an estimate
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    for line in lines:
        if reporter is not None:
            reporter.write_line(line)
        else:
            print(line)
    if s.estimate_only:
        pytest.exit("--estimate-only: no call was made", returncode=0)


def _streams(config: pytest.Config) -> bool:
    """An xdist controller reads the dataset as a stream: it never holds it."""
    return config.pluginmanager.get_plugin("dsession") is not None


def _check_response_rows(config: pytest.Config, state: RunPlan) -> None:
    """Rows of --responses / --conversation-from that match no record: a warning; all: an error."""
    from pytest_legaleval.pipeline.responses import ResponsesWarning, match_responses

    tables = [("--responses", state.responses), ("--conversation-from", state.conversation)]
    if all(table is None for _, table in tables) and not state.settings.judgments:
        return
    from pytest_legaleval.pipeline.estimate import plan_entries

    try:
        entries = plan_entries(state, stream=_streams(config), selected=False)
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
            _warn(config, ResponsesWarning(f"{flag}: {warning}"))
    if state.settings.judgments:
        _check_judgments(config, state.settings.judgments, {i for i in ids if i is not None})


_SHOWN = 5


def _check_judgments(config: pytest.Config, path: str, ids: set[str]) -> None:
    """The verdict file's bad lines, and verdicts that match no record: a warning; none: error."""
    from pytest_legaleval.grading.verdicts import read_verdicts
    from pytest_legaleval.pipeline.responses import ResponsesWarning

    try:
        with open(path, "rb") as handle:
            found = read_verdicts(handle)
    except OSError as exc:
        raise pytest.UsageError(f"--judgments {path}: cannot be read ({exc})") from None
    unmatched = sorted({record for record, _ in found.verdicts if record not in ids})
    if found.verdicts and len(unmatched) == len({r for r, _ in found.verdicts}):
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
        _warn(config, ResponsesWarning(f"--judgments {path}: {'; '.join(notes)}"))
