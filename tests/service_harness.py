"""`legaleval serve` as a real process, the mock model scripted as candidate and judge.

Shared by the service tests: a service process (its URL read from its output, its logs in
files, its RSS and its workers from ``/proc``), contract documents, the mock's script, and
the ASGI application called in this process (:func:`service_app`, :func:`call`; they import
FastAPI only when called).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_legaleval.service.client import ServiceClient
from pytest_legaleval.testing.mock_openai import prompt_text

from .processes import alive, wait_until

SERVE = [sys.executable, "-m", "pytest_legaleval.cli", "serve"]
SUBMIT = [sys.executable, "-m", "pytest_legaleval.cli", "submit"]
_WITH_NOFILE = (
    "import os, resource, sys; hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]; "
    "resource.setrlimit(resource.RLIMIT_NOFILE, (min(int(sys.argv[1]), hard), hard)); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)
TERMINAL = ("completed", "completed_with_failures", "failed", "cancelled")


class Script:
    """The mock's answers: judges grade by a marker in the answer, ``SLOW`` prompts wait.

    A candidate answer is the mock's default reply, or ``BAD answer`` for prompts marked
    ``BAD``; the reference judge gives 0.9 to an answer, 0.1 to a ``BAD`` one; the criteria
    judge rates every listed criterion 4. While :attr:`hold` is set, prompts marked
    ``SLOW`` are answered only after a minute (a client that leaves cuts it short).
    """

    def __init__(self) -> None:
        self.hold = threading.Event()

    def __call__(self, body: dict[str, Any]) -> Any:
        text = prompt_text(body.get("messages"))
        if "Answer to grade" in text:
            bad = "BAD answer" in text
            verdict = {"score": 0.1 if bad else 0.9, "verdict": "incorrect" if bad else "correct"}
            return json.dumps({**verdict, "rationale": "scripted"})
        if "Answer to rate" in text:
            names = re.findall(r"^- (\w+)$", text, re.MULTILINE)
            ratings = [{"criterion": n, "rating": 4, "rationale": "scripted"} for n in names]
            return json.dumps({"ratings": ratings})
        if "SLOW" in text and self.hold.is_set():
            return {"content": "a slow answer", "delay": 60}
        if "BAD" in text:
            return "BAD answer"
        return None


def record(record_id: str, prompt: str, *, answer: str = "The reference.") -> dict[str, Any]:
    """One valid contract record with a reference answer (a ``reference_qa`` record)."""
    return {
        "record_id": record_id,
        "input": {"prompt": prompt},
        "reference": {"answer": answer},
        "tags": ["service"],
    }


def document(dataset_id: str, records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """A contract document."""
    return {
        "dataset_id": dataset_id,
        "dataset_version": "2026-01-15",
        "schema_version": "1.0",
        "created_at": "2026-01-15T10:05:12Z",
        "records": list(records),
    }


def write(path: Path, doc: Mapping[str, Any]) -> Path:
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


DATABASE_SWITCH = "LEGALEVAL_TEST_SERVICE_DATABASE"
"""``postgresql``: every :class:`ServiceProcess` keeps its state in a fresh PostgreSQL database
instead of SQLite (``.ci/run`` runs the service tests so too)."""
_POSTGRES: list[Any] = []


def test_postgres() -> Any:
    """The PostgreSQL server of this test process, started on first use, removed at exit."""
    if not _POSTGRES:
        import atexit

        from .pg_server import PostgresServer

        server = PostgresServer().start()
        atexit.register(server.remove)
        _POSTGRES.append(server)
    return _POSTGRES[0]


class ServiceProcess:
    """One ``legaleval serve`` process on 127.0.0.1 with a free port."""

    def __init__(
        self,
        data_dir: Path,
        args: list[str],
        *,
        tokens: str | None = None,
        nofile: int | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.args = args
        self.nofile = nofile
        """The soft limit of open files the service starts with (``None``: this process's)."""
        self.env = {k: v for k, v in os.environ.items() if k != "LEGALEVAL_API_TOKENS"}
        if tokens is not None:
            self.env["LEGALEVAL_API_TOKENS"] = tokens
        if os.environ.get(DATABASE_SWITCH) == "postgresql":
            # The same test on PostgreSQL: a fresh database for this service (its restarts
            # keep it), on one server per test process (tests/pg_server.py).
            self.env["LEGALEVAL_DATABASE_URL"] = test_postgres().create_database()
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.starts = 0

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self, timeout_s: float = 90.0) -> ServiceProcess:
        self.starts += 1
        out = self.data_dir.parent / f"{self.data_dir.name}.out{self.starts}"
        err = self.data_dir.parent / f"{self.data_dir.name}.err{self.starts}"
        self.err_path = err
        command = [*SERVE, "--port", "0", "--data-dir", str(self.data_dir), *self.args]
        if self.nofile is not None:  # set in the child before it becomes the service
            command = [sys.executable, "-c", _WITH_NOFILE, str(self.nofile), *command]
        with out.open("wb") as stdout, err.open("wb") as stderr:
            self.process = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=self.env)

        def ready() -> bool:
            text = out.read_text(encoding="utf-8", errors="replace")
            found = re.search(r"LEGALEVAL_SERVICE_URL=(\S+)", text)
            if found:
                self.url = found.group(1)
            return bool(found) or self.process is None or self.process.poll() is not None

        if not wait_until(ready, timeout_s) or not self.url:
            code = self.process.poll()
            if code is None:
                self.kill()  # never leave a half-started service behind
            raise AssertionError(f"the service did not start (exit {code}):\n{self.log()}")
        return self

    def fd_limit(self) -> int:
        """The service's soft limit of open files, as the kernel reports it."""
        for line in Path(f"/proc/{self.pid}/limits").read_text().splitlines():
            if line.startswith("Max open files"):
                return int(line.split()[3])
        raise AssertionError(f"no open-file limit for {self.pid}")

    def log(self) -> str:
        return self.err_path.read_text(encoding="utf-8", errors="replace")[-6000:]

    def client(self, token: str | None = None) -> ServiceClient:
        return ServiceClient(self.url, token, timeout_s=120)

    def worker_pids(self) -> list[int]:
        """The service's child processes (its workers and validators)."""
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.pid:
                found.append(int(stat.parent.name))
        return found

    def memory_kb(self, field: str = "VmRSS") -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
        raise AssertionError(f"no {field} for {self.pid}")

    def stop(self) -> int:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(60)

    def kill(self) -> list[int]:
        """SIGKILL the service; return its children, which must die with it."""
        children = self.worker_pids()
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)
        return children


def wait_for(
    client: ServiceClient, run_id: str, states: Iterable[str], within_s: float = 60.0
) -> dict[str, Any]:
    """Poll the run until its status is one of ``states``; return the run object."""
    wanted = tuple(states)
    seen: dict[str, Any] = {}

    def reached() -> bool:
        seen.update(client.json("GET", f"/v1/runs/{run_id}"))
        return seen.get("status") in wanted

    assert wait_until(reached, within_s), f"{run_id} stayed {seen.get('status')}: {seen}"
    return seen


def gone(pids: Iterable[int], within_s: float = 30.0) -> bool:
    """Whether every process of ``pids`` has ended within ``within_s``."""
    pids = list(pids)
    return wait_until(lambda: not any(alive(pid) for pid in pids), within_s)


class InlineValidator:
    """The real validation, in this process (the service runs it in another one)."""

    async def check(self, path: Path) -> Any:
        from pytest_legaleval.service.validation import check_upload

        return check_upload(str(path))


def service_app(
    tmp_path: Path,
    *,
    tokens: str = "",
    patience: Any = None,
    health: Any = None,
    **limits: Any,
) -> tuple[Any, Any]:
    """The service's ASGI application on a fresh data directory, and its ``Backend``."""
    from pytest_legaleval.pipeline.settings import resolve_settings
    from pytest_legaleval.service.app import Backend, asgi
    from pytest_legaleval.service.auth import Tokens
    from pytest_legaleval.service.config import DataDir, Limits, ServiceConfig
    from pytest_legaleval.service.queue import SqliteRunQueue
    from pytest_legaleval.service.store import RunStore

    data = DataDir(tmp_path / "data")
    data.create()
    waits = () if patience is None else (patience,)
    store, queue = RunStore(data.state, *waits), SqliteRunQueue(data.state, *waits)
    config = ServiceConfig(
        settings=resolve_settings({"model": ["openai/cand"]}),
        data=data,
        limits=Limits(**limits),
        tokens=Tokens.from_env({"LEGALEVAL_API_TOKENS": tokens}),
    )
    backend = Backend(config, store, queue, InlineValidator(), health)
    return asgi(backend), backend


def call(
    app: Any,
    method: str,
    path: str,
    *,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    client: tuple[str, int] = ("127.0.0.1", 50000),
) -> tuple[int, dict[str, str], Any]:
    """One request to an ASGI application in this process: status, headers, JSON body."""
    path, _, query = path.partition("?")
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(),
        "query_string": query.encode(), "root_path": "", "client": client,
        "server": ("127.0.0.1", 8000),
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
    }  # fmt: skip
    incoming = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = sent[0]
    raw = b"".join(m.get("body", b"") for m in sent[1:])
    found = {k.decode(): v.decode() for k, v in start["headers"]}
    try:
        return start["status"], found, json.loads(raw)
    except ValueError:
        return start["status"], found, raw
