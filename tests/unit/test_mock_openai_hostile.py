"""The mock's hostile mode: the bytes it sends, read back on a raw socket."""

from __future__ import annotations

import json
import math
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from pytest_legaleval.testing.mock_openai import (
    HOSTILE_KINDS,
    HostileOpenAIServer,
    HostileRule,
    MockConfig,
    MockOpenAIServer,
)

SECRET = "sk-canary-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[HostileOpenAIServer]:
    with HostileOpenAIServer() as srv:
        yield srv


def exchange(
    server: MockOpenAIServer | int,
    prompt: str,
    *,
    headers: dict[str, str] | None = None,
    limit: int | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """POST one chat completion on a fresh socket and read until the server closes.

    ``limit`` stops reading after that many bytes: an ``endless`` reply never closes.
    """
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": prompt}]}).encode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n{extra}\r\n"
    ).encode()
    data = b""
    port = server if isinstance(server, int) else server.port
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head + body)
        while chunk := sock.recv(1 << 20):
            data += chunk
            if limit is not None and len(data) >= limit:
                break
    raw_head, _, payload = data.partition(b"\r\n\r\n")
    lines = raw_head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    fields = dict(line.split(": ", 1) for line in lines[1:])
    return status, {k.lower(): v for k, v in fields.items()}, payload


def body_of(server: HostileOpenAIServer, kind: str, **fields: Any) -> Any:
    server.add_hostile(kind, match="hostile", **fields)  # type: ignore[arg-type]
    status, headers, payload = exchange(server, "a hostile question")
    assert status == 200
    assert int(headers["content-length"]) == len(payload)
    return json.loads(payload)


def content_of(body: Any) -> Any:
    return body["choices"][0]["message"]["content"]


def test_lone_surrogate_is_sent_as_its_escape(server: HostileOpenAIServer) -> None:
    server.add_hostile("lone_surrogate", match="hostile", content="Answer: B")
    _, _, payload = exchange(server, "hostile")
    assert b'"Answer: B \\ud83d"' in payload  # what no encoder of valid text would write
    assert content_of(json.loads(payload)) == "Answer: B \ud83d"


@pytest.mark.parametrize(
    ("kind", "check"),
    [
        ("control_chars", lambda b: "\x00" in content_of(b) and "\x1b" in content_of(b)),
        ("null_content", lambda b: content_of(b) is None),
        ("empty_choices", lambda b: b["choices"] == []),
        ("missing_choices", lambda b: "choices" not in b),
        ("usage_string", lambda b: b["usage"] == "lots"),
        ("choices_dict", lambda b: isinstance(b["choices"], dict)),
        ("content_number", lambda b: content_of(b) == 42),
        ("message_string", lambda b: b["choices"][0]["message"] == "Answer: A"),
        ("body_array", lambda b: isinstance(b, list)),
    ],
)
def test_body_kinds(server: HostileOpenAIServer, kind: str, check: Any) -> None:
    assert check(body_of(server, kind))


def test_huge_content_has_the_requested_size(server: HostileOpenAIServer) -> None:
    body = body_of(server, "huge", size=10_000_000, content="Answer: C")
    assert len(content_of(body)) == 10_000_000
    assert content_of(body).startswith("Answer: C ")


def test_usage_is_sent_as_given_nan_included(server: HostileOpenAIServer) -> None:
    usage = {"prompt_tokens": -5, "completion_tokens": 10**30, "total_tokens": math.nan}
    body = body_of(server, "usage", usage=usage)
    assert body["usage"]["prompt_tokens"] == -5
    assert body["usage"]["completion_tokens"] == 10**30
    assert math.isnan(body["usage"]["total_tokens"])


def test_invalid_json(server: HostileOpenAIServer) -> None:
    server.add_hostile("invalid_json")
    status, _, payload = exchange(server, "anything")
    assert status == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(payload)


def test_lying_length_and_cut_body(server: HostileOpenAIServer) -> None:
    server.add_hostile("lying_length", match="over", length_delta=500)
    server.add_hostile("lying_length", match="under", length_delta=-10)
    server.add_hostile("cut", match="cut", cut_at=20)
    _, headers, payload = exchange(server, "over")
    assert int(headers["content-length"]) == len(payload) + 500
    json.loads(payload)  # the body itself is whole
    _, headers, payload = exchange(server, "under")
    assert int(headers["content-length"]) == len(payload) - 10
    _, headers, payload = exchange(server, "cut")
    assert len(payload) == 20 < int(headers["content-length"])


def test_echo_returns_the_secret_headers_and_the_request(server: HostileOpenAIServer) -> None:
    server.add_hostile("echo", match="echo-200")
    server.add_hostile("echo", match="echo-400", status=400)
    auth = {"Authorization": f"Bearer {SECRET}", "api-key": SECRET}
    status, _, payload = exchange(server, "echo-200", headers=auth)
    text = content_of(json.loads(payload))
    assert status == 200
    assert text.startswith(f"Authorization: Bearer {SECRET}\napi-key: {SECRET}\n")
    assert "POST /v1/chat/completions HTTP/1.1" in text and '"echo-200"' in text
    status, _, payload = exchange(server, "echo-400", headers=auth)
    assert status == 400
    assert SECRET in json.loads(payload)["error"]["message"]


def test_raw_bytes_go_out_verbatim(server: HostileOpenAIServer) -> None:
    server.add_hostile("raw", raw=b"HTTP/1.1 299 Odd\r\nX: y\r\nContent-Length: 2\r\n\r\nhi")
    status, headers, payload = exchange(server, "x")
    assert (status, headers, payload) == (299, {"x": "y", "content-length": "2"}, b"hi")


def test_other_requests_get_the_normal_mock_and_every_request_counts(
    server: HostileOpenAIServer,
) -> None:
    server.add_hostile("empty_choices", match="record-3", times=1)
    server.add_reply("record", "Answer: D")
    server.add_fault("500", match="record-9")
    with openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0) as client:

        def ask(prompt: str) -> Any:
            messages: Any = [{"role": "user", "content": prompt}]
            return client.chat.completions.create(model="m", messages=messages)

        assert ask("record-1").choices[0].message.content == "Answer: D"
        assert ask("record-3").choices == []  # the hostile reply, once
        assert ask("record-3").choices[0].message.content == "Answer: D"
        with pytest.raises(openai.InternalServerError):
            ask("record-9")
    assert server.count_for("record-3") == 2
    stats = server.stats()
    assert stats["requests"] == 4
    assert stats["hostile_by_kind"] == {"empty_choices": 1}
    assert stats["completed"] == 2 and stats["errors"] == 1


def test_every_kind_answers_a_request(server: HostileOpenAIServer) -> None:
    for kind in HOSTILE_KINDS:
        server.clear_hostile()
        server.add_hostile(kind, size=100, raw=b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        status, _, _ = exchange(server, f"kind {kind}", limit=1 << 20)
        assert 200 <= status < 600
    assert sum(server.stats()["hostile_by_kind"].values()) == len(HOSTILE_KINDS)


def test_the_http_library_server_refuses_hostile_rules() -> None:
    with pytest.raises(ValueError, match="HostileOpenAIServer"):
        MockOpenAIServer(hostile=[HostileRule("cut")])


@pytest.mark.parametrize("bad", [{"kind": "nope"}, {"kind": "cut", "times": -1}])
def test_invalid_hostile_rules_are_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        MockConfig.from_dict({"hostile": [bad]})


def test_cli_hostile_flag_and_script_serve_in_hostile_mode(tmp_path: Path) -> None:
    script = tmp_path / "mock.yaml"
    script.write_text("hostile:\n  - kind: missing_choices\n    match: from-script\n")
    command = [sys.executable, "-m", "pytest_legaleval.testing.mock_openai", "--port", "0"]
    command += ["--script", str(script), "--hostile", "null_content=from-flag"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            port = int(line.rsplit(":", 1)[1].split("/")[0])
            assert "choices" not in json.loads(exchange(port, "from-script")[2])
            assert content_of(json.loads(exchange(port, "from-flag")[2])) is None
            assert content_of(json.loads(exchange(port, "plain")[2])).startswith("Mock")
        finally:
            proc.terminate()
            proc.wait(10)


def test_cli_rejects_an_unknown_hostile_kind() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_legaleval.testing.mock_openai", "--hostile", "nope=x"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "expected KIND or KIND=REGEX" in done.stderr


def test_hostile_fixture_works_as_a_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import json, urllib.request

        def test_it(hostile_openai):
            hostile_openai.add_hostile("missing_choices")
            request = urllib.request.Request(
                hostile_openai.base_url + "/chat/completions",
                data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]})
                .encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request) as response:
                assert "choices" not in json.load(response)
        """
    )
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.runpytest("-p", "pytest_legaleval.testing.fixtures").assert_outcomes(passed=1)
