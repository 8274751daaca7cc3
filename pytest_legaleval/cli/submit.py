"""``legaleval submit DOC.json --server URL``: a run on a shared service, as CI would use it.

Uploads the document, polls the run with a progress display, downloads the artifacts
(each checked against its sha256) and exits as a pytest run would: 0 when everything
passed (or, with ``--gate``, when every gate holds), 1 when records or gates failed, 2 when
the dataset was rejected or the run cancelled (Ctrl-C cancels it on the service), 3 when
the run or the service failed, 4 for a usage error. The token is read from an environment
variable (``LEGALEVAL_API_TOKEN``), never from the command line. Standard library only: no
extra is needed to submit.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.service.client import ServiceClient, ServiceError

__all__ = ["EXIT_CODES", "register"]

EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_ERROR, EXIT_USAGE = 0, 1, 2, 3, 4
EXIT_CODES = {
    "completed": EXIT_OK,
    "completed_with_failures": EXIT_FAILED,
    "cancelled": EXIT_INTERRUPTED,
    "failed": EXIT_ERROR,
}
"""The exit status of a run's terminal state (without ``--gate``)."""
_SHOWN_ERRORS = 20


def register(subparsers: Any) -> None:
    """Add the ``submit`` subcommand."""
    parser = subparsers.add_parser(
        "submit",
        help="run a dataset on a legaleval service and exit with its gate result",
        description="Upload DOC (a Dataset Contract v1 document) to a `legaleval serve` "
        "service, follow the run, download its artifacts and exit like a pytest run: 0 "
        "passed, 1 failed records or gates, 2 rejected or cancelled, 3 run or service "
        "failure, 4 usage error.",
    )
    parser.add_argument("document", metavar="DOC", help="the Dataset Contract v1 JSON document")
    parser.add_argument("--server", required=True, metavar="URL", help="e.g. http://127.0.0.1:8000")
    parser.add_argument(
        "--token-env",
        default="LEGALEVAL_API_TOKEN",
        metavar="VAR",
        help="environment variable holding the bearer token (LEGALEVAL_API_TOKEN)",
    )
    parser.add_argument("--model", help="evaluate only this one of the service's models")
    parser.add_argument(
        "--gate", action="append", default=[], metavar="EXPR", help="as pytest's --gate"
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="where the run directory is downloaded (default: legaleval-runs/<run_id>)",
    )
    parser.add_argument("--poll", type=float, default=1.0, metavar="S", help="poll interval (1)")
    parser.add_argument(
        "--timeout", type=float, default=None, metavar="S", help="give up waiting after S seconds"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    parser.set_defaults(func=_cmd_submit)


class _Progress:
    """One updating line on a terminal, a line per change elsewhere."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self.last: tuple[str, int] | None = None

    def show(self, run: dict[str, Any]) -> None:
        if self.quiet:
            return
        status = str(run.get("status"))
        progress = run.get("progress") or {}
        done, total = int(progress.get("done") or 0), int(progress.get("total") or 0)
        if self.tty:
            width = 30
            filled = width * done // total if total else 0
            bar = "#" * filled + "." * (width - filled)
            sys.stderr.write(f"\r[{bar}] {done}/{total} {status:<24}")
            sys.stderr.flush()
            return
        step = max(1, total // 10)
        key = (status, done // step)
        if key != self.last:
            self.last = key
            print(f"{run.get('run_id')}: {status} {done}/{total}", file=sys.stderr, flush=True)

    def end(self) -> None:
        if self.tty and not self.quiet:
            sys.stderr.write("\n")


def _upload(
    client: ServiceClient, document: Path, model: str | None, deadline: float | None
) -> dict[str, Any]:
    """POST the document; wait and retry while the service says it is busy (429)."""
    while True:
        status, headers, body = client.upload(document, model)
        if status != 429:
            break
        wait = float(headers.get("retry-after") or 5)
        if deadline is not None and time.monotonic() + wait > deadline:
            raise ServiceError(429, body)
        print(f"legaleval submit: the service is busy; retrying in {wait:g} s", file=sys.stderr)
        time.sleep(wait)
    if status in (400, 413):
        print(f"HTTP {status}", file=sys.stderr)
        print(json.dumps(body, indent=2, ensure_ascii=False))
        raise _Exit(EXIT_INTERRUPTED)
    if status != 202 or not isinstance(body, dict):
        raise ServiceError(status, body)
    return body


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _accepted(body: dict[str, Any]) -> None:
    summary = body.get("summary") or {}
    print(
        f"{body['run_id']}: {body['status']} ({summary.get('accepted_records')} of "
        f"{summary.get('total_records')} records accepted)",
        file=sys.stderr,
    )
    errors = body.get("record_errors") or []
    for error in errors[:_SHOWN_ERRORS]:
        print(
            f"  {error.get('path')}: {error.get('code')}: {error.get('message')}", file=sys.stderr
        )
    if len(errors) > _SHOWN_ERRORS:
        print(f"  … {len(errors) - _SHOWN_ERRORS} more in record_validation.jsonl", file=sys.stderr)


def _follow(
    client: ServiceClient, run_id: str, args: argparse.Namespace, deadline: float | None
) -> dict[str, Any]:
    """Poll until the run ends; Ctrl-C asks the service to cancel it and waits for that."""
    progress = _Progress(args.quiet)
    cancelled = False
    try:
        while True:
            try:
                run = client.json("GET", f"/v1/runs/{run_id}")
                progress.show(run)
                if run.get("status") in EXIT_CODES:
                    return run
                if deadline is not None and time.monotonic() > deadline and not cancelled:
                    raise ServiceError(
                        0, {"error": {"message": f"run {run_id} did not end in time"}}
                    )
                time.sleep(args.poll)
            except KeyboardInterrupt:
                if cancelled:
                    raise
                cancelled = True
                print(f"\nlegaleval submit: cancelling {run_id} …", file=sys.stderr)
                client.json("POST", f"/v1/runs/{run_id}/cancel", expect=(202, 409))
    finally:
        progress.end()


def _gates(run_dir: Path, texts: list[str]) -> bool:
    from pytest_legaleval.metrics.gates import default_gates, evaluate_gates, parse_gates
    from pytest_legaleval.metrics.runfiles import invalid_items, iter_jsonl, load_run, slice_finder

    run = load_run(run_dir, with_predictions=False)
    gates = parse_gates(texts)

    class Rows:
        def __iter__(self) -> Any:
            return iter_jsonl(run_dir / "predictions.jsonl")

    predicted = {row.get("item_id") for row in Rows()}
    results = evaluate_gates(
        [*gates, *default_gates(gates)],
        Rows(),
        invalid_items(run, predicted),
        summary=run.summary,
        slice_entry=slice_finder(run.slices),
    )
    for result in results:
        print(f"{'passed' if result.passed else 'FAILED'} gate {result.describe()}")
    return all(result.passed for result in results)


def _report(run: dict[str, Any], run_dir: Path | None) -> None:
    from pytest_legaleval.run.console import summary_lines

    if run_dir is not None and (run_dir / "metrics_summary.json").is_file():
        summary = json.loads((run_dir / "metrics_summary.json").read_text(encoding="utf-8"))
        by_slice_path = run_dir / "metrics_by_slice.json"
        by_slice = (
            json.loads(by_slice_path.read_text(encoding="utf-8"))
            if by_slice_path.is_file()
            else None
        )
        for line in summary_lines(summary, by_slice):
            print(line)
    print(f"status: {run.get('status')}" + (f" ({run['error']})" if run.get("error") else ""))
    if run_dir is not None:
        print(f"run directory: {run_dir}")


def _submit(args: argparse.Namespace) -> int:
    document = Path(args.document)
    if not document.is_file():
        raise ConfigError(f"{args.document}: no such file")
    if args.gate:
        from pytest_legaleval.metrics.gates import parse_gates

        parse_gates(args.gate)  # a malformed gate fails before anything is uploaded
    client = ServiceClient(args.server, os.environ.get(args.token_env) or None)
    deadline = time.monotonic() + args.timeout if args.timeout else None
    accepted = _upload(client, document, args.model, deadline)
    _accepted(accepted)
    run_id = accepted["run_id"]
    run = _follow(client, run_id, args, deadline)
    run_dir: Path | None = None
    listing = client.json("GET", f"/v1/runs/{run_id}/artifacts", expect=(200, 404, 410))
    if listing.get("artifacts"):
        run_dir = Path(args.out) if args.out else Path("legaleval-runs") / run_id
        client.download_run(run_id, listing["artifacts"], run_dir)
    _report(run, run_dir)
    status = run["status"]
    if status in ("failed", "cancelled") or not args.gate or run_dir is None:
        return EXIT_CODES.get(status, EXIT_ERROR)
    return EXIT_OK if _gates(run_dir, args.gate) else EXIT_FAILED


def _cmd_submit(args: argparse.Namespace) -> int:
    try:
        return _submit(args)
    except _Exit as done:
        return done.code
    except ConfigError as exc:
        print(f"legaleval submit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ServiceError as exc:
        print(f"legaleval submit: {exc}", file=sys.stderr)
        return EXIT_USAGE if exc.status in (401, 403) else EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
