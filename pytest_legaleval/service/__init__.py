"""The Dataset Contract's batch service: ``legaleval serve``.

What it is for: teams point their upload tooling, dashboards and other languages at an
HTTP API instead of running pytest. A client uploads a contract document
(``POST /v1/runs``) and gets the contract's §2 answer — HTTP 202 with ``record_errors``, or
the 400/413 envelope and no run; the run then moves through the §3.1 states in a worker
process and leaves the eight §4.1 artifacts, served with their sha256 and deleted after
the §4.3 retention periods.

One code path: a worker evaluates a run with
:func:`pytest_legaleval.pipeline.driver.run_evaluation`, the same planning, engine, grading and
run-directory code as ``pytest suites/``; nothing here grades or writes an artifact itself.

Main names: :class:`Service` and :func:`serve` (``server``), :func:`create_app` (``app``,
FastAPI; its routers in ``routes``, their dependencies in ``deps``, the upload in
``uploads``), :class:`Database`, :class:`RunTable` and :func:`open_database` (``database``:
where the state lives), :class:`RunStore` (``store``, the SQLite run table), :class:`RunQueue`
and :class:`SqliteRunQueue` (``queue``), :class:`PgRunStore` and :class:`PgRunQueue`
(``pgstore``, ``pgqueue``: the same on PostgreSQL, with leases; ``postgres`` connects,
migrates and locks), :class:`WorkerPool` (``workers``, the supervisor) and
``worker`` (one worker's loop), :func:`execute` (``execution``: fresh or continued runs),
``mirror`` (a run's state into the table), ``storage`` (locks waited out, full disks
named), :class:`HealthMonitor` (``health``), :class:`UploadValidator` (``validation``),
:func:`sweep` (``retention``), :class:`Tokens` (``auth``), :class:`ServiceConfig`
(``config``); ``review`` (the expert review page and its API, under
``/v1/runs/{run_id}/review/`` and for ``legaleval review``).

It must never import pytest (or ``_pytest``), nor the ``cli`` package. Only ``app``,
``deps``, ``files``, ``handlers``, ``models``, ``routes``, ``review``, ``uploads`` and
``server`` import FastAPI, Starlette or Hypercorn (the ``[serve]`` extra); the workers and
``client`` never do. Names are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_legaleval.util.lazy import lazy_getattr

if TYPE_CHECKING:
    from pytest_legaleval.service.app import Backend as Backend
    from pytest_legaleval.service.app import create_app as create_app
    from pytest_legaleval.service.auth import Tokens as Tokens
    from pytest_legaleval.service.config import (
        DataDir as DataDir,
    )
    from pytest_legaleval.service.config import (
        Limits as Limits,
    )
    from pytest_legaleval.service.config import (
        Retention as Retention,
    )
    from pytest_legaleval.service.config import (
        ServiceConfig as ServiceConfig,
    )
    from pytest_legaleval.service.database import Database as Database
    from pytest_legaleval.service.database import RunTable as RunTable
    from pytest_legaleval.service.database import open_database as open_database
    from pytest_legaleval.service.execution import execute as execute
    from pytest_legaleval.service.health import HealthMonitor as HealthMonitor
    from pytest_legaleval.service.pgqueue import PgRunQueue as PgRunQueue
    from pytest_legaleval.service.pgstore import PgRunStore as PgRunStore
    from pytest_legaleval.service.queue import (
        RunQueue as RunQueue,
    )
    from pytest_legaleval.service.queue import (
        SqliteRunQueue as SqliteRunQueue,
    )
    from pytest_legaleval.service.retention import sweep as sweep
    from pytest_legaleval.service.server import Service as Service
    from pytest_legaleval.service.server import serve as serve
    from pytest_legaleval.service.store import RunStore as RunStore
    from pytest_legaleval.service.validation import UploadValidator as UploadValidator
    from pytest_legaleval.service.workers import WorkerPool as WorkerPool

_LAZY = {
    "Backend": "app",
    "create_app": "app",
    "Tokens": "auth",
    "DataDir": "config",
    "Limits": "config",
    "Retention": "config",
    "ServiceConfig": "config",
    "Database": "database",
    "RunTable": "database",
    "open_database": "database",
    "execute": "execution",
    "HealthMonitor": "health",
    "RunQueue": "queue",
    "SqliteRunQueue": "queue",
    "PgRunQueue": "pgqueue",
    "PgRunStore": "pgstore",
    "sweep": "retention",
    "Service": "server",
    "serve": "server",
    "RunStore": "store",
    "UploadValidator": "validation",
    "WorkerPool": "workers",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(__name__, {name: f"{__name__}.{m}" for name, m in _LAZY.items()})
