"""The SQLite result cache, crash safety, secrets and configuration errors."""

from __future__ import annotations

import multiprocessing
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.engine import (
    CachedRow,
    Engine,
    EngineSettings,
    GenerationRequest,
    ResultCache,
    RetryPolicy,
)
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.testing.mock_openai import MockConfig, MockOpenAIServer, prompt_hash

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer(MockConfig(latency=0.0)) as srv:
        yield srv


def settings_for(base_url: str, cache: Path | None, **kw: Any) -> EngineSettings:
    options: dict[str, Any] = {
        "base_url": base_url,
        "cache_path": None if cache is None else str(cache),
        "retry": RetryPolicy.scaled(0.001),
        "request_timeout_s": 10.0,
    }
    options.update(kw)
    return EngineSettings(**options)


def request(text: str, **kw: Any) -> GenerationRequest:
    return GenerationRequest(
        model="openai/mock-model", messages=({"role": "user", "content": text},), **kw
    )


def test_cache_hit_avoids_the_network_and_survives_a_new_engine(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    cache = tmp_path / "sub" / "cache.sqlite"
    server.add_reply("cached-question", {"usage": {"prompt_tokens": 5, "completion_tokens": 3}})
    with Engine(settings_for(server.base_url, cache)) as engine:
        first = engine.submit(request("cached-question")).result(timeout=60)
        again = engine.submit(request("cached-question")).result(timeout=60)
        assert engine.stats()["cache_hits"] == 1
    assert first.ok and not first.cached
    assert again.cached and again.text == first.text and again.attempts == ()
    assert server.stats()["requests"] == 1
    with Engine(settings_for(server.base_url, cache)) as engine:
        hit = engine.submit(request("cached-question", max_latency_ms=1)).result(timeout=60)
    assert server.stats()["requests"] == 1
    assert hit.cached and hit.ok and hit.text == first.text
    assert (hit.input_tokens, hit.output_tokens) == (5, 3)
    assert hit.latency_ms == pytest.approx(first.latency_ms)
    assert hit.latency_exceeded == (first.latency_ms is not None and first.latency_ms > 1)
    assert hit.cache_key == first.cache_key
    assert hit.first_attempt_at is None


def test_a_different_template_or_endpoint_misses(server: MockOpenAIServer, tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    with Engine(settings_for(server.base_url, cache)) as engine:
        engine.submit(request("versioned")).result(timeout=60)
        assert not engine.submit(request("versioned", template_version="v2")).result().cached
    other = server.base_url.replace("127.0.0.1", "localhost")
    with Engine(settings_for(other, cache)) as engine:
        assert not engine.submit(request("versioned")).result(timeout=60).cached
    assert server.count_for("versioned") == 3


def test_errors_are_never_cached(server: MockOpenAIServer, tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    server.add_fault("400", match="rejected", times=1)
    with Engine(settings_for(server.base_url, cache)) as engine:
        assert engine.submit(request("rejected")).result(timeout=60).error_code == "bad_request"
    with Engine(settings_for(server.base_url, cache)) as engine:
        result = engine.submit(request("rejected")).result(timeout=60)
    assert result.ok and not result.cached and server.count_for("rejected") == 2
    rows = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM results").fetchone()[0]
    assert rows == 1


def test_bulk_submission_reads_hits_in_one_go(server: MockOpenAIServer, tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    batch = [request(f"bulk {i}") for i in range(800)]
    with Engine(settings_for(server.base_url, cache, concurrency=64)) as engine:
        assert all(f.result(timeout=30).ok for f in engine.submit_many(batch[:600]))
    with Engine(settings_for(server.base_url, cache, concurrency=64)) as engine:
        results = [f.result(timeout=30) for f in engine.submit_many(batch)]
        assert engine.stats()["cache_hits"] == 600
    assert [r.cached for r in results] == [True] * 600 + [False] * 200
    assert server.stats()["requests"] == 800


def _cache_worker(base_url: str, cache: str, worker: int) -> None:
    settings = settings_for(base_url, Path(cache), concurrency=16)
    batch = [request(f"worker {worker} item {i}") for i in range(150)]
    batch += [request(f"shared item {i}") for i in range(50)]
    with Engine(settings) as engine:
        results = [f.result(timeout=60) for f in engine.submit_many(batch)]
        errors = engine.stats()["cache_write_errors"]
    if errors or not all(r.ok for r in results):
        raise SystemExit(3)


def test_two_processes_share_one_cache_file(server: MockOpenAIServer, tmp_path: Path) -> None:
    cache = str(tmp_path / "shared.sqlite")
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_cache_worker, args=(server.base_url, cache, n)) for n in (1, 2)
    ]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
    assert [p.exitcode for p in workers] == [0, 0]
    rows = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM results").fetchone()[0]
    assert rows == 350  # 150 + 150 own rows, the 50 shared ones once
    store = ResultCache(cache)
    try:
        keys = [k for (k,) in sqlite3.connect(cache).execute("SELECT cache_key FROM results")]
        assert len(store.get_many(keys)) == 350
    finally:
        store.close()


_KILLED_CHILD = textwrap.dedent(
    """
    import sys
    from pytest_legaleval.engine import Engine, EngineSettings, GenerationRequest, RetryPolicy

    base_url, cache = sys.argv[1], sys.argv[2]
    settings = EngineSettings(base_url=base_url, cache_path=cache, concurrency=4,
                              retry=RetryPolicy.scaled(0.001))
    batch = [GenerationRequest(model="openai/mock-model",
                               messages=({"role": "user", "content": f"crash item {i:03d}"},))
             for i in range(200)]
    engine = Engine(settings)
    for i, future in enumerate(engine.submit_many(batch)):
        assert future.result().ok
        print(f"done {i}", flush=True)
    """
)


def test_rerun_after_sigkill_repeats_no_finished_call(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    # Items 100-199 are held: the kill lands mid-run however slow the machine.
    server.add_reply(r"crash item 1\d\d", {"content": "late", "delay": 600})
    cache = str(tmp_path / "crash.sqlite")
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_CHILD, server.base_url, cache],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert child.stdout is not None
    finished: list[int] = []
    for line in child.stdout:
        finished.append(int(line.split()[1]))
        if len(finished) >= 40:
            break
    child.send_signal(signal.SIGKILL)
    child.wait(60)
    assert child.returncode == -signal.SIGKILL
    assert server.stats()["requests"] < 200  # really killed mid-run
    server.clear_replies()
    batch = [request(f"crash item {i:03d}") for i in range(200)]
    with Engine(settings_for(server.base_url, Path(cache), concurrency=16)) as engine:
        results = [f.result(timeout=30) for f in engine.submit_many(batch)]
    assert all(r.ok for r in results)
    per_prompt = server.stats()["per_prompt"]
    for i in finished:
        assert results[i].cached
        assert per_prompt[prompt_hash(batch[i].messages)] == 1, f"item {i} was paid twice"
    assert sum(r.cached for r in results) >= len(finished)


def test_api_key_never_reaches_cache_results_or_messages(
    server: MockOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-planted-SECRET-0123456789"
    monkeypatch.setenv("LEGALEVAL_PLANTED_KEY", secret)
    server.update_config(api_key=secret)
    server.add_reply("leaky", {"status": 401, "content": f"Incorrect API key provided: {secret}"})
    cache = tmp_path / "secret.sqlite"
    settings = settings_for(server.base_url, cache, api_key_env="LEGALEVAL_PLANTED_KEY")
    with Engine(settings) as engine:
        good = [
            f.result(timeout=60) for f in engine.submit_many([request(f"q{i}") for i in range(5)])
        ]
        leaky = engine.submit(request("leaky")).result(timeout=60)
        assert secret not in repr(engine.stats())
    assert all(r.ok for r in good)
    assert leaky.error_code == "auth_error" and "***" in leaky.error_message
    for text in (repr(good), repr(leaky), repr(settings)):
        assert secret not in text
    files = [p for p in tmp_path.iterdir() if p.name.startswith("secret.sqlite")]
    assert files
    for path in files:
        assert secret.encode() not in path.read_bytes()


def test_unknown_provider_is_a_config_error(tmp_path: Path) -> None:
    with Engine(EngineSettings(cache_path=None)) as engine:
        with pytest.raises(ConfigError, match="accepted providers: anthropic, deepseek, gemini"):
            engine.submit(
                GenerationRequest("claude-direct/claude", ({"role": "user", "content": "x"},))
            )
        with pytest.raises(ConfigError, match="Expected PROVIDER/NAME for the model"):
            engine.check_model("gpt-4.1")
        with pytest.raises(ConfigError, match="purpose"):
            engine.submit(
                GenerationRequest(
                    "openai/x", ({"role": "user", "content": "x"},), purpose="grading"
                )
            )
        assert engine.stats()["submitted"] == 0


def test_missing_key_without_base_url_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("LEGALEVAL_ABSENT_KEY", raising=False)
    with Engine(EngineSettings(cache_path=None, api_key_env="LEGALEVAL_ABSENT_KEY")) as engine:
        with pytest.raises(ConfigError, match="LEGALEVAL_ABSENT_KEY is not set"):
            engine.check_model("openai/gpt-4.1-mini")
    # A local server needs no key: the dummy one is used.
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    with Engine(EngineSettings(cache_path=None, api_key_env="LEGALEVAL_ABSENT_KEY")) as engine:
        engine.check_model("openai/gpt-4.1-mini")


def test_cache_writes_are_durable_before_results_are_seen(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    cache = tmp_path / "durable.sqlite"
    with Engine(settings_for(server.base_url, cache)) as engine:
        result = engine.submit(request("durable")).result(timeout=60)
        # Read with an independent connection while the engine is still open.
        row = (
            sqlite3.connect(cache)
            .execute("SELECT text, model FROM results WHERE cache_key = ?", (result.cache_key,))
            .fetchone()
        )
    assert row == (result.text, "openai/mock-model")


def test_unusable_cache_file_is_a_config_error(tmp_path: Path) -> None:
    garbage = tmp_path / "not-a-db.sqlite"
    garbage.write_bytes(b"this is not an SQLite database, just some text" * 100)
    engine = Engine(EngineSettings(cache_path=str(garbage)))
    with pytest.raises(ConfigError, match="result cache"):
        engine.start()
    engine.close()


def _row(key: str, text: str, **kw: Any) -> CachedRow:
    fields: dict[str, Any] = {
        "cache_key": key,
        "text": text,
        "finish_reason": "stop",
        "input_tokens": 1,
        "output_tokens": 1,
        "latency_ms": 1.0,
        "model": "openai/m",
        "created_at": "2025-01-01T00:00:00.000Z",
    }
    fields.update(kw)
    return CachedRow(**fields)


def test_the_writer_survives_rows_sqlite_refuses_and_keeps_the_good_ones(
    tmp_path: Path,
) -> None:
    cache = ResultCache(str(tmp_path / "c.sqlite"))
    released: list[str] = []
    rows = [
        _row("good-1", "fine"),
        _row("surrogate", "Answer: A \ud83d"),  # UnicodeEncodeError, not sqlite3.Error
        _row("overflow", "x", input_tokens=10**30),  # OverflowError
        _row("good-2", "also fine"),
    ]
    # Queued together so they land in one batch, which then fails as a whole.
    for row in rows:
        cache.put(row, lambda key=row.cache_key: released.append(key))
    cache.close()
    assert sorted(released) == sorted(r.cache_key for r in rows)  # nobody left waiting
    assert cache.write_errors == 2
    stored = ResultCache(str(tmp_path / "c.sqlite"))
    assert set(stored.get_many(r.cache_key for r in rows)) == {"good-1", "good-2"}
    stored.close()


def test_a_put_after_the_writer_died_is_released_at_once(tmp_path: Path) -> None:
    cache = ResultCache(str(tmp_path / "c.sqlite"))
    cache._queue.put(None)  # stops the writer as close() would, without closing the cache
    cache._writer.join(60)
    released: list[int] = []
    cache.put(_row("k", "t"), lambda: released.append(1))
    assert released == [1]
    cache.close()


def test_the_cache_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "new" / "cache.sqlite"
    cache = ResultCache(str(path))
    cache.put(_row("k", "t"), lambda: None)
    cache.close()
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    for sidecar in path.parent.iterdir():
        assert sidecar.stat().st_mode & 0o077 == 0, sidecar.name


def test_scrub_changes_what_is_stored_not_what_the_caller_gets(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    cache = tmp_path / "cache.sqlite"
    server.add_reply("echo-me", "token sk-canary-123 and a name, Jane Roe")
    server.add_reply("scrub-fails", "sk-canary-123 again")

    def scrub(text: str) -> str:
        if "again" in text:
            raise RuntimeError("redactor bug")
        return text.replace("sk-canary-123", "[secret]")

    with Engine(settings_for(server.base_url, cache), scrub=scrub) as engine:
        first = engine.submit(request("echo-me")).result(timeout=60)
        failed = engine.submit(request("scrub-fails")).result(timeout=60)
        assert engine.stats()["cache_write_errors"] == 1
    assert first.text == "token sk-canary-123 and a name, Jane Roe"  # raw for grading
    assert failed.ok and failed.text == "sk-canary-123 again"
    assert b"sk-canary-123" not in cache.read_bytes()
    with Engine(settings_for(server.base_url, cache)) as engine:
        hit = engine.submit(request("echo-me")).result(timeout=60)
        miss = engine.submit(request("scrub-fails")).result(timeout=60)
    assert hit.cached and hit.text == "token [secret] and a name, Jane Roe"  # PII intact
    assert not miss.cached  # never stored unscrubbed
