"""The engine's batch mode against the mock's real Files and Batches API on loopback.

Each test runs the engine's own client (``engine.batch_client`` on aiohttp) against
``MockOpenAIServer``; the mock answers batch lines with its live logic, so a batch answer
can be compared with the live answer to the same request.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

from pytest_legaleval.cli import main as cli_main
from pytest_legaleval.engine import (
    Engine,
    EngineSettings,
    GenerationRequest,
    GenerationResult,
    RetryPolicy,
)
from pytest_legaleval.engine.batch_client import (
    download_bound,
    input_line,
    parse_result_lines,
    split_lines,
)
from pytest_legaleval.engine.batch_store import BatchStore, pending_batches
from pytest_legaleval.engine.cache import ResultCache
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from ..processes import wait_until

MODEL = "openai/mock-model"


def _requests(n: int, tag: str = "item") -> list[GenerationRequest]:
    return [
        GenerationRequest(model=MODEL, messages=({"role": "user", "content": f"{tag} {i:03d}"},))
        for i in range(n)
    ]


def _settings(server: MockOpenAIServer, cache: Path | None, **changes: object) -> EngineSettings:
    values: dict[str, object] = {
        "base_url": server.base_url,
        "cache_path": str(cache) if cache is not None else None,
        "batch": True,
        "batch_poll_s": 0.02,
        "retry": RetryPolicy.scaled(0.001),
    }
    values.update(changes)
    return EngineSettings(**values)  # type: ignore[arg-type]


def _run(settings: EngineSettings, requests: list[GenerationRequest]) -> list[GenerationResult]:
    with Engine(settings) as engine:
        return [f.result(60) for f in engine.submit_many(requests)]


@pytest.fixture
def server() -> MockOpenAIServer:
    with MockOpenAIServer() as srv:
        yield srv


def test_answers_are_matched_by_custom_id_not_by_order(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    requests = _requests(40)
    live = _run(_settings(server, None, batch=False), requests)
    server.reset()
    server.batch_knobs(shuffle=True, failures_to="both")
    server.add_fault("500", match=r"item 01\d", times=10)  # once each, in both files
    batched = _run(_settings(server, tmp_path / "c.sqlite"), requests)
    assert [r.text for r in batched] == [r.text for r in live]
    assert all(r.ok and r.batch for r in batched)
    assert server.stats()["requests"] == 0
    retried = [r for r in batched if len(r.attempts) == 2]
    assert len(retried) == 10
    assert all(r.attempts[0].status_code == 500 and r.attempts[0].batch_id for r in retried)
    assert retried[0].attempts[0].batch_id != retried[0].attempts[1].batch_id
    assert server.batch_stats()["batches_created"] == 2


def test_requests_are_split_into_files_by_the_limits(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    results = _run(_settings(server, tmp_path / "c.sqlite", batch_file_requests=7), _requests(20))
    assert all(r.ok for r in results)
    stats = server.batch_stats()
    assert stats["files_uploaded"] == stats["batches_created"] == 3
    assert stats["lines"] == 20


def test_split_lines_respects_count_and_bytes() -> None:
    bodies = [{"model": "m", "messages": [{"role": "user", "content": "x" * (i * 10)}]}
              for i in range(10)]  # fmt: skip
    lines = [input_line(f"id{i}", body) for i, body in enumerate(bodies)]
    assert split_lines(lines, max_requests=4) == [(0, 4), (4, 8), (8, 10)]
    sizes = [len(line) for line in lines]
    ranges = split_lines(lines, max_bytes=sizes[-1] + sizes[-2] - 1)
    for start, stop in ranges:
        assert stop - start == 1 or sum(sizes[start:stop]) <= sizes[-1] + sizes[-2] - 1
    assert [i for r in ranges for i in range(*r)] == list(range(10))
    # One line larger than the limit still gets a file of its own.
    assert split_lines(lines[-1:], max_bytes=10) == [(0, 1)]


def test_expired_batch_keeps_its_answers_and_retries_the_rest(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    server.batch_knobs(expire_next=1, partial=0.5)
    results = _run(_settings(server, tmp_path / "c.sqlite"), _requests(10))
    assert all(r.ok and r.batch for r in results)
    assert [len(r.attempts) for r in results] == [1] * 5 + [2] * 5
    assert {r.attempts[0].error_code for r in results[5:]} == {"timeout"}
    assert "batch_expired" in results[5].attempts[0].message
    stats = server.batch_stats()
    assert stats["by_status"] == {"expired": 1, "completed": 1}
    assert stats["lines"] == 15  # the answered half was not sent again


def test_deadline_cancels_the_batch_and_sends_the_rest_live(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    server.batch_knobs(hold=True, partial=0.5)
    settings = _settings(server, tmp_path / "c.sqlite", batch_max_wait_s=0.1)
    results = _run(settings, _requests(8))
    assert all(r.ok for r in results)
    assert [r.batch for r in results] == [True] * 4 + [False] * 4
    assert server.batch_stats()["cancels"] == 1
    assert server.batch_stats()["by_status"] == {"cancelled": 1}
    assert server.stats()["requests"] == 4


def test_a_batch_that_fails_retries_and_refused_lines_go_live(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    server.batch_knobs(fail_next=1, fail_lines=(2,))
    results = _run(_settings(server, tmp_path / "c.sqlite"), _requests(4))
    assert all(r.ok for r in results)
    assert [r.batch for r in results] == [True, False, True, True]
    assert results[1].attempts[0].error_code == "bad_request"
    assert "refused" in results[1].attempts[0].message
    assert server.stats()["requests"] == 1


def test_a_permanent_line_failure_is_decided_by_one_live_call(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    server.add_fault("400", match=r"item 002")  # bad in the batch and live alike
    server.add_fault("400", match=r"item 001", times=1)  # a batch line's 400 only
    server.add_reply(r"item 000", {"content": "ok", "finish_reason": "content_filter"})
    results = _run(_settings(server, tmp_path / "c.sqlite"), _requests(4))
    assert [r.ok for r in results] == [False, True, False, True]
    assert results[0].error_code == "content_filter" and len(results[0].attempts) == 1
    assert results[1].text and not results[1].batch  # the live call answered it
    assert results[2].error_code == "bad_request"
    assert [(a.status_code, a.batch_id is not None) for a in results[2].attempts] == [
        (400, True),
        (400, False),
    ]
    assert server.stats()["requests"] == 2  # items 001 and 002, once each


def test_attempts_spent_in_batches_then_live_with_its_full_retry_policy(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    server.batch_knobs(line_errors={r"item 000": "request_timeout"}, line_error_times=9)
    server.add_fault("503", match=r"item 000", times=2)  # the live call: two failures
    settings = _settings(server, tmp_path / "c.sqlite", batch_attempts=2)
    (result,) = _run(settings, _requests(1))
    assert result.ok and not result.batch
    codes = [(a.error_code, a.batch_id is not None) for a in result.attempts]
    assert codes == [("timeout", True), ("timeout", True), ("service_unavailable", False),
                     ("service_unavailable", False), (None, False)]  # fmt: skip


def test_an_endpoint_without_a_batch_api_gets_live_calls(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    server.batch_knobs(enabled=False)
    results = _run(_settings(server, tmp_path / "c.sqlite"), _requests(5))
    assert all(r.ok and not r.batch for r in results)
    assert server.stats()["requests"] == 5


def test_an_oversized_output_file_is_not_read(server: MockOpenAIServer, tmp_path: Path) -> None:
    huge = "x" * (download_bound(1) + 10)
    server.add_reply(r"item 000", huge)
    settings = _settings(server, tmp_path / "c.sqlite", batch_attempts=1)
    (result,) = _run(settings, _requests(1))
    # The download stopped at the bound; the request was answered live instead.
    assert result.ok and not result.batch and result.text == huge
    assert "larger than" in result.attempts[0].message


def test_without_a_cache_batches_still_run(server: MockOpenAIServer) -> None:
    results = _run(_settings(server, None), _requests(3))
    assert all(r.ok and r.batch for r in results)


def test_a_new_engine_resumes_a_stored_batch_and_caches_every_answer(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    cache = tmp_path / "c.sqlite"
    requests = _requests(6)
    server.batch_knobs(hold=True)
    first = Engine(_settings(server, cache))
    futures = first.submit_many(requests)
    # In progress at the provider, and known so in the cache (the status last seen).
    assert wait_until(lambda: [r.status for r in pending_batches(str(cache))] == ["in_progress"])
    first.cancel_all()  # like Ctrl-C: the callers get "cancelled", the batch runs on
    assert first.stats()["batches_pending"] == 1
    first.close()
    assert all(f.result(10).error_code == "cancelled" for f in futures)
    assert "rerun with the same cache" in futures[0].result().error_message
    (row,) = pending_batches(str(cache))
    assert row.status == "in_progress" and row.requests == 6 and row.owed == 6
    server.release_batches()
    # Another run asks for half of them: it waits on the stored batch, submits nothing,
    # and the answers nobody asked for are cached as well.
    again = _run(_settings(server, cache), requests[:3])
    assert all(r.ok and r.batch for r in again)
    assert server.batch_stats()["batches_created"] == 1
    assert pending_batches(str(cache)) == []
    third = _run(_settings(server, cache), requests)
    assert all(r.cached and r.batch for r in third)
    assert server.batch_stats()["batches_created"] == 1 and server.stats()["requests"] == 0


def test_prompt_cache_tokens_are_recorded_and_cached(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    server.add_reply(
        r"item", {"content": "ok", "usage": {"prompt_tokens": 100, "cached_tokens": 64}}
    )
    cache = tmp_path / "c.sqlite"
    (result,) = _run(_settings(server, cache), _requests(1))
    assert result.cached_input_tokens == 64 and result.attempts[0].cached_input_tokens == 64
    (hit,) = _run(_settings(server, cache, batch=False), _requests(1))
    assert hit.cached and hit.cached_input_tokens == 64 and hit.batch


def test_an_old_cache_file_gains_the_new_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE results (cache_key TEXT PRIMARY KEY, text TEXT NOT NULL, finish_reason "
        "TEXT, input_tokens INTEGER, output_tokens INTEGER, latency_ms REAL, model TEXT NOT "
        "NULL, created_at TEXT NOT NULL) WITHOUT ROWID"
    )
    conn.execute("INSERT INTO results VALUES ('k', 'old', 'stop', 1, 2, 3.0, 'm', 't')")
    conn.commit()
    conn.close()
    cache = ResultCache(str(path))
    row = cache.get("k")
    cache.close()
    assert row is not None and row.text == "old" and row.cached_input_tokens is None
    assert row.batch is False


def test_result_lines_keep_a_success_over_a_failure_and_name_bad_lines() -> None:
    ok = {"custom_id": "a", "response": {"status_code": 200, "body": {"choices": []}}}
    failed = {"custom_id": "a", "response": {"status_code": 500, "body": {"error": {"code": "x"}}}}
    expired = {
        "custom_id": "b",
        "response": None,
        "error": {"code": "batch_expired", "message": "m"},
    }
    as_text = {"custom_id": "c", "response": {"status_code": 200, "body": json.dumps({"x": 1})}}
    data = b"\n".join(json.dumps(x).encode() for x in (failed, ok, expired, as_text))
    data += b"\nnot json\n[1]\n"
    problems: list[str] = []
    found = parse_result_lines(data, problems)
    assert found["a"].ok and found["a"].status_code == 200
    assert found["b"].error_code == "batch_expired" and not found["b"].ok
    assert found["c"].ok and found["c"].body == {"x": 1}
    assert problems == ["line 5: not JSON", "line 6: no custom_id"]


def test_store_survives_reopening_and_lists_pending(tmp_path: Path) -> None:
    path = str(tmp_path / "c.sqlite")
    ResultCache(path).close()
    store = BatchStore(path)
    from pytest_legaleval.engine.batch_store import BatchRow

    row = BatchRow("b1", "openai:x", MODEL, "validating", 2, 1, "t", 1.0, "t")
    store.record_batch(row, "f1", [("k1", "k1", 1), ("k2", "k2", 2)])
    store.forget("b1", ["k1"])
    store.close()
    again = BatchStore(path)
    assert set(again.pending_for(["k1", "k2", "k3"])) == {"k2"}
    again.collected("b1")
    assert again.pending_for(["k2"]) == {} and again.pending() == []
    again.close()


def test_cli_lists_pending_batches_and_refuses_a_missing_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "c.sqlite")
    assert cli_main(["batches", "--cache", path]) == 2
    assert "No cache" in capsys.readouterr().err
    ResultCache(path).close()
    assert cli_main(["batches", "--cache", path]) == 0
    assert "no pending batches" in capsys.readouterr().out
    from pytest_legaleval.engine.batch_store import BatchRow

    store = BatchStore(path)
    store.record_batch(BatchRow("batch_9", "openai:x", MODEL, "in_progress", 1, 1, "t", 0.0, "t"),
                       "f", [("k", "k", 1)])  # fmt: skip
    store.close()
    assert cli_main(["batches", "--cache", path, "--json"]) == 0
    entry = json.loads(capsys.readouterr().out)
    assert entry["batch_id"] == "batch_9" and entry["owed"] == 1 and entry["age_s"] > 0


def test_batch_with_max_cost_is_refused() -> None:
    with pytest.raises(ConfigError, match="--max-cost and --batch"):
        EngineSettings(batch=True, max_cost_usd=1.0)


def test_engine_threads_end(server: MockOpenAIServer, tmp_path: Path) -> None:
    before = threading.active_count()
    _run(_settings(server, tmp_path / "c.sqlite"), _requests(2))
    assert wait_until(lambda: threading.active_count() <= before, 10)


def test_a_bug_while_collecting_sends_the_requests_live_instead_of_hanging(
    server: MockOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pytest_legaleval.engine.batch as batch_module

    def broken(*args: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(batch_module, "classify_line", broken)
    results = _run(_settings(server, tmp_path / "c.sqlite"), _requests(3))
    assert all(r.ok and not r.batch for r in results)
    assert server.stats()["requests"] == 3


def test_a_key_echoed_in_a_failed_line_never_reaches_the_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    with MockOpenAIServer(api_key=secret) as server:
        server.add_reply(r"item 000", {"status": 400, "content": f"bad key {secret}"})
        (result,) = _run(_settings(server, tmp_path / "c.sqlite"), _requests(1))
        assert server.batch_stats()["batches_created"] == 1
    assert result.error_code == "bad_request"
    assert secret not in result.error_message and "***" in result.error_message
    assert all(secret not in a.message for a in result.attempts)


def test_a_batch_turnaround_is_no_latency_of_the_model(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    request = GenerationRequest(
        model=MODEL, messages=({"role": "user", "content": "item 0"},), max_latency_ms=1
    )
    (result,) = _run(_settings(server, tmp_path / "c.sqlite"), [request])
    assert result.ok and result.batch
    assert result.latency_ms is None and not result.latency_exceeded
    assert result.attempts[0].latency_ms > 1  # the turnaround stays on the attempt


def test_a_provider_without_a_batch_api_goes_live_and_is_counted(
    server: MockOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEGALEVAL_MISTRAL_BASE_URL", server.base_url)
    monkeypatch.setenv("MISTRAL_API_KEY", "k")
    requests = [GenerationRequest(model="mistral/m", messages=({"role": "user", "content": "x"},))]
    with Engine(_settings(server, tmp_path / "c.sqlite")) as engine:
        (result,) = [f.result(30) for f in engine.submit_many(requests)]
        stats = engine.stats()
    assert result.ok and not result.batch
    assert stats["batch_no_api_calls"] == 1 and stats["batches_created"] == 0
    assert server.stats()["requests"] == 1


@pytest.mark.parametrize("bad", ["", "..", "../files/x", "a?b", "a/b", "\x1b[2J", "x" * 201, 7])
def test_ids_from_the_server_must_be_plain(bad: object) -> None:
    from pytest_legaleval.engine.batch_client import checked_id
    from pytest_legaleval.engine.retry import ProviderError

    with pytest.raises(ProviderError, match="unusable batch id"):
        checked_id(bad, "batch")
    assert checked_id("batch_6841e6b5b6f48190b2b2fbd5e8d0ea0e", "batch").startswith("batch_")


def test_a_lost_create_reply_finds_the_batch_instead_of_paying_twice(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    server.batch_knobs(lose_create_replies=1)
    results = _run(_settings(server, tmp_path / "c.sqlite"), _requests(4))
    assert all(r.ok and r.batch for r in results)
    assert server.batch_stats()["batches_created"] == 1
    assert server.stats()["requests"] == 0


class _SharedState:
    """A ``BatchState`` of the caller's: one object that two engines (two replicas, each
    with its own cache file) share, as a service's database would be shared."""

    def __init__(self) -> None:
        from pytest_legaleval.engine.batch_store import BatchRow, PendingRequest

        self.rows: dict[str, BatchRow] = {}
        self.requests: dict[str, PendingRequest] = {}
        self.done: set[str] = set()
        self.lock = threading.Lock()
        self.closed = 0

    def record_batch(self, row, input_file_id, requests):  # type: ignore[no-untyped-def]
        from pytest_legaleval.engine.batch_store import PendingRequest

        with self.lock:
            self.rows[row.batch_id] = row
            for key, custom_id, line in requests:
                self.requests[key] = PendingRequest(key, row.batch_id, custom_id, row.model, line)

    def pending_for(self, keys):  # type: ignore[no-untyped-def]
        with self.lock:
            return {
                k: self.requests[k]
                for k in keys
                if k in self.requests and self.requests[k].batch_id not in self.done
            }

    def requests_of(self, batch_id):  # type: ignore[no-untyped-def]
        with self.lock:
            return [r for r in self.requests.values() if r.batch_id == batch_id]

    def batch(self, batch_id):  # type: ignore[no-untyped-def]
        return self.rows.get(batch_id)

    def set_status(self, batch_id, status):  # type: ignore[no-untyped-def]
        import dataclasses

        with self.lock:
            self.rows[batch_id] = dataclasses.replace(self.rows[batch_id], status=status)

    def forget(self, batch_id, keys):  # type: ignore[no-untyped-def]
        with self.lock:
            for key in keys:
                if key in self.requests and self.requests[key].batch_id == batch_id:
                    del self.requests[key]

    def collected(self, batch_id):  # type: ignore[no-untyped-def]
        with self.lock:
            self.done.add(batch_id)

    def close(self) -> None:
        self.closed += 1


def test_a_callers_batch_state_lets_another_replica_resume(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    state = _SharedState()
    requests = _requests(3)
    server.batch_knobs(hold=True)
    first = Engine(_settings(server, tmp_path / "replica1.sqlite"), batch_state=state)  # type: ignore[arg-type]
    first.submit_many(requests)
    assert wait_until(lambda: [r.status for r in state.rows.values()] == ["in_progress"])
    first.close()
    server.release_batches()
    second = Engine(_settings(server, tmp_path / "replica2.sqlite"), batch_state=state)  # type: ignore[arg-type]
    with second:
        results = [f.result(30) for f in second.submit_many(requests)]
    assert all(r.ok and r.batch for r in results)
    assert server.batch_stats()["batches_created"] == 1
    assert state.done == set(state.rows) and state.closed == 2
    assert pending_batches(str(tmp_path / "replica2.sqlite")) == []  # the cache file has none


def test_a_long_errors_list_is_read_within_a_bound_scaled_to_the_requests(
    server: MockOpenAIServer,
) -> None:
    import asyncio

    from pytest_legaleval.engine.batch_client import BatchClient
    from pytest_legaleval.engine.retry import ProviderError

    n = 1000  # errors.data of 1,000 lines is larger than the ~66 KB read for one request
    server.batch_knobs(fail_next=1, fail_lines=tuple(range(1, n + 1)))
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    content = b"".join(input_line(f"id{i}", body) for i in range(n))

    async def scenario() -> tuple[int, str]:
        client = BatchClient(server.base_url, "")
        try:
            batch = await client.create(await client.upload(content, "in.jsonl"), {})
            await client.retrieve(batch["id"], n)  # validating -> failed
            try:
                await client.retrieve(batch["id"])  # bound for one request: too small
            except ProviderError as exc:
                refused = str(exc)
            else:
                refused = ""
            failed = await client.retrieve(batch["id"], n)
            return len(failed["errors"]["data"]), refused
        finally:
            await client.aclose()

    lines, refused = asyncio.run(scenario())
    assert lines == n and "larger than" in refused


def test_a_base_url_with_a_query_and_credentials_reaches_the_batch_api(
    server: MockOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    url = server.base_url.replace("http://", "http://user:pw-secret@") + "?api-version=2"
    settings = _settings(server, tmp_path / "c.sqlite", base_url=url)
    results = _run(settings, _requests(2))
    # The paths went onto the URL's path (a path after its query would be a 404: live).
    assert all(r.ok and r.batch for r in results)
    (row,) = [
        r for r in sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT endpoint FROM batches")
    ]
    assert "pw-secret" not in row[0]  # the stored endpoint identity is redacted
