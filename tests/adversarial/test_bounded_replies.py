"""Issue 41, HIGH: a model endpoint cannot exhaust memory, and the run still finalizes.

Before: both transports read a reply whole, a 1 MB gzip body inflating to 1 GiB reached
4.3 GiB and *passed*; an endless chunked body ended in ``MemoryError`` and, in finalization,
in an internal error without ``SHA256SUMS``. Now a reply is decoded with a bound as it
arrives (``engine.bounded``): both are per-item ``invalid_response`` errors, not retried.
The memory bound is checked on the peak RSS of a child process, never on a timing.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
import sys
import textwrap
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_legaleval.engine import Engine, EngineSettings, GenerationRequest, RetryPolicy
from pytest_legaleval.engine.bounded import STEP, BodyDecoder
from pytest_legaleval.engine.providers import OpenAIProvider
from pytest_legaleval.engine.retry import ProviderError
from pytest_legaleval.testing.mock_openai import HostileOpenAIServer

TRANSPORTS = ["wire", "sdk"]
MiB = 1024 * 1024


@pytest.fixture
def server() -> Iterator[HostileOpenAIServer]:
    with HostileOpenAIServer() as srv:
        yield srv


async def _complete(server: HostileOpenAIServer, transport: str, **kw: Any) -> Any:
    settings = EngineSettings(
        base_url=kw.pop("base_url", server.base_url),
        transport=transport,
        cache_path=None,
        request_timeout_s=kw.pop("timeout", 60.0),
        **kw,
    )
    provider = OpenAIProvider(settings)
    request = GenerationRequest(
        model="openai/m", messages=({"role": "user", "content": "Question one"},)
    )
    try:
        return await provider.complete(request)
    finally:
        await provider.aclose()


def complete(server: HostileOpenAIServer, transport: str, **kw: Any) -> Any:
    return asyncio.run(_complete(server, transport, **kw))


# -- the decoder ------------------------------------------------------------------------------


def _feed(decoder: BodyDecoder, data: bytes, size: int = 4096) -> bytes:
    for start in range(0, len(data), size):
        decoder.feed(data[start : start + size])
    return decoder.body()


@pytest.mark.parametrize(
    ("coding", "pack"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),  # zlib-wrapped, as the standard says
        ("deflate", lambda b: zlib.compress(b)[2:-4]),  # raw, as some servers send it
        ("identity", lambda b: b),
        (None, lambda b: b),
    ],
)
def test_every_advertised_coding_decodes_in_pieces(coding: str | None, pack: Any) -> None:
    body = json.dumps({"text": "Answer: B " * 50_000}).encode()
    assert _feed(BodyDecoder(coding, 10 * MiB), pack(body)) == body
    small = json.dumps({"text": "Answer: B"}).encode()
    assert _feed(BodyDecoder(coding, MiB), pack(small), size=1) == small  # byte by byte


def test_a_bomb_stops_at_the_limit_not_at_its_size() -> None:
    bomb = gzip.compress(b"\0" * (64 * MiB), 9)  # 64 KiB on the wire
    decoder = BodyDecoder("gzip", MiB)
    with pytest.raises(ProviderError) as caught:
        decoder.feed(bomb)  # one network chunk holding the whole bomb
    assert caught.value.code == "invalid_response" and not caught.value.transient
    assert "too large" in caught.value.message
    assert len(decoder.body()) <= MiB  # no more than the limit was ever kept


def test_a_nested_bomb_is_bounded_in_every_stage() -> None:
    inner = gzip.compress(b"x" * (64 * MiB), 9)
    nested = gzip.compress(inner, 9)
    decoder = BodyDecoder("gzip, gzip", MiB)
    with pytest.raises(ProviderError, match="too large"):
        decoder.feed(nested)
    assert len(decoder.body()) <= MiB


def test_bytes_after_the_stream_s_end_are_not_kept() -> None:
    decoder = BodyDecoder("gzip", MiB)
    decoder.feed(gzip.compress(b'{"a": 1}'))
    for _ in range(100):  # 100 MiB of trailing garbage would pile up in zlib's unused_data
        decoder.feed(b"\xff" * MiB)
    assert decoder.body() == b'{"a": 1}'


def test_truncating_mode_keeps_the_head_of_an_error_body() -> None:
    decoder = BodyDecoder("gzip", 1000, truncate=True)
    decoder.feed(gzip.compress(b"e" * (STEP * 3)))
    assert decoder.full and decoder.body() == b"e" * 1000


@pytest.mark.parametrize("coding", ["br", "zstd", "compress", "gzip;q=1"])
def test_a_coding_nobody_asked_for_is_refused(coding: str) -> None:
    with pytest.raises(ProviderError) as caught:
        BodyDecoder(coding, MiB)
    assert caught.value.code == "invalid_response" and "Content-Encoding" in caught.value.message


def test_corrupt_compressed_data_is_an_invalid_response() -> None:
    with pytest.raises(ProviderError, match="corrupt gzip"):
        BodyDecoder("gzip", MiB).feed(b"\x1f\x8b\x08\x00" + b"\xff" * 64)


# -- the transports, against the hostile mock on loopback ----------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", ["gzip_bomb", "endless"])
def test_a_bomb_or_an_endless_body_is_one_invalid_response(
    server: HostileOpenAIServer, transport: str, kind: str
) -> None:
    server.add_hostile(kind, size=64 * MiB)  # type: ignore[arg-type]
    with pytest.raises(ProviderError) as caught:
        complete(server, transport, max_response_bytes=4 * MiB)
    assert caught.value.code == "invalid_response" and not caught.value.transient
    assert "more than 4194304 bytes after decompression" in caught.value.message


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_gzip_reply_under_the_limit_is_read(server: HostileOpenAIServer, transport: str) -> None:
    body = json.dumps(
        {"choices": [{"message": {"role": "assistant", "content": "Answer: C"}}]}
    ).encode()
    packed = gzip.compress(body)
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        f"Content-Length: {len(packed)}\r\nConnection: close\r\n\r\n"
    ).encode()
    server.add_hostile("raw", raw=head + packed)
    raw = complete(server, transport)
    assert raw.text == "Answer: C"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_identity_body_past_the_limit_is_refused(
    server: HostileOpenAIServer, transport: str
) -> None:
    server.add_hostile("huge", size=3 * MiB)
    with pytest.raises(ProviderError, match="too large"):
        complete(server, transport, max_response_bytes=MiB)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_trickling_body_meets_the_call_s_deadline(
    server: HostileOpenAIServer, transport: str
) -> None:
    # Headers at once, then the body never completes: the deadline covers the body too.
    server.add_hostile("lying_length", length_delta=100, hold=30.0)
    settings = EngineSettings(
        base_url=server.base_url,
        transport=transport,
        cache_path=None,
        request_timeout_s=0.5,
        retry=RetryPolicy(max_attempts=1),
    )
    request = GenerationRequest(
        model="openai/m", messages=({"role": "user", "content": "Question one"},)
    )
    with Engine(settings) as engine:
        result = engine.submit(request).result(timeout=60)
    assert result.error_code == "timeout", result


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_redirect_is_refused_and_never_followed(
    server: HostileOpenAIServer, transport: str
) -> None:
    with HostileOpenAIServer() as other:
        other.add_reply("Question", "Answer: B")
        location = other.base_url + "/chat/completions"
        server.add_hostile(
            "raw",
            raw=f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\n"
            "Content-Length: 0\r\nConnection: close\r\n\r\n",
        )
        with pytest.raises(ProviderError) as caught:
            complete(server, transport)
        assert caught.value.code == "bad_request" and caught.value.status_code == 307
        assert other.stats()["requests"] == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_base_url_s_query_follows_the_joined_path(
    server: HostileOpenAIServer, transport: str
) -> None:
    server.add_hostile("echo")
    raw = complete(server, transport, base_url=server.base_url + "/?api-version=2024-06")
    assert "POST /v1/chat/completions?api-version=2024-06 HTTP/1.1" in raw.text


# -- a whole pytest session in a child process --------------------------------------------------

_CHILD = textwrap.dedent(
    """
    import json, sys
    import pytest
    ret = pytest.main(sys.argv[1:])
    # VmHWM, this process's own high-water mark: ru_maxrss would carry over the size of
    # the (xdist worker) process that forked it, on Linux, across exec.
    with open("/proc/self/status", encoding="ascii") as status:
        hwm = next(line for line in status if line.startswith("VmHWM:"))
    peak = int(hwm.split()[1]) * 1024  # kB
    print("CHILD " + json.dumps({"ret": int(ret), "peak": peak}))
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_session_survives_a_bomb_and_an_endless_body_within_bounded_memory(
    pytester: pytest.Pytester, server: HostileOpenAIServer, transport: str
) -> None:
    server.add_hostile("gzip_bomb", match="q001")  # 1 GiB inflated, as in the finding
    server.add_hostile("endless", match="q002")
    server.add_reply("q003", "Answer: B")
    pytester.makepyfile(test_suite="def test_record(record, evaluation):\n    evaluation.check()\n")
    rows = [
        {
            "schema_version": "legal_eval_v1", "id": f"q00{i}", "dataset": "t",
            "task_type": "mcq", "prompt": f"Question q00{i}?",
            "choices": [{"id": c, "text": c} for c in "AB"], "correct_choice_ids": ["B"],
        }
        for i in (1, 2, 3)
    ]  # fmt: skip
    data = pytester.path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = [
        "-p", "no:cacheprovider", "-q", "--dataset", str(data), "--model", "openai/m",
        "--base-url", server.base_url, "--transport", transport, "--run-dir", "runs",
        "--no-cache", "--retry-delays", "0.01,0.01",
    ]  # fmt: skip
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    line = [x for x in child.stdout.splitlines() if x.startswith("CHILD ")]
    assert line, child.stdout[-3000:] + child.stderr[-3000:]
    found = json.loads(line[0][6:])
    assert found["ret"] == 1, child.stdout[-3000:]  # failures, not an internal error (3)
    assert found["peak"] < 400 * MiB, found  # main: 4.3 GiB
    (run,) = [p for p in (pytester.path / "runs").iterdir() if p.is_dir()]
    assert (run / "SHA256SUMS").is_file()
    lines = (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    by_id = {row["record_id"]: row for row in map(json.loads, lines)}
    assert by_id["q003"]["passed"] is True
    for record_id in ("q001", "q002"):
        row = by_id[record_id]
        assert row["outcome"] == "error" and "too large" in json.dumps(row), row
        assert len(row.get("attempts") or [1]) == 1  # permanent: asked once
    assert (run / "predictions.jsonl").stat().st_size < MiB  # main: 1.07 GB


# -- usage counts past any sane size --------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("digits", [400, 4001, 5000])
def test_a_huge_usage_count_is_dropped_with_a_warning_naming_it(
    server: HostileOpenAIServer, transport: str, digits: int
) -> None:
    # main: a 4,001-digit prompt_tokens turned a valid answer into internal_error (float()
    # overflowed); past 4,300 digits Python's int parser refuses it outright.
    body = (
        '{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",'
        '"content":"Answer: B"}}],"usage":{"prompt_tokens":' + "7" * digits + ","
        '"completion_tokens":3}}'
    ).encode()
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    server.add_hostile("raw", raw=head + body)
    raw = complete(server, transport)
    assert raw.text == "Answer: B" and raw.input_tokens is None and raw.output_tokens == 3
    (warning,) = raw.warnings
    assert warning.startswith("usage.prompt_tokens dropped: above 1000000000")
    assert len(warning) < 120  # the number is described, never printed


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_user_info_in_the_base_url_is_sent_as_basic_auth_not_in_the_path(
    server: HostileOpenAIServer, transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.add_hostile("echo")
    base = server.base_url.replace("http://", "http://alice:s3cret-pw@") + "?x=1"
    raw = complete(server, transport, base_url=base)
    assert "POST /v1/chat/completions?x=1 HTTP/1.1" in raw.text
    assert "Authorization: Basic YWxpY2U6czNjcmV0LXB3" in raw.text  # alice:s3cret-pw


def test_a_judge_reply_is_bounded_too(
    pytester: pytest.Pytester, server: HostileOpenAIServer
) -> None:
    # Only the judge's prompt quotes the criterion: the answer itself is a normal reply.
    server.add_hostile("gzip_bomb", match="Cites the statute", size=64 * MiB)
    server.add_reply("Advise", "See section 4.")
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_suite="def test_record(record, evaluation):\n    evaluation.check()\n")
    row = {
        "schema_version": "legal_eval_v1", "id": "r001", "dataset": "t", "task_type": "rubric_qa",
        "prompt": "Advise.", "rubric": [{"id": "c1", "title": "Cites the statute", "weight": 1}],
    }  # fmt: skip
    data = pytester.path / "d.jsonl"
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    result = pytester.runpytest(
        "--dataset", str(data), "--model", "openai/m", "--judge-model", "openai/judge",
        "--base-url", server.base_url, "--run-dir", "runs", "--no-cache",
        "--max-response-bytes", str(4 * MiB), "--retry-delays", "0.01,0.01",
        "--judge-reasks", "0",
    )  # fmt: skip
    assert result.ret == 1, result.stdout.str()[-2000:]
    (run,) = [p for p in (pytester.path / "runs").iterdir() if p.is_dir()]
    assert (run / "SHA256SUMS").is_file()
    (row_out,) = map(json.loads, (run / "predictions.jsonl").read_text().splitlines())
    assert row_out["outcome"] == "error" and "too large" in json.dumps(row_out), row_out
