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
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.pipeline.driver import Resume, run_evaluation
from pytest_legaleval.pipeline.settings import Settings
from pytest_legaleval.run.directory import CHECKSUMS
from pytest_legaleval.run.recorder import DENOMINATORS
from pytest_legaleval.service.config import DataDir, run_settings
from pytest_legaleval.service.store import RunRow, RunStore

__all__ = ["MAX_RESUMES", "execute", "read_finished"]

MAX_RESUMES = 3
"""How often a run is continued after a crash before its unfinished items are given up."""

_PROGRESS_EVERY_S = 0.25
_CANCEL_POLL_S = 0.2
_log = logging.getLogger(__name__)


def read_finished(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The ``predictions.jsonl`` lines of an unsealed run directory, by ``item_id``.

    Lines are appended whole and flushed one at a time, so only the last one can be cut
    by a crash: a line without its newline is left out.
    """
    lines: dict[str, dict[str, Any]] = {}
    target = run_dir / "predictions.jsonl"
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
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _finish_from_directory(store: RunStore, run_id: str, path: Path) -> str:
    """A sealed run directory whose end the table missed: copy its end into the table."""
    manifest = _read_json(path / "run_manifest.json") or {}
    status = str(manifest.get("status") or "failed")
    store.finish(
        run_id,
        status,
        denominators=manifest.get("denominators"),
        metrics=_read_json(path / "metrics_summary.json"),
        error=manifest.get("error"),
        at=manifest.get("completed_at"),
    )
    return status


def _set_aside(data: DataDir, run_id: str) -> Path | None:
    """Move an unsealed run directory to ``interrupted/`` (numbered); return where."""
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


class _Mirror:
    """Mirrors a run's states, progress and cancellation between worker and table."""

    def __init__(self, store: RunStore, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self.cancel = threading.Event()
        self.ended = threading.Event()
        self._last = 0.0

    def state(self, state: str, at: str) -> None:
        self.store.set_state(self.run_id, state, at)

    def progress(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done >= total or now - self._last >= _PROGRESS_EVERY_S:
            self._last = now
            self.store.progress(self.run_id, done, total)

    def watch(self) -> None:
        while not self.ended.wait(_CANCEL_POLL_S):
            try:
                if self.store.cancel_requested(self.run_id):
                    self.cancel.set()
                    return
            except Exception:  # the table is busy or gone: try again, never kill the run
                _log.warning("cannot read the cancellation flag of %s", self.run_id)


def execute(
    run_id: str,
    *,
    base: Settings,
    data: DataDir,
    store: RunStore,
    share: int = 1,
    position: int = 0,
) -> str:
    """Evaluate (or continue) one run and write its end into the table; return its status."""
    with run_lock(data, run_id):
        row = store.get(run_id)
        if row is None:
            return "missing"
        if row.terminal:
            return row.status
        if (data.runs / run_id / CHECKSUMS).is_file():
            return _finish_from_directory(store, run_id, data.runs / run_id)
        settings = run_settings(base, data, run_id, row.models)
        resume = None
        if row.status != "queued" or (data.runs / run_id).exists():
            store.taken_up(run_id)
            row = store.get(run_id) or row
            resume = _resume(data, settings, row)
        mirror = _Mirror(store, run_id)
        if store.cancel_requested(run_id):
            mirror.cancel.set()
        watcher = threading.Thread(target=mirror.watch, name="legaleval-cancel-watch", daemon=True)
        watcher.start()
        try:
            return _evaluate(store, row, settings, mirror, resume, (share, position))
        finally:
            mirror.ended.set()


def _evaluate(
    store: RunStore,
    row: RunRow,
    settings: Settings,
    mirror: _Mirror,
    resume: Resume | None,
    place: tuple[int, int],
) -> str:
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
        store.finish(run_id, "failed", error=str(exc))
        return "failed"
    except Exception as exc:
        _log.exception("run %s failed in its worker", run_id)
        store.finish(run_id, "failed", error=f"internal error: {type(exc).__name__}")
        return "failed"
    if outcome.status == "rejected":
        reason = outcome.rejection.message if outcome.rejection else "the dataset is unreadable"
        store.finish(run_id, "failed", error=f"the stored dataset was rejected: {reason}")
        return "failed"
    metrics: Mapping[str, Any] | None = None
    if outcome.run_path is not None:
        metrics = _read_json(outcome.run_path / "metrics_summary.json")
    denominators = {key: outcome.denominators.get(key, 0) for key in DENOMINATORS}
    store.finish(
        run_id, outcome.status, denominators=denominators, metrics=metrics, error=outcome.run_error
    )
    return outcome.status
