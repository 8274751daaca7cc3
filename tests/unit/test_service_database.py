"""The service's Database interface on SQLite and on a real PostgreSQL server.

The same contract runs on both backends (``backend`` fixture); the PostgreSQL-only parts —
leases, ``SKIP LOCKED`` claims from several threads, the schema migrated once by replicas
starting together, the advisory retention lock, an unreachable database — run on a real
server (``tests/pg_server.py``).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.service.config import DataDir, Retention
from pytest_legaleval.service.database import Database, RunTable, SqliteDatabase, open_database
from pytest_legaleval.service.retention import Sweeper
from pytest_legaleval.service.storage import DatabaseUnavailable, Patience

from ..pg_server import needs_postgres, pg_url, postgres_server  # noqa: F401 (fixtures)

VALIDATION = {"status": "accepted", "summary": {"total_records": 2}, "record_errors": 0}


def _create(store: RunTable, run_id: str, owner: str = "tok_a", *, queued: int = 10,
            per_owner: int = 10) -> str | None:  # fmt: skip
    return store.create(
        run_id=run_id, owner=owner, models=["openai/m"], request_id="req", validation=VALIDATION,
        dataset={"dataset_id": "d"}, total=2, max_queued=queued, max_per_owner=per_owner,
    )  # fmt: skip


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=needs_postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Database:
    if request.param == "sqlite":
        return SqliteDatabase(tmp_path / "state.sqlite")
    url = request.getfixturevalue("pg_url")
    database = open_database(url, tmp_path / "unused.sqlite", lease_s=30.0)
    database.prepare()
    return database


def test_the_run_table_contract(backend: Database) -> None:
    store = backend.store()
    try:
        assert [_create(store, f"run_{i}", queued=3) for i in range(4)] == [
            None, None, None, "queue",
        ]  # fmt: skip
        assert _create(store, "run_x", owner="tok_b", per_owner=1) is None
        assert _create(store, "run_y", owner="tok_b", per_owner=1) == "owner"
        page = store.page("tok_a", limit=2, before=None)
        assert [r.run_id for r in page] == ["run_2", "run_1"]
        assert [r.run_id for r in store.page("tok_a", limit=5, before=page[-1].seq)] == ["run_0"]
        assert store.count("queued") == 4 and store.get("run_y") is None
        store.set_state("run_0", "running", "2026-01-01T00:00:02.000Z")
        store.progress("run_0", 1, 2)
        store.set_state("run_0", "completed", "2026-01-01T00:00:03.000Z")  # terminal: not yet
        row = store.get("run_0")
        assert row is not None and row.status == "running" and (row.done, row.total) == (1, 2)
        store.finish("run_0", "completed", denominators={"total_records": 2}, metrics={"x": 1.5},
                     at="2026-01-01T00:00:03.000Z")  # fmt: skip
        row = store.get("run_0")
        assert row is not None and row.terminal and row.metrics == {"x": 1.5}
        assert [t["state"] for t in row.transitions] == ["queued", "running", "completed"]
        assert store.request_cancel("run_1") is not None and store.cancel_requested("run_1")
        assert not store.cancel_requested("run_2")
        store.taken_up("run_2")
        assert (store.get("run_2") or row).resumes == 1
        assert store.unfinished() == ["run_1", "run_2", "run_x"]
        assert store.known(["run_0", "nope", "run_x"]) == {"run_0", "run_x"}
        ended = list(store.completed_before("2026-02-01T00:00:00.000Z", "raw_deleted_at"))
        assert [r.run_id for r in ended] == ["run_0"]
        store.mark_deleted("run_0", "raw_deleted_at")
        assert not list(store.completed_before("2026-02-01T00:00:00.000Z", "raw_deleted_at"))
        store.probe()
    finally:
        store.close()


def test_the_queue_contract(backend: Database) -> None:
    queue = backend.queue()
    for run_id in ("run_a", "run_b", "run_c"):
        queue.put(run_id)
    queue.put("run_a")  # idempotent
    queue.prioritize("run_c")
    assert queue.claim("w1") == "run_c"
    assert queue.claim("w1") == "run_a"
    assert sorted(queue.claimed_by("w1")) == ["run_a", "run_c"]
    assert sorted(queue.release("w1")) == ["run_a", "run_c"]
    first = queue.claim("w2")
    assert first in ("run_a", "run_c")  # released runs go to the front, before run_b
    queue.done("run_b")
    assert {first, queue.claim("w2")} == {"run_a", "run_c"}
    assert queue.claim("w3") is None


@needs_postgres
def test_a_lease_that_runs_out_lets_another_replica_claim_the_run(pg_url: str) -> None:  # noqa: F811
    database = open_database(pg_url, Path("unused"), lease_s=0.0)
    database.prepare()
    queue: Any = database.queue()
    queue.put("run_a")
    assert queue.claim("replica1/worker-0.1") == "run_a"
    # lease 0 s: by the next transaction it has run out, as after a dead replica's last beat
    assert queue.claim("replica2/worker-0.1") == "run_a"
    assert queue.claimed_by("replica1/worker-0.1") == []
    assert queue.renew("replica1/worker-0.1") == []  # the dead one holds nothing any more
    queue.done("run_a")
    held = open_database(pg_url, Path("unused"), lease_s=600.0).queue()
    held.put("run_b")
    assert held.claim("replica3/worker-0.1") == "run_b"
    assert held.renew("replica3/worker-0.1") == ["run_b"]  # type: ignore[attr-defined]
    assert held.claim("replica4/worker-0.1") is None  # a live lease is never taken
    queue.put("run_c")
    assert queue.claim("replica5/worker-0.1") == "run_c"  # on a lease that runs out at once
    assert held.release() == ["run_c"]  # a starting replica takes back only expired claims
    assert held.claimed_by("replica3/worker-0.1") == ["run_b"]


@needs_postgres
def test_skip_locked_claims_never_hand_one_run_to_two_workers(pg_url: str) -> None:  # noqa: F811
    database = open_database(pg_url, Path("unused"))
    database.prepare()
    queue = database.queue()
    runs = [f"run_{i:02d}" for i in range(40)]
    for run_id in runs:
        queue.put(run_id)
    taken: dict[str, list[str]] = {}

    def work(worker: str) -> None:
        mine = taken.setdefault(worker, [])
        own = database.queue()
        while (run_id := own.claim(worker)) is not None:
            mine.append(run_id)

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    every = [run_id for mine in taken.values() for run_id in mine]
    assert sorted(every) == runs  # each exactly once


@needs_postgres
def test_replicas_starting_together_create_the_schema_once(pg_url: str) -> None:  # noqa: F811
    import psycopg

    database = open_database(pg_url, Path("unused"))
    errors: list[BaseException] = []

    def start() -> None:
        try:
            database.prepare()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT version FROM legaleval_schema").fetchall() == [(1,)]
        conn.execute("UPDATE legaleval_schema SET version = 99")
    with pytest.raises(ConfigError, match="schema version 99, newer"):
        database.prepare()


@needs_postgres
def test_one_replica_sweeps_retention_at_a_time(pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    database = open_database(pg_url, tmp_path / "unused.sqlite")
    database.prepare()
    data = DataDir(tmp_path)
    data.create()
    store = database.store()
    _create(store, "run_old")
    store.finish("run_old", "completed", at="2020-01-01T00:00:00.000Z")
    sweeper = Sweeper(store, data, Retention(), exclusive=database.exclusive)
    with database.exclusive("retention") as first:
        assert first
        with database.exclusive("retention") as second:
            assert not second  # held by the other "replica"
        skipped = sweeper._sweep_once()
        assert skipped.raw == [] and sweeper.skipped == 1
    done = sweeper._sweep_once()
    assert done.raw == ["run_old"] and done.summaries == ["run_old"]


@needs_postgres
def test_an_unreachable_database_is_named_without_its_password() -> None:
    with socket_closed_port() as port:
        url = f"postgresql://legaleval:s3cret-pw@127.0.0.1:{port}/evals"
        database = open_database(url, Path("unused"))
        assert database.name == f"127.0.0.1:{port}/evals" and database.kind == "postgresql"
        store = database.store(Patience(busy_timeout_s=1.0, first_delay_s=0.01, give_up_s=0.05))
        with pytest.raises(DatabaseUnavailable) as caught:
            store.count("queued")
        assert "s3cret-pw" not in str(caught.value) and "evals" in str(caught.value)
        assert "s3cret" not in repr(database)


def test_database_urls_are_checked_before_anything_starts(tmp_path: Path) -> None:
    assert open_database(None, tmp_path / "s.sqlite").kind == "sqlite"
    with pytest.raises(ConfigError, match="unknown kind 'mysql'"):
        open_database("mysql://u:p@h/db", tmp_path / "s.sqlite")
    with pytest.raises(ConfigError, match="names no database"):
        open_database("postgresql://u:p@h:5432/", tmp_path / "s.sqlite")
    with pytest.raises(ConfigError, match="port is not a number"):
        open_database("postgresql://u:p@h:port/db", tmp_path / "s.sqlite")


class socket_closed_port:
    """A loopback port nothing listens on (bound, never listening, while in use)."""

    def __enter__(self) -> int:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        return int(self.sock.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


def test_postgresql_without_its_extra_names_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(__import__("sys").modules, "psycopg", None)
    with pytest.raises(ConfigError, match=r"pip install 'pytest-legaleval\[postgres\]'"):
        open_database("postgresql://u@h/db", tmp_path / "s.sqlite")


def test_serve_refuses_an_unknown_database_before_it_listens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("fastapi", reason="legaleval serve needs the [serve] extra")
    from pytest_legaleval.cli import main

    status = main([
        "serve", "--model", "openai/m", "--base-url", "http://127.0.0.1:9/v1",
        "--data-dir", str(tmp_path / "d"), "--database", "mysql://u:hunter2pw@h/db",
    ])  # fmt: skip
    assert status == 2
    err = capsys.readouterr().err
    assert "unknown kind 'mysql'" in err and "hunter2pw" not in err


@needs_postgres
def test_what_postgresql_refuses_is_a_named_storage_error(pg_url: str) -> None:  # noqa: F811
    import psycopg

    from pytest_legaleval.service.storage import StorageError

    database = open_database(pg_url, Path("unused"))
    database.prepare()
    store = database.store()
    _create(store, "run_nul")
    # a run's error may quote a dataset or a model: a NUL, which text columns refuse, is kept
    # as U+FFFD instead of failing the write
    store.finish("run_nul", "failed", error="the reply was 'a\x00b'")
    row = store.get("run_nul")
    assert row is not None and row.error == "the reply was 'a\ufffdb'"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP TABLE legaleval_runs")
    with pytest.raises(StorageError, match="refused the request") as caught:
        store.count("queued")  # not retried: the table will not come back by waiting
    assert not isinstance(caught.value, DatabaseUnavailable)


@needs_postgres
def test_a_restarted_replica_takes_back_its_dead_predecessors_claims_at_once(
    pg_url: str,  # noqa: F811
) -> None:
    import os
    import socket
    import subprocess

    from pytest_legaleval.service.server import release_dead_local

    database = open_database(pg_url, Path("unused"), lease_s=600.0)
    database.prepare()
    queue = database.queue()
    dead = subprocess.Popen(["true"])  # a pid that ran and is gone
    dead.wait()
    host = socket.gethostname()
    owners = {
        "run_dead": f"{host}.{dead.pid}/worker-0.1",
        "run_mine": f"{host}.{os.getpid()}/worker-0.1",
        "run_far": f"elsewhere.{dead.pid}/worker-0.1",
        "run_odd": "no-pid/worker-0.1",
    }
    for run_id, worker in owners.items():
        queue.put(run_id)
        assert queue.claim(worker) == run_id
    assert release_dead_local(queue, host) == ["run_dead"]  # leases of 600 s: not waited for
    assert queue.claim("new/worker-0.1") == "run_dead"


def test_the_lease_heartbeat_reports_a_failed_renewal_and_its_end() -> None:
    from pytest_legaleval.service.worker import start_heartbeat

    calls: list[str] = []
    reports: list[str | None] = []
    third, stop = threading.Event(), threading.Event()

    def renew(worker: str) -> None:
        calls.append(worker)
        if len(calls) == 1:
            raise DatabaseUnavailable("the database db:5432/x cannot be reached")
        if len(calls) == 3:
            third.set()

    thread = start_heartbeat(renew, "h.1/worker-0.1", 0.001, reports.append, stop)
    assert third.wait(30)
    stop.set()
    thread.join(30)
    assert not thread.is_alive() and set(calls) == {"h.1/worker-0.1"}
    assert reports == ["cannot renew its leases: the database db:5432/x cannot be reached", None]
