"""The result cache in PostgreSQL (``engine.pgcache``) on a real server: the SQLite cache's
contract — durable before the callback, a bad row costs only itself, nothing lost on a
dropped connection."""

from __future__ import annotations

import threading

import pytest

from pytest_legaleval.engine.cache import CachedRow
from pytest_legaleval.errors import ConfigError

from ..pg_server import needs_postgres, pg_url, postgres_server  # noqa: F401 (fixtures)

pytestmark = needs_postgres


def _row(key: str, text: str = "an answer") -> CachedRow:
    return CachedRow(key, text, "stop", 12, 3, 41.5, "openai/m", "2026-01-01T00:00:00.000Z")


def _put(cache: object, row: CachedRow) -> None:
    done = threading.Event()
    cache.put(row, done.set)  # type: ignore[attr-defined]
    assert done.wait(30)


def test_rows_are_durable_before_the_callback_and_shared(pg_url: str) -> None:  # noqa: F811
    from pytest_legaleval.engine.pgcache import PgResultCache

    first = PgResultCache(pg_url, scrub=lambda text: text.replace("sk-secret", "[key]"))
    _put(first, _row("k1", "uses sk-secret"))
    _put(first, _row("k1", "replaced"))  # the newest answer wins, as in SQLite
    second = PgResultCache(pg_url)  # another process, another replica: the same rows
    assert second.get("k1") == _row("k1", "replaced")
    assert second.get_many(["k1", "k2", "k1"]).keys() == {"k1"}
    _put(first, _row("k3", "uses sk-secret"))
    assert second.get("k3") == _row("k3", "uses [key]")
    # a row PostgreSQL refuses (NUL in text) costs only itself; its waiter is released
    done = threading.Event()
    first.put(_row("bad", "a\x00b"), done.set)
    _put(first, _row("k4"))
    assert done.wait(30) and first.write_errors == 1
    assert second.get_many(["bad", "k4"]).keys() == {"k4"}
    first.close()
    first.close()  # idempotent
    _put(first, _row("late"))  # after close: released at once, not stored
    assert second.get("late") is None
    second.close()


def test_a_dropped_connection_is_opened_again(pg_url: str) -> None:  # noqa: F811
    import psycopg

    from pytest_legaleval.engine.pgcache import PgResultCache

    cache = PgResultCache(pg_url)
    _put(cache, _row("a"))
    with psycopg.connect(pg_url, autocommit=True) as admin:  # end every other session
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    assert cache.get("a") is None  # the read fails once (every call would be made) ...
    assert cache.get("a") == _row("a")  # ... and the next one reconnects
    _put(cache, _row("b"))  # the writer reconnects too
    assert cache.get("b") == _row("b") and cache.write_errors == 0
    cache.close()


def test_an_unusable_database_is_a_config_error_without_the_password() -> None:
    import socket

    from pytest_legaleval.engine.pgcache import PgResultCache

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        with pytest.raises(ConfigError, match="Cannot use the result cache") as caught:
            PgResultCache(f"postgresql://u:hunter2pw@127.0.0.1:{port}/cachedb")
    assert "hunter2pw" not in str(caught.value) and f"127.0.0.1:{port}/cachedb" in str(caught.value)
