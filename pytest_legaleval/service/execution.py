"""One run in a worker process: evaluated fresh, or continued after a crash.

A worker evaluates a run with :func:`pytest_legaleval.pipeline.driver.run_evaluation`, the
same driver of the same pipeline as a ``pytest suites/`` session, and mirrors its states
and progress into the run table. Only one process works on a run at a time: it holds the
run's lock file while it does.

A run whose status is past ``queued`` when a worker takes it was cut short (the service
or its worker died). Its unsealed run directory is moved to ``interrupted/`` and the run
starts over under the same id: the items the dead process had recorded are recorded again
from its ``predictions.jsonl`` without a call, the rest are evaluated, and the response
cache answers every call that had finished — none is paid twice. Without a response cache
(``--no-cache``), or after :data:`MAX_RESUMES` attempts, the unfinished items are recorded
as ``evaluation_error`` instead and the run ends ``completed_with_failures``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics.artifacts import CHECKSUMS, METRICS_SUMMARY, PREDICTIONS, RUN_MANIFEST
from pytest_legaleval.metrics.rundir_check import RunDirectoryError, checked_json
from pytest_legaleval.pipeline.driver import Resume, run_evaluation
from pytest_legaleval.pipeline.settings import Settings
from pytest_legaleval.run.recorder import DENOMINATORS
from pytest_legaleval.service.config import DataDir, run_settings
from pytest_legaleval.service.database import RunTable
from pytest_legaleval.service.mirror import RunMirror
from pytest_legaleval.service.storage import StorageError, as_storage_error, storage_cause
from pytest_legaleval.service.store import RunRow

__all__ = ["MAX_RESUMES", "execute", "read_finished"]

MAX_RESUMES = 3
"""How often a run is continued after a crash before its unfinished items are given up."""

_log = logging.getLogger(__name__)


def read_finished(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The ``predictions.jsonl`` lines of an unsealed run directory, by ``item_id``.

    Lines are appended whole and flushed one at a time, so only the last one can be cut
    by a crash: a line without its newline is left out.
    """
    lines: dict[str, dict[str, Any]] = {}
    target = run_dir / PREDICTIONS
    if not target.is_file():
        return lines
    with target.open("rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n"):
                break
            try:
                row = json.loads(raw)
            except ValueError:
                continue
            if isinstance(row, dict) and isinstance(row.get("item_id"), str):
                lines[row["item_id"]] = row
    return lines


@contextlib.contextmanager
def run_lock(data: DataDir, run_id: str) -> Iterator[None]:
    """Hold the run's lock file (waits while another process still works on the run)."""
    data.locks.mkdir(parents=True, exist_ok=True)
    with (data.locks / f"{run_id}.lock").open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _read_json(path: Path) -> Any:
    # Through the run-directory reader (metrics.rundir_check): a corrupt manifest or
    # summary is no end to publish (the run then reads as failed), never a crash.
    try:
        return checked_json(path)
    except (RunDirectoryError, OSError):
        return None


def _finish_from_directory(store: RunTable, run_id: str, path: Path) -> str:
    """A sealed run directory whose end the table missed: copy its end into the table."""
    manifest = _read_json(path / RUN_MANIFEST) or {}
    status = str(manifest.get("status") or "failed")
    transitions = manifest.get("state_transitions")
    store.finish(
        run_id,
        status,
        denominators=manifest.get("denominators"),
        metrics=_read_json(path / METRICS_SUMMARY),
        error=manifest.get("error"),
        at=manifest.get("completed_at"),
        transitions=transitions if isinstance(transitions, list) and transitions else None,
    )
    return status


def _sealed_by_storage_failure(path: Path) -> bool:
    """Whether a sealed run directory ended ``failed`` because its storage failed.

    Its end was never published (the table did not take it), so the run is continued
    from it once storage works, as if the worker had died.
    """
    manifest = _read_json(path / RUN_MANIFEST) or {}
    return manifest.get("status") == "failed" and storage_cause(manifest.get("error")) is not None


def _set_aside(data: DataDir, run_id: str) -> Path | None:
    """Move a run directory that is not the run's end to ``interrupted/`` (numbered)."""
    partial = data.runs / run_id
    if not partial.exists():
        return None
    data.interrupted.mkdir(parents=True, exist_ok=True)
    number = 1
    while (data.interrupted / f"{run_id}.{number}").exists():
        number += 1
    target = data.interrupted / f"{run_id}.{number}"
    partial.rename(target)
    return target


def _resume(data: DataDir, settings: Settings, row: RunRow) -> Resume:
    aside = _set_aside(data, row.run_id)
    finished = read_finished(aside) if aside is not None else {}
    if settings.cache is None:
        why = "the service stopped during the run and has no response cache to continue it from"
        return Resume(finished, evaluate=False, reason=why)
    if row.resumes > MAX_RESUMES:
        why = f"the run was interrupted {row.resumes} times; its unfinished items are given up"
        return Resume(finished, evaluate=False, reason=why)
    return Resume(finished)


def execute(
    run_id: str,
    *,
    base: Settings,
    data: DataDir,
    store: RunTable,
    share: int = 1,
    position: int = 0,
    on_problem: Callable[[str | None], None] | None = None,
) -> str:
    """Evaluate (or continue) one run and write its end into the table; return its status.

    ``on_problem`` is told of a storage failure met while the run's state is written (and
    of its end).

    Raises:
        StorageError: storage failed (a full disk) before the run's end was in the table.
            The run is not over: call again once storage works (it is continued, nothing
            recorded is lost).

    """
    with run_lock(data, run_id):
        row = store.get(run_id)
        if row is None:
            return "missing"
        if row.terminal:
            return row.status
        folder = data.runs / run_id
        if (folder / CHECKSUMS).is_file() and not _sealed_by_storage_failure(folder):
            return _finish_from_directory(store, run_id, folder)
        settings = run_settings(base, data, run_id, row.models)
        resume = None
        if row.status != "queued" or folder.exists():
            store.taken_up(run_id)
            row = store.get(run_id) or row
            resume = _resume(data, settings, row)
        mirror = RunMirror(store, run_id, on_problem)
        if store.cancel_requested(run_id):
            mirror.cancel.set()
        mirror.start()
        flushed = False
        try:
            outcome = _evaluate(row, settings, mirror, resume, (share, position))
            # The states go in before the end, in their order.
            flushed = mirror.flush()
            if not flushed:
                raise StorageError(f"the run's state cannot be written: {mirror.problem}")
            return _finish(store, run_id, outcome, mirror.ended_at)
        finally:
            if flushed:
                mirror.close()
            else:
                mirror.abandon()


_Outcome = tuple[str, str | None, Any]
"""(status, error, the ``RunOutcome`` or ``None``) of one evaluation."""


def _evaluate(
    row: RunRow,
    settings: Settings,
    mirror: RunMirror,
    resume: Resume | None,
    place: tuple[int, int],
) -> _Outcome:
    """Run the evaluation; a storage failure is raised (the run is retried), not its end."""
    run_id = row.run_id
    try:
        outcome = run_evaluation(
            settings,
            run_id,
            cancel=mirror.cancel,
            on_state=mirror.state,
            on_progress=mirror.progress,
            request_id=row.request_id,
            history=row.transitions,
            resume=resume,
            share=place[0],
            position=place[1],
        )
    except ConfigError as exc:
        return "failed", str(exc), None
    except Exception as exc:
        cause = storage_cause(exc)
        if cause is not None:
            _log.warning("run %s: storage failed mid-run (%s); it continues later", run_id, cause)
            raise (as_storage_error(exc) or StorageError(cause)) from exc
        _log.exception("run %s failed in its worker", run_id)
        return "failed", f"internal error: {type(exc).__name__}: {_first_line(exc)}", None
    cause = storage_cause(outcome.run_error)
    if cause is not None and outcome.status == "failed":
        _log.warning("run %s: storage failed mid-run (%s); it continues later", run_id, cause)
        raise as_storage_error(cause) or StorageError(cause)
    if outcome.status == "rejected":
        reason = outcome.rejection.message if outcome.rejection else "the dataset is unreadable"
        return "failed", f"the stored dataset was rejected: {reason}", None
    return outcome.status, outcome.run_error, outcome


def _first_line(exc: BaseException) -> str:
    return ((str(exc).splitlines() or [""])[0])[:300]


def _finish(store: RunTable, run_id: str, evaluated: _Outcome, at: str | None) -> str:
    status, error, outcome = evaluated
    if outcome is None:
        store.finish(run_id, status, error=error, at=at)
        return status
    metrics: Mapping[str, Any] | None = None
    if outcome.run_path is not None:
        metrics = _read_json(outcome.run_path / METRICS_SUMMARY)
    denominators = {key: outcome.denominators.get(key, 0) for key in DENOMINATORS}
    store.finish(run_id, status, denominators=denominators, metrics=metrics, error=error, at=at)
    return status
