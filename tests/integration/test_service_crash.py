"""``kill -9`` of the service mid-run: a restart finds every run where it was.

The mock holds the answers to ``SLOW`` prompts, so when the service is killed the fast
records are finished (and their calls cached) and the slow ones are in flight. After the
restart the running run continues, the queued one starts, and not one call that had
finished before the kill is made again (counted per exact prompt by the mock).
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="legaleval serve needs the [serve] extra")
pytest.importorskip("hypercorn", reason="legaleval serve needs the [serve] extra")

from pytest_legaleval.run.verify import check_run_directory
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from ..processes import wait_until
from ..service_harness import (
    Script,
    ServiceProcess,
    document,
    gone,
    record,
    wait_for,
)

FAST, SLOW = 12, 4


@pytest.fixture
def services() -> Iterator[list[ServiceProcess]]:
    """The services a test starts; any still running when it ends (a failed test) is killed."""
    started: list[ServiceProcess] = []
    yield started
    for service in started:
        if service.process is not None and service.process.poll() is None:
            service.kill()


def _upload(
    service: ServiceProcess, dataset_id: str, records: list[dict[str, object]]
) -> tuple[int, dict[str, str], dict[str, object]]:
    body = json.dumps(document(dataset_id, records)).encode()
    return service.client().request(
        "POST", "/v1/runs", body=body, headers={"Content-Type": "application/json"}
    )


def test_kill_9_mid_run_then_restart_repeats_no_finished_call(
    tmp_path: Path, services: list[ServiceProcess]
) -> None:
    script = Script()
    script.hold.set()
    with MockOpenAIServer() as mock:
        mock.add_reply(None, script)
        service = ServiceProcess(
            tmp_path / "data",
            ["--model", "openai/cand", "--judge-model", "openai/judge", "--base-url",
             mock.base_url, "--workers", "1", "--max-queued", "1", "--log-level", "warning"],
        )  # fmt: skip  # no tokens: loopback clients only, as here
        services.append(service)
        service.start()
        records = [record(f"fast{i:02d}", f"Fast question {i}?") for i in range(FAST)]
        records += [record(f"slow{i}", f"SLOW question {i}?") for i in range(SLOW)]
        status, _, first = _upload(service, "crash_a", records)
        assert status == 202
        run_a = str(first["run_id"])
        client = service.client()
        wait_for(client, run_a, ["running"])
        status, _, second = _upload(service, "crash_b", [record("b1", "Queued question?")])
        assert status == 202  # one worker, busy: this one waits
        run_b = str(second["run_id"])
        assert client.json("GET", f"/v1/runs/{run_b}")["status"] == "queued"
        status, headers, busy = _upload(service, "crash_c", [record("c1", "One too many?")])
        assert status == 429 and int(headers["retry-after"]) > 0, busy
        assert busy["error"]["code"] == "rate_limited"

        predictions = service.data_dir / "runs" / run_a / "predictions.jsonl"
        assert wait_until(
            lambda: predictions.is_file() and len(predictions.read_text().splitlines()) == FAST, 60
        )
        # Every call made so far has finished (and is cached) except the held SLOW ones.
        assert wait_until(lambda: mock.stats()["in_flight"] == SLOW, 30), mock.stats()
        finished = {k: v for k, v in mock.stats()["per_prompt"].items()}
        held_prompts = mock.count_for("SLOW question")
        assert held_prompts == SLOW
        children = service.kill()
        assert children and gone(children), "workers outlived the killed service"

        script.hold.clear()
        service.start()
        client = service.client()  # the restarted service listens on another free port
        done_a = wait_for(client, run_a, ["completed", "completed_with_failures", "failed"], 90)
        done_b = wait_for(client, run_b, ["completed", "completed_with_failures", "failed"], 90)
        assert service.stop() == 0, service.log()

    assert done_a["status"] == "completed" and done_b["status"] == "completed", (done_a, done_b)
    assert done_a["resumes"] == 1 and done_a["denominators"]["evaluated_records"] == FAST + SLOW
    after = mock.stats()["per_prompt"]
    repeated = {h: (n, after[h]) for h, n in finished.items() if after[h] != n}
    # The held SLOW generations never finished: they are the only calls made twice.
    assert len(repeated) == SLOW, repeated
    assert mock.count_for("SLOW question") == 2 * SLOW + SLOW  # held, made again, judged
    states = [t["state"] for t in done_a["state_transitions"]]
    assert states[:3] == ["queued", "validating", "running"] and states.count("running") == 2
    run_dir = service.data_dir / "runs" / run_a
    assert check_run_directory(run_dir) == []
    rows = [json.loads(line) for line in (run_dir / "predictions.jsonl").open()]
    assert [r["record_id"] for r in rows] == [r["record_id"] for r in records]
    # the lines finished before the kill were kept as they were, not re-evaluated
    assert all(not r["details"]["cached"] for r in rows if r["record_id"].startswith("fast"))
    assert (service.data_dir / "interrupted" / f"{run_a}.1").is_dir()
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["created_at"] == done_a["created_at"]


def test_a_worker_killed_mid_run_is_replaced_and_its_run_continued(
    tmp_path: Path, services: list[ServiceProcess]
) -> None:
    script = Script()
    script.hold.set()
    with MockOpenAIServer() as mock:
        mock.add_reply(None, script)
        service = ServiceProcess(
            tmp_path / "data",
            ["--model", "openai/cand", "--judge-model", "openai/judge", "--base-url",
             mock.base_url, "--workers", "1", "--log-level", "warning"],
        )  # fmt: skip
        services.append(service)
        service.start()
        records = [record("fast", "Fast question?"), record("slow", "SLOW question?")]
        status, _, accepted = _upload(service, "worker_crash", records)
        assert status == 202
        run_id = str(accepted["run_id"])
        client = service.client()
        assert wait_until(
            lambda: client.json("GET", f"/v1/runs/{run_id}")["progress"]["done"] == 1, 60
        )
        workers = [p for p in service.worker_pids() if _is_worker(p)]
        assert len(workers) == 1, workers
        os.kill(workers[0], signal.SIGKILL)
        assert gone(workers)
        script.hold.clear()
        run = wait_for(client, run_id, ["completed", "completed_with_failures", "failed"], 90)
        replacement = [p for p in service.worker_pids() if _is_worker(p)]
        assert service.stop() == 0, service.log()
    assert run["status"] == "completed" and run["resumes"] == 1, run
    assert replacement and replacement != workers
    assert "worker-0.1 ended" in service.log()
    assert mock.count_for("Fast question?") == 2  # its generation and its judge, once each


def _is_worker(pid: int) -> bool:
    """A worker process (not a validation process, nor multiprocessing's tracker)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"multiprocessing.spawn" in command and b"spawn_main" in command and _named(pid)


def _named(pid: int) -> bool:
    # Process names are not set by multiprocessing on Linux; tell the kinds apart by the
    # open state file: only the service and its workers hold the run table.
    try:
        links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
    except OSError:
        return False
    return any(link.endswith("state.sqlite") for link in links)
