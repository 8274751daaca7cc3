"""A real PostgreSQL server for the service tests: Debian's binaries, a temporary cluster.

:class:`PostgresServer` runs ``initdb`` in a temporary directory and starts ``postgres`` on a
free loopback port (trust authentication on 127.0.0.1 only, no fsync: a test cluster).
PostgreSQL refuses to run as root, as CI does: then the cluster belongs to the ``postgres``
user (Debian's package creates it) and the binaries run through ``runuser``.

The fixtures: :func:`postgres_server` (one server per test session and process) and
:func:`pg_url` (a fresh, empty database per test). Without the binaries the tests skip,
naming what to install, unless ``LEGALEVAL_REQUIRE_EXTRAS=1`` (``.ci/run``): then they fail.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .extras import installed, require_extras

try:
    # Imported now, at collection, before any pytester snapshot of sys.modules: the
    # integration tests' pytester restores that snapshot after each test, and a psycopg
    # imported again afterwards no longer matches the classes its C extension raises.
    import psycopg  # noqa: F401
except ImportError:  # the [postgres] extra is missing: the tests skip, saying so
    pass

__all__ = ["PG_REASON", "PostgresServer", "find_bin", "needs_postgres", "pg_url", "postgres_server"]

PG_REASON = (
    "needs PostgreSQL's server (initdb, pg_ctl: apt-get install postgresql) and the "
    "[postgres] extra, part of [dev] (pip install 'pytest-legaleval[postgres]')"
)


def find_bin(name: str) -> str | None:
    """A PostgreSQL server binary: on PATH, else in Debian's versioned folder."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _user_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _available() -> bool:
    # As root the cluster must belong to another user: Debian's package creates postgres.
    runnable = os.geteuid() != 0 or _user_exists("postgres")
    return bool(find_bin("initdb") and find_bin("pg_ctl") and installed("psycopg") and runnable)


needs_postgres = pytest.mark.skipif(not _available() and not require_extras(), reason=PG_REASON)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """One PostgreSQL cluster in a temporary directory, on a loopback port."""

    def __init__(self) -> None:
        initdb, pg_ctl = find_bin("initdb"), find_bin("pg_ctl")
        if not initdb or not pg_ctl:
            raise RuntimeError(PG_REASON)
        self.initdb, self.pg_ctl = initdb, pg_ctl
        self.root = Path(tempfile.mkdtemp(prefix="legaleval-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:  # postgres refuses root: the cluster is the postgres user's
            shutil.chown(self.root, "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self._run([initdb, "-D", str(self.data), "-A", "trust", "-U", "postgres",
                   "-E", "UTF8", "--no-sync"])  # fmt: skip

    def _run(self, command: list[str]) -> None:
        done = subprocess.run(
            [*self.as_user, *command], capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{command[0]} failed ({done.returncode}): {done.stderr[-2000:]}")

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> PostgresServer:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run([self.pg_ctl, "-D", str(self.data), "-o", options,
                   "-l", str(self.root / "server.log"), "-w", "-t", "60", "start"])  # fmt: skip
        return self

    def stop(self, mode: str = "fast") -> None:
        self._run([self.pg_ctl, "-D", str(self.data), "-m", mode, "-w", "stop"])

    def create_database(self) -> str:
        """A new empty database; its URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def remove(self) -> None:
        try:
            self.stop("immediate")
        except RuntimeError:
            pass  # already stopped
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for this session (and this xdist worker)."""
    if not _available() and not require_extras():
        pytest.skip(PG_REASON)
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> str:
    """The URL of a fresh database on the session's server."""
    return postgres_server.create_database()
