"""Running the service: one data directory, its workers, the sweeper, uvicorn in front.

:class:`Service` owns the data directory while it runs (a lock file: a second service on
the same directory is refused) and, when it starts, hands every run a dead predecessor
left claimed back to the queue, so queued runs start and interrupted runs continue.
:func:`serve` binds the socket itself — after refusing a public address without tokens —
and prints ``LEGALEVAL_SERVICE_URL=http://HOST:PORT`` once it listens.
"""

from __future__ import annotations

import fcntl
import logging
import shutil
import signal
import socket
import sys
from typing import IO, Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.service.auth import TOKENS_ENV, is_loopback
from pytest_legaleval.service.config import ServiceConfig
from pytest_legaleval.service.queue import SqliteRunQueue
from pytest_legaleval.service.retention import Sweeper
from pytest_legaleval.service.store import RunStore
from pytest_legaleval.service.validation import UploadValidator
from pytest_legaleval.service.workers import WorkerConfig, WorkerPool

__all__ = ["URL_PREFIX", "Service", "bind", "check_bind", "serve"]

URL_PREFIX = "LEGALEVAL_SERVICE_URL="
_log = logging.getLogger(__name__)


def check_bind(config: ServiceConfig) -> None:
    """Refuse a non-loopback address without tokens: it would serve anyone who can reach it.

    Raises:
        ConfigError: ``--host`` is not a loopback address and no token is configured.

    """
    if not config.tokens.enabled and not is_loopback(config.host):
        raise ConfigError(
            f"refusing to serve on {config.host} without API tokens: set {TOKENS_ENV} "
            "(comma-separated bearer tokens), or keep the default --host 127.0.0.1"
        )


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    # A burst of clients (the load test's 500 polls) must not find the backlog full.
    sock.listen(4096)
    sock.set_inheritable(True)
    return sock


class Service:
    """The data directory, its run table and queue, the workers, validator and sweeper."""

    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        self._lock: IO[str] | None = None
        self.store: RunStore | None = None
        self.queue: SqliteRunQueue | None = None
        self.validator: UploadValidator | None = None
        self.pool: WorkerPool | None = None
        self.sweeper: Sweeper | None = None

    def _take_directory(self) -> None:
        data = self.config.data
        data.create()
        handle = (data.locks / "service.lock").open("a")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise ConfigError(
                f"another legaleval serve uses --data-dir {data.root}; stop it or choose "
                "another directory"
            ) from None
        self._lock = handle
        # Uploads a dead predecessor was receiving: nobody answers them any more.
        shutil.rmtree(data.incoming, ignore_errors=True)
        data.incoming.mkdir(mode=0o700, parents=True, exist_ok=True)

    def start(self) -> None:
        """Take the data directory and start everything behind the HTTP layer."""
        config = self.config
        self._take_directory()
        self.store = RunStore(config.data.state)
        self.queue = SqliteRunQueue(config.data.state)
        back = self.queue.release()  # no worker of this service runs yet: every claim is stale
        if back:
            _log.warning("legaleval serve: continuing %d interrupted run(s)", len(back))
        self.validator = UploadValidator(config.limits.validators, config.limits.validation_timeout)
        self.validator.warm()
        worker_config = WorkerConfig(
            config.settings,
            config.data.root,
            config.poll_interval_s,
            config.workers,
            logging.getLogger("pytest_legaleval").getEffectiveLevel(),
        )
        self.pool = WorkerPool(worker_config, config.workers, self.queue)
        self.pool.start()
        self.sweeper = Sweeper(self.store, config.data, config.retention)
        self.sweeper.start()

    def stop(self) -> None:
        """Stop the workers where they are (their runs continue at the next start)."""
        if self.sweeper is not None:
            self.sweeper.stop()
        if self.pool is not None:
            self.pool.stop()
        if self.validator is not None:
            self.validator.close()
        if self.store is not None:
            self.store.close()
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def serve(config: ServiceConfig, *, out: IO[str] | None = None) -> int:
    """Run the service until SIGINT or SIGTERM; return the exit status.

    Raises:
        ConfigError: a public address without tokens, a port that cannot be bound, a data
            directory another service uses.

    """
    import uvicorn

    from pytest_legaleval.service.app import Backend, asgi

    check_bind(config)
    sock = bind(config.host, config.port)
    service = Service(config)
    try:
        service.start()
        assert service.store is not None and service.queue is not None
        app = asgi(Backend(config, service.store, service.queue, service.validator))
        server = uvicorn.Server(
            uvicorn.Config(
                app,
                log_level=logging.getLevelName(logging.getLogger().level).lower(),
                limit_concurrency=config.limits.max_connections,
                timeout_keep_alive=5,
                timeout_graceful_shutdown=10,
                server_header=False,
            )
        )
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        stream = out if out is not None else sys.stdout
        print(f"{URL_PREFIX}http://{shown}:{port}", file=stream, flush=True)
        tokens = "on" if config.tokens.enabled else "off: loopback only"
        print(
            f"legaleval serve: http://{shown}:{port} (data dir {config.data.root}, "
            f"{config.workers} worker(s), tokens {tokens})",
            file=sys.stderr,
            flush=True,
        )
        _run_until_stopped(server, sock)
    finally:
        service.stop()
        sock.close()
    return 0


class _Stopped(Exception):
    """SIGINT or SIGTERM, once uvicorn has shut down and handed the signal back."""


def _stopped(signum: int, frame: object) -> None:
    raise _Stopped(signum)


def _run_until_stopped(server: Any, sock: socket.socket) -> None:
    """Serve until SIGINT or SIGTERM.

    uvicorn shuts down gracefully, then re-raises the signal to the handler it found, which
    here ends the service in order instead of killing it.
    """
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, _stopped) for sig in signals}
    try:
        server.run(sockets=[sock])
    except (_Stopped, KeyboardInterrupt):
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
