"""Validating an upload before answering it: the contract's §2 bodies, off the HTTP process.

The document is read and checked by the same loader a run uses (``formats.load_dataset``
with the ``contract_v1`` format), in a separate process: parsing a 100 MB document takes
seconds and a good deal of memory, and neither may stall or bloat the process that answers
HTTP. Small uploads go to a pool of long-lived processes; a large one gets a process of its
own that ends with it, so its memory goes back to the system.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError, DatasetRejected
from pytest_legaleval.run.directory import file_sha256

__all__ = ["LARGE_UPLOAD_BYTES", "Checked", "UploadValidator", "check_upload"]

LARGE_UPLOAD_BYTES = 8 * 1024 * 1024
"""Uploads from this size on are validated in a process of their own."""


@dataclass(frozen=True, slots=True)
class Checked:
    """The verdict on one uploaded document (what crosses the process boundary)."""

    status: int
    """202, 400 or 413."""
    body: dict[str, Any]
    """The §2 body without ``request_id`` (and, for 202, without ``run_id``)."""
    dataset: dict[str, Any] | None = None
    """For 202: ``dataset_id``, ``dataset_version``, ``schema_version``, ``sha256``, ``bytes``."""
    valid_records: int = 0
    """For 202: records that will be evaluated."""


def check_upload(path: str, fmt: str = "contract_v1") -> Checked:
    """Validate one stored upload as a run will load it; never raises for bad content.

    ``fmt`` is ``contract_v1`` (a Dataset Contract document) or ``legal_eval_v1`` (JSONL
    rows of any task type, sent as ``application/x-ndjson``): both answer the same §2
    bodies, with the contract's limits on the number of records and on each record.
    """
    from pytest_legaleval.formats import load_dataset
    from pytest_legaleval.validation import MAX_RECORDS

    # Uploaded rows keep the contract's per-record limits (the 256 KB record, metadata).
    load_as = "legal_eval_v1_upload" if fmt == "legal_eval_v1" else fmt
    try:
        loaded = load_dataset([path], load_as)
        if fmt != "contract_v1" and sum(d.total_records for d in loaded.datasets) > MAX_RECORDS:
            raise DatasetRejected(
                f"records exceeds the maximum count of {MAX_RECORDS:,} per upload",
                details={"max_records": MAX_RECORDS},
            )
        if not loaded.datasets:  # a file's rows make one dataset entry, whatever they name
            raise DatasetRejected("records must have at least 1 item: the upload has no rows")
    except DatasetRejected as exc:
        return Checked(exc.status, {"error": exc.envelope("")["error"]})
    except ConfigError as exc:  # unreadable: the upload vanished under us
        return Checked(400, {"error": {"code": "invalid_request", "message": str(exc)}})
    (info,) = loaded.datasets
    rejected = info.total_records - info.accepted_records
    body = {
        "status": "accepted_with_record_errors" if rejected else "accepted",
        "summary": {
            "total_records": info.total_records,
            "accepted_records": info.accepted_records,
            "rejected_records": rejected,
        },
        "record_errors": [error.to_dict() for error in loaded.errors],
    }
    dataset = {
        "dataset_id": info.dataset_id,
        "dataset_version": info.dataset_version,
        "schema_version": info.schema_version,
        "sha256": info.sha256 or file_sha256(Path(path)),
        "bytes": Path(path).stat().st_size,
    }
    return Checked(202, body, dataset, info.accepted_records)


def _die_with_parent(parent: int) -> None:
    """A validation process ends with the service (see ``service.workers``)."""
    from pytest_legaleval.service.workers import die_with_parent

    die_with_parent(parent)


def _warm() -> bool:
    """Import the loader in a fresh pool process, so the first upload does not wait for it."""
    import pytest_legaleval.formats  # noqa: F401

    return True


class UploadValidator:
    """Runs :func:`check_upload` in other processes, at most ``processes`` large ones at once."""

    def __init__(self, processes: int = 1, timeout_s: float = 600.0) -> None:
        self._context = multiprocessing.get_context("spawn")
        self._processes = processes
        self._pool = self._executor(processes)
        self._large = threading.BoundedSemaphore(processes)
        self.timeout_s = timeout_s

    def _executor(self, processes: int, tasks: int | None = None) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=processes,
            mp_context=self._context,
            initializer=_die_with_parent,
            initargs=(os.getpid(),),
            max_tasks_per_child=tasks,
        )

    def warm(self) -> None:
        """Start the pool's processes now (the first upload then finds them ready)."""
        self._pool.submit(_warm).result(timeout=120)

    async def check(self, path: Path, fmt: str = "contract_v1") -> Checked:
        """The verdict on ``path``, computed in another process.

        Raises:
            TimeoutError: the validation took longer than ``timeout_s``.
            BrokenProcessPool: the validation process died twice.

        """
        if path.stat().st_size >= LARGE_UPLOAD_BYTES:
            return await asyncio.wait_for(
                asyncio.to_thread(self._check_large, path, fmt), self.timeout_s
            )
        try:
            future = self._pool.submit(check_upload, str(path), fmt)
            return await asyncio.wait_for(asyncio.wrap_future(future), self.timeout_s)
        except BrokenProcessPool:
            # A validation process died (killed, out of memory): start a fresh pool and
            # try once more; a second death is the caller's error to answer.
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._executor(self._processes)
            future = self._pool.submit(check_upload, str(path), fmt)
            return await asyncio.wait_for(asyncio.wrap_future(future), self.timeout_s)

    def _check_large(self, path: Path, fmt: str = "contract_v1") -> Checked:
        with self._large:
            # max_tasks_per_child=1: the process ends after this document, with its memory.
            with self._executor(1, tasks=1) as one:
                return one.submit(check_upload, str(path), fmt).result(timeout=self.timeout_s)

    def close(self) -> None:
        """Stop the pool (pending validations are cancelled)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
