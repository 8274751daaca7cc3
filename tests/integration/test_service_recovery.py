"""The service's storage failing under it: a locked run table, a full disk — and recovery.

Issue 31 (MED): a state database locked for 36 s failed healthy runs (the progress
callback was not protected), an upload during the lock left an orphan file, the retention
thread died; ENOSPC mid-run killed the worker and the supervising thread, and the service
stayed stuck until restarted. Here the lock is a second SQLite connection holding
``BEGIN EXCLUSIVE`` (scaled down: the store's wait per attempt is 20 ms, so a lock of a
second is fifty times what one attempt waits), and the full disk is injected into the run
directory's writer and the run table. Everything recovers in the same process, without a
restart, and no record is lost. Waits are on events and counters, never on the clock.
"""

from __future__ import annotations

import errno
import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.pipeline.settings import Settings, resolve_settings
from pytest_legaleval.run.directory import CHECKSUMS, RunDirectory
from pytest_legaleval.run.verify import check_run_directory
from pytest_legaleval.service import worker as worker_module
from pytest_legaleval.service.config import DataDir, service_settings
from pytest_legaleval.service.execution import execute
from pytest_legaleval.service.queue import SqliteRunQueue
from pytest_legaleval.service.storage import Patience, StorageBusy, StorageFull
from pytest_legaleval.service.store import RunStore
from pytest_legaleval.service.worker import WorkerConfig, WorkerLoop
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from ..processes import wait_until
from ..service_harness import Script, document, record, write

RUN_ID = "run_01J8Q4ER9Z7Y5V5K6F4A1P2M3N"
ITEMS = 6
QUICK = Patience(busy_timeout_s=0.02, first_delay_s=0.01, max_delay_s=0.05)
"""Waits out any lock, trying every 10-50 ms: the worker's patience, scaled down."""


@pytest.fixture
def mock() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer() as server:
        server.add_reply(None, Script())
        yield server


class Locker:
    """Another process's connection to the run table, holding its write lock."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(str(path), isolation_level=None, timeout=10)

    def hold(self) -> Locker:
        self.conn.execute("BEGIN EXCLUSIVE")
        return self

    def release(self) -> None:
        self.conn.execute("COMMIT")


def _service(tmp_path: Path, server: MockOpenAIServer) -> tuple[DataDir, RunStore, Settings]:
    data = DataDir(tmp_path / "data")
    data.create()
    store = RunStore(data.state, QUICK)
    doc = document("svc", [record(f"q{i}", f"Service question {i}?") for i in range(ITEMS)])
    upload = data.upload(RUN_ID)
    upload.parent.mkdir(parents=True)
    write(upload, doc)
    store.create(
        run_id=RUN_ID, owner="local", models=["openai/cand"], request_id="req",
        validation={}, dataset={}, total=ITEMS, max_queued=5, max_per_owner=5,
    )  # fmt: skip
    base = resolve_settings(
        {"model": ["openai/cand"], "judge_model": ["openai/judge"], "base_url": server.base_url}
    )
    return data, store, service_settings(base, data)


def _item_ids(run_dir: Path) -> list[str]:
    lines = (run_dir / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["item_id"] for line in lines]


def test_a_run_outlives_a_lock_held_through_its_whole_evaluation(
    tmp_path: Path,
    mock: MockOpenAIServer,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The storage logger's news is what this test reads: whatever an earlier test in this
    # process did to the logging tree (a dictConfig disables every existing logger, a level
    # set on the package's logger), the storage logger speaks at WARNING here.
    storage_log = logging.getLogger("pytest_legaleval.service.storage")
    monkeypatch.setattr(storage_log, "disabled", False)
    caplog.set_level(logging.WARNING, logger=storage_log.name)
    data, store, settings = _service(tmp_path, mock)
    locker = Locker(data.state).hold()
    result: list[str] = []
    runner = threading.Thread(
        target=lambda: result.append(execute(RUN_ID, base=settings, data=data, store=store))
    )
    runner.start()
    try:
        # The whole evaluation happens while nothing can be written to the table.
        assert wait_until(lambda: (data.runs / RUN_ID / CHECKSUMS).is_file(), 60)
        assert store.get(RUN_ID).status == "queued"  # type: ignore[union-attr]
        assert not result  # its end waits for the lock
    finally:
        locker.release()
    runner.join(60)
    assert result == ["completed"]
    row = store.get(RUN_ID)
    assert row is not None and row.status == "completed" and row.error is None
    assert (row.done, row.total) == (ITEMS, ITEMS)
    states = [t["state"] for t in row.transitions]
    assert states == ["queued", "validating", "running", "finalizing", "completed"]
    manifest = json.loads((data.runs / RUN_ID / "run_manifest.json").read_text())
    assert manifest["status"] == "completed" and manifest["denominators"]["total_records"] == ITEMS
    assert sorted(_item_ids(data.runs / RUN_ID)) == [f"svc/q{i}" for i in range(ITEMS)]
    assert "the run table is locked" in caplog.text  # the writes did meet the lock


def test_a_write_gives_up_on_a_lock_only_when_told_to(tmp_path: Path) -> None:
    patient = RunStore(tmp_path / "state.sqlite", QUICK)
    hasty = RunStore(patient.path, Patience(busy_timeout_s=0.02, give_up_s=0.1))
    locker = Locker(patient.path).hold()
    with pytest.raises(StorageBusy, match="locked by another process"):
        hasty.probe()
    written = threading.Event()

    def write() -> None:
        patient.probe()
        written.set()

    writer = threading.Thread(target=write)
    writer.start()
    assert not written.wait(0.3)  # still waiting, not failed
    locker.release()
    writer.join(30)
    assert written.is_set()


def _full(*_: Any, **__: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


class Disk:
    """A disk that fills up after ``lines`` JSONL lines and stays full until ``free()``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, lines: int) -> None:
        self.left = lines
        self.full = False
        self.filled = False
        self.problems: list[str | None] = []
        append = RunDirectory.append

        def append_or_fail(directory: RunDirectory, name: str, obj: Any, **kw: Any) -> None:
            if name == "predictions.jsonl":
                if self.left == 0 and not self.filled:
                    self.full = self.filled = True
                if self.full:
                    _full()
                self.left -= 1
            append(directory, name, obj, **kw)

        monkeypatch.setattr(RunDirectory, "append", append_or_fail)
        monkeypatch.setattr(
            worker_module,
            "storage_problem",
            lambda root: "the disk is full (0 bytes free)" if self.full else None,
        )

    def report(self, problem: str | None) -> None:
        self.problems.append(problem)


def test_a_disk_full_mid_run_is_waited_out_and_the_run_continues(
    tmp_path: Path, mock: MockOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, store, settings = _service(tmp_path, mock)
    queue = SqliteRunQueue(data.state, QUICK)
    queue.put(RUN_ID)
    disk = Disk(monkeypatch, lines=2)
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 3:  # space comes back after the worker backed off three times
            disk.full = False

    config = WorkerConfig(settings, data.root, storage_retry_first_s=0.5)
    loop = WorkerLoop(config, "w-1", 0, store=store, queue=queue, report=disk.report, sleep=sleep)
    assert loop.step() == RUN_ID
    row = store.get(RUN_ID)
    assert row is not None and row.status == "completed", row
    assert row.resumes == 1 and (row.done, row.total) == (ITEMS, ITEMS)
    assert sleeps == [0.5, 1.0, 2.0]  # backed off while the disk stayed full
    assert any(p and "No space left on device" in p for p in disk.problems)
    assert disk.problems[-1] is None  # and said so once it worked again
    # Nothing lost, nothing paid twice: the two recorded items kept, the rest from the cache.
    assert sorted(_item_ids(data.runs / RUN_ID)) == [f"svc/q{i}" for i in range(ITEMS)]
    kept = _item_ids(data.interrupted / f"{RUN_ID}.1")
    assert len(kept) == 2
    # Each item's answer and its grade were paid for once (the cache answered the rest).
    assert mock.stats()["models"]["cand"] == ITEMS
    assert mock.count_for("Answer to grade") == ITEMS
    assert check_run_directory(data.runs / RUN_ID) == []
    assert queue.claim("w-2") is None  # the run left the queue


def test_a_full_run_table_is_waited_out_by_the_claim_and_the_state_writes(
    tmp_path: Path, mock: MockOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, store, settings = _service(tmp_path, mock)
    queue = SqliteRunQueue(data.state, QUICK)
    queue.put(RUN_ID)
    table_full = {"claim": 2, "progress": 3}
    problems: list[str | None] = []

    def failing(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if table_full[name] > 0:
                table_full[name] -= 1
                raise StorageFull("the run table cannot be written: database or disk is full")
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(queue, "claim", failing("claim", queue.claim))
    monkeypatch.setattr(store, "progress", failing("progress", store.progress))
    monkeypatch.setattr(worker_module, "storage_problem", lambda root: None)
    config = WorkerConfig(settings, data.root, storage_retry_first_s=0.01)
    loop = WorkerLoop(config, "w-1", 0, store=store, queue=queue, report=problems.append)
    assert [loop.step() for _ in range(3)] == [None, None, RUN_ID]  # two claims refused
    row = store.get(RUN_ID)
    assert row is not None and row.status == "completed" and row.resumes == 0
    assert (row.done, row.total) == (ITEMS, ITEMS)  # the progress got through in the end
    assert table_full == {"claim": 0, "progress": 0}
    assert "database or disk is full" in str(problems)
