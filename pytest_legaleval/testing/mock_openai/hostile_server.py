"""The hostile mode: the mock's request logic behind a byte-level server on its own socket.

:class:`HostileOpenAIServer` answers every request exactly as :class:`MockOpenAIServer`
does (replies, faults, counters, ``/stats``), but writes the response bytes itself, so it
can also send what :mod:`.hostile` renders: invalid JSON, lone surrogate escapes, a lying
``Content-Length``, a body cut mid-way. Its HTTP reading is deliberately minimal —
``Content-Length`` request bodies, one request at a time per connection — because its only
clients are the HTTP libraries under test.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import http
import socket
import struct
from collections.abc import Iterable
from typing import Any, Final

from pytest_legaleval.errors import LegalEvalError
from pytest_legaleval.testing.mock_openai.hostile import HostileKind, HostileRule
from pytest_legaleval.testing.mock_openai.outcome import Outcome, error_outcome
from pytest_legaleval.testing.mock_openai.server import MAX_BODY_BYTES, MockOpenAIServer

__all__ = ["HostileOpenAIServer"]

_MAX_HEAD_BYTES: Final = 64 * 1024
_REASONS: Final = {s.value: s.phrase for s in http.HTTPStatus}


class _BadRequest(LegalEvalError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class HostileOpenAIServer(MockOpenAIServer):
    """A mock OpenAI endpoint that can also send hostile bytes (see :mod:`.hostile`).

    Example::

        with HostileOpenAIServer() as server:
            server.add_hostile("lone_surrogate", match="record-3")
            server.add_hostile("empty_choices", match="record-4", times=1)

    Takes the same arguments as :class:`MockOpenAIServer`; ``MockConfig.hostile`` rules are
    honoured.
    """

    _hostile_capable = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._raw_server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    def add_hostile(self, kind: HostileKind | HostileRule, **fields: Any) -> HostileRule:
        """Append a hostile rule (tried after the existing ones, before every fault).

        ``add_hostile("cut", match="q007")``, ``add_hostile("usage", usage={"prompt_tokens":
        -5})`` or ``add_hostile(HostileRule(...))``.

        Returns:
            The live rule; its ``fired`` attribute counts the requests it answered.

        """
        if isinstance(kind, HostileRule):
            rule = dataclasses.replace(kind, **fields)
        else:
            rule = HostileRule(kind, **fields)
        with self._core.lock:
            self._core.config.hostile.append(rule)
        return rule

    def clear_hostile(self) -> None:
        """Remove all hostile rules."""
        with self._core.lock:
            self._core.config.hostile = []

    # -- serving ----------------------------------------------------------------------------

    async def _listen(self) -> int:
        self._raw_server = await asyncio.start_server(
            self._serve, self._host, self._requested_port, limit=_MAX_HEAD_BYTES, backlog=1024
        )
        port: int = self._raw_server.sockets[0].getsockname()[1]
        return port

    async def _shutdown(self) -> None:
        if self._raw_server is not None:
            self._raw_server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.sleep(0)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            while await self._one_request(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            # close, not abort: it sends what is still buffered (a 10 MB body) first.
            writer.close()

    async def _one_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Read and answer one request; whether the connection stays open."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False
        except asyncio.LimitOverrunError:
            writer.write(_error_bytes(431, "request head too large"))
            return False
        try:
            method, target, headers, keep_alive, length = _parse_head(head)
        except _BadRequest as exc:
            writer.write(_error_bytes(exc.status, str(exc)))
            return False
        body = await reader.readexactly(length) if length else b""
        outcome = self._core.route(method, target, headers, body)
        return await self._perform(writer, outcome, keep_alive)

    async def _perform(self, writer: asyncio.StreamWriter, outcome: Outcome, keep: bool) -> bool:
        settled = False
        try:
            await self._pass_hold(outcome)
            if outcome.action == "hang":
                await asyncio.sleep(outcome.hang_seconds)
                settled = self._settle(outcome, delivered=True)
                return False
            if outcome.delay > 0:
                await asyncio.sleep(outcome.delay)
            settled = self._settle(outcome, delivered=not writer.transport.is_closing())
            if outcome.action == "reset":
                _linger_zero(writer)
                writer.transport.abort()
                return False
            if outcome.action == "raw":
                writer.write(outcome.body)
                await writer.drain()
                while outcome.repeat and not writer.transport.is_closing():
                    writer.write(outcome.repeat)
                    await writer.drain()  # raises once the client has gone away
                if outcome.hold > 0:
                    await asyncio.sleep(outcome.hold)
                return False
            writer.write(_response_bytes(outcome.status, outcome.headers, outcome.body, keep))
            await writer.drain()
            return keep
        finally:
            if not settled:  # cancelled: the server is stopping
                self._settle(outcome, delivered=False)


def _linger_zero(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        # SO_LINGER 0: the close that follows is a TCP RST ("connection reset by peer").
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _parse_head(raw: bytes) -> tuple[str, str, dict[str, str], bool, int]:
    lines = raw[:-4].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
        raise _BadRequest(400, "bad request line")
    method, target, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name:
            raise _BadRequest(400, "bad header line")
        headers[name.strip().lower()] = value.strip()
    if "transfer-encoding" in headers:
        raise _BadRequest(501, "the hostile server reads Content-Length bodies only")
    length_field = headers.get("content-length", "0")
    if not length_field.isdigit():
        raise _BadRequest(400, "bad Content-Length")
    length = int(length_field)
    if length > MAX_BODY_BYTES:
        raise _BadRequest(413, "request body too large")
    connection = headers.get("connection", "").lower()
    keep_alive = "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
    return method, target, headers, keep_alive, length


def _response_bytes(
    status: int, headers: Iterable[tuple[str, str]], body: bytes, keep: bool
) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}"]
    lines.extend(f"{name}: {value}" for name, value in headers)
    lines.append(f"Content-Length: {len(body)}")
    lines.append("Connection: keep-alive" if keep else "Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _error_bytes(status: int, message: str) -> bytes:
    outcome = error_outcome(status, message)
    return _response_bytes(status, outcome.headers, outcome.body, keep=False)
