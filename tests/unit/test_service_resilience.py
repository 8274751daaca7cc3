"""The parts that keep the service up: storage errors named, the supervisor, retention,
the health monitor and the run mirror — each driven alone, with its faults injected."""

from __future__ import annotations

import errno
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from multiprocessing import Pipe
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import LegalEvalError
from pytest_legaleval.service import health as health_module
from pytest_legaleval.service import retention
from pytest_legaleval.service.config import DataDir, Retention
from pytest_legaleval.service.health import HealthMonitor
from pytest_legaleval.service.mirror import RunMirror
from pytest_legaleval.service.queue import SqliteRunQueue
from pytest_legaleval.service.storage import (
    Patience,
    StorageBusy,
    StorageError,
    StorageFull,
    as_storage_error,
    storage_cause,
    storage_problem,
    with_retries,
)
from pytest_legaleval.service.store import RunStore
from pytest_legaleval.service.workers import WorkerConfig, WorkerPool, restart_delay

from ..processes import wait_until

QUICK = Patience(busy_timeout_s=0.02, first_delay_s=0.01, max_delay_s=0.05)


def _create(store: RunStore, run_id: str) -> None:
    store.create(
        run_id=run_id, owner="local", models=["openai/m"], request_id="r", validation={},
        dataset={}, total=1, max_queued=100, max_per_owner=100,
    )  # fmt: skip


# -- storage errors -------------------------------------------------------------------------


def test_storage_failures_are_named_and_locks_are_not_failures() -> None:
    full = OSError(errno.ENOSPC, "No space left on device")
    assert isinstance(as_storage_error(full), StorageFull)
    assert isinstance(as_storage_error(full), LegalEvalError)  # one exception tree
    assert isinstance(as_storage_error(OSError(errno.EIO, "I/O error")), StorageError)
    assert not isinstance(as_storage_error(OSError(errno.EIO, "I/O error")), StorageFull)
    assert as_storage_error(OSError(errno.EMFILE, "Too many open files")) is None
    sqlite_full = sqlite3.OperationalError("database or disk is full")
    assert isinstance(as_storage_error(sqlite_full), StorageFull)
    assert as_storage_error(sqlite3.OperationalError("database is locked")) is None
    # A run's error text, as the recorder writes it, and a wrapped cause.
    assert storage_cause("cannot write predictions.jsonl: [Errno 28] No space left on device")
    assert storage_cause("internal error: ValueError: bad") is None
    try:
        try:
            raise full
        except OSError as exc:
            raise RuntimeError("writing failed") from exc
    except RuntimeError as wrapped:
        assert storage_cause(wrapped) == "No space left on device"


def test_with_retries_waits_out_busy_and_raises_full_at_once() -> None:
    attempts: list[int] = []
    sleeps: list[float] = []

    def locked_twice() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "written"

    assert with_retries(locked_twice, QUICK, sleep=sleeps.append) == "written"
    assert sleeps == [0.01, 0.02]

    def full() -> None:
        raise sqlite3.OperationalError("database or disk is full")

    with pytest.raises(StorageFull):
        with_retries(full, QUICK, sleep=sleeps.append)
    assert sleeps == [0.01, 0.02]  # no retry for a full disk

    def always_locked() -> None:
        raise sqlite3.OperationalError("database is locked")

    ticks = iter(range(100))  # a clock that advances a second per look
    with pytest.raises(StorageBusy, match="locked by another process"):
        with_retries(
            always_locked,
            Patience(first_delay_s=1, max_delay_s=1, give_up_s=5),
            sleep=lambda s: None,
            clock=lambda: float(next(ticks)),
        )


def test_storage_problem_sees_a_full_disk_and_an_unwritable_directory(tmp_path: Path) -> None:
    assert storage_problem(tmp_path) is None
    full = str(storage_problem(tmp_path, min_free=1 << 62))
    missing = str(storage_problem(tmp_path / "missing"))
    assert "is full" in full and "cannot" in missing
    assert str(tmp_path) not in full + missing  # /healthz shows them to anyone
    assert list(tmp_path.iterdir()) == []  # the probe file is gone


# -- the supervisor -------------------------------------------------------------------------


class FakeProcess:
    def __init__(self) -> None:
        self.alive = True
        self.exitcode: int | None = None
        self.pid = 4242

    def is_alive(self) -> bool:
        return self.alive

    def join(self, timeout: float | None = None) -> None:
        pass

    def kill(self) -> None:
        self.alive = False

    def die(self, code: int = 1) -> None:
        self.alive, self.exitcode = False, code


class FlakyQueue:
    """A queue whose ``release`` fails ``failures`` times (the table is full)."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.released: list[str] = []

    def release(self, worker: str | None = None) -> list[str]:
        if self.failures:
            self.failures -= 1
            raise StorageFull("database or disk is full")
        self.released.append(str(worker))
        return ["run_x"]


def test_restart_delays_grow_and_are_capped() -> None:
    assert [restart_delay(n) for n in range(1, 6)] == [0.0, 0.5, 1.0, 2.0, 4.0]
    assert restart_delay(30) == 60.0


def test_the_supervisor_survives_the_store_and_backs_off_restarts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [1000.0]
    queue = FlakyQueue(failures=2)
    config = WorkerConfig(settings=None, root=tmp_path)  # type: ignore[arg-type]
    pool = WorkerPool(config, 1, queue, clock=lambda: now[0])  # type: ignore[arg-type]
    spawned: list[FakeProcess] = []
    reader, writer = Pipe(duplex=False)

    def spawn(slot: Any) -> None:
        spawned.append(FakeProcess())
        slot.worker_id, slot.process, slot.reports = f"w.{len(spawned)}", spawned[-1], reader
        slot.started, slot.problem = now[0], None

    monkeypatch.setattr(pool, "_spawn", spawn)
    pool.supervise_once()
    assert len(spawned) == 1 and pool.problems() == {}
    writer.send("waiting for storage: disk full")
    pool.supervise_once()
    assert pool.problems() == {"worker-0": "waiting for storage: disk full"}
    spawned[0].die(70)
    pool.supervise_once()  # the store refuses to give the runs back: the round survives
    pool.supervise_once()
    assert pool.rounds_failed == 2 and len(spawned) == 1
    assert "stopped (exit 70)" in pool.problems()["worker-0"]
    pool.supervise_once()  # the store works again: runs given back, worker replaced
    assert queue.released == ["w.1"] and len(spawned) == 2
    spawned[1].die()  # a second quick death: the next start waits
    pool.supervise_once()
    assert len(spawned) == 2 and "restarting in 0 s after 2" in pool.problems()["worker-0"]
    now[0] += 0.5
    pool.supervise_once()
    assert len(spawned) == 3
    now[0] += 120  # it lived long: a death after that is not quick
    spawned[2].die()
    pool.supervise_once()
    assert len(spawned) == 4


# -- retention ------------------------------------------------------------------------------


def test_a_sweep_cleans_what_it_can_and_deletes_orphaned_uploads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = DataDir(tmp_path / "data")
    data.create()
    store = RunStore(data.state, QUICK)
    for run_id in ("run_a", "run_b"):
        _create(store, run_id)
        store.finish(run_id, "completed", at="2020-01-01T00:00:00.000Z")
        (data.uploads / run_id).mkdir()
    for name, age in (("run_orphan", 7200), ("run_young", 10)):
        (data.uploads / name).mkdir()
        (data.uploads / name / "upload.json").write_text("{}")
        os.utime(data.uploads / name, (time.time() - age, time.time() - age))
    mark = store.mark_deleted

    def failing(run_id: str, column: str) -> None:
        if run_id == "run_a":
            raise StorageFull("database or disk is full")
        mark(run_id, column)

    monkeypatch.setattr(store, "mark_deleted", failing)
    done = retention.sweep(store, data, Retention(), datetime.now(UTC))
    assert done.raw == ["run_b"] and done.summaries == ["run_b"] and done.errors == ["run_a"] * 2
    assert done.orphans == ["run_orphan"]
    assert sorted(p.name for p in data.uploads.iterdir() if p.name[0] != ".") == ["run_young"]
    monkeypatch.setattr(store, "mark_deleted", mark)
    again = retention.sweep(store, data, Retention(), datetime.now(UTC))
    assert again.raw == ["run_a"] and again.errors == []


def test_the_sweeper_survives_a_failed_sweep_and_sweeps_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = DataDir(tmp_path / "data")
    data.create()
    store = RunStore(data.state, QUICK)
    real = retention.sweep
    calls: list[int] = []

    def once_broken(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise sqlite3.OperationalError("disk I/O error")
        return real(*args)

    monkeypatch.setattr(retention, "sweep", once_broken)
    sweeper = retention.Sweeper(store, data, Retention(sweep_interval_s=0.01))
    sweeper.start()
    try:
        assert wait_until(lambda: sweeper.sweeps >= 3, 30)
    finally:
        sweeper.stop()
    assert sweeper.failures == 1 and sweeper.problem() is None


# -- the health monitor ---------------------------------------------------------------------


class FakePool:
    def problems(self) -> dict[str, str]:
        return {"worker-1": "stopped (exit 1); restarting in 2 s after 3 quick exit(s)"}


def test_health_names_storage_workers_and_requeues_lost_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = DataDir(tmp_path / "data")
    data.create()
    store, queue = RunStore(data.state, QUICK), SqliteRunQueue(data.state, QUICK)
    _create(store, "run_lost")  # its queue entry was never written
    monitor = HealthMonitor(data, store, queue, pool=FakePool())
    monitor.check()
    report = monitor.report()
    assert report.problems == {"worker-1": FakePool().problems()["worker-1"]}
    assert report.queued == 1 and queue.claim("w") == "run_lost"
    monkeypatch.setattr(health_module, "storage_problem", lambda root: "the disk is full")
    monitor.check()
    assert monitor.report().problems["storage"] == "the disk is full"


def test_health_reports_a_locked_run_table_without_waiting_for_it(tmp_path: Path) -> None:
    data = DataDir(tmp_path / "data")
    data.create()
    store, queue = RunStore(data.state, QUICK), SqliteRunQueue(data.state, QUICK)
    locker = sqlite3.connect(str(data.state), isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        monitor = HealthMonitor(data, store, queue)
        monitor.check()  # gives up on the lock after a second
        assert "locked" in monitor.report().problems["storage"]
    finally:
        locker.execute("COMMIT")
    monitor.check()
    assert monitor.report().problems == {}


# -- the run mirror -------------------------------------------------------------------------


class StubbornStore:
    """A run table that refuses ``failures`` writes, then records them."""

    def __init__(self, failures: int, error: Callable[[], Exception]) -> None:
        self.failures = failures
        self.error = error
        self.written: list[tuple[str, Any]] = []
        self.lock = threading.Lock()

    def _write(self, what: str, value: Any) -> None:
        with self.lock:
            if self.failures:
                self.failures -= 1
                raise self.error()
            self.written.append((what, value))

    def set_state(self, run_id: str, state: str, at: str) -> None:
        self._write("state", state)

    def progress(self, run_id: str, done: int, total: int) -> None:
        self._write("progress", (done, total))

    def cancel_requested(self, run_id: str) -> bool:
        return False


def test_the_mirror_never_raises_into_the_run_and_writes_in_order() -> None:
    store = StubbornStore(3, lambda: StorageFull("database or disk is full"))
    problems: list[str | None] = []
    mirror = RunMirror(store, "run_m", problems.append).start()  # type: ignore[arg-type]
    mirror.state("validating", "t1")
    mirror.state("running", "t2")
    mirror.progress(1, 2)
    mirror.progress(2, 2)
    mirror.state("completed", "t3")  # the end is the store.finish's to write
    assert mirror.flush()
    mirror.close()
    assert store.written == [("state", "validating"), ("state", "running"), ("progress", (2, 2))]
    assert mirror.ended_at == "t3"
    assert problems[0] == "database or disk is full" and problems[-1] is None


def test_the_mirror_gives_up_on_a_storage_failure_that_lasts() -> None:
    store = StubbornStore(10**6, lambda: StorageFull("database or disk is full"))
    mirror = RunMirror(store, "run_m").start()  # type: ignore[arg-type]
    mirror.state("running", "t1")
    assert not mirror.flush(give_up_s=0.2)
    mirror.abandon()
    assert store.written == []


# -- serve's own limits ---------------------------------------------------------------------


def test_serve_raises_its_open_file_limit_toward_the_hard_one() -> None:
    import resource

    from pytest_legaleval.service.server import raise_fd_limit

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        low = min(256, soft)
        resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
        before, after = raise_fd_limit(target=low * 4)
        assert before == low
        expected = low * 4 if hard == resource.RLIM_INFINITY else min(low * 4, hard)
        assert after == expected == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        assert raise_fd_limit(target=low) == (after, after)  # never lowered
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.parametrize("text", ["0", "-1", "nan", "inf", "61", "1e9", "x"])
def test_a_header_timeout_out_of_range_is_a_usage_error(text: str) -> None:
    import argparse

    from pytest_legaleval.cli.serve import _header_seconds

    with pytest.raises((argparse.ArgumentTypeError, ValueError)):
        _header_seconds(text)
    assert _header_seconds("10") == 10.0
