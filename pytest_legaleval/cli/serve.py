"""``legaleval serve``: the Dataset Contract's HTTP service (extra ``[serve]``).

The run options are the pytest plugin's (``pipeline.settings.OPTIONS``), registered here
under the same names and resolved by the same precedence (command line > YAML > defaults),
less the ones each upload decides (the dataset, the run id and directory, the selection)
and the gates (``legaleval submit --gate`` applies those).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.pipeline.settings import OPTIONS, find_config_file, resolve_settings

__all__ = ["DATABASE_ENV", "PER_RUN", "register"]

PER_RUN = frozenset(
    {
        "dataset", "dataset_format", "responses", "conversation_from", "run_dir", "run_id",
        "limit", "sample", "shard", "gate", "baseline", "max_regression", "regression_alpha",
        "protocol", "judgments", "human_labels", "estimate_only",
    }
)  # fmt: skip
"""Run options the service does not take: each upload decides them, or the client does.

``protocol`` applies to ``SOURCE:PATH`` imports, which an upload is not; ``judgments`` and
``human_labels`` name files about one dataset's records, so one setting for every upload
would match some and silently miss others (``legaleval audit RUN_DIR --human-labels``
audits a service run afterwards); ``estimate_only`` would make every run stop before it
starts (``legaleval submit`` estimates nothing; ``pytest --estimate-only`` does).
"""

EXIT_USAGE = 2
DATABASE_ENV = "LEGALEVAL_DATABASE_URL"


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def _header_seconds(text: str) -> float:
    value = _seconds(text)
    if value > 60:  # a longer deadline lets idle sockets pile up: it is the attack's lever
        raise argparse.ArgumentTypeError(f"must be <= 60, got {value:g}")
    return value


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "run options", "As in pytest's legaleval group (and legaleval.yaml); each run uses them."
    )
    for spec in OPTIONS:
        if spec.dest in PER_RUN:
            continue
        if spec.switch:
            group.add_argument(
                spec.flag, action="store_const", const="true", dest=spec.dest, help=spec.help
            )
        else:
            group.add_argument(
                spec.flag,
                action="append" if spec.multiple else "store",
                dest=spec.dest,
                metavar=spec.metavar,
                help=spec.help,
            )
    group.add_argument(
        "--no-cache",
        action="store_true",
        help="No response cache (then a run cut short by a crash cannot be continued).",
    )
    group.add_argument(
        "--legaleval-config",
        metavar="FILE",
        help="YAML configuration (default: legaleval.yaml in the current directory, if any).",
    )


def _add_service_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("service")
    group.add_argument("--host", default="127.0.0.1", help="Address to listen on (127.0.0.1).")
    group.add_argument("--port", type=int, default=8000, help="Port (8000; 0 picks a free one).")
    group.add_argument(
        "--data-dir",
        default="legaleval-service",
        metavar="DIR",
        help="Run table, uploads, run directories, response cache (./legaleval-service).",
    )
    group.add_argument(
        "--database",
        default=None,
        metavar="URL",
        help="Where the run table, queue and response cache live: sqlite (in --data-dir, "
        "the default), or postgresql://USER@HOST:PORT/NAME, which several replicas sharing "
        f"--data-dir may use at once (the [postgres] extra). Default: ${DATABASE_ENV} if set "
        "(keeps a password out of the process list).",
    )
    group.add_argument(
        "--lease-seconds",
        type=_seconds,
        default=30.0,
        metavar="S",
        help="PostgreSQL: a replica's claim on a run lasts this long without its heartbeat; "
        "a dead replica's runs are continued elsewhere after it (30).",
    )
    group.add_argument("--workers", type=_positive, default=2, help="Runs evaluated at once (2).")
    group.add_argument(
        "--max-queued", type=_positive, default=100, help="Runs waiting at most; then 429 (100)."
    )
    group.add_argument(
        "--max-runs-per-token",
        type=_positive,
        default=20,
        help="Runs of one token queued or running at most; then 429 (20).",
    )
    group.add_argument(
        "--http-timeout",
        type=_seconds,
        default=30.0,
        metavar="S",
        help="Seconds a client may stall mid-upload or mid-download (30).",
    )
    group.add_argument(
        "--header-timeout",
        type=_header_seconds,
        default=5.0,
        metavar="S",
        help="Seconds a connection may take to send its request headers, or stay idle "
        "between requests, before it is closed (5; at most 60).",
    )
    group.add_argument(
        "--body-timeout",
        type=_seconds,
        default=60.0,
        metavar="S",
        help="Seconds a request's whole body may take to arrive after its headers, however "
        "slowly it trickles, with or without a token; then 408 and the connection is closed "
        "(60).",
    )
    group.add_argument(
        "--retention-days-raw",
        type=int,
        default=30,
        metavar="DAYS",
        help="Delete raw artifacts and uploads this long after a run ends (30, the minimum).",
    )
    group.add_argument(
        "--retention-days-summary",
        type=int,
        default=180,
        metavar="DAYS",
        help="Delete manifests and metrics this long after a run ends (180, the minimum).",
    )
    group.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))


def register(subparsers: Any) -> None:
    """Add the ``serve`` subcommand."""
    parser = subparsers.add_parser(
        "serve",
        help="serve the Dataset Contract's HTTP API: upload datasets, get runs and artifacts",
        description="POST /v1/runs takes a Dataset Contract v1 document (or legal_eval_v1 "
        "JSONL rows, application/x-ndjson) and queues a run; "
        "GET /v1/runs[/{id}], /v1/runs/{id}/artifacts[/{name}], POST /v1/runs/{id}/cancel, "
        "GET /healthz; the schema is at /openapi.json. Tokens come from "
        "LEGALEVAL_API_TOKENS (comma-separated); without them only loopback clients are "
        "served. Several replicas may share one PostgreSQL database (--database) and one "
        "--data-dir. Needs the [serve] extra.",
    )
    _add_run_options(parser)
    _add_service_options(parser)
    parser.set_defaults(func=_cmd_serve)


def _config(args: argparse.Namespace) -> Any:
    from pytest_legaleval.engine.routing import check_models
    from pytest_legaleval.service.auth import Tokens
    from pytest_legaleval.service.config import (
        MIN_RAW_DAYS,
        MIN_SUMMARY_DAYS,
        DataDir,
        Limits,
        Retention,
        ServiceConfig,
        service_settings,
    )

    config_file = find_config_file(Path.cwd(), args.legaleval_config)
    values = {
        spec.dest: getattr(args, spec.dest, None) for spec in OPTIONS if spec.dest not in PER_RUN
    }
    settings = resolve_settings(values, config_file=config_file, no_cache=args.no_cache)
    if settings.responses:
        raise ConfigError("legaleval serve evaluates models live: drop 'responses' from the YAML")
    if not settings.model:
        raise ConfigError(
            "legaleval serve needs --model PROVIDER/NAME (repeatable): the model(s) uploaded "
            "datasets are evaluated with"
        )
    check_models(settings)
    if args.retention_days_raw < MIN_RAW_DAYS:
        raise ConfigError(
            f"--retention-days-raw {args.retention_days_raw}: the contract keeps raw "
            f"artifacts at least {MIN_RAW_DAYS} days"
        )
    if args.retention_days_summary < max(MIN_SUMMARY_DAYS, args.retention_days_raw):
        raise ConfigError(
            f"--retention-days-summary {args.retention_days_summary}: summaries are kept at "
            f"least {MIN_SUMMARY_DAYS} days, and no shorter than raw artifacts"
        )
    data = DataDir(Path(args.data_dir).resolve())
    from pytest_legaleval.service.database import open_database

    url = args.database if args.database is not None else os.environ.get(DATABASE_ENV) or None
    database = open_database(url, data.state, lease_s=args.lease_seconds)
    return ServiceConfig(
        settings=service_settings(settings, data, database),
        data=data,
        host=args.host,
        port=args.port,
        workers=args.workers,
        limits=Limits(
            max_queued=args.max_queued,
            max_runs_per_token=args.max_runs_per_token,
            http_timeout=args.http_timeout,
            header_timeout=args.header_timeout,
            body_timeout=args.body_timeout,
        ),
        retention=Retention(args.retention_days_raw, args.retention_days_summary),
        tokens=Tokens.from_env(),
        db=None if database.kind == "sqlite" else database,
    )


def _cmd_serve(args: argparse.Namespace) -> int:
    try:
        import fastapi  # noqa: F401
        import hypercorn  # noqa: F401
    except ImportError:
        print(
            "legaleval serve: the service needs the [serve] extra: "
            "pip install 'pytest-legaleval[serve]'",
            file=sys.stderr,
        )
        return EXIT_USAGE
    logging.basicConfig(level=args.log_level.upper(), format="%(message)s")
    config = _config(args)
    from pytest_legaleval.service.server import serve

    return serve(config)
