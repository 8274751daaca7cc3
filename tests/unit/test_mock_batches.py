"""The mock's Files and Batches API, driven by the openai SDK's own client.

The SDK is the reference for what a real client sends (multipart upload, batch creation,
retrieval, file content): the mock must accept it, check uploads line by line, move a
batch through its statuses as it is polled, and write output and error files.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from pytest_legaleval.testing.mock_openai import MockOpenAIServer


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer() as srv:
        yield srv


@pytest.fixture
def client(server: MockOpenAIServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)


def _line(custom_id: str, prompt: str, **overrides: Any) -> dict[str, Any]:
    line = {
        "custom_id": custom_id,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "m", "messages": [{"role": "user", "content": prompt}]},
    }
    line.update(overrides)
    return line


def _upload(client: openai.OpenAI, lines: list[Any]) -> str:
    content = "".join(json.dumps(x) + "\n" for x in lines).encode()
    return client.files.create(file=("in.jsonl", io.BytesIO(content)), purpose="batch").id


def _results(client: openai.OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    if file_id is None:
        return []
    return [json.loads(x) for x in client.files.content(file_id).text.splitlines()]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["not an object"], "line 1: not a JSON object"),
        ([_line("a", "x"), _line("a", "y")], "line 2: duplicate custom_id 'a'"),
        ([_line("a", "x", url="/v1/embeddings")], "line 1: method must be POST"),
        ([_line("a", "x", body={"model": "m", "messages": []})], "line 1: invalid body"),
        ([{"method": "POST"}], "line 1: custom_id must be a non-empty string"),
    ],
)
def test_uploads_are_checked_line_by_line(
    client: openai.OpenAI, server: MockOpenAIServer, lines: list[Any], message: str
) -> None:
    with pytest.raises(openai.BadRequestError, match=message):
        _upload(client, lines)
    assert server.batch_stats()["rejected_uploads"] == 1


def test_a_batch_moves_through_its_statuses_and_writes_both_files(
    client: openai.OpenAI, server: MockOpenAIServer
) -> None:
    server.add_fault("500", match="bad", times=5)
    server.batch_knobs(polls_in_progress=2, failures_to="error")
    file_id = _upload(client, [_line(f"id{i}", "bad" if i % 3 == 0 else f"q{i}") for i in range(9)])
    batch = client.batches.create(
        input_file_id=file_id, endpoint="/v1/chat/completions", completion_window="24h"
    )
    seen = [batch.status]
    while seen[-1] not in ("completed", "failed", "expired", "cancelled"):
        seen.append(client.batches.retrieve(batch.id).status)
    assert seen == ["validating", "in_progress", "in_progress", "in_progress", "finalizing",
                    "completed"]  # fmt: skip
    done = client.batches.retrieve(batch.id)
    assert done.request_counts is not None
    assert (done.request_counts.completed, done.request_counts.failed) == (6, 3)
    outputs = _results(client, done.output_file_id)
    errors = _results(client, done.error_file_id)
    assert sorted(o["custom_id"] for o in outputs) == sorted(f"id{i}" for i in range(9) if i % 3)
    assert {e["response"]["status_code"] for e in errors} == {500}
    assert [o["custom_id"] for o in outputs] != sorted(o["custom_id"] for o in outputs)  # shuffled
    assert all(o["response"]["body"]["object"] == "chat.completion" for o in outputs)
    assert server.stats()["requests"] == 0  # batch lines are not live requests
    assert server.batch_prompt_count("q1") == 1


def test_held_expired_cancelled_and_failed_batches(
    client: openai.OpenAI, server: MockOpenAIServer
) -> None:
    file_id = _upload(client, [_line(f"id{i}", f"q{i}") for i in range(4)])

    def run() -> Any:
        batch = client.batches.create(
            input_file_id=file_id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        for _ in range(8):
            batch = client.batches.retrieve(batch.id)
        return batch

    server.batch_knobs(hold=True)
    assert run().status == "in_progress"
    server.release_batches()
    server.batch_knobs(expire_next=1, partial=0.5)
    expired = run()
    assert expired.status == "expired" and len(_results(client, expired.output_file_id)) == 2
    codes = {e["error"]["code"] for e in _results(client, expired.error_file_id)}
    assert codes == {"batch_expired"}
    server.batch_knobs(fail_next=1, fail_lines=(2, 9))
    failed = run()
    assert failed.status == "failed" and failed.output_file_id is None
    assert failed.errors is not None and [e.line for e in failed.errors.data or []] == [2]
    server.batch_knobs(hold=True)
    batch = client.batches.create(
        input_file_id=file_id, endpoint="/v1/chat/completions", completion_window="24h"
    )
    client.batches.retrieve(batch.id)
    assert client.batches.cancel(batch.id).status == "cancelling"
    cancelled = client.batches.retrieve(batch.id)
    assert cancelled.status == "cancelled"
    assert {e["error"]["code"] for e in _results(client, cancelled.error_file_id)} == {
        "batch_cancelled"
    }


def test_without_the_api_it_is_a_404(client: openai.OpenAI, server: MockOpenAIServer) -> None:
    server.batch_knobs(enabled=False)
    with pytest.raises(openai.NotFoundError):
        _upload(client, [_line("a", "x")])


def test_the_standalone_server_takes_batch_knobs() -> None:
    from pytest_legaleval.testing.mock_openai.cli import _batch_knobs, _parser

    args = _parser().parse_args(
        ["--no-batches", "--batch-expire", "2", "--batch-polls", "3", "--batch-failures-to", "both"]
    )
    assert _batch_knobs(args) == {
        "enabled": False, "expire_next": 2, "cancel_next": 0, "fail_next": 0,
        "polls_in_progress": 3, "failures_to": "both",
    }  # fmt: skip
    with MockOpenAIServer() as server:
        knobs = server.batch_knobs(**_batch_knobs(_parser().parse_args(["--batch-fail", "1"])))
    assert knobs.enabled and knobs.fail_next == 1
