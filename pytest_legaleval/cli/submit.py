"""``legaleval submit DOC --server URL``: a run on a shared service, as CI would use it.

Uploads the document (a Dataset Contract v1 document, or ``legal_eval_v1`` JSONL converted
into one: ``service.documents``), polls the run with a progress display, downloads the
artifacts (each checked against its sha256) and exits as a pytest run would: 0 when
everything passed (or, with ``--gate``, when every gate holds), 1 when records or gates
failed, 2 when nothing was judged — a usage error, a rejected dataset, a run cancelled
(Ctrl-C cancels it on the service) —, 3 when the run or the service failed
(``cli/exit_codes.py``, the table of every command). The token is read from
an environment variable (``LEGALEVAL_API_TOKEN``), never from the command line. Standard
library only: no extra is needed to submit.

Nothing the server says is trusted (``service.client``): the run id must be one before it
names ``legaleval-runs/<run_id>``, only the contract's artifacts are written, a
``Retry-After`` that is not a non-negative number is ignored, and every server string
shown has its control characters escaped.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_legaleval.cli import exit_codes
from pytest_legaleval.errors import ConfigError, DatasetRejected, LegalEvalError
from pytest_legaleval.metrics._artifacts import (
    METRICS_BY_SLICE,
    METRICS_SUMMARY,
    PREDICTIONS,
    RECORD_VALIDATION,
)
from pytest_legaleval.service.client import (
    ServiceClient,
    ServiceError,
    checked_run_id,
    parse_retry_after,
    printable,
    printable_json,
)

__all__ = ["EXIT_CODES", "register"]

# The table of every command (cli/exit_codes.py): a usage error is 2 like a rejected dataset
# or a cancelled run — nothing was judged (it was 4 here alone).
EXIT_OK = exit_codes.EXIT_OK
EXIT_FAILED = exit_codes.EXIT_FINDINGS  # failed records or gates
EXIT_INTERRUPTED = EXIT_USAGE = exit_codes.EXIT_USAGE
EXIT_ERROR = exit_codes.EXIT_FAILED  # the run or the service failed
EXIT_CODES = {
    "completed": EXIT_OK,
    "completed_with_failures": EXIT_FAILED,
    "cancelled": EXIT_INTERRUPTED,
    "failed": EXIT_ERROR,
}
"""The exit status of a run's terminal state (without ``--gate``)."""
_SHOWN_ERRORS = 20
RUNS_FOLDER = Path("legaleval-runs")
_DEFAULT_WAIT_S = 5.0
_RETRIED = (429, 503)
"""Answers that mean "not now": the upload is sent again after ``Retry-After``."""


def register(subparsers: Any) -> None:
    """Add the ``submit`` subcommand."""
    parser = subparsers.add_parser(
        "submit",
        help="run a dataset on a legaleval service and exit with its gate result",
        description="Upload DOC (a Dataset Contract v1 document, or legal_eval_v1 JSONL rows "
        "of any task type: reference rows converted into a contract document, others sent "
        "as JSONL) to a `legaleval serve` service, follow the run, download its "
        "artifacts and exit: 0 passed, 1 failed records or gates, 2 usage error, rejected "
        "or cancelled, 3 run or service failure.",
    )
    parser.add_argument(
        "document",
        metavar="DOC",
        help="a Dataset Contract v1 JSON document, or a legal_eval_v1 JSONL file",
    )
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


def _count(value: object) -> int:
    """A count from the server: a non-negative int, else 0 (a hostile value shows nothing)."""
    return value if type(value) is int and 0 <= value < 1 << 53 else 0


class _Progress:
    """One updating line on a terminal, a line per change elsewhere."""

    def __init__(self, quiet: bool, run_id: str) -> None:
        self.quiet = quiet
        self.run_id = run_id
        self.tty = sys.stderr.isatty()
        self.last: tuple[str, int] | None = None

    def show(self, run: dict[str, Any]) -> None:
        if self.quiet:
            return
        status = printable(run.get("status"), 40)
        progress = run.get("progress")
        progress = progress if isinstance(progress, dict) else {}
        total = _count(progress.get("total"))
        done = min(_count(progress.get("done")), total)
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
            print(f"{self.run_id}: {status} {done}/{total}", file=sys.stderr, flush=True)

    def end(self) -> None:
        if self.tty and not self.quiet:
            sys.stderr.write("\n")


def _upload(
    client: ServiceClient,
    document: Path,
    model: str | None,
    deadline: float | None,
    media: str = "application/json",
) -> dict[str, Any]:
    """POST the document; wait and retry while the service says "not now" (429, 503)."""
    while True:
        status, headers, body = client.upload(document, model, media)
        if status not in _RETRIED:
            break
        wait = parse_retry_after(headers.get("retry-after"), _DEFAULT_WAIT_S)
        if deadline is not None and time.monotonic() + wait > deadline:
            raise ServiceError(status, body)
        why = "busy" if status == 429 else "unavailable"
        print(f"legaleval submit: the service is {why}; retrying in {wait:g} s", file=sys.stderr)
        time.sleep(wait)
    if status in (400, 413):
        print(f"HTTP {status}", file=sys.stderr)
        print(printable_json(body))
        raise _Exit(EXIT_INTERRUPTED)
    if status != 202 or not isinstance(body, dict):
        raise ServiceError(status, body)
    return body


class _Exit(LegalEvalError):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _accepted(run_id: str, body: dict[str, Any]) -> None:
    summary = body.get("summary")
    summary = summary if isinstance(summary, dict) else {}
    print(
        f"{run_id}: {printable(body.get('status'), 60)} "
        f"({_count(summary.get('accepted_records'))} of "
        f"{_count(summary.get('total_records'))} records accepted)",
        file=sys.stderr,
    )
    errors = body.get("record_errors")
    errors = errors if isinstance(errors, list) else []
    for error in errors[:_SHOWN_ERRORS]:
        error = error if isinstance(error, dict) else {"message": error}
        shown = f"{error.get('path')}: {error.get('code')}: {error.get('message')}"
        print(f"  {printable(shown, 500)}", file=sys.stderr)
    if len(errors) > _SHOWN_ERRORS:
        print(f"  … {len(errors) - _SHOWN_ERRORS} more in {RECORD_VALIDATION}", file=sys.stderr)


def _follow(
    client: ServiceClient, run_id: str, args: argparse.Namespace, deadline: float | None
) -> dict[str, Any]:
    """Poll until the run ends; Ctrl-C asks the service to cancel it and waits for that."""
    progress = _Progress(args.quiet, run_id)
    cancelled = False
    try:
        while True:
            try:
                run = client.json("GET", f"/v1/runs/{run_id}")
                progress.show(run)
                if isinstance(run.get("status"), str) and run["status"] in EXIT_CODES:
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
    from pytest_legaleval.metrics._gates import default_gates, evaluate_gates, parse_gates
    from pytest_legaleval.metrics._runfiles import (
        invalid_items,
        load_run,
        prediction_lines,
        slice_finder,
    )
    from pytest_legaleval.records import PredictionLine

    run = load_run(run_dir, with_predictions=False)
    gates = parse_gates(texts)

    class Rows:
        def __iter__(self) -> Iterator[PredictionLine]:
            return prediction_lines(run_dir / PREDICTIONS)

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

    if run_dir is not None and (run_dir / METRICS_SUMMARY).is_file():
        try:
            summary = json.loads((run_dir / METRICS_SUMMARY).read_text(encoding="utf-8"))
            by_slice_path = run_dir / METRICS_BY_SLICE
            by_slice = (
                json.loads(by_slice_path.read_text(encoding="utf-8"))
                if by_slice_path.is_file()
                else None
            )
            for line in summary_lines(summary, by_slice):
                print(printable(line, 1000))
        except Exception as exc:  # the service wrote them: they may be anything
            print(f"legaleval submit: cannot show the run's metrics: {printable(exc, 300)}")
    error = run.get("error")
    print(
        f"status: {printable(run.get('status'), 40)}"
        + (f" ({printable(error, 1000)})" if error else "")
    )
    if run_dir is not None:
        print(f"run directory: {run_dir}")


NDJSON = "application/x-ndjson"


@contextmanager
def _upload_file(document: Path) -> Iterator[tuple[Path, str]]:
    """The file to upload and its media type.

    A contract document goes as it is. ``legal_eval_v1`` rows a contract document can carry
    (reference questions) go as one, as before; any other rows — MCQ, rubric, multi-turn,
    attachments — go as they are, as JSONL (``application/x-ndjson``), and the service
    validates them as a pytest run would.
    """
    from pytest_legaleval.service.documents import (
        NotUploadable,
        contract_document,
        document_format,
        write_document,
    )

    if document_format(document) == "contract_v1":
        yield document, "application/json"
        return
    try:
        converted = contract_document(document)
    except NotUploadable as exc:
        why = (str(exc).splitlines() or [""])[0]
        print(
            f"legaleval submit: {document} holds legal_eval_v1 rows a Dataset Contract "
            f"document cannot carry ({printable(why, 300)}): uploading them as JSONL",
            file=sys.stderr,
        )
        yield document, NDJSON
        return
    print(
        f"legaleval submit: {document} holds legal_eval_v1 rows: uploading them as a Dataset "
        f"Contract document of {len(converted['records'])} record(s)",
        file=sys.stderr,
    )
    with tempfile.TemporaryDirectory(prefix="legaleval-submit-") as folder:
        yield (
            write_document(converted, Path(folder) / f"{document.stem}.contract.json"),
            "application/json",
        )


def _run_folder(args: argparse.Namespace, run_id: str) -> Path:
    """Where the run is downloaded: ``--out``, else ``legaleval-runs/<run_id>`` (checked)."""
    if args.out:
        return Path(args.out)  # the user named it
    target = RUNS_FOLDER / checked_run_id(run_id)
    if target.is_symlink() or target.resolve().parent != RUNS_FOLDER.resolve():
        raise ConfigError(f"{target} is a symbolic link; remove it or pass --out")
    return target


def _submit(args: argparse.Namespace) -> int:
    document = Path(args.document)
    if not document.is_file():
        raise ConfigError(f"{args.document}: no such file")
    if args.gate:
        from pytest_legaleval.metrics._gates import parse_gates

        parse_gates(args.gate)  # a malformed gate fails before anything is uploaded
    client = ServiceClient(args.server, os.environ.get(args.token_env) or None)
    deadline = time.monotonic() + args.timeout if args.timeout else None
    with _upload_file(document) as (upload, media):
        accepted = _upload(client, upload, args.model, deadline, media)
    run_id = checked_run_id(accepted.get("run_id"))
    _accepted(run_id, accepted)
    run = _follow(client, run_id, args, deadline)
    run_dir: Path | None = None
    listing = client.json("GET", f"/v1/runs/{run_id}/artifacts", expect=(200, 404, 410))
    if listing.get("artifacts"):
        run_dir = _run_folder(args, run_id)
        _, refused = client.download_run(run_id, listing["artifacts"], run_dir)
        for entry in refused:
            print(f"legaleval submit: not downloaded (not an artifact): {entry}", file=sys.stderr)
    _report(run, run_dir)
    status = run["status"]
    if status in ("failed", "cancelled") or not args.gate or run_dir is None:
        return EXIT_CODES.get(status, EXIT_ERROR)
    try:
        held = _gates(run_dir, args.gate)
    except (ValueError, TypeError, KeyError, OSError) as exc:
        raise ServiceError(0, f"cannot check the gates on the run's artifacts: {exc}") from None
    return EXIT_OK if held else EXIT_FAILED


def _cmd_submit(args: argparse.Namespace) -> int:
    try:
        return _submit(args)
    except _Exit as done:
        return done.code
    except DatasetRejected as exc:
        print(f"legaleval submit: the dataset is rejected: {printable(exc, 2000)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except ConfigError as exc:
        print(f"legaleval submit: error: {printable(exc, 4000)}", file=sys.stderr)
        for error in getattr(exc, "errors", [])[:_SHOWN_ERRORS]:
            shown = f"{error.get('path')}: {error.get('code')}: {error.get('message')}"
            print(f"  {printable(shown, 500)}", file=sys.stderr)
        from pytest_legaleval.service.documents import NotUploadable

        return EXIT_INTERRUPTED if isinstance(exc, NotUploadable) else EXIT_USAGE
    except ServiceError as exc:
        print(f"legaleval submit: {exc}", file=sys.stderr)
        return EXIT_USAGE if exc.status in (401, 403) else EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
