"""The mock's Files and Batches API: uploads, the status progression, results and failures.

``POST /v1/files`` (multipart, ``purpose=batch``) checks the upload line by line: each line
a JSON object with a ``custom_id`` (a string, unique in the file), ``method`` ``POST``,
``url`` ``/v1/chat/completions`` and a ``body``; a bad line is a 400 naming it.
``POST /v1/batches`` creates a batch in ``validating``; each ``GET /v1/batches/{id}`` moves it
on: ``in_progress`` (where it stays for ``polls_in_progress`` polls, or while held),
``finalizing``, then its end. At the end every line's body is answered by the same logic as
a live call (reply rules, fault rules: a fault is a non-200 line), and the output and error
files are written in a shuffled order. ``GET /v1/files/{id}/content`` serves them;
``POST /v1/batches/{id}/cancel`` ends a batch ``cancelled`` with what it answered so far.

Knobs (:class:`BatchKnobs`, set with ``MockOpenAIServer.batch_knobs(...)``): hold batches in
``in_progress``, expire or cancel the next batches part way, fail the next batches at
validation with ``errors.data`` per line, send ``error`` lines (``batch_expired``,
``batch_cancelled``, ``request_timeout``) for prompts matching a pattern, and where non-200
lines go (the output file, the error file, or alternately both).
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pytest_legaleval.testing.mock_openai.config import MockConfig
from pytest_legaleval.testing.mock_openai.outcome import (
    JSON_HEADER,
    Outcome,
    error_outcome,
    json_bytes,
    validate_request,
)

__all__ = ["BatchAPI", "BatchKnobs"]

_ENDPOINT = "/v1/chat/completions"


@dataclass(frozen=True)
class BatchKnobs:
    """How the mock's batches behave (all off by default except shuffling)."""

    enabled: bool = True
    """Off: ``/files`` and ``/batches`` answer 404, as on a server without the API."""
    polls_in_progress: int = 1
    """Polls a batch answers ``in_progress`` before it finalizes."""
    hold: bool = False
    """Batches stay ``in_progress`` until ``release_batches()`` (or this is set False)."""
    shuffle: bool = True
    """Output and error lines come in a random order (seeded by the batch id)."""
    failures_to: Literal["output", "error", "both"] = "error"
    """Where non-200 lines go; ``both`` alternates between the two files."""
    expire_next: int = 0
    """The next N batches end ``expired``; only ``partial`` of their lines are answered,
    the others get ``batch_expired`` error lines."""
    cancel_next: int = 0
    """The next N batches end ``cancelled`` the same way (``batch_cancelled`` lines)."""
    partial: float = 0.5
    """The share of an expired or cancelled batch's lines that were answered."""
    fail_next: int = 0
    """The next N batches end ``failed`` at validation, with no output."""
    fail_lines: tuple[int, ...] = (1,)
    """The 1-based input lines a failed batch's ``errors.data`` names."""
    line_errors: Mapping[str, str] = field(default_factory=dict)
    """Prompt regex → error code (``request_timeout`` …): matching lines get an ``error``
    line instead of an answer, ``line_error_times`` times per prompt."""
    line_error_times: int = 1
    """How many batches a matching prompt fails in before it is answered."""
    omit: str | None = None
    """Prompt regex: matching lines are missing from both files (once per prompt)."""
    lose_create_replies: int = 0
    """The next N ``POST /batches`` create their batch but answer 500, as a reply lost on
    the way would look."""


@dataclass
class _File:
    id: str
    purpose: str
    filename: str
    content: bytes
    created_at: int
    lines: int = 0


@dataclass
class _Batch:
    id: str
    input_file_id: str
    created_at: int
    lines: list[dict[str, Any]]
    status: str = "validating"
    polls: int = 0
    fate: str = "completed"
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {"completed": 0, "failed": 0})
    metadata: dict[str, Any] = field(default_factory=dict)
    times: dict[str, int] = field(default_factory=dict)
    finishing: bool = False


Answer = Callable[[bytes], Outcome]
"""Answers one chat completion body as a live call would (the core's logic)."""


class BatchAPI:
    """The Files and Batches endpoints of one mock server (thread-safe).

    Args:
        config: the server's config (its ``api_key`` and ``models`` checks apply).
        answer: the live logic for one line's body.

    """

    def __init__(self, config: MockConfig, answer: Answer) -> None:
        self._config = config
        self._answer = answer
        self._lock = threading.Lock()
        self.knobs = BatchKnobs()
        self.reset()

    def reset(self) -> None:
        """Forget every file and batch, zero the counters."""
        with self._lock:
            self._files: dict[str, _File] = {}
            self._batches: dict[str, _Batch] = {}
            self._seq = 0
            self._fired: Counter[str] = Counter()
            self.counters: Counter[str] = Counter()
            self.per_prompt: Counter[str] = Counter()

    def set_knobs(self, **changes: Any) -> BatchKnobs:
        """Replace some knobs; the new knobs."""
        with self._lock:
            self.knobs = replace(self.knobs, **changes)
            return self.knobs

    def stats(self) -> dict[str, Any]:
        """The counters, and ``by_status`` and ``batch_ids`` of every batch.

        Counters: ``files_uploaded``, ``batches_created``, ``lines``, ``retrievals``,
        ``downloads``, ``cancels``, ``rejected_uploads``.
        """
        names = (
            "files_uploaded",
            "batches_created",
            "lines",
            "retrievals",
            "downloads",
            "cancels",
            "rejected_uploads",
        )
        with self._lock:
            by_status = Counter(b.status for b in self._batches.values())
            return {
                **{name: self.counters[name] for name in names},
                "by_status": dict(by_status),
                "batch_ids": list(self._batches),
            }

    def prompt_count(self, substring: str) -> int:
        """Batch lines answered whose prompt contains ``substring``."""
        with self._lock:
            return sum(n for prompt, n in self.per_prompt.items() if substring in prompt)

    def _id(self, prefix: str) -> str:
        self._seq += 1
        return f"{prefix}-mock{self._seq:06d}"

    # -- routing ----------------------------------------------------------------------------

    def route(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Outcome:
        """Answer one request under ``/files`` or ``/batches`` (``path`` without ``/v1``)."""
        if not self.knobs.enabled:
            return error_outcome(404, f"Unknown request URL: {method} {path}.", code="unknown_url")
        key = self._config.api_key
        if key is not None and headers.get("authorization") != f"Bearer {key}":
            return error_outcome(401, "Incorrect API key provided (mock).", code="invalid_api_key")
        parts = path.strip("/").split("/")
        if parts == ["files"] and method == "POST":
            return self._upload(headers, body)
        if len(parts) == 3 and parts[0] == "files" and parts[2] == "content" and method == "GET":
            return self._content(parts[1])
        if parts == ["batches"] and method == "POST":
            return self._create(body)
        if parts == ["batches"] and method == "GET":
            return self._list()
        if len(parts) == 2 and parts[0] == "batches" and method == "GET":
            return self._retrieve(parts[1])
        if len(parts) == 3 and parts[0] == "batches" and parts[2] == "cancel" and method == "POST":
            return self._cancel(parts[1])
        return error_outcome(404, f"Unknown request URL: {method} {path}.", code="unknown_url")

    # -- files ------------------------------------------------------------------------------

    def _upload(self, headers: Mapping[str, str], body: bytes) -> Outcome:
        fields = _multipart(headers.get("content-type", ""), body)
        if fields is None:
            return error_outcome(400, "Expected a multipart/form-data body.")
        purpose = fields.get("purpose", (b"", ""))[0].decode("utf-8", "replace")
        if purpose != "batch":
            return error_outcome(400, f"purpose must be 'batch' (mock), got {purpose!r}")
        if "file" not in fields:
            return error_outcome(400, "'file' is a required field.")
        content, filename = fields["file"]
        problem, count = _check_lines(content, self._config)
        with self._lock:
            if problem is not None:
                self.counters["rejected_uploads"] += 1
                return error_outcome(400, problem, code="invalid_file")
            file = _File(self._id("file"), purpose, filename, content, int(time.time()), count)
            self._files[file.id] = file
            self.counters["files_uploaded"] += 1
        return _json(_file_object(file))

    def _content(self, file_id: str) -> Outcome:
        with self._lock:
            file = self._files.get(file_id)
            self.counters["downloads"] += file is not None
        if file is None:
            return error_outcome(404, f"No such File object: {file_id}")
        return Outcome("respond", 200, file.content, (("Content-Type", "application/jsonl"),))

    # -- batches ----------------------------------------------------------------------------

    def _create(self, raw: bytes) -> Outcome:
        try:
            request = json.loads(raw)
        except ValueError:
            return error_outcome(400, "We could not parse the JSON body of your request.")
        if not isinstance(request, dict):
            return error_outcome(400, "The request body must be a JSON object.")
        if request.get("endpoint") != _ENDPOINT or request.get("completion_window") != "24h":
            return error_outcome(400, "endpoint must be /v1/chat/completions, window 24h (mock)")
        with self._lock:
            file = self._files.get(str(request.get("input_file_id")))
            if file is None:
                return error_outcome(404, "No such File object (mock).")
            lines = [json.loads(line) for line in file.content.splitlines() if line.strip()]
            batch = _Batch(self._id("batch"), file.id, int(time.time()), lines)
            batch.metadata = dict(request.get("metadata") or {})
            knobs = self.knobs
            for name, fate in (("fail_next", "failed"), ("expire_next", "expired"),
                               ("cancel_next", "cancelled")):  # fmt: skip
                if getattr(knobs, name) > 0:
                    self.knobs = replace(knobs, **{name: getattr(knobs, name) - 1})
                    batch.fate = fate
                    break
            self._batches[batch.id] = batch
            self.counters["batches_created"] += 1
            self.counters["lines"] += len(lines)
            if self.knobs.lose_create_replies > 0:
                self.knobs = replace(
                    self.knobs, lose_create_replies=self.knobs.lose_create_replies - 1
                )
                return error_outcome(500, "mock: the reply was lost (the batch exists)")
            return _json(self._batch_object(batch))

    def _list(self) -> Outcome:
        with self._lock:
            newest = sorted(self._batches.values(), key=lambda b: b.id, reverse=True)[:100]
            data = [self._batch_object(b) for b in newest]
        return _json({"object": "list", "data": data, "has_more": False})

    def _retrieve(self, batch_id: str) -> Outcome:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None:
                return error_outcome(404, f"No such Batch object: {batch_id}")
            self.counters["retrievals"] += 1
        self._advance(batch)
        with self._lock:
            return _json(self._batch_object(batch))

    def _cancel(self, batch_id: str) -> Outcome:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None:
                return error_outcome(404, f"No such Batch object: {batch_id}")
            self.counters["cancels"] += 1
            if batch.status in ("completed", "failed", "expired", "cancelled"):
                return _json(self._batch_object(batch))
            batch.fate = "cancelled"
            batch.status = "cancelling"
            return _json(self._batch_object(batch))

    def _advance(self, batch: _Batch) -> None:
        with self._lock:
            knobs = self.knobs
            batch.polls += 1
            if batch.status == "validating":
                if batch.fate == "failed":
                    batch.status = "failed"
                    batch.errors = [
                        {"code": "invalid_request", "message": "mock: line refused",
                         "param": "body", "line": n}
                        for n in knobs.fail_lines if 1 <= n <= len(batch.lines)
                    ]  # fmt: skip
                    batch.times["failed_at"] = int(time.time())
                    return
                batch.status = "in_progress"
                batch.times["in_progress_at"] = int(time.time())
                return
            if batch.status == "in_progress":
                if knobs.hold and batch.fate != "cancelled":
                    return
                if batch.polls <= 1 + knobs.polls_in_progress and batch.fate == "completed":
                    return
                batch.status = "finalizing"
                return
            if batch.status not in ("finalizing", "cancelling") or batch.finishing:
                return
            batch.finishing = True  # one poll answers the lines, however many come at once
        self._finish(batch)

    def _finish(self, batch: _Batch) -> None:
        """Answer the lines (outside the lock: reply callables may call the handle)."""
        knobs = self.knobs
        rng = random.Random(batch.id)
        partial = batch.fate in ("expired", "cancelled")
        answered = int(len(batch.lines) * knobs.partial) if partial else len(batch.lines)
        outputs: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        failures = 0
        for index, line in enumerate(batch.lines):
            custom_id = line["custom_id"]
            body = line["body"]
            prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
            entry: dict[str, Any] = {"id": f"batch_req_{batch.id}_{index}", "custom_id": custom_id}
            if index >= answered:
                code = "batch_expired" if batch.fate == "expired" else "batch_cancelled"
                errors.append(_error_line(entry, code, f"mock: the batch was {batch.fate}"))
                continue
            with self._lock:
                line_error = self._line_error(prompt, knobs)
                omitted = knobs.omit is not None and self._once("omit", prompt, knobs.omit)
            if omitted:
                continue
            if line_error is not None:
                errors.append(_error_line(entry, line_error, f"mock: {line_error}"))
                continue
            outcome = self._answer(json_bytes(body))
            with self._lock:
                self.per_prompt[prompt] += 1
            if outcome.action != "respond":
                errors.append(_error_line(entry, "request_timeout", "mock: the request timed out"))
                continue
            try:
                payload = json.loads(outcome.body)
            except ValueError:
                payload = outcome.body.decode("utf-8", "replace")
            entry["response"] = {
                "status_code": outcome.status,
                "request_id": f"req_{batch.id}_{index}",
                "body": payload,
            }
            entry["error"] = None
            if outcome.status == 200:
                outputs.append(entry)
                continue
            failures += 1
            to_output = knobs.failures_to == "output" or (
                knobs.failures_to == "both" and failures % 2 == 0
            )
            (outputs if to_output else errors).append(entry)
        if knobs.shuffle:
            rng.shuffle(outputs)
            rng.shuffle(errors)
        with self._lock:
            ok = sum(1 for e in outputs if e["response"]["status_code"] == 200)
            batch.counts = {"completed": ok, "failed": len(batch.lines) - ok}
            if outputs:
                batch.output_file_id = self._store_file(batch, outputs, "output")
            if errors:
                batch.error_file_id = self._store_file(batch, errors, "error")
            batch.status = batch.fate
            batch.times[f"{batch.fate}_at"] = int(time.time())

    def _line_error(self, prompt: str, knobs: BatchKnobs) -> str | None:
        for pattern, code in knobs.line_errors.items():
            if re.search(pattern, prompt) and self._fired[f"{pattern}\0{prompt}"] < (
                knobs.line_error_times
            ):
                self._fired[f"{pattern}\0{prompt}"] += 1
                return code
        return None

    def _once(self, tag: str, prompt: str, pattern: str) -> bool:
        if re.search(pattern, prompt) is None or self._fired[f"{tag}\0{prompt}"]:
            return False
        self._fired[f"{tag}\0{prompt}"] += 1
        return True

    def _store_file(self, batch: _Batch, entries: list[dict[str, Any]], kind: str) -> str:
        content = b"".join(json_bytes(e) + b"\n" for e in entries)
        file = _File(self._id("file"), f"batch_{kind}", f"{batch.id}_{kind}.jsonl", content,
                     int(time.time()), len(entries))  # fmt: skip
        self._files[file.id] = file
        return file.id

    def _batch_object(self, batch: _Batch) -> dict[str, Any]:
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": _ENDPOINT,
            "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "status": batch.status,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "created_at": batch.created_at,
            "expires_at": batch.created_at + 86_400,
            **batch.times,
            "request_counts": {"total": len(batch.lines), **batch.counts},
            "metadata": batch.metadata,
        }


def _error_line(entry: dict[str, Any], code: str, message: str) -> dict[str, Any]:
    return {**entry, "response": None, "error": {"code": code, "message": message}}


def _json(value: object) -> Outcome:
    return Outcome("respond", 200, json_bytes(value), (JSON_HEADER,))


def _file_object(file: _File) -> dict[str, Any]:
    return {
        "id": file.id,
        "object": "file",
        "bytes": len(file.content),
        "created_at": file.created_at,
        "filename": file.filename,
        "purpose": file.purpose,
    }


def _multipart(content_type: str, body: bytes) -> dict[str, tuple[bytes, str]] | None:
    """The fields of a multipart/form-data body: name → (bytes, filename)."""
    if not content_type.lower().startswith("multipart/form-data"):
        return None
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1")
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    if not message.is_multipart():
        return None
    fields: dict[str, tuple[bytes, str]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            fields[name] = (payload, part.get_filename() or "")
    return fields


def _check_lines(content: bytes, config: MockConfig) -> tuple[str | None, int]:
    """The first problem of a batch input file (``None``), and its number of lines."""
    seen: set[str] = set()
    count = 0
    for number, raw in enumerate(content.splitlines(), start=1):
        if not raw.strip():
            continue
        count += 1
        try:
            line = json.loads(raw)
        except ValueError:
            return f"line {number}: not valid JSON", count
        if not isinstance(line, dict):
            return f"line {number}: not a JSON object", count
        custom_id = line.get("custom_id")
        if not isinstance(custom_id, str) or not custom_id:
            return f"line {number}: custom_id must be a non-empty string", count
        if custom_id in seen:
            return f"line {number}: duplicate custom_id {custom_id!r}", count
        seen.add(custom_id)
        if line.get("method") != "POST" or line.get("url") != _ENDPOINT:
            return f"line {number}: method must be POST and url {_ENDPOINT}", count
        problem = validate_request(line.get("body"), config)
        if problem is not None:
            return f"line {number}: invalid body: {problem.body.decode()}", count
    if count == 0:
        return "the file has no requests", 0
    return None, count
