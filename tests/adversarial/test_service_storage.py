"""Uploads against a full disk and a locked run table: a clear answer, and nothing left over.

Issue 31: an upload during a 36 s lock got a 500 and left an orphan file that retention
never deleted; a full disk at upload was a generic 500. Now a full disk is 507
``insufficient_storage`` naming the cause, a lock is waited out (up to the HTTP process's
patience, then 503 with ``Retry-After``), and neither leaves a file, a row or a queue
entry; ``/healthz`` stays 200 and names what is degraded.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="legaleval serve needs the [serve] extra")

from pytest_legaleval.service import store as store_module
from pytest_legaleval.service import uploads
from pytest_legaleval.service.health import HealthMonitor, HealthReport
from pytest_legaleval.service.storage import Patience, StorageFull

from ..service_harness import call, document, record, service_app

BODY = json.dumps(document("storage", [record("a", "Where does it go?")])).encode()
HEADERS = {"Content-Type": "application/json"}
HASTY = Patience(busy_timeout_s=0.02, first_delay_s=0.01, max_delay_s=0.05, give_up_s=0.3)


def _left_behind(backend: Any) -> list[str]:
    """Files and runs an upload left: kept uploads, incoming folders, rows."""
    data = backend.config.data
    files = [str(p.relative_to(data.uploads)) for p in data.uploads.rglob("*") if p.is_file()]
    rows = [row.run_id for row in backend.store.page(None, limit=10, before=None)]
    return files + rows


def test_a_full_disk_while_receiving_is_507_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, backend = service_app(tmp_path)

    async def fills_up(receive: Any, target: Path, **_: Any) -> int:
        target.write_bytes(BODY[:10])  # part of it made it to disk
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(uploads, "receive_upload", fills_up)
    status, headers, body = call(app, "POST", "/v1/runs", body=BODY, headers=HEADERS)
    assert status == 507, body
    assert body["error"]["code"] == "insufficient_storage"
    assert "No space left on device" in body["error"]["message"]
    assert body["request_id"] == headers["x-request-id"] and headers["retry-after"]
    assert _left_behind(backend) == []


def test_a_full_run_table_is_507_and_the_kept_upload_is_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, backend = service_app(tmp_path)
    real = store_module.transaction

    def full(conn: sqlite3.Connection, action: Any) -> Any:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(store_module, "transaction", full)
    status, _, body = call(app, "POST", "/v1/runs", body=BODY, headers=HEADERS)
    assert status == 507 and "database or disk is full" in body["error"]["message"]
    monkeypatch.setattr(store_module, "transaction", real)
    assert _left_behind(backend) == []
    # Space is back: the same upload is accepted, with no restart.
    status, _, body = call(app, "POST", "/v1/runs", body=BODY, headers=HEADERS)
    assert status == 202, body
    assert _left_behind(backend) == [f"{body['run_id']}/upload.json", body["run_id"]]


class LockMet(logging.Handler):
    """Set once a write has met the lock (the store logs it before waiting)."""

    def __init__(self) -> None:
        super().__init__()
        self.met = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "the run table is locked" in record.getMessage():
            self.met.set()


def test_an_upload_gives_up_cleanly_on_a_long_lock_and_waits_out_a_short_one(
    tmp_path: Path,
) -> None:
    app, backend = service_app(tmp_path, patience=HASTY)
    locker = sqlite3.connect(str(backend.store.path), isolation_level=None, check_same_thread=False)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        status, headers, body = call(app, "POST", "/v1/runs", body=BODY, headers=HEADERS)
    finally:
        locker.execute("COMMIT")
    assert status == 503 and body["error"]["code"] == "service_unavailable", body
    assert "locked" in body["error"]["message"] and headers["retry-after"]
    assert _left_behind(backend) == []
    # A lock that ends while the upload waits: the upload is accepted once it is gone.
    backend.store.patience = dataclasses.replace(HASTY, give_up_s=None)
    watch = LockMet()
    logging.getLogger("pytest_legaleval.service.storage").addHandler(watch)
    locker.execute("BEGIN EXCLUSIVE")

    def release_once_met() -> None:
        watch.met.wait(60)
        locker.execute("COMMIT")

    releaser = threading.Thread(target=release_once_met)
    releaser.start()
    try:
        status, _, body = call(app, "POST", "/v1/runs", body=BODY, headers=HEADERS)
    finally:
        releaser.join(60)
        logging.getLogger("pytest_legaleval.service.storage").removeHandler(watch)
    assert watch.met.is_set() and status == 202, body
    assert backend.queue.claim("w") == body["run_id"]


def test_an_accepted_run_whose_queue_entry_fails_is_queued_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, backend = service_app(tmp_path)

    def full(run_id: str) -> None:
        raise StorageFull("database or disk is full")

    monkeypatch.setattr(backend.queue, "put", full)
    status, _, body = call(app, "POST", "/v1/runs", body=BODY, headers=HEADERS)
    assert status == 202  # the run exists: it is not lost, only not queued yet
    monkeypatch.undo()
    assert backend.queue.claim("w") is None
    HealthMonitor(backend.config.data, backend.store, backend.queue).check()
    assert backend.queue.claim("w") == body["run_id"]


class Degraded:
    def report(self) -> HealthReport:
        return HealthReport(
            {"storage": "the disk of /srv is full (0 bytes free)", "worker-0": "restarting"}, 3
        )


def test_healthz_is_200_and_names_what_is_degraded(tmp_path: Path) -> None:
    app, _ = service_app(tmp_path, health=Degraded())
    status, _, body = call(app, "GET", "/healthz")
    assert status == 200
    assert body["status"] == "degraded" and body["queued"] == 3
    assert set(body["degraded"]) == {"storage", "worker-0"}
    healthy, _ = service_app(tmp_path / "ok")
    status, _, body = call(healthy, "GET", "/healthz")
    assert (status, body["status"], body["degraded"]) == (200, "ok", {})
