"""One hostile reply per attack of issue 17, through the engine in process.

Each test names what today's main did with the same bytes.
"""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.engine import (
    Engine,
    EngineSettings,
    GenerationRequest,
    GenerationResult,
    RetryPolicy,
)
from pytest_legaleval.grading._panel import JudgePanel
from pytest_legaleval.grading._policies import PolicyBook
from pytest_legaleval.records import Record
from pytest_legaleval.testing.mock_openai import HOSTILE_KINDS, HostileOpenAIServer

KEY = "sk-canary-7f3e9a1c2b4d6e8f"
KEY_ENV = "LEGALEVAL_ADVERSARIAL_KEY"
WAIT_S = 120.0  # far above timeout × attempts here; only a hang reaches it


@pytest.fixture
def server() -> Iterator[HostileOpenAIServer]:
    with HostileOpenAIServer() as srv:
        yield srv


def make_engine(server: HostileOpenAIServer, cache: Path | None, **kw: Any) -> Engine:
    scrub = kw.pop("scrub", None)
    options: dict[str, Any] = {
        "base_url": server.base_url,
        "cache_path": None if cache is None else str(cache),
        "retry": RetryPolicy.scaled(0.001),
        "request_timeout_s": 20.0,  # no call here should time out, however loaded the machine
        "api_key_env": KEY_ENV,
    }
    options.update(kw)
    return Engine(EngineSettings(**options), scrub=scrub)


def ask(engine: Engine, prompt: str) -> GenerationResult:
    request = GenerationRequest(
        model="openai/mock-model", messages=({"role": "user", "content": prompt},)
    )
    return engine.submit(request).result(timeout=WAIT_S)


@pytest.fixture(params=["cache", "no-cache"])
def cache(request: pytest.FixtureRequest, tmp_path: Path) -> Path | None:
    return tmp_path / "cache.sqlite" if request.param == "cache" else None


@pytest.mark.parametrize(
    ("kind", "fields"),
    [
        ("invalid_json", {}),
        ("empty_choices", {}),
        ("missing_choices", {}),
        ("choices_dict", {}),
        ("content_number", {}),
        ("body_array", {}),
        ("lying_length", {"length_delta": -20}),  # fewer bytes announced: a cut JSON body
    ],
)
def test_an_invalid_reply_is_one_request_not_three(
    server: HostileOpenAIServer, cache: Path | None, kind: str, fields: dict[str, Any]
) -> None:
    # main: invalid_response was transient, so the same bad body was asked for 3 times.
    server.add_hostile(kind, match="bad-record", **fields)  # type: ignore[arg-type]
    with make_engine(server, cache) as engine:
        result = ask(engine, "bad-record")
    assert result.error_code == "invalid_response"
    assert result.error_message.startswith("invalid response")
    assert server.count_for("bad-record") == 1


def test_lone_surrogate_ends_with_a_result_and_the_next_calls_go_on(
    server: HostileOpenAIServer, cache: Path | None
) -> None:
    # main: with a cache the writer thread died and every later call hung; without one the
    # text could not be encoded by any sink downstream.
    server.add_hostile("lone_surrogate", match="record-3", content="Answer: B")
    with make_engine(server, cache) as engine:
        hostile = ask(engine, "record-3")
        after = [ask(engine, f"record-{i}") for i in range(4, 9)]
        assert engine.stats()["cache_write_errors"] == 0
    assert hostile.ok and hostile.text == "Answer: B \ufffd"
    hostile.text.encode("utf-8")
    assert hostile.attempts[0].warnings == ("reply text: 1 lone surrogate(s) replaced by U+FFFD",)
    assert all(result.ok for result in after)


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -5, "completion_tokens": 10**30},
        {"prompt_tokens": 1.5, "completion_tokens": float("nan")},
        {"prompt_tokens": True, "completion_tokens": "12"},
    ],
)
def test_insane_usage_is_dropped_not_summed(
    server: HostileOpenAIServer, cache: Path | None, usage: dict[str, Any]
) -> None:
    # main: -5 and 10**30 became the call's tokens (and cost); with a cache, 10**30
    # overflowed SQLite's INTEGER and killed the writer.
    server.add_hostile("usage", match="counted", usage=usage)
    with make_engine(server, cache) as engine:
        result = ask(engine, "counted")
        again = ask(engine, "counted")
    assert result.ok
    assert (result.input_tokens, result.output_tokens, result.total_tokens) == (None, None, None)
    assert len(result.attempts[0].warnings) == 2
    assert (again.input_tokens, again.output_tokens) == (None, None)


def test_a_stream_cut_mid_body_is_a_retried_connection_error(
    server: HostileOpenAIServer, cache: Path | None
) -> None:
    server.add_hostile("cut", match="cut-record")
    server.add_hostile("lying_length", match="short-record", length_delta=5000)
    with make_engine(server, cache) as engine:
        cut = ask(engine, "cut-record")
        short = ask(engine, "short-record")
    for result, tag in ((cut, "cut-record"), (short, "short-record")):
        assert result.error_code == "connection_error"
        assert server.count_for(tag) == 3  # transient: the connection, not the reply


def test_a_held_connection_with_a_lying_length_times_out(server: HostileOpenAIServer) -> None:
    server.add_hostile("lying_length", match="held", length_delta=100, hold=600.0)
    with make_engine(server, None, request_timeout_s=0.3) as engine:
        result = ask(engine, "held")
    assert result.error_code == "timeout"
    assert len(result.attempts) == 3


def test_ten_megabytes_of_content(server: HostileOpenAIServer, cache: Path | None) -> None:
    server.add_hostile("huge", match="long-record", size=10_000_000, content="Answer: C")
    with make_engine(server, cache) as engine:
        result = ask(engine, "long-record")
        again = ask(engine, "long-record")
    assert result.ok and len(result.text or "") == 10_000_000
    assert again.text == result.text
    assert again.cached is (cache is not None)


@pytest.mark.parametrize(
    "kind", ["control_chars", "null_content", "usage_string", "message_string"]
)
def test_other_odd_bodies_end_with_a_result(
    server: HostileOpenAIServer, cache: Path | None, kind: str
) -> None:
    server.add_hostile(kind, match="odd")  # type: ignore[arg-type]
    with make_engine(server, cache) as engine:
        result = ask(engine, "odd")
    assert result.ok or result.error_code == "invalid_response"
    assert server.count_for("odd") == 1


def _key_forms() -> list[str]:
    return [
        KEY,
        urllib.parse.quote(KEY, safe=""),
        base64.b64encode(KEY.encode()).decode().rstrip("="),
    ]


def test_an_echoed_key_never_reaches_the_cache_or_an_error_message(
    server: HostileOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    server.add_hostile("echo", match="echo-ok")
    server.add_hostile("echo", match="echo-error", status=400)
    server.add_hostile("echo", match="echo-500", status=500)
    cache = tmp_path / "cache.sqlite"

    def scrub(text: str) -> str:  # stands in for the redactor the plugin wires in
        return text.replace(KEY, "[redacted]")

    with make_engine(server, cache, scrub=scrub) as engine:
        echoed = ask(engine, "echo-ok")
        refused = ask(engine, "echo-error")
        failed = ask(engine, "echo-500")
    assert echoed.ok and f"Bearer {KEY}" in (echoed.text or "")  # the caller sees the raw reply
    assert refused.error_code == "bad_request"
    assert failed.error_code == "internal_error" and len(failed.attempts) == 3
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    texts = [refused.error_message, failed.error_message]
    texts += [a.message for r in (echoed, refused, failed) for a in r.attempts]
    for form in _key_forms():
        assert form.encode() not in stored
        assert all(form not in text for text in texts)


def test_judge_calls_survive_every_hostile_reply(server: HostileOpenAIServer) -> None:
    record = Record(
        id="j1",
        dataset="d",
        task_type="reference_qa",
        prompt="What is culpa in contrahendo?",
        reference_answers=("Liability in negotiations.",),
    )
    book = PolicyBook()
    for kind in HOSTILE_KINDS:
        server.clear_hostile()
        server.add_hostile(kind, size=1000, raw=b"HTTP/1.1 200 OK\r\n\r\n{")  # type: ignore[arg-type]
        with make_engine(server, None, request_timeout_s=2.0) as engine:
            panel = JudgePanel(engine, ("openai/judge",), reasks=1)
            future = engine.run_coroutine(panel.judge(record, "An answer.", book.get("default")))
            outcome = future.result(timeout=WAIT_S)
        assert outcome.error is not None or outcome.score is not None, kind
        if outcome.error is not None:
            outcome.error.encode("utf-8")
