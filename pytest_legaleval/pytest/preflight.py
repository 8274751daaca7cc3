"""What a session checks and sets up before it runs anything (the controller, mostly).

Configuration errors found here stop the session as usage errors that name the fix, before
any worker starts or any call is paid for: under xdist the workers that would meet them
later could only end the session with an INTERNALERROR. Also the session's SIGTERM
handling, set up at configure and undone at unconfigure, and the one section an interrupt
waits for: the recording of an item (:func:`recording_whole`).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.formats import FORMATS
from pytest_legaleval.metrics.artifacts import PREDICTIONS
from pytest_legaleval.pipeline.plan import RunPlan
from pytest_legaleval.pipeline.settings import Settings

__all__ = [
    "check_plan",
    "check_settings",
    "deferring_sigint",
    "interrupt_on_sigterm",
    "recording_whole",
    "restore_sigterm",
    "warn_below_one_call_per_worker",
]


def check_settings(s: Settings, *, controller: bool = True) -> None:
    """Config-time checks: impossible mixes fail before collection, naming the fix.

    An xdist worker skips what only the controller uses (the gates): a malformed gate has
    already stopped the controller, before any worker started.
    """
    if s.dataset_format not in ("auto", *FORMATS):
        raise ConfigError(
            f"--dataset-format {s.dataset_format!r}: choose auto or one of {', '.join(FORMATS)}"
        )
    imports = []
    for path in s.dataset:
        # SOURCE:PATH (``lexam:data/``) names a benchmark to import: its PATH must exist.
        imported = None
        if ":" in path:  # SOURCE:PATH; the importers load only when one is named
            from pytest_legaleval.importers.cache import split_import_arg

            imported = split_import_arg(path)
        if not Path(imported[1] if imported else path).exists():
            raise ConfigError(f"--dataset {path}: no such file or directory")
        if imported:
            imports.append(imported[0])
    if s.protocol is not None:
        from pytest_legaleval.importers.protocols import PROTOCOLS, resolve_protocol

        if not imports:
            sources = ", ".join(f"{source}:PATH" for source in PROTOCOLS)
            raise ConfigError(
                f"--protocol {s.protocol}: picks the grading protocol of an imported "
                f"benchmark; name one with --dataset SOURCE:PATH ({sources})"
            )

        for source in imports:
            resolve_protocol(source, s.protocol)  # a protocol the benchmark has not
    if s.judgments:
        if not Path(s.judgments).is_file():
            raise ConfigError(f"--judgments {s.judgments}: no such file")
        if not s.responses:
            raise ConfigError(
                "--judgments needs --responses FILE: the recorded verdicts grade the answers "
                f"they were given on (a run's {PREDICTIONS} can be both)"
            )
        if s.judge_model:
            raise ConfigError(
                "--judgments grades from recorded verdicts and calls no judge: drop "
                "--judge-model, or drop --judgments to judge again"
            )
    if s.responses and s.model:
        raise ConfigError(
            "--responses and --model are exclusive: evaluate pre-computed "
            "responses or call a model live, not both"
        )
    if controller and s.gate:
        from pytest_legaleval.metrics.gates import parse_gates

        parse_gates(s.gate)  # a malformed gate is a usage error that shows the grammar
    if not 0 < s.regression_alpha < 1:
        raise ConfigError(f"--regression-alpha must be in (0, 1), got {s.regression_alpha}")
    if s.max_regression is not None and not 0 <= s.max_regression <= 1:
        raise ConfigError(f"--max-regression must be in [0, 1], got {s.max_regression}")
    if not s.responses and not s.model:
        raise ConfigError(
            "no response source: pass --responses FILE (pre-computed answers) or "
            "--model PROVIDER/NAME (live generation)"
        )
    if controller:
        _check_run_dir(s.run_dir)  # before any call is paid for; only the controller writes
    if controller and (s.model or s.judge_model):
        from pytest_legaleval.engine.routing import check_models

        check_models(s)  # under xdist, the workers that call could only crash on it
        if s.cache:
            _check_cache_file(s.cache)


def check_plan(plan: RunPlan, *, controller: bool = True) -> None:
    """The checks that need the plan (the price table): before any worker starts."""
    s = plan.settings
    if controller and s.max_cost is not None and (s.model or s.judge_model):
        from pytest_legaleval.pipeline.estimate import budget_prices

        budget_prices(s, plan.prices())  # a model without a price: a usage error


def _check_cache_file(path: str) -> None:
    """A cache file that cannot be used fails now, before any worker starts.

    A directory, an unreadable path, or an existing file that SQLite cannot read. A missing
    file is fine: the engine creates it (and its directories) at the first call.
    """
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"--cache {path}: is a directory; pass a file path or --no-cache")
    try:
        size = target.stat().st_size
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ConfigError(
            f"--cache {path}: cannot be used ({exc}); pass another path or --no-cache"
        ) from None
    if size == 0:
        return
    import sqlite3

    try:
        connection = sqlite3.connect(path)
        try:
            connection.execute("PRAGMA schema_version").fetchone()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise ConfigError(
            f"--cache {path}: not a usable SQLite database ({exc}); it is left as it is: "
            "pass another path or --no-cache"
        ) from None


def _check_run_dir(path: str) -> None:
    """The run directory can be created: checked before any call is paid for.

    Nothing is created here (a session that stops before its first result writes nothing):
    the nearest existing ancestor must be a writable directory.
    """
    existing = Path(path)
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"--run-dir {path}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"--run-dir {path}: {existing} is not writable")


def _xdist_workers(config: pytest.Config) -> int:
    """How many xdist workers the session starts (0 when it distributes nothing)."""
    if getattr(config.option, "dist", "no") == "no":
        return 0
    from xdist.workermanage import parse_tx_spec_config  # as our scheduler counts them

    return len(parse_tx_spec_config(config))


def warn_below_one_call_per_worker(config: pytest.Config, state: RunPlan) -> None:
    """Each worker keeps at least one call in flight: a smaller total cannot hold."""
    s = state.settings
    limits = [("--concurrency", s.concurrency)] if s.responses is None else []
    if s.judge_model:
        limits.append(("--judge-concurrency", s.judge_concurrency))
    workers = _xdist_workers(config)
    for flag, total in limits:
        if total < workers:
            config.issue_config_time_warning(
                pytest.PytestConfigWarning(
                    f"{flag} {total} is below the {workers} xdist workers: each worker keeps "
                    f"one call in flight, {workers} in total (run -n {total} or fewer to "
                    f"hold {total})"
                ),
                stacklevel=2,
            )


_SIGTERM_KEY = pytest.StashKey[Any]()


def interrupt_on_sigterm(config: pytest.Config) -> None:
    """SIGTERM ends the session as Ctrl-C does, instead of killing it mid-run.

    A cancelled CI job or a ``kill`` sends SIGTERM; by default Python dies at once and the
    run directory stays ``running``, without metrics or checksums. Like SIGINT, it now
    raises ``KeyboardInterrupt``: pending calls are cancelled, the unfinished records are
    recorded ``cancelled`` and the run directory is finalized (pytest exits 2). A second
    SIGTERM kills at once. Nothing changes when SIGTERM already has a handler, or off the
    main thread (``signal`` allows handlers only there).
    """
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def interrupt(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the next one kills
        _interrupt("SIGTERM")

    signal.signal(signal.SIGTERM, interrupt)
    config.stash[_SIGTERM_KEY] = interrupt


def restore_sigterm(config: pytest.Config) -> None:
    """Undo :func:`interrupt_on_sigterm` (at unconfigure), unless another handler replaced it."""
    handler = config.stash.get(_SIGTERM_KEY, None)
    if handler is not None and signal.getsignal(signal.SIGTERM) is handler:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


class _Recording:
    """How deep the main thread is in :func:`recording_whole`, and what arrived meanwhile."""

    depth = 0
    pending: tuple[str, ...] | None = None


def _interrupt(*why: str) -> None:
    """Raise ``KeyboardInterrupt`` now, or at the end of the item being recorded."""
    if _Recording.depth:
        _Recording.pending = why
        return
    raise KeyboardInterrupt(*why)  # a deferred Ctrl-C, raised as Python raises it


@contextmanager
def recording_whole() -> Iterator[None]:
    """Ctrl-C or SIGTERM arriving inside is raised when the block ends.

    An item's lines are written whole or not at all: an interrupt between marking the
    item recorded and writing its prediction line lost the line (the item was neither
    written nor recorded ``cancelled``). Recording an item takes well under a
    millisecond, so the interrupt waits no longer than that; a second SIGTERM still kills
    at once.
    """
    _Recording.depth += 1
    try:
        yield
    finally:
        _Recording.depth -= 1
        if not _Recording.depth and _Recording.pending is not None:
            why, _Recording.pending = _Recording.pending, None
            raise KeyboardInterrupt(*why)  # a deferred Ctrl-C, raised as Python raises it


@contextmanager
def deferring_sigint() -> Iterator[None]:
    """Ctrl-C in the recording process waits for the item being recorded.

    It raises ``KeyboardInterrupt`` as Python's own handler does, at the end of
    :func:`recording_whole` when it lands inside. Installed only on the main thread over
    Python's default handler; restored after.
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return

    def on_sigint(signum: int, frame: object) -> None:
        _interrupt()

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is on_sigint:
            signal.signal(signal.SIGINT, signal.default_int_handler)
