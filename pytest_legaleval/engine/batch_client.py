"""The OpenAI Files and Batches API on the wire, and the batch file formats.

What the engine needs of a provider's Batch API (the OpenAI API reference; vLLM's
``run-batch`` reads and writes the same line formats):

* ``POST /files`` (multipart: ``purpose=batch`` and the JSONL ``file``) → a file object;
* ``POST /batches`` ``{input_file_id, endpoint, completion_window: "24h"}`` → a batch;
* ``GET /batches/{id}`` → its ``status`` (``validating``, ``in_progress``,
  ``finalizing``, ``completed``, ``failed``, ``expired``, ``cancelling``,
  ``cancelled``), ``output_file_id``, ``error_file_id``, ``errors.data`` and
  ``request_counts``;
* ``POST /batches/{id}/cancel``; ``GET /files/{id}/content`` → the file's bytes.

An input line is ``{custom_id, method: "POST", url: "/v1/chat/completions", body}``; an
output or error line is ``{id, custom_id, response: {status_code, request_id, body} | null,
error: {code, message} | null}``, in any order. Results are matched by ``custom_id`` only.

A downloaded file is read with a bound scaled to its number of requests
(:func:`download_bound`): a hostile or broken server cannot fill the memory.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from pytest_legaleval.engine.openai_reply import DUMMY_KEY, parse_completion, scrub_key
from pytest_legaleval.engine.presets import BATCH_PRICE_FACTORS, DEFAULT_BATCH_FACTOR
from pytest_legaleval.engine.retry import ProviderError, classify_status
from pytest_legaleval.engine.sanitize import checked_completion
from pytest_legaleval.engine.types import RawCompletion
from pytest_legaleval.engine.urls import endpoint_url, without_credentials
from pytest_legaleval.engine.wire import MAX_ERROR_BODY, error_from_status, proxy_for

__all__ = [
    "BATCH_ENDPOINT",
    "BATCH_PRICE_FACTORS",
    "DEFAULT_BATCH_FACTOR",
    "MAX_FILE_BYTES",
    "MAX_FILE_REQUESTS",
    "TERMINAL_STATUSES",
    "BatchClient",
    "LineResult",
    "checked_id",
    "classify_line",
    "download_bound",
    "input_line",
    "parse_result_lines",
    "split_lines",
]

BATCH_ENDPOINT = "/v1/chat/completions"
"""The ``endpoint`` (and each line's ``url``) of a chat completion batch."""
MAX_FILE_REQUESTS = 50_000
"""Requests per input file (OpenAI's limit)."""
MAX_FILE_BYTES = 200 * 1024 * 1024
"""Bytes per input file (OpenAI's limit)."""
TERMINAL_STATUSES = frozenset({"completed", "failed", "expired", "cancelled"})
"""Statuses after which a batch changes no more."""
_PER_LINE_BOUND = 1024 * 1024
"""Bytes allowed per request in a downloaded file: a chat completion of the largest
output a model gives, with room for its envelope."""
_FILE_BOUND_BASE = 64 * 1024


_SAFE_ID = re.compile(r"[A-Za-z0-9_.:-]{1,200}")
"""What a file or batch id may look like: it goes into a URL path and onto the terminal."""


def checked_id(value: object, what: str) -> str:
    """``value`` if it is a plausible id; else ``ProviderError`` (``invalid_response``)."""
    if not isinstance(value, str) or not _SAFE_ID.fullmatch(value) or value in (".", ".."):
        raise ProviderError("invalid_response", f"the server sent an unusable {what} id")
    return value


def download_bound(requests: int) -> int:
    """The most bytes an output or error file of ``requests`` requests may have."""
    return _FILE_BOUND_BASE + max(requests, 1) * _PER_LINE_BOUND


def input_line(custom_id: str, body: Mapping[str, Any]) -> bytes:
    """One JSONL line of an input file (with its newline)."""
    line = {"custom_id": custom_id, "method": "POST", "url": BATCH_ENDPOINT, "body": body}
    text = json.dumps(line, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8") + b"\n"


def split_lines(
    lines: Sequence[bytes],
    *,
    max_requests: int = MAX_FILE_REQUESTS,
    max_bytes: int = MAX_FILE_BYTES,
) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges of ``lines`` that fit one input file each, in order.

    A single line larger than ``max_bytes`` still gets a file of its own (the provider
    then refuses it, and that request is retried live).
    """
    ranges: list[tuple[int, int]] = []
    start, size = 0, 0
    for index, line in enumerate(lines):
        full = index - start >= max_requests or (size + len(line) > max_bytes and index > start)
        if full:
            ranges.append((start, index))
            start, size = index, 0
        size += len(line)
    if start < len(lines):
        ranges.append((start, len(lines)))
    return ranges


@dataclass(frozen=True, slots=True)
class LineResult:
    """What an output or error file says about one ``custom_id``."""

    custom_id: str
    status_code: int | None
    """The response's HTTP status (``None`` for a line with ``error`` and no response)."""
    body: Any
    """The response body (a chat completion on 200, an error object otherwise)."""
    error_code: str | None
    """The line's ``error.code`` (``batch_expired``, ``batch_cancelled``,
    ``request_timeout`` …), or the body's ``error.code`` of a non-200 response."""
    message: str
    """The error message, if any."""

    @property
    def ok(self) -> bool:
        """A 200 response with a body."""
        return self.status_code == 200 and isinstance(self.body, dict) and self.error_code is None


def _error_fields(value: Any) -> tuple[str | None, str]:
    if isinstance(value, dict):
        inner = value.get("error", value)
        if isinstance(inner, dict):
            code, message = inner.get("code"), inner.get("message")
            return (
                str(code) if code is not None else None,
                str(message) if isinstance(message, str) else "",
            )
    return None, ""


def parse_result_lines(data: bytes, problems: list[str]) -> dict[str, LineResult]:
    """The lines of an output or error file by ``custom_id``.

    A line that is not JSON, not an object or has no string ``custom_id`` is skipped and
    named in ``problems`` (its request then counts as unanswered and is retried). When a
    ``custom_id`` appears twice, a success wins over a failure.
    """
    found: dict[str, LineResult] = {}
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except (ValueError, RecursionError):
            problems.append(f"line {number}: not JSON")
            continue
        custom_id = line.get("custom_id") if isinstance(line, dict) else None
        if not isinstance(custom_id, str):
            problems.append(f"line {number}: no custom_id")
            continue
        response, error = line.get("response"), line.get("error")
        status: int | None = None
        body: Any = None
        code, message = _error_fields(error) if error else (None, "")
        if isinstance(response, dict):
            raw_status = response.get("status_code")
            status = raw_status if type(raw_status) is int else None
            body = response.get("body")
            if isinstance(body, str):  # some servers send the body as a JSON string
                try:
                    body = json.loads(body)
                except (ValueError, RecursionError):
                    pass
            if status != 200 and code is None:
                code, message = _error_fields(body)
                code = code or f"http_{status}"
        elif not error:
            code, message = "no_response", "the line has neither a response nor an error"
        result = LineResult(custom_id, status, body, code, message)
        previous = found.get(custom_id)
        if previous is None or (result.ok and not previous.ok):
            found[custom_id] = result
    return found


class BatchClient:
    """Talks to one endpoint's Files and Batches API with one key.

    Args:
        base_url: the OpenAI-compatible endpoint (``…/v1``); paths are joined onto its path,
            its query kept (``engine.urls.endpoint_url``); credentials in it are sent as
            HTTP Basic when there is no key, as the chat client does.
        api_key: sent as ``Authorization: Bearer``; empty for servers that need none.
        timeout_s: to connect, and between two reads of a reply.

    Every HTTP failure is raised as :class:`ProviderError` (classified like a chat
    completion's), transport failures as aiohttp's own exceptions; the caller classifies.

    """

    def __init__(self, base_url: str, api_key: str, timeout_s: float = 120.0) -> None:
        base_url, user, password = without_credentials(base_url)
        self._base = base_url
        self._secrets = [s for s in (api_key, password) if s]
        headers = {"Accept": "application/json", "User-Agent": "pytest-legaleval"}
        if user is not None and (not api_key or api_key == DUMMY_KEY):
            pair = f"{user}:{password or ''}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        elif api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._headers = headers
        # No total: a 200 MB upload or download takes what it takes; a stalled one is cut
        # by the per-read timeout.
        self._timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=timeout_s, sock_read=timeout_s
        )
        self._proxy = proxy_for(base_url)
        self._session: aiohttp.ClientSession | None = None

    def scrub(self, text: str) -> str:
        """``text`` without this client's key or URL password (a server may echo them)."""
        for secret in self._secrets:
            text = scrub_key(text, secret)
        return text

    def _url(self, path: str) -> str:
        return endpoint_url(self._base, path)

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(headers=self._headers, timeout=self._timeout)
        return self._session

    async def _json(
        self, method: str, path: str, limit: int = MAX_ERROR_BODY, **kwargs: Any
    ) -> dict[str, Any]:
        session = self._open()
        async with session.request(
            method, self._url(path), proxy=self._proxy, allow_redirects=False, **kwargs
        ) as response:
            if not 200 <= response.status < 300:
                content = await response.content.read(MAX_ERROR_BODY)
                raise error_from_status(response.status, response.headers, content)
            content = await _read_bounded(response, limit, f"{method} {path}")
            try:
                data = json.loads(content)
            except (ValueError, RecursionError):
                data = None
            if not isinstance(data, dict):
                raise ProviderError("invalid_response", f"{method} {path}: not a JSON object")
            return data

    async def upload(self, content: bytes, filename: str) -> str:
        """Upload a batch input file; its file id."""
        form = aiohttp.FormData()
        form.add_field("purpose", "batch")
        form.add_field("file", content, filename=filename, content_type="application/jsonl")
        data = await self._json("POST", "/files", data=form)
        return checked_id(data.get("id"), "file")

    async def create(self, input_file_id: str, metadata: Mapping[str, str]) -> dict[str, Any]:
        """Create a batch over an uploaded file; the batch object."""
        body = {
            "input_file_id": input_file_id,
            "endpoint": BATCH_ENDPOINT,
            "completion_window": "24h",
            "metadata": dict(metadata),
        }
        data = await self._json("POST", "/batches", json=body)
        checked_id(data.get("id"), "batch")
        return data

    async def find(self, input_file_id: str) -> dict[str, Any] | None:
        """The batch over ``input_file_id`` among the newest 100, if the server lists any.

        After a ``POST /batches`` whose reply was lost, this says whether the batch exists
        (it is paid for) before another is created. A server that cannot list says nothing.
        """
        try:
            data = await self._json("GET", "/batches", params={"limit": "100"})
        except ProviderError:
            return None
        listed = data.get("data")
        for batch in listed if isinstance(listed, list) else ():
            if isinstance(batch, dict) and batch.get("input_file_id") == input_file_id:
                checked_id(batch.get("id"), "batch")
                return batch
        return None

    async def retrieve(self, batch_id: str, requests: int = 1) -> dict[str, Any]:
        """The batch object now.

        Read up to a size scaled to its ``requests``: a failed batch's ``errors.data`` may
        name every line.
        """
        path = f"/batches/{checked_id(batch_id, 'batch')}"
        data = await self._json("GET", path, limit=MAX_ERROR_BODY + 2048 * max(requests, 1))
        _string_field(data, "status", f"GET /batches/{batch_id}")
        return data

    async def cancel(self, batch_id: str) -> dict[str, Any]:
        """Ask the provider to cancel a batch (it ends ``cancelled`` with partial output)."""
        return await self._json("POST", f"/batches/{checked_id(batch_id, 'batch')}/cancel")

    async def download(self, file_id: str, limit: int) -> bytes:
        """A file's content, at most ``limit`` bytes.

        Raises:
            ProviderError: ``invalid_response`` when the file is larger than ``limit``.

        """
        session = self._open()
        path = f"/files/{checked_id(file_id, 'file')}/content"
        async with session.get(
            self._url(path), proxy=self._proxy, allow_redirects=False
        ) as response:
            if not 200 <= response.status < 300:
                content = await response.content.read(MAX_ERROR_BODY)
                raise error_from_status(response.status, response.headers, content)
            return await _read_bounded(response, limit, f"batch file {file_id}")

    async def aclose(self) -> None:
        """Close the connection pool."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()


async def _read_bounded(response: aiohttp.ClientResponse, limit: int, what: str) -> bytes:
    """The whole body, or ``ProviderError`` once it passes ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(256 * 1024):
        size += len(chunk)
        if size > limit:
            raise ProviderError(
                "invalid_response",
                f"{what} is larger than {limit} bytes, the bound for its number of requests",
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _string_field(data: Mapping[str, Any], name: str, where: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise ProviderError("invalid_response", f"{where}: no {name} in the reply")
    return value


def line_errors(batch: Mapping[str, Any]) -> dict[int, tuple[str, str]]:
    """A failed batch's ``errors.data`` by input line (1-based): ``(code, message)``."""
    errors = batch.get("errors")
    data = errors.get("data") if isinstance(errors, dict) else None
    out: dict[int, tuple[str, str]] = {}
    for entry in data if isinstance(data, list) else ():
        if not isinstance(entry, dict):
            continue
        line = entry.get("line")
        if type(line) is int:
            out[line] = (
                str(entry.get("code") or "invalid_request"),
                str(entry.get("message") or ""),
            )
    return out


def batch_errors(batch: Mapping[str, Any]) -> Iterable[str]:
    """The messages of a batch's ``errors.data`` (for the run's log)."""
    errors = batch.get("errors")
    data = errors.get("data") if isinstance(errors, dict) else None
    for entry in data if isinstance(data, list) else ():
        if isinstance(entry, dict):
            yield f"{entry.get('code')}: {entry.get('message')}"


_TRANSIENT_LINE_ERRORS = {
    "batch_expired": "timeout",
    "request_timeout": "timeout",
    "batch_cancelled": "service_unavailable",
    "no_response": "service_unavailable",
}
"""A line's ``error.code`` that another batch may well answer, and its contract code."""

LineVerdict = tuple[str, str, str, int | None]
"""``(error code, message, what next, HTTP status)`` of a request a batch did not answer."""


def classify_line(
    result: LineResult | None, refused: tuple[str, str] | None, status: str
) -> tuple[RawCompletion | None, LineVerdict]:
    """The answer of one request in a batch's files, or why it has none.

    ``result``: its line (``None``: the files do not mention it); ``refused``: what a
    ``failed`` batch's ``errors.data`` said of its input line; ``status``: the batch's.

    What next: ``retry`` (a transient failure: a new batch, or live once the batch
    attempts are spent), ``live`` (a permanent-looking failure — a 4xx line, a body that
    is no completion, a line a ``failed`` batch refused: another batch would fail it
    again, and whether the request itself is bad, the live call decides, as it would
    have in a live run; a 4xx is not billed) or ``final`` (a content filter's refusal,
    which a live call gives as well).
    """
    if result is None:
        if refused is not None:
            message = f"the batch refused it: {refused[0]}: {refused[1]}"
            return None, ("bad_request", message, "live", None)
        message = f"no result for it in the batch's files (batch {status})"
        return None, ("service_unavailable", message, "retry", None)
    if result.ok:
        try:
            body = json.dumps(result.body, ensure_ascii=False).encode("utf-8")
            return checked_completion(parse_completion(body)), ("", "", "final", None)
        except ProviderError as exc:
            return None, (exc.code, str(exc), _next(exc.transient, exc.code), 200)
        except (ValueError, TypeError) as exc:
            return None, ("invalid_response", f"batch answer: {exc}", "live", 200)
    message = result.message or f"batch line failed ({result.error_code})"
    if result.status_code is not None and result.status_code != 200:
        code, transient = classify_status(result.status_code, result.error_code)
        return None, (code, message, _next(transient, code), result.status_code)
    mapped = _TRANSIENT_LINE_ERRORS.get(str(result.error_code))
    if mapped is not None:
        return None, (mapped, f"{result.error_code}: {message}", "retry", None)
    return None, ("internal_error", f"{result.error_code}: {message}", "retry", None)


def _next(transient: bool, code: str) -> str:
    if transient:
        return "retry"
    return "final" if code == "content_filter" else "live"
