"""The service under load, and a 150 MB upload: bounded, loopback only, nothing lost.

50 uploads of 200 records at once, 500 status polls at once, then every run must finish
with all of its items; a 150 MB body must be refused while the service's memory stays flat.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="legaleval serve needs the [serve] extra")
pytest.importorskip("hypercorn", reason="legaleval serve needs the [serve] extra")

import aiohttp

from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from ..processes import wait_until
from ..service_harness import TERMINAL, Script, ServiceProcess, document, record

TOKEN = "load-token-0123456789"
UPLOADS, RECORDS, POLLS = 50, 200, 500


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    with MockOpenAIServer() as mock:
        mock.add_reply(None, Script())
        data = tmp_path_factory.mktemp("load") / "data"
        process = ServiceProcess(
            data,
            ["--model", "openai/cand", "--judge-model", "openai/judge", "--base-url",
             mock.base_url, "--workers", "2", "--max-queued", "64", "--max-runs-per-token",
             "64", "--log-level", "warning"],
            tokens=TOKEN,
        )  # fmt: skip
        process.start()
        process.mock = mock  # type: ignore[attr-defined]
        yield process
        assert process.stop() == 0, process.log()


def _bodies() -> list[bytes]:
    """50 documents of 200 records; the prompts repeat, so the response cache serves most."""
    records = [
        record(f"r{i:03d}", f"Load question {i}: what does rule {i} say?") for i in range(RECORDS)
    ]
    return [json.dumps(document(f"load_{n}", records)).encode() for n in range(UPLOADS)]


async def _storm(url: str) -> tuple[list[tuple[int, Any]], list[tuple[int, Any]]]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    connector = aiohttp.TCPConnector(limit=UPLOADS + POLLS)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(
        url, connector=connector, timeout=timeout, headers=headers
    ) as session:

        async def upload(body: bytes) -> tuple[int, Any]:
            async with session.post(
                "/v1/runs", data=body, headers={"Content-Type": "application/json"}
            ) as answer:
                return answer.status, await answer.json()

        async def poll(run_id: str) -> tuple[int, Any]:
            async with session.get(f"/v1/runs/{run_id}") as answer:
                return answer.status, await answer.json()

        uploads = await asyncio.gather(*(upload(body) for body in _bodies()))
        ids = [body["run_id"] for status, body in uploads if status == 202]
        polls = (
            await asyncio.gather(*(poll(ids[i % len(ids)]) for i in range(POLLS))) if ids else []
        )
        return uploads, polls


def test_fifty_uploads_and_five_hundred_polls_lose_nothing(service: ServiceProcess) -> None:
    uploads, polls = asyncio.run(_storm(service.url))
    assert [status for status, _ in uploads] == [202] * UPLOADS, uploads[:3]
    ids = {body["run_id"] for _, body in uploads}
    assert len(ids) == UPLOADS
    assert [status for status, _ in polls] == [200] * POLLS
    assert {body["run_id"] for _, body in polls} == ids
    client = service.client(TOKEN)
    finished: dict[str, dict[str, Any]] = {}

    def all_done() -> bool:
        for run_id in ids - set(finished):
            run = client.json("GET", f"/v1/runs/{run_id}")
            if run["status"] in TERMINAL:
                finished[run_id] = run
        return len(finished) == UPLOADS

    assert wait_until(all_done, 240), f"{UPLOADS - len(finished)} runs unfinished"
    assert {run["status"] for run in finished.values()} == {"completed"}
    for run_id, run in finished.items():
        assert run["denominators"]["evaluated_records"] == RECORDS, run_id
        lines = (service.data_dir / "runs" / run_id / "predictions.jsonl").read_text().splitlines()
        assert len(lines) == RECORDS and run["progress"] == {"done": RECORDS, "total": RECORDS}
    listed: list[dict[str, Any]] = []
    cursor = ""
    while True:
        page = client.json("GET", f"/v1/runs?limit=20{cursor}")
        listed += page["runs"]
        if not page["next_cursor"]:
            break
        cursor = f"&cursor={page['next_cursor']}"
    assert sorted(r["run_id"] for r in listed) == sorted(ids)  # each once, none lost
    created = [r["created_at"] for r in listed]
    assert created == sorted(created, reverse=True)  # newest first
    # the same 200 prompts in every run: the cache answered nearly all of 20,000 items
    mock = service.mock  # type: ignore[attr-defined]
    assert mock.stats()["completed"] <= 4 * (2 * RECORDS) + 4


def _chunks(total: int, size: int = 1 << 20) -> Iterator[bytes]:
    block = b" " * size
    sent = 0
    while sent < total:
        yield block[: min(size, total - sent)]
        sent += size


class _Peak:
    """The highest RSS of a process, sampled while something runs (and its VmHWM)."""

    def __init__(self, service: ServiceProcess) -> None:
        self.service = service
        self.peak = service.memory_kb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self.service.memory_kb())

    def __enter__(self) -> _Peak:
        clear = Path(f"/proc/{self.service.pid}/clear_refs")
        try:
            clear.write_text("5")  # resets VmHWM, so it measures from here
            self.hwm_reset = True
        except OSError:
            self.hwm_reset = False
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self.hwm_reset:
            self.peak = max(self.peak, self.service.memory_kb("VmHWM"))


def test_a_150_mb_upload_is_refused_with_flat_memory(service: ServiceProcess) -> None:
    host, port = service.url.removeprefix("http://").split(":")
    before = service.memory_kb()
    with _Peak(service) as peak:
        conn = http.client.HTTPConnection(host, int(port), timeout=120)
        conn.request(
            "POST", "/v1/runs", body=_chunks(150 * 1024 * 1024), encode_chunked=True,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}",
                     "Transfer-Encoding": "chunked"},
        )  # fmt: skip
        answer = conn.getresponse()
        body = json.loads(answer.read())
        conn.close()
    assert answer.status == 413, body
    assert body["error"]["code"] == "payload_too_large"
    assert body["error"]["details"]["max_payload_bytes"] == 100 * 1024 * 1024
    # No buffering: the service grew by far less than the body (measured: a few MB).
    assert (peak.peak - before) < 32 * 1024, (before, peak.peak)
    assert not any((service.data_dir / "uploads" / ".incoming").iterdir())
