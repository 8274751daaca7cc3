"""A server process on a free loopback port: start it, wait until it answers, stop it.

The process runs in its own process group, so a Ctrl-C in the terminal reaches only pytest
(which stops the server in order) and ``stop`` can signal the server with any children it
has. On Linux it also asks the kernel for ``SIGTERM`` when its parent dies, so even a
killed pytest (``kill -9``) leaves no server behind. Used by :mod:`.local_model`.
"""

from __future__ import annotations

import contextlib
import ctypes
import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pytest_legaleval.errors import LegalEvalError

__all__ = ["LocalModelError", "LocalModelServer", "free_port"]

_PORT_TRIES = 3
_STDERR_TAIL_CHARS = 4000
# llama.cpp's server reads its settings from the environment too (pydantic-settings): an
# API_KEY there would make it demand that key; our own keys have no business in it either.
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")


class LocalModelError(LegalEvalError, RuntimeError):
    """The local model server could not be started or did not become ready."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _server_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not any(w in k.upper() for w in _SECRET_WORDS)}


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux to SIGTERM the child when its parent dies."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1

    def preexec() -> None:
        prctl(pr_set_pdeathsig, signal.SIGTERM)

    return preexec


class LocalModelServer:
    """One server process on a free loopback port: start, wait until ready, stop.

    Args:
        command_for_port: builds the command line for a port.
        host: the loopback address it listens on.
        ready_timeout_s: how long the server may take to answer ``GET /v1/models``.
        grace_s: how long ``stop`` waits after SIGTERM before SIGKILL.

    """

    def __init__(
        self,
        command_for_port: Callable[[int], Sequence[str]],
        *,
        host: str = "127.0.0.1",
        ready_timeout_s: float = 180.0,
        grace_s: float = 5.0,
    ) -> None:
        self._command_for_port = command_for_port
        self.host = host
        self.ready_timeout_s = ready_timeout_s
        self.grace_s = grace_s
        self.port: int | None = None
        self.startup_s: float | None = None
        """Seconds from launch until the server answered (after ``start``)."""
        self._process: subprocess.Popen[bytes] | None = None
        self._log_dir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1`` of the running server."""
        if self.port is None:
            raise LocalModelError("the local model server is not started")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        """Process id of the server, while it runs."""
        return self._process.pid if self._process is not None else None

    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._process is not None and self._process.poll() is None

    def start(self) -> str:
        """Launch the server and wait until it answers; return its base URL.

        A port taken between choosing and binding it is retried on another port.

        Raises:
            LocalModelError: the server died or did not answer in time (with its stderr).

        """
        for attempt in range(_PORT_TRIES):
            try:
                self._launch()
                self._wait_ready()
                return self.base_url
            except LocalModelError as exc:
                in_use = "address already in use" in str(exc).lower()
                self.stop()
                if not in_use or attempt == _PORT_TRIES - 1:
                    raise
            except BaseException:
                self.stop()  # also on Ctrl-C while waiting: never leave it running
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _launch(self) -> None:
        self.port = free_port(self.host)
        self._log_dir = tempfile.TemporaryDirectory(prefix="legaleval-local-")
        log_path = Path(self._log_dir.name) / "server.log"
        with open(log_path, "ab") as log:
            self._process = subprocess.Popen(
                list(self._command_for_port(self.port)),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=_server_env(),
                start_new_session=True,
                preexec_fn=_die_with_parent(),
            )
        self._started_at = time.monotonic()

    def log_tail(self, chars: int = _STDERR_TAIL_CHARS) -> str:
        """The last ``chars`` characters of the server's output."""
        if self._log_dir is None:
            return ""
        try:
            data = (Path(self._log_dir.name) / "server.log").read_bytes()
        except OSError:
            return ""
        return data[-chars:].decode("utf-8", "replace")

    def _answers(self) -> bool:
        assert self.port is not None
        # http.client on purpose: urllib would route loopback through a configured proxy.
        conn = http.client.HTTPConnection(self.host, self.port, timeout=2.0)
        try:
            conn.request("GET", "/v1/models")
            return conn.getresponse().status == 200
        except OSError:
            return False
        finally:
            conn.close()

    def _wait_ready(self) -> None:
        process = self._process
        assert process is not None
        deadline = self._started_at + self.ready_timeout_s
        while True:
            code = process.poll()
            if code is not None:
                raise LocalModelError(
                    f"the local model server exited with status {code} before it was ready; "
                    f"its output ends with:\n{self.log_tail()}"
                )
            if self._answers():
                self.startup_s = time.monotonic() - self._started_at
                return
            if time.monotonic() > deadline:
                raise LocalModelError(
                    f"the local model server did not answer GET {self.base_url}/models within "
                    f"{self.ready_timeout_s:g} s; its output ends with:\n{self.log_tail()}"
                )
            time.sleep(0.1)

    def stop(self) -> None:
        """SIGTERM the server's process group, SIGKILL it after ``grace_s``; idempotent."""
        process, self._process = self._process, None
        if process is not None:
            _signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(self.grace_s)
            except subprocess.TimeoutExpired:
                _signal_group(process.pid, signal.SIGKILL)
                process.wait()
            # Children of the server (if any) share its group: make sure none outlives it.
            _signal_group(process.pid, signal.SIGKILL)
        log_dir, self._log_dir = self._log_dir, None
        if log_dir is not None:
            log_dir.cleanup()

    def __enter__(self) -> LocalModelServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
