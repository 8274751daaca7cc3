"""The mock OpenAI server, exercised through the real openai SDK and raw HTTP."""

from __future__ import annotations

import asyncio
import json
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from pytest_legaleval.testing import fixtures as _fixtures
from pytest_legaleval.testing.mock_openai import (
    FaultRule,
    MockConfig,
    MockOpenAIServer,
    ReplyRule,
    count_tokens,
    default_reply,
    prompt_hash,
    prompt_text,
)

from .. import processes

# The plugin registers these for users' suites; this module must not depend on that wiring.
mock_openai = _fixtures.mock_openai
mock_openai_factory = _fixtures.mock_openai_factory

MCQ = "Which court hears the appeal?\nA) The district court\nB) The court of appeals\nC) Nobody"


def user(content: str) -> list[Any]:
    return [{"role": "user", "content": content}]


def client_for(server: MockOpenAIServer, timeout: float = 10.0) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0, timeout=timeout)


def async_client_for(server: MockOpenAIServer, timeout: float = 10.0) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0, timeout=timeout)


def ask(client: openai.OpenAI, content: str, **kwargs: Any) -> Any:
    return client.chat.completions.create(model="mock-model", messages=user(content), **kwargs)


@pytest.fixture
def client(mock_openai: MockOpenAIServer) -> Iterator[openai.OpenAI]:
    with client_for(mock_openai) as c:
        yield c


def wait_until(predicate: Any) -> bool:
    """Whether ``predicate()`` came to hold; the minute only guards against a hang."""
    return processes.wait_until(predicate, within_s=60)


# ------------------------------------------------------------------------------------------
# Normal completions and default replies
# ------------------------------------------------------------------------------------------


def test_completion_has_openai_shape_and_deterministic_usage(
    mock_openai: MockOpenAIServer, client: openai.OpenAI
) -> None:
    messages: list[Any] = [
        {"role": "system", "content": "You are a careful lawyer."},
        {"role": "user", "content": MCQ},
    ]
    completion = client.chat.completions.create(model="gpt-test", messages=messages)

    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-")
    assert completion.model == "gpt-test"
    assert isinstance(completion.created, int)
    choice = completion.choices[0]
    assert choice.index == 0
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    text = prompt_text(messages)
    assert choice.message.content == default_reply(text)
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == count_tokens(text)
    assert completion.usage.completion_tokens == count_tokens(choice.message.content)
    assert completion.usage.total_tokens == (
        completion.usage.prompt_tokens + completion.usage.completion_tokens
    )

    stats = mock_openai.stats()
    assert stats["requests"] == 1
    assert stats["completed"] == 1
    assert stats["models"] == {"gpt-test": 1}
    assert stats["per_prompt"] == {prompt_hash(messages): 1}
    assert mock_openai.count_for_messages(messages) == 1


def test_default_reply_answers_mcqs_with_an_offered_letter_deterministically(
    client: openai.OpenAI,
) -> None:
    first = ask(client, MCQ).choices[0].message.content
    again = ask(client, MCQ).choices[0].message.content
    assert first == again == default_reply(MCQ)
    assert first in {"Answer: A", "Answer: B", "Answer: C"}

    other = ask(client, "Summarise the holding.").choices[0].message.content
    assert other == default_reply("Summarise the holding.")
    assert other.startswith("Mock response ")


@pytest.mark.parametrize(
    ("prompt", "letters"),
    [
        ("Pick one.\n(A) yes\n(B) no", {"A", "B"}),
        ("Pick one.\nA. yes\nB. no\nC. maybe\nD. never", {"A", "B", "C", "D"}),
        ("  A) indented\n  B) options", {"A", "B"}),
    ],
)
def test_default_reply_option_styles(prompt: str, letters: set[str]) -> None:
    reply = default_reply(prompt)
    assert reply.startswith("Answer: ")
    assert reply.removeprefix("Answer: ") in letters


@pytest.mark.parametrize(
    "prompt",
    [
        "I. Facts\nV. Remedies",  # headings, not options
        "Q: What is consideration?\nA: Something of value.",  # Q/A, not options
        "A) only one option",
        "Free text with A) inline B) options",
    ],
)
def test_default_reply_is_not_an_answer_for_non_mcqs(prompt: str) -> None:
    assert default_reply(prompt).startswith("Mock response ")


def test_models_endpoint_lists_configured_models(mock_openai_factory: Any) -> None:
    server = mock_openai_factory(models=["m-one", "m-two"])
    with client_for(server) as c:
        assert [m.id for m in c.models.list()] == ["m-one", "m-two"]
        assert c.models.retrieve("m-two").id == "m-two"
        with pytest.raises(openai.NotFoundError):
            c.models.retrieve("nope")


def test_default_model_list(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["mock-model"]


def test_strict_models_and_api_key(mock_openai_factory: Any) -> None:
    server = mock_openai_factory(strict_models=True, api_key="sekret")
    with openai.OpenAI(base_url=server.base_url, api_key="sekret", max_retries=0) as good:
        assert ask(good, "hi").choices[0].message.content
        with pytest.raises(openai.NotFoundError):
            good.chat.completions.create(model="other", messages=user("hi"))
    with openai.OpenAI(base_url=server.base_url, api_key="wrong", max_retries=0) as bad:
        with pytest.raises(openai.AuthenticationError):
            ask(bad, "hi")


def test_invalid_requests_get_openai_400s(mock_openai: MockOpenAIServer) -> None:
    with client_for(mock_openai) as c:
        with pytest.raises(openai.BadRequestError) as info:
            c.chat.completions.create(model="mock-model", messages=[])
        assert "messages" in str(info.value)
        with pytest.raises(openai.BadRequestError):
            c.chat.completions.create(model="mock-model", messages=user("x"), stream=True)
    assert mock_openai.stats()["errors"] == 2


def test_max_tokens_cuts_reply_with_length(
    mock_openai: MockOpenAIServer, client: openai.OpenAI
) -> None:
    mock_openai.add_reply("long", "x" * 100)
    completion = ask(client, "long please", max_tokens=5)
    assert completion.choices[0].finish_reason == "length"
    assert completion.choices[0].message.content == "x" * 20
    assert completion.usage.completion_tokens == 5


def test_n_choices(client: openai.OpenAI) -> None:
    completion = ask(client, "two please", n=2)
    assert [c.index for c in completion.choices] == [0, 1]


# ------------------------------------------------------------------------------------------
# Scripted replies
# ------------------------------------------------------------------------------------------


def test_scripted_regex_replies_first_match_wins(
    mock_openai: MockOpenAIServer, client: openai.OpenAI
) -> None:
    mock_openai.add_reply(r"capital of (France|Gaul)", "Paris")
    mock_openai.add_reply(r"capital", "Somewhere")
    assert ask(client, "What is the capital of France?").choices[0].message.content == "Paris"
    assert ask(client, "What is the capital of Peru?").choices[0].message.content == "Somewhere"
    assert ask(client, "Unrelated").choices[0].message.content == default_reply("Unrelated")


def test_scripted_dict_reply_sets_finish_reason_usage_and_status(
    mock_openai: MockOpenAIServer, client: openai.OpenAI
) -> None:
    mock_openai.add_reply(
        "cut",
        {"content": "Partial", "finish_reason": "length", "usage": {"prompt_tokens": 42}},
    )
    mock_openai.add_reply("missing", {"status": 404, "content": "No such deployment"})
    mock_openai.add_reply("null", {"content": None, "finish_reason": "content_filter"})

    cut = ask(client, "cut me")
    assert cut.choices[0].finish_reason == "length"
    assert cut.choices[0].message.content == "Partial"
    assert cut.usage.prompt_tokens == 42
    assert cut.usage.completion_tokens == count_tokens("Partial")
    with pytest.raises(openai.NotFoundError, match="No such deployment"):
        ask(client, "missing")
    assert ask(client, "null").choices[0].message.content is None


def test_scripted_reply_times_then_falls_through(
    mock_openai: MockOpenAIServer, client: openai.OpenAI
) -> None:
    rule = mock_openai.add_reply("q", "first", times=1)
    mock_openai.add_reply("q", "later")
    assert [ask(client, "q").choices[0].message.content for _ in range(3)] == [
        "first",
        "later",
        "later",
    ]
    assert rule.fired == 1


def test_callable_reply_sees_the_request(
    mock_openai: MockOpenAIServer, client: openai.OpenAI
) -> None:
    seen: list[dict[str, Any]] = []

    def reply(request: dict[str, Any]) -> str | None:
        seen.append(request)
        if "echo" not in request["messages"][-1]["content"]:
            return None  # pass to the next rule
        return f"temperature={request.get('temperature')}"

    mock_openai.add_reply(reply)
    mock_openai.add_reply(".*", "fallback")
    assert ask(client, "echo", temperature=0.3).choices[0].message.content == "temperature=0.3"
    assert ask(client, "other").choices[0].message.content == "fallback"
    assert len(seen) == 2


def test_callable_reply_errors_become_500(
    mock_openai: MockOpenAIServer, client: openai.OpenAI
) -> None:
    def broken(request: dict[str, Any]) -> str:
        raise KeyError("oops")

    mock_openai.add_reply(broken)
    with pytest.raises(openai.InternalServerError, match="KeyError"):
        ask(client, "x")


def test_callable_may_call_back_into_the_handle(
    mock_openai: MockOpenAIServer, client: openai.OpenAI
) -> None:
    mock_openai.add_reply(lambda request: f"seen {mock_openai.stats()['requests']}")
    assert ask(client, "x").choices[0].message.content == "seen 1"


def test_requests_are_recorded_with_all_parameters(
    mock_openai: MockOpenAIServer, client: openai.OpenAI
) -> None:
    ask(client, "one", temperature=0, seed=7, response_format={"type": "json_object"})
    ask(client, "two")
    bodies = mock_openai.requests()
    assert [b["messages"][0]["content"] for b in bodies] == ["one", "two"]
    assert bodies[0]["seed"] == 7
    assert bodies[0]["temperature"] == 0
    assert bodies[0]["response_format"] == {"type": "json_object"}
    assert mock_openai.requests(limit=1) == [bodies[1]]
    assert mock_openai.last_request() == bodies[1]


def test_recorded_requests_are_capped(mock_openai_factory: Any) -> None:
    server = mock_openai_factory(max_recorded_requests=3)
    with client_for(server) as c:
        for i in range(5):
            ask(c, f"record-{i}")
    assert [b["messages"][0]["content"] for b in server.requests()] == [
        "record-2",
        "record-3",
        "record-4",
    ]
    assert server.count_for("record-") == 5
    assert server.count_for("record-4") == 1


# ------------------------------------------------------------------------------------------
# Faults
# ------------------------------------------------------------------------------------------


def test_429_carries_retry_after(mock_openai: MockOpenAIServer, client: openai.OpenAI) -> None:
    mock_openai.add_fault("429", retry_after=0.05)
    with pytest.raises(openai.RateLimitError) as info:
        ask(client, "x")
    assert info.value.status_code == 429
    assert info.value.response.headers["retry-after"] == "0.05"
    assert info.value.code == "rate_limit_exceeded"
    assert mock_openai.stats()["faults_by_kind"] == {"429": 1}


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors(mock_openai: MockOpenAIServer, client: openai.OpenAI, status: int) -> None:
    mock_openai.add_fault(status)
    with pytest.raises(openai.InternalServerError) as info:
        ask(client, "x")
    assert info.value.status_code == status
    assert isinstance(info.value.body, dict)
    assert info.value.body["type"] == "server_error"


def test_400_is_a_permanent_error(mock_openai: MockOpenAIServer, client: openai.OpenAI) -> None:
    mock_openai.add_fault(FaultRule("400", message="bad record"))
    with pytest.raises(openai.BadRequestError, match="bad record"):
        ask(client, "x")


def test_hang_times_out_the_client_and_others_are_served(
    mock_openai: MockOpenAIServer,
) -> None:
    mock_openai.add_fault("hang", match="stuck")
    with client_for(mock_openai, timeout=0.2) as impatient, client_for(mock_openai) as c:
        # A timeout, not the end of the hang (600 s, then a dropped connection).
        with pytest.raises(openai.APITimeoutError):
            ask(impatient, "stuck")
        assert ask(c, "fine").choices[0].finish_reason == "stop"
    # The server notices the client leaving and stops holding the request.
    assert wait_until(lambda: mock_openai.stats()["cancelled"] == 1)
    assert mock_openai.stats()["in_flight"] == 0


def test_hang_does_not_block_concurrent_requests(mock_openai: MockOpenAIServer) -> None:
    mock_openai.add_fault("hang", match="stuck")

    async def scenario() -> list[str]:
        async with async_client_for(mock_openai, timeout=60) as c:
            stuck = asyncio.ensure_future(
                c.chat.completions.create(model="mock-model", messages=user("stuck"))
            )
            while mock_openai.stats()["in_flight"] < 1:  # the hang has begun
                await asyncio.sleep(0.01)
            answers = await asyncio.gather(
                *(
                    c.chat.completions.create(model="mock-model", messages=user(f"q{i}"))
                    for i in range(5)
                )
            )
            # Answered while the hang still held its request: it blocked none of them.
            assert not stuck.done() and mock_openai.stats()["in_flight"] == 1
            stuck.cancel()
            return [a.choices[0].finish_reason for a in answers]

    assert asyncio.run(scenario()) == ["stop"] * 5
    assert wait_until(lambda: mock_openai.stats()["cancelled"] == 1)


def test_reset_is_a_connection_error(mock_openai: MockOpenAIServer, client: openai.OpenAI) -> None:
    mock_openai.add_fault("reset", calls=1)
    with pytest.raises(openai.APIConnectionError) as info:
        ask(client, "x")
    assert not isinstance(info.value, openai.APITimeoutError)
    assert ask(client, "x").choices[0].message.content  # the next connection is fine
    assert mock_openai.stats()["faults_by_kind"] == {"reset": 1}


def test_malformed_body_surfaces_as_a_json_decode_error(
    mock_openai: MockOpenAIServer, client: openai.OpenAI
) -> None:
    # Documented SDK behaviour: a 200 whose body is not JSON is not wrapped in an
    # openai.APIError; the SDK lets json.JSONDecodeError (a ValueError) escape.
    mock_openai.add_fault("malformed")
    with pytest.raises(json.JSONDecodeError):
        ask(client, "x")
    stats = mock_openai.stats()
    assert stats["completed"] == 0
    assert stats["faults_by_kind"] == {"malformed": 1}


def test_content_filter_and_length_faults(
    mock_openai: MockOpenAIServer, client: openai.OpenAI
) -> None:
    mock_openai.add_fault("content_filter", match="filtered")
    mock_openai.add_fault("length", match="cut")
    mock_openai.add_reply("cut", "0123456789")
    filtered = ask(client, "filtered").choices[0]
    assert filtered.finish_reason == "content_filter"
    assert filtered.message.content == ""
    cut = ask(client, "cut").choices[0]
    assert cut.finish_reason == "length"
    assert cut.message.content == "01234"


def test_fail_first_two_attempts_for_matching_prompt(
    mock_openai: MockOpenAIServer, client: openai.OpenAI
) -> None:
    rule = mock_openai.add_fault("500", match=r"record-7\b", times=2)
    outcomes = []
    for _ in range(3):
        try:
            ask(client, "record-70")  # contains "record-7" but does not match: always fine
            ask(client, "record-7")
            outcomes.append("ok")
        except openai.InternalServerError:
            outcomes.append("500")
    assert outcomes == ["500", "500", "ok"]
    assert rule.fired == 2
    assert mock_openai.count_for("record-7") == 6  # a substring of "record-70" too
    assert mock_openai.count_for("record-70") == 3
    assert mock_openai.stats()["requests"] == 6


def test_nth_call_faults(mock_openai: MockOpenAIServer, client: openai.OpenAI) -> None:
    mock_openai.add_fault("503", calls={2, 4})
    mock_openai.add_fault("429", calls=5, retry_after="0")
    results = []
    for i in range(6):
        try:
            ask(client, f"call {i}")
            results.append(200)
        except openai.APIStatusError as exc:
            results.append(exc.status_code)
    assert results == [200, 503, 200, 503, 429, 200]


def test_rate_faults_are_seeded(mock_openai_factory: Any) -> None:
    def pattern(seed: int) -> list[bool]:
        server = mock_openai_factory(seed=seed, faults=[FaultRule("500", rate=0.5)])
        with client_for(server) as c:
            failed = []
            for _ in range(20):
                try:
                    ask(c, "x")
                    failed.append(False)
                except openai.InternalServerError:
                    failed.append(True)
        return failed

    first, second = pattern(1), pattern(1)
    assert first == second
    assert 0 < sum(first) < 20


def test_config_given_to_a_server_is_copied(mock_openai_factory: Any) -> None:
    config = MockConfig(faults=[FaultRule("500", times=1)])
    for _ in range(2):  # each server counts `times` on its own copy of the rule
        server = mock_openai_factory(config)
        with client_for(server) as c:
            with pytest.raises(openai.InternalServerError):
                ask(c, "x")
    assert config.faults[0].fired == 0


# ------------------------------------------------------------------------------------------
# Latency and concurrency
# ------------------------------------------------------------------------------------------


def test_latency_is_honoured(mock_openai: MockOpenAIServer, client: openai.OpenAI) -> None:
    ask(client, "warm up the connection")
    mock_openai.set_latency(0.2)
    started = time.monotonic()
    ask(client, "x")
    assert time.monotonic() - started >= 0.9 * 0.2

    mock_openai.set_latency((0.1, 0.15), seed=3)
    started = time.monotonic()
    ask(client, "x")
    assert time.monotonic() - started >= 0.9 * 0.1


def test_scripted_delay_overrides_latency(
    mock_openai: MockOpenAIServer, client: openai.OpenAI
) -> None:
    mock_openai.add_reply("slow", {"content": "eventually", "delay": 0.2})
    started = time.monotonic()
    assert ask(client, "slow").choices[0].message.content == "eventually"
    assert time.monotonic() - started >= 0.9 * 0.2


def test_concurrent_requests_overlap(mock_openai: MockOpenAIServer) -> None:
    # Nothing is answered before all 200 are in flight: a server that served requests one
    # at a time would never get there (and answer them after the hold's timeout instead).
    mock_openai.hold(until_in_flight=200)

    async def burst() -> None:
        async with async_client_for(mock_openai, timeout=300) as c:
            replies = await asyncio.gather(
                *(
                    c.chat.completions.create(model="mock-model", messages=user(f"record-{i}"))
                    for i in range(200)
                )
            )
            assert all(r.choices[0].finish_reason == "stop" for r in replies)

    asyncio.run(burst())
    stats = mock_openai.stats()
    assert stats["completed"] == 200
    assert stats["peak_in_flight"] == 200
    assert stats["in_flight"] == 0


def test_a_hold_that_is_never_reached_ends_at_its_timeout(
    mock_openai: MockOpenAIServer, client: openai.OpenAI
) -> None:
    mock_openai.hold(until_in_flight=2, timeout=0.2)
    assert ask(client, "alone").choices[0].finish_reason == "stop"  # answered, not hung
    assert mock_openai.stats()["peak_in_flight"] == 1
    with pytest.raises(ValueError):
        mock_openai.hold(until_in_flight=0)


def test_client_leaving_during_latency_is_counted_as_cancelled(
    mock_openai: MockOpenAIServer,
) -> None:
    mock_openai.set_latency(2.0)
    with client_for(mock_openai, timeout=0.2) as c, pytest.raises(openai.APITimeoutError):
        ask(c, "x")
    assert wait_until(lambda: mock_openai.stats()["cancelled"] == 1)
    assert mock_openai.stats()["in_flight"] == 0


# ------------------------------------------------------------------------------------------
# Lifecycle, HTTP endpoints and the HTTP layer
# ------------------------------------------------------------------------------------------


def test_stop_is_quick_and_idempotent_even_with_hanging_requests() -> None:
    server = MockOpenAIServer(faults=[FaultRule("hang")]).start()
    errors: list[BaseException] = []

    def hang() -> None:
        with client_for(server, timeout=30) as c:
            try:
                ask(c, "x")
            except BaseException as exc:
                errors.append(exc)

    thread = threading.Thread(target=hang)
    thread.start()
    assert wait_until(lambda: server.stats()["in_flight"] == 1)
    server.stop()
    server.stop()
    thread.join(60)
    # The held request was dropped by the stop, neither waited out (a 600 s hang) nor left
    # to the client's 30 s timeout.
    assert len(errors) == 1
    assert isinstance(errors[0], openai.APIConnectionError)
    assert not isinstance(errors[0], openai.APITimeoutError)
    assert not server.running
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=1).close()


def test_context_manager_and_repr() -> None:
    with MockOpenAIServer() as server:
        assert server.running
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        assert server.url in repr(server)
        with pytest.raises(RuntimeError):
            server.start()
    assert not server.running
    assert "stopped" in repr(server)


def _get_json(url: str, method: str = "GET") -> Any:
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def test_stats_and_reset_over_http(mock_openai: MockOpenAIServer, client: openai.OpenAI) -> None:
    mock_openai.add_fault("500", times=1)
    with pytest.raises(openai.InternalServerError):
        ask(client, "a")
    ask(client, "a")
    stats = _get_json(f"{mock_openai.url}/stats")
    assert stats["requests"] == 2
    assert stats["completed"] == 1
    assert stats["errors"] == 1
    assert stats["faults_by_kind"] == {"500": 1}
    assert _get_json(f"{mock_openai.url}/reset", "POST") == {"ok": True}
    assert mock_openai.stats()["requests"] == 0
    assert mock_openai.requests() == []
    with pytest.raises(openai.InternalServerError):  # the rule's `times` starts over too
        ask(client, "a")


def test_reset_while_requests_are_in_flight(
    mock_openai: MockOpenAIServer, client: openai.OpenAI
) -> None:
    mock_openai.hold()

    def slow() -> None:
        with client_for(mock_openai) as c:
            ask(c, "slow")

    thread = threading.Thread(target=slow)
    thread.start()
    assert wait_until(lambda: mock_openai.stats()["in_flight"] == 1)
    mock_openai.reset()
    assert mock_openai.stats()["in_flight"] == 1  # still being served
    mock_openai.release()
    thread.join(60)
    stats = mock_openai.stats()
    assert stats["in_flight"] == 0
    assert stats["completed"] == 1
    assert stats["requests"] == 0  # received before the reset
    assert ask(client, "after").choices[0].finish_reason == "stop"  # a hold ends for good


def _raw_exchange(server: MockOpenAIServer, payload: bytes, until: int = 1) -> bytes:
    """Send raw bytes; read until `until` complete responses arrived or the peer closed."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        sock.sendall(payload)
        data = b""
        while data.count(b"HTTP/1.1 2") + data.count(b"HTTP/1.1 4") < until or not data.endswith(
            b"}"
        ):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        return data


def _chat_body(content: str) -> bytes:
    return json.dumps({"model": "mock-model", "messages": user(content)}).encode()


def test_http_chunked_expect_continue_and_pipelining(mock_openai: MockOpenAIServer) -> None:
    body = _chat_body("chunked")
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    pipelined = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        b"Expect: 100-continue\r\n\r\n" + chunked + b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    data = _raw_exchange(mock_openai, pipelined, until=2)
    # A 100 for a body that already arrived is allowed (RFC 9110 §10.1.1); aiohttp sends it.
    data = data.removeprefix(b"HTTP/1.1 100 Continue\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 200 OK\r\n")
    assert data.count(b"HTTP/1.1 200 OK") == 2
    assert b'"chat.completion"' in data
    assert data.index(b'"chat.completion"') < data.index(b'"object":"list"')  # in order
    assert mock_openai.count_for("chunked") == 1


def test_http_expect_continue_is_answered(mock_openai: MockOpenAIServer) -> None:
    body = _chat_body("later")
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
        b"Expect: 100-continue\r\nConnection: close\r\n\r\n" % len(body)
    )
    with socket.create_connection(("127.0.0.1", mock_openai.port), timeout=60) as sock:
        sock.sendall(head)
        assert sock.recv(1024) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        data = b""
        while chunk := sock.recv(65536):  # Connection: close, so the server ends the stream
            data += chunk
    assert data.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"Connection: close" in data


def test_http_garbage_gets_400(mock_openai: MockOpenAIServer) -> None:
    # Unparsable HTTP is refused by aiohttp itself (its own text body, HTTP/1.0 status line).
    data = _raw_exchange(mock_openai, b"NONSENSE\r\n\r\n")
    assert data.startswith((b"HTTP/1.0 400 ", b"HTTP/1.1 400 "))
    data = _raw_exchange(
        mock_openai,
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nnope!",
    )
    assert data.startswith(b"HTTP/1.1 400 ")
    assert b"invalid_request_error" in data


def test_unknown_path_is_404(mock_openai: MockOpenAIServer) -> None:
    with pytest.raises(urllib.error.HTTPError) as info:
        _get_json(f"{mock_openai.base_url}/embeddingz")
    info.value.close()  # the error holds the response open
    assert info.value.code == 404


def test_runtime_changes_from_another_thread_while_serving(mock_openai: MockOpenAIServer) -> None:
    mock_openai.set_latency(0.01)

    async def load() -> int:
        async with async_client_for(mock_openai) as c:
            replies = await asyncio.gather(
                *(
                    c.chat.completions.create(model="mock-model", messages=user(f"r{i}"))
                    for i in range(100)
                ),
                return_exceptions=True,
            )
        return sum(not isinstance(r, BaseException) for r in replies)

    def mutate() -> None:
        for i in range(50):
            mock_openai.add_reply(f"never-{i}", "x")
            mock_openai.update_config(models=["mock-model", f"m{i}"])
            mock_openai.stats()

    thread = threading.Thread(target=mutate)
    thread.start()
    ok = asyncio.run(load())
    thread.join()
    assert ok == 100
    assert len(mock_openai.config.replies) == 50


# ------------------------------------------------------------------------------------------
# Config files, the standalone process and the fixtures as a plugin
# ------------------------------------------------------------------------------------------


def test_config_from_yaml_file(tmp_path: Path) -> None:
    script = tmp_path / "mock.yaml"
    script.write_text(
        "latency: [0.0, 0.01]\n"
        "models: [a, b]\n"
        "replies:\n"
        "  - match: capital\n"
        "    reply: Paris\n"
        "  - match: cut\n"
        "    reply: {content: Par, finish_reason: length}\n"
        "faults:\n"
        "  - {kind: 500, match: record-7, times: 2}\n"
        "  - {kind: reset, calls: [3, 5]}\n",
        encoding="utf-8",
    )
    config = MockConfig.from_file(script)
    assert config.latency == (0.0, 0.01)
    assert config.models == ["a", "b"]
    assert config.replies[1] == ReplyRule("cut", {"content": "Par", "finish_reason": "length"})
    assert config.faults[0] == FaultRule("500", match="record-7", times=2)
    assert config.faults[1].kind == "reset"
    assert config.faults[1].calls == frozenset({3, 5})

    (tmp_path / "replies.json").write_text('[{"match": "x", "reply": "y"}]', encoding="utf-8")
    assert MockConfig.from_file(tmp_path / "replies.json").replies == [ReplyRule("x", "y")]


@pytest.mark.parametrize(
    "data",
    [
        {"nope": 1},
        {"latency": -1},
        {"faults": [{"kind": "418"}]},
        {"faults": [{"kind": "500", "rate": 2}]},
        {"faults": [{"kind": "500", "calls": [0]}]},
        {"replies": [{"match": "x", "reply": {"contents": "typo"}}]},
        {"replies": [{"match": "(", "reply": "bad regex"}]},
    ],
)
def test_invalid_config_is_rejected(data: dict[str, Any]) -> None:
    with pytest.raises((ValueError, TypeError)):
        MockConfig.from_dict(data)


def _read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "the mock server printed nothing"
    return proc.stdout.readline()


def test_standalone_process_serves_and_exits_on_sigterm(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [{"match": "ping", "reply": "pong"}]}))
    command = [sys.executable, "-m", "pytest_legaleval.testing.mock_openai", "--port", "0"]
    command += ["--script", str(script), "--model", "standalone-model"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            line = _read_line(proc, timeout=15).strip()
            assert line.startswith("MOCK_OPENAI_URL=http://127.0.0.1:")
            base_url = line.split("=", 1)[1]
            assert base_url.endswith("/v1")
            with openai.OpenAI(base_url=base_url, api_key="x", max_retries=0) as c:
                assert ask(c, "ping").choices[0].message.content == "pong"
                assert [m.id for m in c.models.list()] == ["standalone-model"]
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0
            assert proc.stderr is not None
            assert proc.stderr.read() == ""
        finally:
            if proc.poll() is None:
                proc.kill()


def test_standalone_port_in_use_is_one_error_line_and_exit_2() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        command = [sys.executable, "-m", "pytest_legaleval.testing.mock_openai"]
        # Several runs: the traceback this replaced ("Event loop is closed") was a race.
        for _ in range(3):
            done = subprocess.run(
                [*command, "--port", str(port)], capture_output=True, text=True, timeout=30
            )
            assert done.returncode == 2
            assert done.stdout == ""
            assert done.stderr.splitlines() == [
                "python -m pytest_legaleval.testing.mock_openai: error: cannot listen on "
                f"127.0.0.1:{port}: Address already in use"
            ]


def test_fixtures_work_as_a_plugin(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest('pytest_plugins = ["pytest_legaleval.testing.fixtures"]')
    pytester.makepyfile(
        """
        import openai

        def test_fixture(mock_openai):
            mock_openai.add_reply("hi", "hello")
            c = openai.OpenAI(base_url=mock_openai.base_url, api_key="x", max_retries=0)
            reply = c.chat.completions.create(
                model="mock-model", messages=[{"role": "user", "content": "hi"}]
            )
            assert reply.choices[0].message.content == "hello"

        def test_factory(mock_openai_factory):
            a = mock_openai_factory(models=["a"])
            b = mock_openai_factory(models=["b"])
            assert a.port != b.port
        """
    )
    # Only this module as a plugin: the test must not depend on how plugin.py wires it.
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:legaleval")
    result.assert_outcomes(passed=2)
