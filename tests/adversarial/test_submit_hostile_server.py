"""`legaleval submit` against a hostile service on loopback: it trusts no server string.

Issue 31 (MED): a hostile service made `submit` write anywhere through the ``run_id`` it
returned (``../escaped``, an absolute path); (LOW) ``Retry-After: nan`` or ``-5`` crashed
it. Here a scripted server on 127.0.0.1 answers with hostile run ids, artifact listings,
sizes, headers and text; `submit` runs in this process (its waits recorded, not slept) in
a scratch directory, and nothing may appear outside ``legaleval-runs/<run_id>/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.cli import main
from pytest_legaleval.cli import submit as submit_module
from pytest_legaleval.metrics.artifacts import Artifact, register_artifact, unregister_artifact

from ..service_harness import document, record, write

RUN_ID = "run_01J8Q4ER9Z7Y5V5K6F4A1P2M3N"
PREDICTIONS = b'{"item_id": "hostile/a", "passed": true}\n'
Answer = tuple[int, dict[str, str], bytes]


def _json(status: int, body: Any, **headers: str) -> Answer:
    return status, {"Content-Type": "application/json", **headers}, json.dumps(body).encode()


class Hostile:
    """A scripted service: ``routes`` maps ``"METHOD /path"`` to answers (a list is a queue)."""

    def __init__(self) -> None:
        self.routes: dict[str, Callable[[], Answer] | list[Answer]] = {}
        self.seen: list[str] = []
        self.anything = False
        """Play along with any run id: a finished run, a listing, the files."""

    def answer(self, key: str) -> Answer:
        self.seen.append(key)
        found = self.routes.get(key)
        if isinstance(found, list):
            return found.pop(0) if len(found) > 1 else found[0]
        if found is not None:
            return found()
        if self.anything and key.startswith("GET /v1/runs/"):
            if key.endswith("/artifacts"):
                return _listing(_entry("predictions.jsonl"))
            if "/artifacts/" in key:
                return 200, {}, PREDICTIONS if key.endswith(".jsonl") else b""
            return _json(200, _run_object())
        return _json(404, {"error": {"code": "not_found", "message": key}})


def _run_object(status: str = "completed", **extra: Any) -> dict[str, Any]:
    return {"run_id": RUN_ID, "status": status, "progress": {"done": 1, "total": 1}, **extra}


def _accepted(run_id: object = RUN_ID) -> Answer:
    return _json(
        202,
        {"run_id": run_id, "status": "accepted", "record_errors": [],
         "summary": {"total_records": 1, "accepted_records": 1, "rejected_records": 0}},
    )  # fmt: skip


def _listing(*entries: dict[str, Any]) -> Answer:
    return _json(200, {"run_id": RUN_ID, "artifacts": list(entries)})


def _entry(name: str, body: bytes = PREDICTIONS, **extra: Any) -> dict[str, Any]:
    return {
        "name": name, "bytes": len(body), "sha256": hashlib.sha256(body).hexdigest(),
        "url": f"/v1/runs/{RUN_ID}/artifacts/{name}", **extra,
    }  # fmt: skip


@pytest.fixture
def hostile() -> Iterator[tuple[Hostile, str]]:
    script = Hostile()

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            status, headers, body = script.answer(f"{self.command} {self.path}")
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _serve

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield script, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch directory holding the document; ``submit``'s waits are recorded, not slept."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    write(work / "doc.json", document("hostile", [record("a", "Who?")]))
    return work


def _submit(url: str, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, list[float]]:
    waits: list[float] = []
    monkeypatch.setattr(submit_module.time, "sleep", waits.append)
    return main(["submit", "doc.json", "--server", url, "-q", *args]), waits


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir())


@pytest.mark.parametrize(
    "run_id",
    ["../escaped", "/tmp/absolute", f"{RUN_ID}/../../x", f"{RUN_ID}\n", "run_" + "A" * 27,
     "..", "", None, 7, ["run"], "run_01j8q4er9z7y5v5k6f4a1p2m3n"],
)  # fmt: skip
def test_a_run_id_that_is_not_one_builds_no_path(
    hostile: tuple[Hostile, str],
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    run_id: object,
) -> None:
    script, url = hostile
    script.routes["POST /v1/runs"] = [_accepted(run_id)]
    script.anything = True  # it would serve the run and its files under that id
    code, _ = _submit(url, monkeypatch)
    assert code == 3
    assert "not one" in capsys.readouterr().err
    assert _files(workdir.parent) == ["work/doc.json"]  # nothing written anywhere
    assert script.seen == ["POST /v1/runs"]  # and nothing asked about it


def test_only_the_contracts_artifacts_are_written_from_urls_built_here(
    hostile: tuple[Hostile, str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, url = hostile
    script.routes["POST /v1/runs"] = [_accepted()]
    script.routes[f"GET /v1/runs/{RUN_ID}"] = [_json(200, _run_object())]
    script.routes[f"GET /v1/runs/{RUN_ID}/artifacts"] = [
        _listing(
            _entry("../escaped"), _entry("/tmp/absolute"), _entry(".hidden"),
            _entry("SHA256SUMS"), _entry("predictions.jsonl/../../x"), "not an object",
            _entry("predictions.jsonl", url="http://evil.example/steal"),
            _entry("predictions.jsonl"),  # twice: once is enough
            _entry("failures.jsonl", sha256="../../etc"), _entry("failures.jsonl", bytes=-1),
        )
    ]  # fmt: skip
    base = f"GET /v1/runs/{RUN_ID}/artifacts/"
    script.routes[base + "predictions.jsonl"] = lambda: (200, {}, PREDICTIONS)
    script.routes[base + "SHA256SUMS"] = lambda: (200, {}, b"")
    code, _ = _submit(url, monkeypatch)
    assert code == 0
    run_dir = f"legaleval-runs/{RUN_ID}"
    assert _files(workdir.parent) == [
        "work/doc.json",
        f"work/{run_dir}/SHA256SUMS",
        f"work/{run_dir}/predictions.jsonl",
    ]
    downloads = [key for key in script.seen if key.startswith(base)]
    assert downloads == [base + "predictions.jsonl", base + "SHA256SUMS"]


def test_a_download_longer_or_other_than_listed_is_refused(
    hostile: tuple[Hostile, str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, url = hostile
    script.routes["POST /v1/runs"] = [_accepted()]
    script.routes[f"GET /v1/runs/{RUN_ID}"] = [_json(200, _run_object())]
    script.routes[f"GET /v1/runs/{RUN_ID}/artifacts"] = [_listing(_entry("predictions.jsonl"))]
    base = f"GET /v1/runs/{RUN_ID}/artifacts/"
    script.routes[base + "predictions.jsonl"] = lambda: (200, {}, PREDICTIONS * 1000)
    code, _ = _submit(url, monkeypatch)
    assert code == 3
    assert not any(name.endswith("predictions.jsonl") for name in _files(workdir))


def test_a_symbolic_link_in_legaleval_runs_is_not_followed(
    hostile: tuple[Hostile, str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, url = hostile
    outside = workdir.parent / "outside"
    outside.mkdir()
    (workdir / "legaleval-runs").mkdir()
    os.symlink(outside, workdir / "legaleval-runs" / RUN_ID)
    script.routes["POST /v1/runs"] = [_accepted()]
    script.routes[f"GET /v1/runs/{RUN_ID}"] = [_json(200, _run_object())]
    script.routes[f"GET /v1/runs/{RUN_ID}/artifacts"] = [_listing(_entry("predictions.jsonl"))]
    code, _ = _submit(url, monkeypatch)
    assert code == 2  # a usage error: the download folder is a link
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize(
    ("header", "wait"),
    [("nan", 5.0), ("-5", 5.0), ("inf", 5.0), ("-inf", 5.0), ("1e309", 5.0), ("garbage", 5.0),
     ("", 5.0), ("Wed, 21 Oct 2015 07:28:00 GMT", 5.0), ("0x10", 5.0), ("3", 3.0), ("2.5", 2.5),
     ("86400", 60.0), ("99999999999999999999", 5.0)],
)  # fmt: skip
def test_retry_after_is_read_as_the_contract_says_or_ignored(
    hostile: tuple[Hostile, str],
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    header: str,
    wait: float,
) -> None:
    script, url = hostile
    busy = _json(
        429, {"error": {"code": "rate_limited", "message": "busy"}}, **{"Retry-After": header}
    )
    script.routes["POST /v1/runs"] = [busy, _accepted()]
    script.routes[f"GET /v1/runs/{RUN_ID}"] = [_json(200, _run_object("failed"))]
    code, waits = _submit(url, monkeypatch)
    assert code == 3  # the run "failed": submit itself went through
    assert waits == [wait]


def test_hostile_text_and_numbers_reach_the_terminal_inert(
    hostile: tuple[Hostile, str],
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script, url = hostile
    evil = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil"
    body = json.loads(_accepted()[2])
    body["status"] = evil
    body["summary"] = {"accepted_records": "x", "total_records": -1}
    body["record_errors"] = ["not a dict", {"path": evil, "code": 1, "message": None}]
    script.routes["POST /v1/runs"] = [_json(202, body)]
    progress = {"done": "1e9", "total": -5}
    script.routes[f"GET /v1/runs/{RUN_ID}"] = [
        _json(200, _run_object("running", progress=progress)),
        _json(200, _run_object("failed", error=evil, progress=[])),
    ]
    code, _ = _submit(url, monkeypatch)
    out = capsys.readouterr()
    assert code == 3
    for stream in (out.out, out.err):
        assert "\x1b" not in stream and "\x07" not in stream and "\x9b" not in stream
        assert "\u202e" not in stream
    assert "\\x1b]0;pwned" in out.out  # shown, escaped


def test_a_registered_artifact_is_downloaded_and_an_unknown_one_refused(
    hostile: tuple[Hostile, str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client accepts the artifact table's names, a registered artifact's included."""
    script, url = hostile
    toy = Artifact("pass_counts.jsonl", "a test's", None, "finalize", "optional", "summary")
    counts = b'{"model": "m", "passed": 1}\n'
    script.routes["POST /v1/runs"] = [_accepted()]
    script.routes[f"GET /v1/runs/{RUN_ID}"] = [_json(200, _run_object())]
    listing = _listing(_entry("predictions.jsonl"), _entry(toy.name, counts))
    script.routes[f"GET /v1/runs/{RUN_ID}/artifacts"] = [listing]
    base = f"GET /v1/runs/{RUN_ID}/artifacts/"
    script.routes[base + "predictions.jsonl"] = lambda: (200, {}, PREDICTIONS)
    script.routes[base + toy.name] = lambda: (200, {}, counts)
    script.routes[base + "SHA256SUMS"] = lambda: (200, {}, b"")
    code, _ = _submit(url, monkeypatch)
    run_dir = workdir / "legaleval-runs" / RUN_ID
    assert code == 0 and sorted(p.name for p in run_dir.iterdir()) == [
        "SHA256SUMS", "predictions.jsonl"
    ]  # fmt: skip
    assert base + toy.name not in script.seen  # unknown here: not even asked for
    again = workdir / "again"
    again.mkdir()
    (again / "doc.json").write_bytes((workdir / "doc.json").read_bytes())
    monkeypatch.chdir(again)
    register_artifact(toy)
    try:
        code, _ = _submit(url, monkeypatch)
    finally:
        unregister_artifact(toy.name)
    assert code == 0
    assert (again / "legaleval-runs" / RUN_ID / toy.name).read_bytes() == counts
