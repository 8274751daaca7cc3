"""The run table, the queue, tokens and retention: one SQLite file, no process."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.service.auth import Tokens, bearer, is_loopback
from pytest_legaleval.service.config import DataDir, Retention
from pytest_legaleval.service.queue import SqliteRunQueue
from pytest_legaleval.service.retention import RAW_ARTIFACTS, SUMMARY_ARTIFACTS, iso, sweep
from pytest_legaleval.service.store import RunStore

VALIDATION = {"status": "accepted", "summary": {"total_records": 2, "accepted_records": 2,
              "rejected_records": 0}, "record_errors": 0, "request_id": "r"}  # fmt: skip


def _create(
    store: RunStore, run_id: str, owner: str = "tok_a", *, queued: int = 10, per_owner: int = 10
) -> str | None:
    return store.create(
        run_id=run_id, owner=owner, models=["openai/m"], request_id="req", validation=VALIDATION,
        dataset={"dataset_id": "d"}, total=2, max_queued=queued, max_per_owner=per_owner,
    )  # fmt: skip


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    return RunStore(tmp_path / "state.sqlite")


def test_create_respects_both_limits_and_pages_newest_first(store: RunStore) -> None:
    assert [_create(store, f"run_{i}", queued=3) for i in range(4)] == [None, None, None, "queue"]
    assert _create(store, "run_x", owner="tok_b", per_owner=1) is None
    assert _create(store, "run_y", owner="tok_b", per_owner=1) == "owner"
    page = store.page("tok_a", limit=2, before=None)
    assert [r.run_id for r in page] == ["run_2", "run_1"]
    assert [r.run_id for r in store.page("tok_a", limit=5, before=page[-1].seq)] == ["run_0"]
    assert store.get("run_y") is None and store.count("queued") == 4
    # an ended run no longer counts against its token
    store.finish("run_x", "completed")
    assert _create(store, "run_z", owner="tok_b", per_owner=1) is None


def test_states_progress_and_the_end(store: RunStore) -> None:
    _create(store, "run_1")
    store.set_state("run_1", "validating", "2026-01-01T00:00:01.000Z")
    store.set_state("run_1", "running", "2026-01-01T00:00:02.000Z")
    store.progress("run_1", 1, 2)
    store.set_state("run_1", "completed", "2026-01-01T00:00:03.000Z")  # terminal: not yet
    row = store.get("run_1")
    assert row is not None and row.status == "running" and (row.done, row.total) == (1, 2)
    store.finish("run_1", "completed", denominators={"total_records": 2}, metrics={"n": 1})
    row = store.get("run_1")
    assert row is not None and row.terminal and row.metrics == {"n": 1}
    assert [t["state"] for t in row.transitions] == ["queued", "validating", "running", "completed"]
    assert row.completed_at == "2026-01-01T00:00:03.000Z"
    assert store.request_cancel("run_1") is not None
    assert store.cancel_requested("run_1") is False  # an ended run is not cancelled


def test_the_queue_serves_front_first_then_oldest_and_gives_back_dead_claims(
    tmp_path: Path,
) -> None:
    queue = SqliteRunQueue(tmp_path / "state.sqlite")
    for run_id in ("a", "b", "c"):
        queue.put(run_id)
    queue.put("a")  # twice is once
    queue.prioritize("c")
    assert [queue.claim("w1"), queue.claim("w2")] == ["c", "a"]
    assert queue.claimed_by("w1") == ["c"]
    assert queue.release("w1") == ["c"]  # w1 died: c goes back, to the front
    assert queue.claim("w3") == "c"
    queue.done("c")
    assert queue.claim("w3") == "b" and queue.claim("w3") is None
    assert sorted(queue.release()) == ["a", "b"]  # a restart frees every claim


def test_tokens_are_digests_compared_whole(tmp_path: Path) -> None:
    tokens = Tokens.from_env({"LEGALEVAL_API_TOKENS": " one , two,,one "})
    assert len(tokens.digests) == 2 and tokens.enabled
    assert tokens.owner("one") != tokens.owner("two") and tokens.owner("one")
    assert tokens.owner("on") is None and tokens.owner("one ") is None
    assert "one" not in repr(tokens) and not Tokens.from_env({}).enabled
    assert bearer("Bearer  abc ") == "abc" and bearer("bearer abc") == "abc"
    assert bearer("Basic abc") is None and bearer("Bearer") is None and bearer(None) is None
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1") and not is_loopback(None)


def _finished_run(store: RunStore, data: DataDir, run_id: str, ended: datetime) -> Path:
    _create(store, run_id)
    store.finish(run_id, "completed", at=iso(ended))
    folder = data.runs / run_id
    folder.mkdir(parents=True)
    for name in (*RAW_ARTIFACTS, *SUMMARY_ARTIFACTS):
        (folder / name).write_text("{}")
        (folder / name).chmod(0o444)  # sealed runs are read-only
    data.upload(run_id).parent.mkdir(parents=True)
    data.upload(run_id).write_text("{}")
    (data.interrupted / f"{run_id}.1").mkdir(parents=True)
    return folder


def test_retention_deletes_raw_then_summaries_and_keeps_the_row(tmp_path: Path) -> None:
    data = DataDir(tmp_path / "data")
    data.create()
    store = RunStore(data.state)
    now = datetime(2026, 6, 1, tzinfo=UTC)
    old = _finished_run(store, data, "run_old", now - timedelta(days=200))
    mid = _finished_run(store, data, "run_mid", now - timedelta(days=40))
    new = _finished_run(store, data, "run_new", now - timedelta(days=5))
    _create(store, "run_open")  # not ended: never swept
    done = sweep(store, data, Retention(30, 180), now)
    assert sorted(done.raw) == ["run_mid", "run_old"] and done.summaries == ["run_old"]
    assert not old.exists() and not data.upload("run_old").exists()
    assert sorted(p.name for p in mid.iterdir()) == sorted(SUMMARY_ARTIFACTS)
    assert not (data.interrupted / "run_mid.1").exists() and not data.upload("run_mid").exists()
    assert len(list(new.iterdir())) == len(RAW_ARTIFACTS) + len(SUMMARY_ARTIFACTS)
    rows: dict[str, Any] = {r: store.get(r) for r in ("run_old", "run_mid", "run_new")}
    assert rows["run_old"].summary_deleted_at and rows["run_mid"].raw_deleted_at
    assert rows["run_mid"].summary_deleted_at is None and rows["run_new"].raw_deleted_at is None
    assert sweep(store, data, Retention(30, 180), now).raw == []  # each deletion happens once


def test_the_data_directory_is_private(tmp_path: Path) -> None:
    data = DataDir(tmp_path / "data")
    data.create()
    for folder in (data.root, data.runs, data.uploads, data.incoming, data.locks):
        assert os.stat(folder).st_mode & 0o077 == 0, folder
