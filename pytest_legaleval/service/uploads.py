"""``POST /v1/runs`` behind its route: receive, validate, keep, queue — or leave nothing.

Two kinds of body: the Dataset Contract's document (``application/json``, as the contract
says) and ``legal_eval_v1`` JSONL (``application/x-ndjson``: MCQ, rubric, multi-turn — every
task type a pytest run takes), under the same limits, with the same §2 answers.

The body is written to a private folder as it arrives (within 100 MB), validated in another
process, and, when accepted, kept read-only for its run before the run's row is written.
Whatever fails on the way — the client, the validation, a full disk, a locked table — the
request leaves no file behind: the folder is removed, a kept upload whose row could not be
written is deleted, and a full disk is answered 507 naming the cause. Once the row is
written the run exists: a queue entry that cannot be written yet is put back by the health
monitor, so an accepted run is never orphaned.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from pytest_legaleval.run.ids import new_run_id
from pytest_legaleval.service.config import ServiceConfig
from pytest_legaleval.service.deps import Backend, too_busy
from pytest_legaleval.service.http import (
    ApiError,
    Receive,
    check_upload_headers,
    receive_upload,
    storage_answer,
)
from pytest_legaleval.service.storage import DatabaseUnavailable, StorageError, as_storage_error
from pytest_legaleval.service.validation import Checked
from pytest_legaleval.validation import contract as limits

__all__ = ["NDJSON", "Answer", "accept_upload", "upload_format"]

Answer = tuple[int, dict[str, Any], dict[str, str]]
"""Status, JSON body and headers of the answer."""
_log = logging.getLogger(__name__)


NDJSON = "application/x-ndjson"
"""The media type of ``legal_eval_v1`` JSONL uploads (rows of any task type)."""
_JSONL_MEDIA = frozenset({NDJSON, "application/jsonl", "application/x-jsonlines"})


def upload_format(headers: Mapping[str, str]) -> tuple[str, Mapping[str, str]]:
    """The upload's format from its ``Content-Type``, and the headers to check it by.

    ``application/x-ndjson`` (or ``application/jsonl``) is ``legal_eval_v1`` JSONL, checked
    by the same transport rules as the contract's JSON (UTF-8, no compression, the size
    limit); anything else is the contract's document, checked exactly as before.
    """
    media, sep, params = headers.get("content-type", "").partition(";")
    if media.strip().lower() not in _JSONL_MEDIA:
        return "contract_v1", headers
    as_json = {key: headers[key] for key in headers}
    as_json["content-type"] = "application/json" + sep + params
    return "legal_eval_v1", as_json


async def _validate(backend: Backend, target: Path, fmt: str) -> Checked:
    try:
        checked: Checked = await (
            backend.validator.check(target)
            if fmt == "contract_v1"
            else backend.validator.check(target, fmt)
        )
    except TimeoutError:
        raise ApiError(503, "the validation of the upload took too long; try again later") from None
    except BrokenProcessPool:
        raise ApiError(503, "the upload could not be validated; try again later") from None
    return checked


def _keep(config: ServiceConfig, target: Path, run_id: str, fmt: str) -> None:
    """Keep the accepted document, read-only, for its run (its name says its format)."""
    stored = config.data.upload(run_id, fmt)
    try:
        stored.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        target.rename(stored)
        stored.chmod(0o400)
    except BaseException:
        shutil.rmtree(stored.parent, ignore_errors=True)
        raise


def _storage_failure(exc: OSError) -> ApiError | None:
    found = as_storage_error(exc)
    return storage_answer(found) if found is not None else None


async def accept_upload(
    backend: Backend,
    receive: Receive,
    headers: Mapping[str, str],
    *,
    owner: str,
    models: Sequence[str],
    request_id: str,
) -> Answer:
    """Receive, validate and queue one upload; the §2 answer (202, 400 or 413).

    Raises:
        ApiError: 429 for a full queue or a busy token, 400/408/413 for the transport,
            503 when validation or the table is unavailable, 507 when the disk is full.

    """
    config, store = backend.config, backend.store
    _refuse_while_database_lost(backend)
    if await asyncio.to_thread(store.count, "queued") >= config.limits.max_queued:
        raise too_busy(config, f"the queue is full ({config.limits.max_queued} runs waiting)")
    fmt, checked_headers = upload_format(headers)
    check_upload_headers(checked_headers)
    folder = config.data.incoming / uuid.uuid4().hex
    try:
        folder.mkdir(mode=0o700, parents=True)
        target = folder / config.data.upload(run_id="x", fmt=fmt).name
        await receive_upload(
            receive,
            target,
            limit=limits.MAX_PAYLOAD_BYTES,
            idle_timeout=config.limits.http_timeout,
        )
        checked = await _validate(backend, target, fmt)
        if checked.status != 202:
            return checked.status, {**checked.body, "request_id": request_id}, {}
        run_id = new_run_id()
        _keep(config, target, run_id, fmt)
        await _create(backend, checked, run_id, owner, models, request_id)
    except OSError as exc:
        answer = _storage_failure(exc)
        if answer is None:
            raise
        _log.warning("upload %s: %s", request_id, exc)
        raise answer from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    try:
        await asyncio.to_thread(backend.queue.put, run_id)
    except StorageError as exc:  # the run exists: the health monitor queues it later
        _log.warning(
            "run %s: cannot queue it yet (%s); it is queued once storage works", run_id, exc
        )
    body = {"run_id": run_id, **checked.body, "request_id": request_id}
    return 202, body, {"Location": f"/v1/runs/{run_id}"}


def _refuse_while_database_lost(backend: Backend) -> None:
    """503 at once while the health monitor finds the database server unreachable."""
    report = backend.health.report() if backend.health is not None else None
    database = getattr(report, "database", None) or {}
    if database.get("reachable") is False:
        raise storage_answer(
            DatabaseUnavailable(f"the database {database.get('name')} cannot be reached")
        )


async def _create(
    backend: Backend,
    checked: Checked,
    run_id: str,
    owner: str,
    models: Sequence[str],
    request_id: str,
) -> None:
    """Write the run's row; without it, the kept upload is deleted (no orphan)."""
    config = backend.config
    try:
        limit = await asyncio.to_thread(
            backend.store.create,
            run_id=run_id,
            owner=owner,
            models=models,
            request_id=request_id,
            validation={
                **checked.body,
                "record_errors": len(checked.body["record_errors"]),
                "request_id": request_id,
            },
            dataset=checked.dataset or {},
            total=checked.body["summary"]["total_records"] * len(models),
            max_queued=config.limits.max_queued,
            max_per_owner=config.limits.max_runs_per_token,
        )
    except BaseException as exc:
        shutil.rmtree(config.data.uploads / run_id, ignore_errors=True)
        if isinstance(exc, StorageError):
            _log.warning("upload %s: the run's row cannot be written: %s", request_id, exc)
            raise storage_answer(exc) from None
        raise
    if limit is not None:
        shutil.rmtree(config.data.uploads / run_id, ignore_errors=True)
        raise too_busy(
            config,
            f"the queue is full ({config.limits.max_queued} runs waiting)"
            if limit == "queue"
            else f"this token has {config.limits.max_runs_per_token} runs in flight",
        )
