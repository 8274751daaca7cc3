"""Slowloris against `legaleval serve` itself: half-open requests must not take it offline.

Issue 31 (HIGH): 1,030 connections that send ``GET /healthz HTTP/1.1\\r\\nHost: x\\r\\n`` and
nothing more made every request answer 503 while they were held. The service as shipped
(its ASGI server, started with the common soft limit of 1,024 open files) must answer
``/healthz``, an authenticated read and an authenticated upload from the same address as
the attacker while all of them are held, and must close the half-open requests after its
header deadline.

"While held" is checked as an event, not with a stopwatch: every attacking socket is still
open (neither answered nor closed by the server) before the three calls and after their
answers. The issue's "within 5 s" is the header deadline's order of magnitude: with the
shipped 5 s deadline, opening 1,030 sockets and three calls must all fit in 5 s for the
sockets to be still held, which a loaded machine cannot promise. So that test runs against
a service whose deadline is 60 s (the deadline bounds how long a socket is held; it does
not make the service answer; a longer one only keeps more sockets open longer); the
shipped 5 s deadline is tested where it matters, in cutting the half-open and trickled
requests. ``benchmarks/service_slowloris.py`` measures the calls' latency under attack.
"""

from __future__ import annotations

import http.client
import json
import resource
import select
import socket
import time
from collections.abc import Iterator

import pytest

pytest.importorskip("fastapi", reason="legaleval serve needs the [serve] extra")
pytest.importorskip("hypercorn", reason="legaleval serve needs the [serve] extra")

from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from ..processes import wait_until
from ..service_harness import ServiceProcess, document, record

pytestmark = pytest.mark.slow

TOKEN = "loris-token-0123456789"
HALF_OPEN = 1030
HEAD = b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
CALL_TIMEOUT_S = 60.0
"""A hang guard on each socket operation of a call (the held-throughout check decides)."""
PATIENT_DEADLINE_S = 60
"""The header deadline of the service the availability test attacks (shipped: 5 s)."""
_GONE = select.POLLIN | select.POLLHUP | select.POLLERR | getattr(select, "POLLRDHUP", 0)


@pytest.fixture(scope="module")
def own_fds() -> Iterator[None]:
    """This process needs a descriptor per attacking socket: raise its soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = HALF_OPEN + 1000
    if hard != resource.RLIM_INFINITY and hard < want:
        pytest.skip(f"the hard limit of open files ({hard}) is below the {want} this test needs")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _service(factory: pytest.TempPathFactory, *extra: str) -> Iterator[ServiceProcess]:
    with MockOpenAIServer() as mock:
        data = factory.mktemp("loris") / "data"
        process = ServiceProcess(
            data,
            ["--model", "openai/cand", "--base-url", mock.base_url, "--workers", "1",
             "--log-level", "warning", *extra],
            tokens=TOKEN,
            nofile=1024,  # the usual default: the service must raise it itself
        )  # fmt: skip
        process.start()
        try:
            yield process
        finally:
            assert process.stop() == 0, process.log()


@pytest.fixture(scope="module")
def service(own_fds: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """The service with its shipped settings (a 5 s header deadline)."""
    yield from _service(tmp_path_factory)


@pytest.fixture(scope="module")
def patient_service(
    own_fds: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    """The same with a 60 s header deadline: the attack outlasts a slow probe."""
    yield from _service(tmp_path_factory, "--header-timeout", str(PATIENT_DEADLINE_S))


def _address(service: ServiceProcess) -> tuple[str, int]:
    host, port = service.url.removeprefix("http://").split(":")
    return host, int(port)


class Loris:
    """Half-open requests held against one address, as an attacker holds them."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.address = address
        self.sockets: list[socket.socket] = []

    def open(self, count: int, head: bytes = HEAD) -> None:
        for _ in range(count):
            sock = socket.create_connection(self.address, timeout=30)
            sock.sendall(head)
            self.sockets.append(sock)

    def held(self) -> int:
        """Sockets the server has not closed (nor answered: a half-open request gets nothing)."""
        poller = select.poll()
        for sock in self.sockets:
            poller.register(sock, _GONE)
        return len(self.sockets) - len(poller.poll(0))

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()
        self.sockets.clear()


def _call(
    address: tuple[str, int], method: str, path: str, *, token: str | None = None, body: bytes = b""
) -> int:
    """One request on a fresh connection."""
    conn = http.client.HTTPConnection(*address, timeout=CALL_TIMEOUT_S)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if body:
        headers["Content-Type"] = "application/json"
    try:
        conn.request(method, path, body=body or None, headers=headers)
        answer = conn.getresponse()
        answer.read()
        return answer.status
    finally:
        conn.close()


def _probe(address: tuple[str, int], upload: bytes) -> dict[str, int]:
    return {
        "healthz": _call(address, "GET", "/healthz"),
        "list": _call(address, "GET", "/v1/runs?limit=5", token=TOKEN),
        "upload": _call(address, "POST", "/v1/runs", token=TOKEN, body=upload),
    }


def test_1030_half_open_requests_leave_the_service_answering(
    patient_service: ServiceProcess,
) -> None:
    address = _address(patient_service)
    upload = json.dumps(document("loris", [record("a", "Who is held?")])).encode()
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    # It started with 1,024 and raised its own limit, so 1,030 sockets leave room.
    assert patient_service.fd_limit() >= min(hard, 4096), patient_service.fd_limit()
    loris = Loris(address)
    try:
        loris.open(HALF_OPEN)
        before = loris.held()
        answers = _probe(address, upload)
        after = loris.held()
        assert answers == {"healthz": 200, "list": 200, "upload": 202}, answers
        # Answered while every half-open request was held: none closed before or during.
        assert before == after == HALF_OPEN, (before, after)
    finally:
        loris.close()
    assert _call(address, "GET", "/healthz") == 200


def test_the_header_deadline_closes_1030_half_open_requests(service: ServiceProcess) -> None:
    """With the shipped settings: none of them ever sent a full request."""
    address = _address(service)
    loris = Loris(address)
    try:
        loris.open(HALF_OPEN)
        assert wait_until(lambda: loris.held() == 0, 120), f"{loris.held()} still held"
    finally:
        loris.close()
    assert _call(address, "GET", "/healthz") == 200


def test_a_trickled_request_and_a_bare_http2_preface_are_cut_off(service: ServiceProcess) -> None:
    """The deadline covers the headers as a whole, not the gap between two bytes."""
    address = _address(service)
    head = HEAD + b"X-Pad: " + b"p" * 200 + b"\r\n\r\n"  # 0.25 s a byte: a minute to send
    prefaces = Loris(address)
    prefaces.open(20, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    with socket.create_connection(address, timeout=30) as sock:
        sent, cut = 0, False
        while sent < len(head) and not cut:
            try:
                sock.sendall(head[sent : sent + 1])
            except OSError:  # reset by the server
                cut = True
                break
            sent += 1
            time.sleep(0.25)
            poller = select.poll()
            poller.register(sock, _GONE)
            cut = bool(poller.poll(0))
    try:
        assert cut, f"the server took the whole trickled request ({sent} bytes)"
        assert sent < len(head)
        assert wait_until(lambda: prefaces.held() == 0, 120), f"{prefaces.held()} still held"
    finally:
        prefaces.close()
