"""The ASGI application called directly (no socket): auth rules, limits, envelopes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="legaleval serve needs the [serve] extra")

from pytest_legaleval.service.http import ApiError, receive_upload
from pytest_legaleval.service.queue import SqliteRunQueue
from pytest_legaleval.service.store import RunStore

from ..service_harness import call, service_app

DOC = {
    "dataset_id": "unit",
    "dataset_version": "1",
    "schema_version": "1.0",
    "records": [{"record_id": "a", "input": {"prompt": "Q?"}, "reference": {"answer": "A."}}],
}


def _app(
    tmp_path: Path, *, tokens: str = "", **limits: Any
) -> tuple[Any, RunStore, SqliteRunQueue]:
    app, backend = service_app(tmp_path, tokens=tokens, **limits)
    return app, backend.store, backend.queue


def _upload(app: Any, **kwargs: Any) -> tuple[int, dict[str, str], Any]:
    headers = {"Content-Type": "application/json", **kwargs.pop("headers", {})}
    return call(app, "POST", "/v1/runs", body=json.dumps(DOC).encode(), headers=headers, **kwargs)


def test_without_tokens_only_loopback_clients_are_served(tmp_path: Path) -> None:
    app, _, _ = _app(tmp_path)
    for client in (("127.0.0.1", 1), ("127.8.9.10", 1), ("::1", 1)):
        status, _, body = call(app, "GET", "/v1/runs", client=client)
        assert status == 200, (client, body)
    status, headers, body = call(app, "GET", "/v1/runs", client=("10.1.2.3", 1))
    assert status == 403 and "loopback" in body["error"]["message"]
    assert body["request_id"] == headers["x-request-id"]
    status, _, _ = _upload(app, client=("192.168.1.5", 1))
    assert status == 403
    # the health check needs no token and no loopback
    assert call(app, "GET", "/healthz", client=("10.1.2.3", 1))[0] == 200


def test_a_run_records_its_tokens_id_never_the_token(tmp_path: Path) -> None:
    app, store, queue = _app(tmp_path, tokens="secret-token-1, secret-token-2")
    status, _, body = _upload(app, headers={"Authorization": "Bearer secret-token-2"})
    assert status == 202, body
    row = store.get(body["run_id"])
    assert row is not None and row.owner.startswith("tok_") and "secret" not in row.owner
    assert row.status == "queued" and row.models == ("openai/cand",)
    assert queue.claim("w") == body["run_id"]
    status, _, _ = call(
        app, "GET", f"/v1/runs/{row.run_id}", headers={"Authorization": "Bearer secret-token-1"}
    )
    assert status == 403
    status, headers, _ = call(app, "GET", "/v1/runs", headers={"Authorization": "Basic x"})
    assert status == 401 and headers["www-authenticate"] == "Bearer"
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert b"secret-token" not in path.read_bytes(), path


def test_a_full_queue_and_a_busy_token_get_429_with_retry_after(tmp_path: Path) -> None:
    app, store, _ = _app(tmp_path / "a", max_queued=1)
    assert _upload(app)[0] == 202
    status, headers, body = _upload(app)
    assert status == 429 and headers["retry-after"] == "10"
    assert body["error"]["code"] == "rate_limited" and "queue is full" in body["error"]["message"]
    assert store.count("queued") == 1  # the refused upload made no run
    app, store, _ = _app(tmp_path / "b", max_queued=10, max_runs_per_token=2)
    assert [_upload(app)[0] for _ in range(3)] == [202, 202, 429]
    assert "runs in flight" in _upload(app)[2]["error"]["message"]


def test_artifacts_wait_for_the_end_and_cancel_moves_a_run_forward(tmp_path: Path) -> None:
    app, _, queue = _app(tmp_path)
    first = _upload(app)[2]["run_id"]
    second = _upload(app)[2]["run_id"]
    status, _, body = call(app, "GET", f"/v1/runs/{second}/artifacts")
    assert status == 409 and body["error"]["details"] == {"status": "queued"}
    status, _, body = call(app, "POST", f"/v1/runs/{second}/cancel")
    assert status == 202 and body["cancel_requested"] and body["status"] == "queued"
    assert call(app, "POST", f"/v1/runs/{second}/cancel")[0] == 202  # asking twice is fine
    assert queue.claim("w") == second  # a cancelled run goes first: it ends at once
    assert queue.claim("w") == first
    run = call(app, "GET", f"/v1/runs/{first}")[2]
    assert (
        run["denominators"]["total_records"] == 1 and run["denominators"]["failed_records"] is None
    )
    assert run["progress"] == {"done": 0, "total": 1}


def test_every_error_is_the_envelope(tmp_path: Path) -> None:
    app, _, _ = _app(tmp_path)
    cases = [
        ("GET", "/nowhere", 404, "not_found"),
        ("DELETE", "/v1/runs", 405, "method_not_allowed"),
        ("GET", "/v1/runs/../../state.sqlite", 404, "not_found"),
        (
            "GET",
            "/v1/runs/run_01J8Q4ER9Z7Y5V5K6F4A1P2M3N/artifacts/predictions.jsonl",
            404,
            "not_found",
        ),
        ("GET", "/v1/runs?limit=1000", 400, "invalid_request"),
    ]
    for method, path, status, code in cases:
        got, headers, body = call(app, method, path)
        assert (got, body["error"]["code"]) == (status, code), (path, body)
        assert body["request_id"] == headers["x-request-id"]
    status, _, body = call(
        app, "POST", "/v1/runs", body=b"{", headers={"Content-Type": "application/json"}
    )
    assert status == 400 and body["error"]["message"].startswith("payload is not valid JSON")
    status, _, body = call(
        app, "POST", "/v1/runs", body=b"{}",
        headers={"Content-Type": "application/json", "Content-Length": "104857601"},
    )  # fmt: skip
    assert status == 413 and body["error"]["code"] == "payload_too_large"


def _messages(*chunks: bytes, then: str = "end") -> Any:
    queue = [{"type": "http.request", "body": c, "more_body": True} for c in chunks]
    if then == "end":
        queue.append({"type": "http.request", "body": b"", "more_body": False})

    async def receive() -> dict[str, Any]:
        if queue:
            return queue.pop(0)
        if then == "disconnect":
            return {"type": "http.disconnect"}
        await asyncio.sleep(3600)  # a client that stalls
        raise AssertionError("unreachable")

    return receive


def test_receive_upload_writes_chunks_and_enforces_the_limit_while_reading(tmp_path: Path) -> None:
    target = tmp_path / "upload.json"
    size = asyncio.run(receive_upload(_messages(b"ab", b"cd"), target, limit=4, idle_timeout=1))
    assert size == 4 and target.read_bytes() == b"abcd"
    for receive, status in (
        (_messages(b"abc", b"de", b"fgh"), 413),  # over the limit: refused, the rest drained
        (_messages(b"ab", then="disconnect"), 400),
        (_messages(b"ab", then="stall"), 408),
    ):
        with pytest.raises(ApiError) as caught:
            asyncio.run(receive_upload(receive, target, limit=4, idle_timeout=0.05))
        assert caught.value.status == status
        if status == 413:
            assert caught.value.details == {"payload_bytes": 5, "max_payload_bytes": 104857600}
            assert not target.exists()


def test_the_openapi_models_name_the_contracts_codes_and_states() -> None:
    """The schema's closed lists are written out for the OpenAPI document; they must be the
    ones the validator and the run states use."""
    from typing import get_args

    from pytest_legaleval.run.manifest import RUN_STATES, TERMINAL_STATES
    from pytest_legaleval.service.models import RunState

    assert get_args(RunState) == (*RUN_STATES, *TERMINAL_STATES)


def test_the_openapi_record_error_is_the_validators_own_class() -> None:
    """One ``RecordError``: the schema /openapi.json shows is derived from the dataclass the
    validator fills, so a field added there appears in the document (and is required)."""
    import dataclasses

    from pytest_legaleval.service.models import RunAccepted
    from pytest_legaleval.validation import ERROR_CODES, RecordError

    schema = RunAccepted.model_json_schema(mode="serialization")["$defs"]["RecordError"]
    names = [f.name for f in dataclasses.fields(RecordError)]
    assert list(schema["properties"]) == names
    assert schema["required"] == names
    assert set(schema["properties"]["code"]["enum"]) == set(ERROR_CODES)
    assert schema["properties"]["severity"]["const"] == "error"
    assert "null" in schema["properties"]["record_id"]["description"]
    entry = RecordError(1, None, "invalid_field_type", "input.prompt must be a string", "p")
    assert RunAccepted.model_validate(
        {
            "run_id": "run_01J8Q4ER9Z7Y5V5K6F4A1P2M3N",
            "status": "accepted_with_record_errors",
            "summary": {"total_records": 2, "accepted_records": 1, "rejected_records": 1},
            "record_errors": [entry.to_dict()],
            "request_id": "req_1",
        }
    ).record_errors == [entry]
