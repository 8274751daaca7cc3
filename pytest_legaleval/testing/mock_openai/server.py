"""The mock server's lifecycle and its HTTP layer on ``aiohttp``'s low-level server."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from typing import Any, Self

from aiohttp import web

from pytest_legaleval.errors import InvalidState, InvalidValue
from pytest_legaleval.testing.mock_openai.config import MockConfig
from pytest_legaleval.testing.mock_openai.handle import ServerHandle
from pytest_legaleval.testing.mock_openai.outcome import Outcome

__all__ = ["MAX_BODY_BYTES", "MockOpenAIServer"]

MAX_BODY_BYTES = 64 * 1024 * 1024
"""Largest request body the server reads; a larger one is answered 413."""

# The default backlog (100) drops SYNs when hundreds of clients connect at once, and a
# dropped SYN costs the client a 1 s retransmit.
BACKLOG = 4096


class MockOpenAIServer(ServerHandle):
    """A mock OpenAI endpoint served from a background thread with its own event loop.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`::

        with MockOpenAIServer(latency=0.1, seed=7) as server:
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)

    All methods are thread-safe and may be called while requests are being served, including
    from a reply callable. The HTTP layer is ``aiohttp``'s; replies that no HTTP library
    would send (hostile mode) need :class:`~.hostile_server.HostileOpenAIServer`.

    Args:
        config: The behaviour; copied, so the caller's object is left alone. Defaults to
            ``MockConfig()``.
        host: Interface to bind; keep the loopback default.
        port: Port to bind; 0 picks a free one (see :attr:`port` after :meth:`start`).
        **overrides: :class:`MockConfig` fields that replace those of ``config``.

    Raises:
        ValueError: The config has hostile rules (only the hostile server sends those).

    """

    _hostile_capable = False

    def __init__(
        self,
        config: MockConfig | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        **overrides: Any,
    ) -> None:
        super().__init__(config, host, port, overrides)
        if self._core.config.hostile and not self._hostile_capable:
            raise InvalidValue(
                "hostile rules need HostileOpenAIServer: an HTTP library cannot send them"
            )
        self._state_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listener: asyncio.Server | None = None
        self._web: web.Server | None = None
        self._hold: _Hold | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def start(self, timeout: float = 10.0) -> Self:
        """Bind the socket and start serving; returns once the port is open.

        Args:
            timeout: Seconds to wait for the server thread to come up.

        Returns:
            ``self``, for chaining.

        Raises:
            RuntimeError: If the server is already running or fails to start (the cause,
                e.g. the ``OSError`` of a port in use, is chained).

        """
        with self._state_lock:
            if self._thread is not None:
                raise InvalidState("the mock server is already running")
            ready = threading.Event()
            failure: list[BaseException] = []
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=self._run, args=(loop, ready, failure), name="mock-openai", daemon=True
            )
            thread.start()
            if not ready.wait(timeout) or failure:
                if not failure:
                    # Still starting: ask it to stop. A failed start closed its loop itself,
                    # so it must not be touched then.
                    loop.call_soon_threadsafe(loop.stop)
                thread.join(timeout)
                cause = failure[0] if failure else None
                raise InvalidState(f"the mock server did not start: {cause}") from cause
            self._loop, self._thread = loop, thread
            return self

    def _run(
        self, loop: asyncio.AbstractEventLoop, ready: threading.Event, failure: list[BaseException]
    ) -> None:
        asyncio.set_event_loop(loop)
        try:
            try:
                self._port = loop.run_until_complete(self._listen())
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            # Like asyncio.run: let what is left finish its cleanup before the loop closes.
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        finally:
            loop.close()

    async def _listen(self) -> int:
        """Open the listening socket on the running loop; return the bound port."""
        self._web = web.Server(
            self._handle,
            request_factory=self._make_request,
            # A client that leaves cancels its handler, so a waiting reply counts as
            # cancelled and a hang ends with its client.
            handler_cancellation=True,
            access_log=None,
        )
        self._listener = await asyncio.get_running_loop().create_server(
            self._web, self._host, self._requested_port, backlog=BACKLOG
        )
        port: int = self._listener.sockets[0].getsockname()[1]
        return port

    def _make_request(
        self, message: Any, payload: Any, protocol: Any, writer: Any, task: Any
    ) -> web.BaseRequest:
        # aiohttp's own factory, with a larger body limit (its default is 1 MiB).
        loop = asyncio.get_running_loop()
        return web.BaseRequest(
            message, payload, protocol, writer, task, loop, client_max_size=MAX_BODY_BYTES
        )

    async def _shutdown(self) -> None:
        if self._listener is not None:
            self._listener.close()
        if self._web is not None:
            # Waiting requests (latency, hangs) are dropped at once: a stop must be quick.
            await self._web.shutdown(0.01)

    def stop(self, timeout: float = 5.0) -> None:
        """Close the listening socket and all connections; idempotent and quick.

        Requests still waiting (latency, hangs) are dropped without a response.

        Args:
            timeout: Seconds to wait for the server thread to finish.

        """
        with self._state_lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
            if loop is None or thread is None:
                return
            if threading.current_thread() is thread:
                # Called from a reply callable: cannot wait for our own thread to finish.
                loop.create_task(self._shutdown()).add_done_callback(lambda _: loop.stop())
                return
            try:
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout)
            except (TimeoutError, RuntimeError):
                pass  # already stopping or wedged: stop the loop regardless
            finally:
                loop.call_soon_threadsafe(loop.stop)
                thread.join(timeout)
            self._listener = None
            self._web = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the server is serving."""
        return self._thread is not None

    def hold(self, until_in_flight: int | None = None, *, timeout: float = 120.0) -> None:
        """Answer no chat completion request until the hold is over.

        Makes "the client kept N calls open together" an event instead of a race with the
        latency: with ``until_in_flight=N`` nothing is answered before the N-th request
        arrives, so ``peak_in_flight`` reaches N whenever the client can hold N calls, however
        slow the machine. Without it the hold lasts until :meth:`release`. Once over, it is
        over for good (later requests are not held). After ``timeout`` seconds it ends
        anyway, so a client that never opens N calls gets its answers (and a lower
        ``peak_in_flight``) instead of hanging.

        Args:
            until_in_flight: End the hold when this many requests are in flight at once.
            timeout: Seconds from this call after which the hold ends regardless.

        """
        if (until_in_flight is not None and until_in_flight < 1) or timeout <= 0:
            raise InvalidValue("hold needs until_in_flight >= 1 (or None) and timeout > 0")
        self._hold = _Hold(until_in_flight, time.monotonic() + timeout)

    def release(self) -> None:
        """End the current :meth:`hold` now: the requests it holds are answered."""
        hold, loop = self._hold, self._loop
        if hold is None:
            return
        hold.released = True
        if loop is not None and hold.over is not None:
            loop.call_soon_threadsafe(hold.over.set)

    async def _pass_hold(self, outcome: Outcome) -> None:
        """Wait, on the server's loop, until the :meth:`hold` is over."""
        hold = self._hold
        if hold is None or not outcome.counts:
            return
        if hold.over is None:
            hold.over = asyncio.Event()  # made here: it belongs to the server's loop
        with self._core.lock:
            in_flight = self._core.in_flight
        if hold.released or (hold.in_flight is not None and in_flight >= hold.in_flight):
            hold.over.set()
        if hold.over.is_set():
            return
        try:
            await asyncio.wait_for(hold.over.wait(), max(hold.deadline - time.monotonic(), 0.0))
        except TimeoutError:
            hold.over.set()

    # -- HTTP -------------------------------------------------------------------------------

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if request.headers.get("Expect", "").lower() == "100-continue":
            # What aiohttp's router does for an application (its default expect handler);
            # the low-level server leaves it to the handler. curl waits for it.
            await request.writer.write(b"HTTP/%d.%d 100 Continue\r\n\r\n" % request.version)
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return web.json_response(
                {"error": {"message": "request body too large", "type": "invalid_request_error"}},
                status=413,
            )
        core = self._core
        outcome = core.route(request.method, request.path_qs, request.headers, body)
        settled = False
        try:
            await self._pass_hold(outcome)
            if outcome.action == "hang":
                await asyncio.sleep(outcome.hang_seconds)
                # The hang ran its course; it was not cut short by the client.
                settled = self._settle(outcome, delivered=True)
                _drop(request, reset=False)
                return web.Response()
            if outcome.delay > 0:
                await asyncio.sleep(outcome.delay)
            if outcome.action == "reset":
                settled = self._settle(outcome, delivered=True)
                _drop(request, reset=True)
                return web.Response()
            transport = request.transport
            settled = self._settle(
                outcome, delivered=transport is not None and not transport.is_closing()
            )
            return web.Response(status=outcome.status, body=outcome.body, headers=outcome.headers)
        finally:
            if not settled:  # cancelled: the client left, or the server is stopping
                self._settle(outcome, delivered=False)

    def _settle(self, outcome: Outcome, *, delivered: bool) -> bool:
        # Counters are settled *before* the client can see the outcome, so that a client
        # reading stats() right after its response never finds its own request in flight.
        if outcome.counts:
            self._core.finished(outcome, delivered=delivered)
        return True


class _Hold:
    """The state of one :meth:`MockOpenAIServer.hold`."""

    def __init__(self, in_flight: int | None, deadline: float) -> None:
        self.in_flight = in_flight
        self.deadline = deadline
        self.released = False
        self.over: asyncio.Event | None = None


def _drop(request: web.BaseRequest, *, reset: bool) -> None:
    """End the connection without a response (the handler's return value is then unsent)."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if reset and sock is not None:
        # SO_LINGER with a zero timeout turns close() into a TCP RST, i.e. "connection reset
        # by peer" for the client rather than a polite end of stream.
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    transport.abort()
