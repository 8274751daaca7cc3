"""``legaleval batches --cache PATH``: the provider batches a cache still waits on.

A ``--batch`` run stores every batch it submits in its cache database before it waits on
it (``engine.batch_store``). A run that was killed, or stopped before its batches ended,
leaves them there; this command lists them — id, status last seen, model, endpoint,
requests still owed and age — so one knows what a rerun with the same cache will collect
(it polls and downloads them; nothing is submitted again). Reads the file only; no call
is made. ``--json`` prints one JSON object per batch.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from pytest_legaleval.run.console import printable, printable_json

__all__ = ["register"]


def _cmd_batches(args: argparse.Namespace) -> int:
    from pytest_legaleval.engine.batch_store import format_age, pending_batches

    rows = pending_batches(args.cache)
    now = time.time()
    if args.json:
        for row in rows:
            entry = {
                "batch_id": row.batch_id,
                "status": row.status,
                "model": row.model,
                "endpoint": row.endpoint,
                "requests": row.requests,
                "owed": row.owed,
                "attempt": row.attempt,
                "created_at": row.created_at,
                "age_s": round(now - row.created_epoch, 1),
            }
            print(printable_json(entry, indent=None))
        return 0
    if not rows:
        print(f"{args.cache}: no pending batches")
        return 0
    oldest = max(now - row.created_epoch for row in rows)
    print(
        f"{args.cache}: {len(rows)} pending batch{'es' if len(rows) != 1 else ''}, the oldest "
        f"{format_age(oldest)} old; a run with this cache collects them"
    )
    for row in rows:
        # Ids and names come from a provider and a config file: printable only.
        line = (
            f"  {row.batch_id}  {row.status:<11}  {row.model}  {row.owed}/{row.requests} "
            f"requests owed  {format_age(now - row.created_epoch)} old  {row.endpoint}"
        )
        print(printable(line))
    return 0


def register(subparsers: Any) -> None:
    """Add the ``batches`` subcommand."""
    parser = subparsers.add_parser(
        "batches",
        help="list the provider batches (--batch) a cache still waits on",
        description="List the batches a --batch run submitted and did not collect (it was "
        "killed or stopped): a rerun with the same --cache polls and downloads them instead "
        "of submitting again. Reads the cache only.",
    )
    parser.add_argument(
        "--cache", default=".legaleval/cache.sqlite", metavar="PATH", help="the run's --cache"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per batch")
    parser.set_defaults(func=_cmd_batches)
