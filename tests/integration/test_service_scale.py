"""The service beyond one machine: every task type, PostgreSQL, replicas, a lost database.

Real parts only: ``legaleval serve`` processes, the mock endpoint on loopback, and a real
PostgreSQL server (``tests/pg_server.py``). The every-task-type test runs on SQLite and on
PostgreSQL; the replica and outage tests need PostgreSQL.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="legaleval serve needs the [serve] extra")
pytest.importorskip("hypercorn", reason="legaleval serve needs the [serve] extra")

from pytest_legaleval.run.verify import check_run_directory
from pytest_legaleval.testing.mock_openai import MockOpenAIServer, prompt_text

from ..pg_server import (  # noqa: F401 (fixtures)
    PostgresServer,
    needs_postgres,
    pg_url,
    postgres_server,
)
from ..processes import wait_until
from ..service_harness import SUBMIT, TERMINAL, ServiceProcess, document, gone, record, wait_for
from .conftest import EXAMPLES

NDJSON = {"Content-Type": "application/x-ndjson"}


def row(kind: str, row_id: str, prompt: str, dataset: str = "mixed") -> dict[str, Any]:
    """One valid ``legal_eval_v1`` row of ``kind``: mcq, rubric, reference or turns."""
    base: dict[str, Any] = {"schema_version": "legal_eval_v1", "id": row_id, "dataset": dataset,
                            "prompt": prompt}  # fmt: skip
    if kind == "mcq":
        return {**base, "task_type": "mcq", "correct_choice_ids": ["B"],
                "choices": [{"id": "A", "text": "Yes"}, {"id": "B", "text": "No"}]}  # fmt: skip
    if kind == "rubric":
        return {**base, "task_type": "rubric_qa", "rubric": [
            {"id": "c1", "title": "Names the statute", "weight": 2},
            {"id": "c2", "title": "States the deadline"}]}  # fmt: skip
    turns = [{"role": "user", "content": "Earlier question."},
             {"role": "assistant", "content": "Earlier answer."}]  # fmt: skip
    extra = {"messages": turns} if kind == "turns" else {}
    return {**base, "task_type": "reference_qa", "reference_answers": ["The reference."], **extra}


def jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


class Slow:
    """The candidate's answer to a ``SLOW`` prompt waits ``delay_s`` while :attr:`on` is set.

    Judge questions (model ``mock``) get the mock's own verdicts at once.
    """

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.on = True

    def __call__(self, body: dict[str, Any]) -> Any:
        if body.get("model") != "mock" and self.on and "SLOW" in prompt_text(body.get("messages")):
            return {"content": "a slow answer", "delay": self.delay_s}
        return None


@pytest.fixture
def services() -> Iterator[list[ServiceProcess]]:
    started: list[ServiceProcess] = []
    yield started
    for service in started:
        if service.process is not None and service.process.poll() is None:
            service.kill()


def _args(mock: MockOpenAIServer, *more: str) -> list[str]:
    return ["--model", "openai/cand", "--judge-model", "openai/mock", "--base-url",
            mock.base_url, "--log-level", "warning", "--max-runs-per-token", "100",
            *more]  # fmt: skip


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgresql", marks=needs_postgres)])
def test_every_task_type_goes_through_the_service(
    kind: str, tmp_path: Path, services: list[ServiceProcess], request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("pg_url") if kind == "postgresql" else "sqlite"
    database = ["--database", url]  # named either way: the harness's switch does not apply
    with MockOpenAIServer() as mock:
        mock.add_reply(None, Slow(0))
        service = ServiceProcess(tmp_path / "data", _args(mock, "--workers", "1", *database))
        services.append(service)
        client = service.start().client()
        rows = [row("mcq", "m1", "Is a verbal lease void?"), row("rubric", "r1", "Which rule?"),
                row("reference", "q1", "What is consideration?"),
                row("turns", "t1", "And the deadline?"),
                {"schema_version": "legal_eval_v1", "id": "bad", "dataset": "mixed",
                 "task_type": "mcq", "prompt": "No choices"},
                # the contract's per-record limits hold for rows too: 256 KB, metadata depth
                row("reference", "big", "x" * (256 * 1024)),
                {**row("reference", "deep", "Deep?"),
                 "metadata": {"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}}}]  # fmt: skip
        status, headers, accepted = client.request("POST", "/v1/runs", body=jsonl(rows),
                                                   headers=NDJSON)  # fmt: skip
        assert status == 202, accepted
        assert accepted["status"] == "accepted_with_record_errors"
        assert accepted["summary"] == {"total_records": 7, "accepted_records": 4,
                                       "rejected_records": 3}  # fmt: skip
        errors = accepted["record_errors"]
        assert {(e["record_id"], e["code"], e["index"]) for e in errors} == {
            ("bad", "missing_required_field", 4),
            ("big", "record_too_large", 5),
            ("deep", "value_out_of_range", 6),
        }, errors  # the contract's record_errors entries: choices, correct_choice_ids
        assert headers["location"] == f"/v1/runs/{accepted['run_id']}"
        # the contract's own endpoint, unchanged: a JSON document of reference records
        status, _, contract = client.request(
            "POST", "/v1/runs", body=json.dumps(document("c", [record("c1", "Q?")])).encode(),
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        assert status == 202 and contract["status"] == "accepted"
        # rows of two datasets and two task types (LEXam open questions, ACE rubrics): one run
        judged = (EXAMPLES / "legal_judged.jsonl").read_bytes()
        status, _, both = client.request("POST", "/v1/runs", body=judged, headers=NDJSON)
        assert status == 202 and both["summary"]["accepted_records"] == 6, both
        status, _, broken = client.request("POST", "/v1/runs", body=b"{not json\n", headers=NDJSON)
        assert status == 400 and broken["error"]["code"] == "invalid_request", broken
        run = wait_for(client, accepted["run_id"], TERMINAL, 90)
        wait_for(client, contract["run_id"], ["completed"], 90)
        health = client.json("GET", "/healthz")
        submitted = subprocess.run(
            [*SUBMIT, str(EXAMPLES / "legal_mcq.jsonl"), "--server", service.url, "--out",
             str(tmp_path / "mcq"), "-q"], capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert service.stop() == 0, service.log()
    assert run["status"] == "completed_with_failures", run
    run_dir = service.data_dir / "runs" / run["run_id"]
    assert check_run_directory(run_dir) == []
    lines = [json.loads(x) for x in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert sorted((x["record_id"], x["task_type"]) for x in lines) == [
        ("m1", "mcq"), ("q1", "reference_qa"), ("r1", "rubric_qa"), ("t1", "reference_qa"),
    ]  # fmt: skip
    assert health["database"]["kind"] == kind and health["database"]["reachable"] is True
    assert submitted.returncode in (0, 1), submitted.stderr  # judged: passed or failed records
    assert "uploading them as JSONL" in submitted.stderr
    manifest = json.loads((tmp_path / "mcq" / "run_manifest.json").read_text())
    assert manifest["denominators"]["evaluated_records"] == 20


def _claims(url: str) -> dict[str, str]:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT run_id, claimed_by FROM legaleval_queue WHERE claimed_by IS NOT NULL"
        )
        return {str(r[0]): str(r[1]) for r in rows.fetchall()}


KINDS = ("mcq", "rubric", "reference", "turns")
PASSWORD = "s3cret-pw-40"
SLOW_RUNS, RUNS, WORKERS = 6, 30, 2


@needs_postgres
@pytest.mark.slow
def test_three_replicas_one_killed_every_run_completes_once(
    tmp_path: Path,
    services: list[ServiceProcess],
    pg_url: str,  # noqa: F811
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    slow = Slow(8.0)
    # trust authentication ignores the password: it is here to be looked for everywhere
    url = pg_url.replace("postgres@", f"postgres:{PASSWORD}@")
    with MockOpenAIServer() as mock:
        mock.add_reply(None, slow)
        replicas = []
        for index in range(3):  # three names for one shared directory (their logs differ)
            (tmp_path / f"replica{index}").symlink_to(shared)
            replica = ServiceProcess(
                tmp_path / f"replica{index}",
                _args(mock, "--workers", str(WORKERS), "--database", url,
                      "--lease-seconds", "2"),
            )  # fmt: skip
            services.append(replica)
            replicas.append(replica.start())
        runs: dict[str, list[str]] = {}
        for number in range(RUNS):
            kind = KINDS[number % len(KINDS)]
            ids = [f"run{number:02d}_{i}" for i in range(3)]
            prompts = [f"{'SLOW ' if number < SLOW_RUNS and i == 2 else ''}Question {n}?"
                       for i, n in enumerate(ids)]  # fmt: skip
            rows = [row(kind, i, p, dataset=f"set{number:02d}")
                    for i, p in zip(ids, prompts, strict=True)]  # fmt: skip
            client = replicas[number % 3].client()
            status, _, body = client.request("POST", "/v1/runs", body=jsonl(rows), headers=NDJSON)
            assert status == 202, body
            runs[str(body["run_id"])] = ids
            if number == SLOW_RUNS - 1:  # every worker holds one slow run, mid-way
                assert wait_until(lambda: mock.stats()["in_flight"] == SLOW_RUNS, 60), mock.stats()
        victim = replicas[0]
        held = [r for r, who in _claims(pg_url).items() if f".{victim.pid}/" in who]
        assert len(held) == WORKERS, _claims(pg_url)
        for run_id in held:  # recorded what had finished: the two fast records
            lines = victim.data_dir / "runs" / run_id / "predictions.jsonl"
            assert wait_until(lambda p=lines: p.is_file() and len(p.read_bytes().splitlines())
                              == 2, 30)  # fmt: skip
        before = dict(mock.stats()["per_prompt"])
        in_flight = mock.stats()["in_flight"]
        children = victim.kill()
        assert children and gone(children), "workers outlived their killed replica"
        slow.on = False  # from now on every call is answered at once
        client = replicas[1].client()
        ended = {run_id: wait_for(client, run_id, TERMINAL, 120) for run_id in runs}
        health = replicas[2].client().json("GET", "/healthz")
        for replica in replicas[1:]:
            assert replica.stop() == 0, replica.log()
    assert all(r["status"] in ("completed", "completed_with_failures") for r in ended.values())
    for run_id, run in ended.items():
        states = [t["state"] for t in run["state_transitions"]]
        assert sum(s in TERMINAL for s in states) == 1, (run_id, states)  # ended once
        assert run["resumes"] == (1 if run_id in held else 0), (run_id, run["resumes"])
        run_dir = shared / "runs" / run_id
        assert check_run_directory(run_dir) == [], run_id
        lines = [json.loads(x) for x in (run_dir / "predictions.jsonl").read_text().splitlines()]
        assert sorted(x["record_id"] for x in lines) == runs[run_id]  # one line per record
    after = mock.stats()["per_prompt"]
    repeated = {h for h, n in before.items() if after.get(h) != n}
    # only the calls the killed replica had in flight were made again, each once more
    assert len(repeated) == len(held) <= in_flight, repeated
    assert all(after[h] == before[h] + 1 for h in repeated)
    assert health["database"] == {"kind": "postgresql", "name": pg_url.split("@", 1)[1],
                                  "reachable": True}  # fmt: skip
    assert _claims(pg_url) == {}
    # the replicas shared the database's response cache, and the password went nowhere
    import psycopg

    with psycopg.connect(pg_url) as conn:
        cached = conn.execute("SELECT count(*) FROM legaleval_results").fetchone()
    assert cached is not None and cached[0] >= RUNS * 3
    assert not (shared / "cache.sqlite").exists()
    for path in [*shared.rglob("*"), *tmp_path.glob("replica*.*")]:
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path
    assert PASSWORD not in json.dumps(health)


@needs_postgres
def test_a_lost_database_degrades_the_service_and_runs_continue_when_it_is_back(
    tmp_path: Path, services: list[ServiceProcess]
) -> None:
    server = PostgresServer().start()
    try:
        url = server.create_database()
        slow = Slow(3.0)
        with MockOpenAIServer() as mock:
            mock.add_reply(None, slow)
            service = ServiceProcess(tmp_path / "data", _args(mock, "--database", url))
            services.append(service)
            client = service.start().client()
            rows = [row("reference", "a", "Fast?"), row("reference", "b", "SLOW one?")]
            status, _, first = client.request("POST", "/v1/runs", body=jsonl(rows),
                                              headers=NDJSON)  # fmt: skip
            assert status == 202
            assert wait_until(lambda: mock.stats()["in_flight"] == 1, 60)
            server.stop()
            assert wait_until(
                lambda: client.json("GET", "/healthz")["database"]["reachable"] is False, 60
            )
            health = client.json("GET", "/healthz")
            status, headers, refused = client.request(
                "POST", "/v1/runs", body=jsonl(rows), headers=NDJSON
            )
            server.start()
            done = wait_for(client, first["run_id"], TERMINAL, 90)
            assert wait_until(lambda: client.json("GET", "/healthz")["status"] == "ok", 60)
            status_after, _, second = client.request("POST", "/v1/runs", body=jsonl(rows),
                                                     headers=NDJSON)  # fmt: skip
            assert status_after == 202
            wait_for(client, second["run_id"], TERMINAL, 90)
            assert service.stop() == 0, service.log()
    finally:
        server.remove()
    assert health["status"] == "degraded" and "storage" in health["degraded"], health
    assert "127.0.0.1" in health["degraded"]["storage"]
    assert status == 503 and int(headers["retry-after"]) > 0, refused
    assert done["status"] == "completed", done
    lines = (service.data_dir / "runs" / first["run_id"] / "predictions.jsonl").read_text()
    assert sorted(json.loads(x)["record_id"] for x in lines.splitlines()) == ["a", "b"]
