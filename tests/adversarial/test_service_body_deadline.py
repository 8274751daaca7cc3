"""Issue 41, LOW: the service bounds the time a request body may take, token or not.

Before: the header deadline ended with the headers; a tokenless client trickling a byte
every 4 s passed every per-read timeout and was held for 70 s. Now the whole body must
arrive within ``--body-timeout`` (60 s by default) after the headers, or the request is
answered 408 and its connection closed. Checked as an event (the socket is cut before the
trickle ends), against a service started with a short deadline.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

pytest.importorskip("fastapi", reason="legaleval serve needs the [serve] extra")
pytest.importorskip("hypercorn", reason="legaleval serve needs the [serve] extra")

from pytest_legaleval.service.config import Limits
from pytest_legaleval.service.http import BODY_TIMEOUT_S
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from ..service_harness import ServiceProcess

pytestmark = pytest.mark.slow

TOKEN = "body-deadline-token-0123456789"
BODY = 2000
"""Announced body bytes; at 4 a second, far longer than the test's 2 s deadline."""


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    with MockOpenAIServer() as mock:
        process = ServiceProcess(
            tmp_path_factory.mktemp("body") / "data",
            ["--model", "openai/cand", "--base-url", mock.base_url, "--workers", "1",
             "--log-level", "warning", "--body-timeout", "2"],
            tokens=TOKEN,
        )  # fmt: skip
        process.start()
        try:
            yield process
        finally:
            assert process.stop() == 0, process.log()


def test_the_shipped_body_deadline_is_60_seconds() -> None:
    assert Limits().body_timeout == BODY_TIMEOUT_S == 60.0


@pytest.mark.parametrize("token", [None, TOKEN], ids=["tokenless", "with-token"])
def test_a_trickled_body_is_cut_off(service: ServiceProcess, token: str | None) -> None:
    host, port = service.url.removeprefix("http://").split(":")
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    head = (
        f"POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{auth}"
        f"Content-Length: {BODY}\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head + b"{")
        sent, answer = 1, b""
        while sent < BODY:
            try:
                sock.sendall(b" ")
            except OSError:  # reset: the server closed it
                break
            sent += 1
            sock.settimeout(0.25)  # also the trickle's pace
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not chunk:
                break
            answer += chunk
            if b"\r\n\r\n" in answer:
                break
        else:
            pytest.fail("the server took the whole trickled body")
        sock.settimeout(10)
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except OSError:
            pass
    assert sent < BODY
    if answer:  # answered before it closed: a 408 (or the tokenless 401), and closed
        status = answer.split(b"\r\n", 1)[0]
        assert status.split()[1] in (b"408", b"401"), answer[:300]
        assert b"connection: close" in answer.lower(), answer[:300]
