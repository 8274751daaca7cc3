"""`legaleval serve` for real: uvicorn on 127.0.0.1, worker processes, the mock model.

One service (two tokens, two models) serves most tests of this module; the crash and load
tests start their own (``test_service_crash.py``, ``test_service_load.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="legaleval serve needs the [serve] extra")
pytest.importorskip("hypercorn", reason="legaleval serve needs the [serve] extra")

from pytest_legaleval.cli import validation_body
from pytest_legaleval.run.verify import check_run_directory
from pytest_legaleval.testing.mock_openai import MockOpenAIServer
from pytest_legaleval.validation.schemas import schema_validator

from ..processes import wait_until
from ..service_harness import (
    SERVE,
    SUBMIT,
    Script,
    ServiceProcess,
    document,
    record,
    wait_for,
    write,
)
from .conftest import DATA, EXAMPLES

TOKEN_A = "token-a-0123456789abcdef"
TOKEN_B = "token-b-fedcba9876543210"
EIGHT = {
    "run_manifest.json", "input_dataset.json", "record_validation.jsonl", "predictions.jsonl",
    "attempt_logs.jsonl", "metrics_summary.json", "metrics_by_slice.json", "failures.jsonl",
}  # fmt: skip
LISTED = EIGHT | {"transcripts.jsonl"}
"""What a run's artifact list shows: the contract's eight and the transcripts."""


@pytest.fixture(scope="module")
def script() -> Script:
    return Script()


@pytest.fixture(scope="module")
def mock(script: Script) -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer() as server:
        server.add_reply(None, script)
        yield server


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory, mock: MockOpenAIServer
) -> Iterator[ServiceProcess]:
    data = tmp_path_factory.mktemp("service") / "data"
    process = ServiceProcess(
        data,
        ["--model", "openai/cand", "--model", "openai/alt", "--judge-model", "openai/judge",
         "--base-url", mock.base_url, "--retry-delays", "0.01", "--workers", "2",
         "--log-level", "warning"],
        tokens=f"{TOKEN_A}, {TOKEN_B}",
    )  # fmt: skip
    process.start()
    yield process
    assert process.stop() == 0, process.log()


def _post(
    service: ServiceProcess, path: Path, *, token: str = TOKEN_A, query: str = "?model=openai/cand"
) -> tuple[int, dict[str, str], Any]:
    client = service.client(token)
    with path.open("rb") as handle:
        return client.request(
            "POST", f"/v1/runs{query}", body=handle.read(),
            headers={"Content-Type": "application/json"},
        )  # fmt: skip


def _reference(tmp: Path, source: Path) -> tuple[int, dict[str, Any]]:
    """What ``legaleval validate`` answers for the same document (under the upload's name)."""
    folder = tmp / "validate"
    folder.mkdir(exist_ok=True)
    target = folder / "upload.json"
    shutil.copyfile(source, target)
    status, body, _ = validation_body([str(target)], "contract_v1")
    return status, body


def _run_count(service: ServiceProcess) -> int:
    return len(service.client(TOKEN_A).json("GET", "/v1/runs?limit=100")["runs"])


def test_reference_documents_get_the_exact_section_2_bodies(
    service: ServiceProcess, tmp_path: Path
) -> None:
    all_invalid = write(tmp_path / "all_invalid.json", document("bad", [
        {"record_id": "a", "input": {"prompt": 1}}, {"input": {}}, {"record_id": "c"},
    ]))  # fmt: skip
    wrong_version = write(
        tmp_path / "v2.json", {**document("v2", [record("a", "Q?")]), "schema_version": "2.0"}
    )
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes(
        json.dumps(document("caf\xe9", [record("a", "Q?")]), ensure_ascii=False).encode("latin-1")
    )
    accepted, envelope = schema_validator("run_accepted"), schema_validator("error_envelope")
    before = _run_count(service)
    cases = [
        (EXAMPLES / "contract_reference.json", 202, "accepted"),
        (DATA / "contract" / "qa_eval_set.json", 202, "accepted_with_record_errors"),
        (all_invalid, 400, "All records failed validation"),
        (wrong_version, 400, 'schema_version is not supported: got "2.0", expected "1.0"'),
        (latin1, 400, "payload is not valid UTF-8"),
    ]
    for path, status, says in cases:
        got, headers, body = _post(service, path)
        want_status, want = _reference(tmp_path, path)
        assert (got, want_status) == (status, status), (path.name, body)
        assert body["request_id"] == headers["x-request-id"]
        if status == 202:
            accepted.validate(body)
            assert body["status"] == says
            assert {k: v for k, v in body.items() if k not in ("run_id", "request_id")} == {
                k: v for k, v in want.items() if k not in ("run_id", "request_id")
            }
            assert headers["location"] == f"/v1/runs/{body['run_id']}"
        else:
            envelope.validate(body)
            assert body["error"] == want["error"]
            assert body["error"]["message"].startswith(says)
    partial = _post(service, DATA / "contract" / "qa_eval_set.json")[2]
    assert partial["summary"] == {"total_records": 3, "accepted_records": 2, "rejected_records": 1}
    assert partial["record_errors"] == [{
        "index": 2, "record_id": "q_0003", "code": "invalid_field_type",
        "message": "input.prompt must be a string, got integer (upload.json)",
        "path": "records[2].input.prompt", "severity": "error",
    }]  # fmt: skip
    # three accepted uploads made three runs; the rejected ones made none
    assert _run_count(service) == before + 3


def test_transport_rules_are_enforced_before_any_run_exists(
    service: ServiceProcess, tmp_path: Path
) -> None:
    body = json.dumps(document("crlf", [record("a", "Q?")]), indent=1).replace("\n", "\r\n")
    client = service.client(TOKEN_A)
    before = _run_count(service)
    bom = client.request(
        "POST", "/v1/runs?model=openai/cand", body=b"\xef\xbb\xbf" + body.encode(),
        headers={"Content-Type": "application/json; charset=utf-8"},
    )  # fmt: skip
    assert bom[0] == 202, bom  # a BOM and CRLF newlines are fine
    refused = {
        "text/plain": ({"Content-Type": "text/plain"}, "Content-Type must be application/json"),
        "latin-1": ({"Content-Type": "application/json; charset=latin-1"}, "charset=latin-1"),
        "gzip": ({"Content-Type": "application/json", "Content-Encoding": "gzip"}, "gzip"),
    }
    for name, (headers, says) in refused.items():
        status, _, answer = client.request("POST", "/v1/runs", body=body.encode(), headers=headers)
        assert status == 400 and says in answer["error"]["message"], (name, answer)
        assert answer["error"]["code"] == "invalid_request"
    status, _, answer = client.request(
        "POST", "/v1/runs?model=openai/none", body=body.encode(),
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    assert status == 400 and answer["error"]["details"]["models"] == ["openai/cand", "openai/alt"]
    assert _run_count(service) == before + 1


def _download(service: ServiceProcess, run_id: str, out: Path) -> list[dict[str, Any]]:
    client = service.client(TOKEN_A)
    listing = client.json("GET", f"/v1/runs/{run_id}/artifacts")["artifacts"]
    for artifact in listing:
        digest = client.download(artifact["url"], out / artifact["name"], artifact["sha256"])
        assert digest == hashlib.sha256((out / artifact["name"]).read_bytes()).hexdigest()
    client.download(f"/v1/runs/{run_id}/artifacts/SHA256SUMS", out / "SHA256SUMS", None)
    return listing


def test_a_run_goes_through_its_states_to_completed_with_failures(
    service: ServiceProcess, tmp_path: Path
) -> None:
    status, _, accepted = _post(service, DATA / "contract" / "qa_eval_set.json", query="")
    assert status == 202
    client = service.client(TOKEN_A)
    run_id = accepted["run_id"]
    early = client.json("GET", f"/v1/runs/{run_id}")
    assert early["status"] in ("queued", "validating", "running", "finalizing",
                               "completed_with_failures")  # fmt: skip
    assert early["models"] == ["openai/cand", "openai/alt"]  # no ?model=: every model
    run = wait_for(client, run_id, ["completed_with_failures", "completed", "failed"])
    assert run["status"] == "completed_with_failures", run
    states = [t["state"] for t in run["state_transitions"]]
    assert states[:3] == ["queued", "validating", "running"]
    assert states[-2:] == ["finalizing", "completed_with_failures"]
    assert run["created_at"] == run["state_transitions"][0]["at"] <= run["started_at"]
    assert run["completed_at"] == run["state_transitions"][-1]["at"]
    assert run["denominators"] == {
        "total_records": 3, "valid_records": 2, "evaluated_records": 2, "failed_records": 1,
        "skipped_records": 0, "invalid_records": 1, "cancelled_records": 0,
    }  # fmt: skip
    assert run["metrics"]["run_id"] == run_id and run["progress"] == {"done": 6, "total": 6}
    assert run["validation"]["request_id"] == accepted["request_id"]
    listing = _download(service, run_id, tmp_path / run_id)
    assert {a["name"] for a in listing} == LISTED
    assert check_run_directory(tmp_path / run_id) == []
    manifest = json.loads((tmp_path / run_id / "run_manifest.json").read_text())
    assert manifest["request_id"] == accepted["request_id"]
    assert manifest["created_at"] == run["created_at"]
    assert manifest["configuration"]["model"] == ["openai/cand", "openai/alt"]
    # write-once: a downloaded copy checks out, the service refuses names outside the set
    status, _, answer = client.request("GET", f"/v1/runs/{run_id}/artifacts/..%2Fstate.sqlite")
    assert status == 404 and answer["error"]["code"] == "not_found"


def test_cancel_stops_pending_calls_and_still_finalizes(
    service: ServiceProcess, script: Script, tmp_path: Path
) -> None:
    slow = write(tmp_path / "slow.json", document("slow", [
        record("fast1", "A quick question?"),
        *(record(f"slow{i}", f"SLOW question {i}?") for i in range(5)),
    ]))  # fmt: skip
    script.hold.set()
    try:
        status, _, accepted = _post(service, slow)
        run_id = accepted["run_id"]
        client = service.client(TOKEN_A)
        # the fast record (first) is recorded, the slow ones wait on the held calls
        assert wait_until(
            lambda: client.json("GET", f"/v1/runs/{run_id}")["progress"]["done"] >= 1, 60
        )
        status, _, cancelled = client.request("POST", f"/v1/runs/{run_id}/cancel")
        assert status == 202 and cancelled["cancel_requested"] is True
        run = wait_for(client, run_id, ["cancelled", "completed", "completed_with_failures"])
    finally:
        script.hold.clear()
    assert run["status"] == "cancelled" and run["denominators"]["cancelled_records"] == 5
    listing = _download(service, run_id, tmp_path / run_id)
    assert {a["name"] for a in listing} == LISTED
    rows = [json.loads(line) for line in (tmp_path / run_id / "predictions.jsonl").open()]
    assert (
        sorted(r["reason"] for r in rows if r["record_id"].startswith("slow")) == ["cancelled"] * 5
    )
    status, _, again = client.request("POST", f"/v1/runs/{run_id}/cancel")
    assert status == 409 and again["error"]["code"] == "conflict"


def test_tokens_owners_and_open_endpoints(service: ServiceProcess) -> None:
    status, _, accepted = _post(service, EXAMPLES / "contract_reference.json")
    run_id = accepted["run_id"]
    anonymous, stranger = service.client(None), service.client("not-a-token")
    other = service.client(TOKEN_B)
    for client in (anonymous, stranger):
        status, headers, body = client.request("GET", f"/v1/runs/{run_id}")
        assert status == 401 and headers["www-authenticate"].startswith("Bearer")
        assert body["error"]["code"] == "unauthorized" and body["request_id"]
    status, _, body = anonymous.request("POST", "/v1/runs", body=b"{}")
    assert status == 401
    for path in (f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/artifacts"):
        status, _, body = other.request("GET", path)
        assert status == 403 and body["error"]["code"] == "forbidden"
    status, _, body = other.request("POST", f"/v1/runs/{run_id}/cancel")
    assert status == 403
    assert run_id not in {r["run_id"] for r in other.json("GET", "/v1/runs")["runs"]}
    status, headers, body = anonymous.request("GET", "/healthz")
    assert (
        status == 200 and body["status"] == "ok" and body["request_id"] == headers["x-request-id"]
    )
    status, headers, schema = anonymous.request("GET", "/openapi.json")
    assert status == 200 and headers["x-request-id"]
    assert {"/v1/runs", "/v1/runs/{run_id}", "/v1/runs/{run_id}/cancel", "/healthz",
            "/v1/runs/{run_id}/artifacts", "/v1/runs/{run_id}/artifacts/{name}"} <= set(
        schema["paths"])  # fmt: skip
    upload = schema["paths"]["/v1/runs"]["post"]
    assert "records" in upload["requestBody"]["content"]["application/json"]["schema"]["properties"]
    assert {"202", "400", "413", "429"} <= set(upload["responses"])
    # the tokens are nowhere in what the service wrote (once it is done writing this run)
    wait_for(service.client(TOKEN_A), run_id, ["completed", "completed_with_failures"])
    service_files = [p for p in service.data_dir.rglob("*") if p.is_file()]
    for path in [*service_files, service.err_path]:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            continue  # a temporary file of another test's run, renamed meanwhile
        assert TOKEN_A.encode() not in raw and TOKEN_B.encode() not in raw, path


def test_runs_are_listed_newest_first_a_page_at_a_time(service: ServiceProcess) -> None:
    ids = [_post(service, EXAMPLES / "contract_reference.json", token=TOKEN_B)[2]["run_id"]
           for _ in range(3)]  # fmt: skip
    client = service.client(TOKEN_B)
    first = client.json("GET", "/v1/runs?limit=2")
    assert [r["run_id"] for r in first["runs"]] == ids[::-1][:2]
    assert first["runs"][0]["metrics"] is None  # the list leaves the metrics out
    rest = client.json("GET", f"/v1/runs?limit=2&cursor={first['next_cursor']}")
    assert [r["run_id"] for r in rest["runs"]] == [ids[0]] and rest["next_cursor"] is None
    status, _, body = client.request("GET", "/v1/runs?limit=0")
    assert status == 400 and body["error"]["code"] == "invalid_request"
    status, _, body = client.request("GET", "/v1/runs?cursor=abc")
    assert status == 400
    status, _, body = client.request("GET", "/v1/runs/run_01J8Q4ER9Z7Y5V5K6F4A1P2M3N")
    assert status == 404 and body["error"]["code"] == "not_found"
    for run_id in ids:
        wait_for(client, run_id, ["completed", "completed_with_failures"])


def _read_answer(sock: socket.socket) -> tuple[str, bytes]:
    """The final HTTP response read off a raw socket (a ``100 Continue`` skipped)."""
    data = b""
    while True:
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        if not re.match(rb"HTTP/1\.1 1\d\d", head):
            break
        data = body  # an interim answer: Hypercorn says 100 Continue as soon as it is asked
    found = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    assert found, head
    while len(body) < int(found.group(1)):
        body += sock.recv(65536)
    return head.decode(), body


def test_an_oversized_content_length_is_refused_before_the_body_is_sent(
    service: ServiceProcess,
) -> None:
    host, port = service.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + TOKEN_A.encode() + b"\r\n"
            b"Content-Length: 157286400\r\nExpect: 100-continue\r\n\r\n"
        )
        head, body = _read_answer(sock)
    assert head.startswith("HTTP/1.1 413"), head
    error = json.loads(body)["error"]
    assert error["code"] == "payload_too_large"
    assert error["details"] == {"payload_bytes": 157286400, "max_payload_bytes": 104857600}


def test_an_early_answer_to_a_large_upload_reaches_a_client_still_sending(
    service: ServiceProcess,
) -> None:
    """A 401 before 20 MB of body (read and dropped), not a broken pipe."""
    body = b'{"records": [' + b" " * (20 * 1024 * 1024) + b"]}"
    status, _, answer = service.client("not-a-token-of-this-service").request(
        "POST", "/v1/runs", body=body, headers={"Content-Type": "application/json"}
    )
    assert status == 401, answer
    assert answer["error"]["code"] == "unauthorized"


def test_submit_runs_a_document_end_to_end_and_exits_with_the_gates(
    service: ServiceProcess, tmp_path: Path
) -> None:
    # PYTHONPATH: this checkout's package, not the installed one.
    path = {"PATH": "/usr/bin:/bin", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    env = {"LEGALEVAL_API_TOKEN": TOKEN_A, **path}

    def submit(doc: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*SUBMIT, str(doc), "--server", service.url, "--model", "openai/cand",
             "--poll", "0.2", "--quiet", *args],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
        )  # fmt: skip

    passed = submit(EXAMPLES / "contract_reference.json", "--gate", "pass_rate>=0.8", "--out", "a")
    assert passed.returncode == 0, passed.stderr
    assert "passed gate pass_rate>=0.8" in passed.stdout
    assert check_run_directory(tmp_path / "a") == []
    failing = submit(DATA / "contract" / "qa_eval_set.json", "--out", "b")
    assert failing.returncode == 1, failing.stderr  # an invalid record fails the run
    assert "status: completed_with_failures" in failing.stdout
    gated = submit(
        DATA / "contract" / "qa_eval_set.json", "--gate", "invalid_rate<=0.5", "--out", "c"
    )
    assert gated.returncode == 0, gated.stdout  # the gates decide
    rejected = tmp_path / "rejected.json"
    write(rejected, {**document("x", [record("a", "Q?")]), "schema_version": "2.0"})
    refused = submit(rejected)
    assert (
        refused.returncode == 2 and json.loads(refused.stdout)["error"]["code"] == "invalid_request"
    )
    unauthorized = subprocess.run(
        [*SUBMIT, str(rejected), "--server", service.url], capture_output=True, text=True,
        env=path, timeout=60,
    )  # fmt: skip
    assert unauthorized.returncode == 2 and "HTTP 401" in unauthorized.stderr  # a usage error
    assert TOKEN_A not in passed.stdout + passed.stderr
    # legal_eval_v1 rows: converted into a contract document (issue 30), or refused saying how
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "".join(
            json.dumps({"schema_version": "legal_eval_v1", "id": f"r{i}", "dataset": "rows",
                        "task_type": "reference_qa", "prompt": f"Row question {i}?",
                        "reference_answers": ["The reference."]}) + "\n"
            for i in range(2)
        ),
        encoding="utf-8",
    )  # fmt: skip
    converted = submit(rows, "--out", "d")
    assert converted.returncode == 0, converted.stderr
    assert "uploading them as a Dataset Contract document of 2 record(s)" in converted.stderr
    manifest = json.loads((tmp_path / "d" / "run_manifest.json").read_text())
    assert manifest["denominators"]["total_records"] == 2
    # rows a contract document cannot carry (MCQ) go as legal_eval_v1 JSONL (issue 40)
    mcq = submit(EXAMPLES / "legal_mcq.jsonl")
    assert mcq.returncode in (0, 1), mcq.stderr  # judged: passed or failed records
    assert "task_type mcq" in mcq.stderr and "uploading them as JSONL" in mcq.stderr
    assert "Extra data" not in mcq.stderr


def test_serve_refuses_a_public_address_without_tokens(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "LEGALEVAL_API_TOKENS"}
    base = [*SERVE, "--port", "0", "--data-dir", str(tmp_path / "data"), "--model", "openai/x",
            "--base-url", "http://127.0.0.1:9/v1"]  # fmt: skip
    refused = subprocess.run(
        [*base, "--host", "0.0.0.0"], capture_output=True, text=True, env=env, timeout=60
    )
    assert refused.returncode == 2
    assert "refusing to serve on 0.0.0.0 without API tokens" in refused.stderr
    assert "LEGALEVAL_SERVICE_URL" not in refused.stdout and not (tmp_path / "data").exists()
    short = subprocess.run(
        [*base, "--retention-days-raw", "7"], capture_output=True, text=True, env=env, timeout=60
    )
    assert short.returncode == 2 and "at least 30 days" in short.stderr


def test_a_second_service_on_the_same_data_dir_is_refused(service: ServiceProcess) -> None:
    second = subprocess.run(
        [*SERVE, "--port", "0", "--data-dir", str(service.data_dir), "--model", "openai/x",
         "--base-url", "http://127.0.0.1:9/v1"],
        capture_output=True, text=True, timeout=60,
        env={k: v for k, v in os.environ.items() if k != "LEGALEVAL_API_TOKENS"},
    )  # fmt: skip
    assert second.returncode == 2 and "another legaleval serve uses" in second.stderr
    assert service.client(TOKEN_A).json("GET", "/healthz")["status"] == "ok"  # untouched
