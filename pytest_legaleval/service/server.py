"""Running the service: one data directory, its workers, the sweeper, Hypercorn in front.

:class:`Service` owns the data directory while it runs (a lock file: a second service on
the same directory is refused) and, when it starts, hands every run a dead predecessor
left claimed back to the queue, so queued runs start and interrupted runs continue.
:func:`serve` binds the socket itself — after refusing a public address without tokens —
and prints ``LEGALEVAL_SERVICE_URL=http://HOST:PORT`` once it listens.

Why Hypercorn (measured, issue 31): a connection that sends half a request must not hold a
place for ever, and no connection cap may refuse a client whose requests complete (an
attacker and a user can share one address). Hypercorn's ``keep_alive_timeout`` is a
deadline on a connection that has no request in progress — from the first byte to the end
of the headers, however slowly they trickle, and between requests — so 1,030 half-open
requests are closed after it while others are served. uvicorn has no such deadline (a
header sent a byte at a time was held for minutes) and its ``limit_concurrency`` answered
every request 503 under the same 1,030 sockets; granian has one, but its embedded server is
marked experimental and cannot take a socket bound here without private attributes.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import resource
import shutil
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.service.auth import TOKENS_ENV, is_loopback
from pytest_legaleval.service.config import ServiceConfig
from pytest_legaleval.service.database import RunTable
from pytest_legaleval.service.health import HealthMonitor
from pytest_legaleval.service.queue import RunQueue
from pytest_legaleval.service.retention import Sweeper
from pytest_legaleval.service.storage import HTTP_PATIENCE, Patience, StorageError
from pytest_legaleval.service.validation import UploadValidator
from pytest_legaleval.service.workers import WorkerConfig, WorkerPool

__all__ = [
    "URL_PREFIX",
    "Service",
    "bind",
    "check_bind",
    "raise_fd_limit",
    "release_dead_local",
    "serve",
]

URL_PREFIX = "LEGALEVAL_SERVICE_URL="
FD_TARGET = 65536
"""File descriptors the service asks for (within the hard limit): idle sockets are cheap."""
_FD_ENOUGH = 4096
BACKLOG = 4096
"""Connections the kernel queues before the service accepts them (a burst of clients)."""
_log = logging.getLogger(__name__)


def raise_fd_limit(target: int = FD_TARGET) -> tuple[int, int]:
    """Raise this process's soft limit of open files toward ``target``; return (before, after).

    A connection is a file descriptor: with the usual soft limit of 1,024, a thousand idle
    sockets leave no descriptor to accept the next client with, until they time out. The
    soft limit may be raised up to the hard one by any process; when the kernel refuses a
    value (``nr_open``, macOS's ``OPEN_MAX``), smaller ones are tried.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = target if hard == resource.RLIM_INFINITY else min(target, hard)
    while want > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            want //= 2
            continue
        return soft, want
    return soft, soft


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
    sock.listen(BACKLOG)
    sock.set_inheritable(True)
    return sock


DATABASE_HTTP_PATIENCE = Patience(busy_timeout_s=5.0, give_up_s=5.0)
"""How long a request waits for a database server that does not answer (then 503)."""
STALE_UPLOAD_S = 24 * 3600.0
"""With a shared data directory, an upload folder this old is a dead replica's leftover."""


def _clear_stale_uploads(incoming: Path, older_than_s: float) -> None:
    """Remove upload folders older than ``older_than_s`` seconds (nobody answers them)."""
    cutoff = time.time() - older_than_s
    for folder in incoming.iterdir() if incoming.is_dir() else ():
        try:
            if folder.stat().st_mtime < cutoff:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            continue


def release_dead_local(queue: Any, host: str) -> list[str]:
    """Give back the claims of this host's replicas that are gone (a restart after kill -9).

    A worker id is ``<host>.<pid>/worker-…``: a claim of this host whose replica process no
    longer runs is given back now instead of when its lease runs out. Other hosts' claims,
    and a pid that runs again (a container's pid 1), wait for their leases. Replicas in
    separate pid namespaces must have separate host names (containers do by default).
    """
    claimants = getattr(queue, "claimants", None)
    if claimants is None:
        return []
    back: list[str] = []
    for worker in claimants():
        replica = worker.split("/", 1)[0]
        name, _, pid = replica.rpartition(".")
        if name != host or not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            back += queue.release(worker)
        except PermissionError:
            continue  # runs, as another user
    return back


class Service:
    """The data directory, its run table and queue, the workers, validator and sweeper.

    The HTTP handlers' table and queue give up on a lock after a minute (on a PostgreSQL
    server that does not answer, after 5 s; the request is answered 503); the supervisor's
    and the sweeper's wait it out.
    """

    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        self._lock: IO[str] | None = None
        self.store: RunTable | None = None
        self.queue: RunQueue | None = None
        self.validator: UploadValidator | None = None
        self.pool: WorkerPool | None = None
        self.sweeper: Sweeper | None = None
        self.health: HealthMonitor | None = None

    def _take_directory(self) -> None:
        data = self.config.data
        data.create()
        if self.config.database.shared:
            # Replicas share the directory (a shared volume): none owns it, and another
            # replica's uploads in progress are not ours to remove (a dead one's are
            # removed once old).
            _clear_stale_uploads(data.incoming, STALE_UPLOAD_S)
            return
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
        database = config.database
        database.prepare()  # the schema, created or migrated (PostgreSQL) before any use
        self._take_directory()
        # A lock on an SQLite file passes (a backup): a request waits a minute for it. A
        # database server that does not answer is an outage: a request is answered 503 soon.
        patience = DATABASE_HTTP_PATIENCE if database.shared else HTTP_PATIENCE
        self.store = database.store(patience)
        self.queue = database.queue(patience)
        waiting = database.queue()
        # SQLite: no worker of this service runs yet, so every claim is stale. PostgreSQL:
        # only claims whose lease ran out (other replicas' workers hold the rest).
        back = waiting.release()
        if database.shared:
            back += release_dead_local(waiting, socket.gethostname())
        if back:
            _log.warning("legaleval serve: continuing %d interrupted run(s)", len(back))
        for run_id in self.store.unfinished():  # a run whose queue entry was never written
            waiting.put(run_id)
        self.validator = UploadValidator(config.limits.validators, config.limits.validation_timeout)
        self.validator.warm()
        worker_config = WorkerConfig(
            config.settings,
            config.data.root,
            config.poll_interval_s,
            config.workers,
            logging.getLogger("pytest_legaleval").getEffectiveLevel(),
            database=config.db,
        )
        prefix = f"{socket.gethostname()}.{os.getpid()}/" if database.shared else ""
        self.pool = WorkerPool(worker_config, config.workers, waiting, prefix=prefix)
        self.pool.start()
        self.sweeper = Sweeper(
            database.store(), config.data, config.retention, exclusive=database.exclusive
        )
        self.sweeper.start()
        self.health = HealthMonitor(
            config.data,
            self.store,
            self.queue,
            pool=self.pool,
            sweeper=self.sweeper,
            database=database,
        )
        self.health.start()

    def stop(self) -> None:
        """Stop the workers where they are (their runs continue at the next start)."""
        if self.health is not None:
            self.health.stop()
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
    from pytest_legaleval.service.app import Backend, asgi

    check_bind(config)
    before, after = raise_fd_limit()
    if after < _FD_ENOUGH:
        _log.warning(
            "legaleval serve: only %d file descriptors (hard limit); many idle connections "
            "can delay new ones until they time out — raise `ulimit -Hn`",
            after,
        )
    elif after != before:
        _log.debug("legaleval serve: open-file limit raised from %d to %d", before, after)
    sock = bind(config.host, config.port)
    service = Service(config)
    try:
        try:
            service.start()
        except StorageError as exc:
            what = "database" if config.database.shared else "data directory"
            raise ConfigError(f"cannot start: the {what} cannot be written ({exc})") from None
        assert service.store is not None and service.queue is not None
        backend = Backend(config, service.store, service.queue, service.validator, service.health)
        app = asgi(backend)
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        stream = out if out is not None else sys.stdout
        # A client may stop the service as soon as it reads the URL: catch that from now.
        asked = threading.Event()
        signals = (signal.SIGINT, signal.SIGTERM)
        previous = {sig: signal.signal(sig, lambda *_: asked.set()) for sig in signals}
        try:
            print(f"{URL_PREFIX}http://{shown}:{port}", file=stream, flush=True)
            tokens = "on" if config.tokens.enabled else "off: loopback only"
            db = config.database
            print(
                f"legaleval serve: http://{shown}:{port} (data dir {config.data.root}, "
                f"{db.kind} {db.name}, {config.workers} worker(s), tokens {tokens})",
                file=sys.stderr,
                flush=True,
            )
            asyncio.run(_serve_until_stopped(app, http_config(config, sock), asked))
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    finally:
        service.stop()
        sock.close()
    return 0


def http_config(config: ServiceConfig, sock: socket.socket) -> Any:
    """Hypercorn's settings for the service, serving the already bound ``sock``."""
    from hypercorn.config import Config

    http = Config()
    # Hypercorn owns (and closes) the socket it is given: give it a copy of ours.
    http.bind = [f"fd://{os.dup(sock.fileno())}"]
    # The deadline of a connection without a request in progress: to send its headers
    # (a half-open request is closed after it) and to stay idle between requests.
    http.keep_alive_timeout = config.limits.header_timeout
    # asyncio listens again with Hypercorn's backlog (100 by default): keep ours.
    http.backlog = BACKLOG
    http.graceful_timeout = 10.0
    http.include_server_header = False
    http.accesslog = None
    http.errorlog = logging.getLogger("hypercorn.error")
    return http


async def _serve_until_stopped(app: Any, http: Any, asked: threading.Event) -> None:
    """Serve until SIGINT or SIGTERM, then let requests in flight finish (``graceful_timeout``).

    ``asked`` is set by a signal that came before the loop took the signals over.
    """
    from hypercorn.asyncio import serve as hypercorn_serve

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals = (signal.SIGINT, signal.SIGTERM)
    for sig in signals:
        loop.add_signal_handler(sig, stop.set)
    if asked.is_set():
        stop.set()
    try:
        await hypercorn_serve(app, http, shutdown_trigger=stop.wait, mode="asgi")
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
