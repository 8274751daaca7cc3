"""A small client of the service on the standard library (``legaleval submit`` uses it).

The upload is streamed from the file and the artifacts to their files, each checked against
the sha256 the service gives; nothing is held whole.

The client trusts no string the server sends: a run id must have the shape of one before it
names a folder, artifacts are only the contract's files (their URLs are built here, not
taken from the listing), a download never outgrows its listed size, ``Retry-After`` is
read as the contract says or ignored, and text shown on the terminal has its control
characters escaped (:func:`printable`).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from pytest_legaleval.errors import ConfigError, LegalEvalError
from pytest_legaleval.metrics.artifacts import artifacts as artifact_table
from pytest_legaleval.run.console import printable as terminal_text
from pytest_legaleval.run.console import printable_json as terminal_json
from pytest_legaleval.run.names import CHECKSUMS, KNOWN_ARTIFACTS

__all__ = [
    "ARTIFACT_NAMES",
    "RETRY_AFTER_CAP_S",
    "ServiceClient",
    "ServiceError",
    "checked_run_id",
    "parse_retry_after",
    "printable",
    "printable_json",
]

_BLOCK = 1 << 20
ARTIFACT_NAMES = KNOWN_ARTIFACTS
"""The built-in artifacts a run directory can hold (the Dataset Contract's eight, §4.1, and
ours); with the registered ones (``metrics.artifacts``), the only names ever written
locally."""
MAX_JSON_BYTES = 64 * 1024 * 1024
"""The largest JSON answer read (a 202 with 50,000 record errors is about 15 MB)."""
MAX_CHECKSUMS_BYTES = 64 * 1024
RETRY_AFTER_CAP_S = 60.0
"""The longest wait a ``Retry-After`` can ask for; a longer one is cut to it."""
_RUN_ID = re.compile(r"run_[0-9A-HJKMNP-TV-Z]{26}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_DELTA_SECONDS = re.compile(r"[0-9]{1,10}(?:\.[0-9]{1,6})?")


def printable(value: object, limit: int = 2000) -> str:
    r"""``value`` as one line safe for a terminal: control and direction characters escaped.

    ESC, BEL, NUL, C1 controls (CSI is one byte there) and bidirectional overrides from a
    server could clear the screen, retitle the window or hide text; they are shown as
    ``\x1b``-style escapes (``run.console.printable``, the one terminal sanitizer), and the
    text is cut at ``limit`` characters.
    """
    return terminal_text(value, limit=limit)


def printable_json(value: object) -> str:
    """``value`` as indented JSON that stays JSON and is safe for a terminal."""
    return terminal_json(value)


def parse_retry_after(value: str | None, default: float, cap: float = RETRY_AFTER_CAP_S) -> float:
    """Seconds to wait from a ``Retry-After`` header, as the service sends it.

    The service sends delta-seconds (a non-negative number); that is read and capped at
    ``cap``. Anything else — ``nan``, ``inf``, ``-5``, a date, garbage — is ignored:
    ``default`` is returned.
    """
    if value is None:
        return default
    text = value.strip()
    if not _DELTA_SECONDS.fullmatch(text):
        return default
    return min(float(text), cap)


class ServiceError(LegalEvalError):
    """An answer the client did not expect (``status`` 0: no answer at all)."""

    def __init__(self, status: int, body: Any) -> None:
        error = body.get("error") if isinstance(body, dict) else None
        message = error.get("message") if isinstance(error, dict) else str(body)[:500]
        request_id = body.get("request_id") if isinstance(body, dict) else None
        text = f"HTTP {status}: {message}" if status else str(message)
        text += f" (request_id {request_id})" if request_id else ""
        super().__init__(printable(text))
        self.status = status
        self.body = body


def checked_run_id(value: object) -> str:
    """``value`` if it is a run id (``run_`` and 26 ULID characters), else an error.

    A run id names a local folder: ``../x``, an absolute path or any other text from a
    hostile server must never get that far.

    Raises:
        ServiceError: not a run id.

    """
    if isinstance(value, str) and _RUN_ID.fullmatch(value):
        return value
    raise ServiceError(0, f"the service answered a run id that is not one: {value!r:.100}")


def _read_capped(response: http.client.HTTPResponse, limit: int) -> bytes:
    raw = response.read(limit + 1)
    if len(raw) > limit:
        raise ServiceError(0, f"the service's answer is over {limit:,} bytes; refusing it")
    return raw


class ServiceClient:
    """Talks to one service: ``http(s)://host[:port][/prefix]``, with an optional token."""

    def __init__(self, server: str, token: str | None, *, timeout_s: float = 60.0) -> None:
        parts = urlsplit(server)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"--server {server!r}: expected http(s)://HOST[:PORT]")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port
        self.prefix = parts.path.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s

    def _connection(self) -> http.client.HTTPConnection:
        factory = (
            http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        )
        return factory(self.host, self.port, timeout=self.timeout_s, blocksize=_BLOCK)

    def _headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        headers.update(extra or {})
        return headers

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, dict[str, str], Any]:
        """One request; the body of the answer parsed as JSON (``None`` if it is not)."""
        conn = self._connection()
        try:
            conn.request(method, self.prefix + path, body=body, headers=self._headers(headers))
            response = conn.getresponse()
            raw = _read_capped(response, MAX_JSON_BYTES)
            found = {k.lower(): v for k, v in response.getheaders()}
        except (OSError, http.client.HTTPException) as exc:
            raise ServiceError(0, f"cannot reach {self.host}: {exc}") from None
        finally:
            conn.close()
        return response.status, found, _json_or_text(raw)

    def json(self, method: str, path: str, *, expect: Iterable[int] = (200,)) -> dict[str, Any]:
        """A JSON answer with one of the ``expect`` statuses, else :class:`ServiceError`."""
        status, _, body = self.request(method, path)
        if status not in tuple(expect) or not isinstance(body, dict):
            raise ServiceError(status, body)
        return body

    def upload(
        self, document: Path, model: str | None, media: str = "application/json"
    ) -> tuple[int, dict[str, str], Any]:
        """``POST /v1/runs`` with the document streamed from its file.

        ``media`` is ``application/json`` (a contract document) or ``application/x-ndjson``
        (``legal_eval_v1`` rows).
        """
        query = f"?model={quote(model, safe='')}" if model else ""
        with document.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            return self.request(
                "POST",
                f"/v1/runs{query}",
                body=handle,
                headers={"Content-Type": media, "Content-Length": str(size)},
            )

    def download(
        self, path: str, target: Path, sha256: str | None, limit: int | None = None
    ) -> str:
        """Stream ``path`` into ``target`` (at most ``limit`` bytes); return its sha256.

        The file appears only complete and checked (``sha256`` when given): it is written
        to a temporary file beside ``target`` and renamed.
        """
        conn = self._connection()
        digest = hashlib.sha256()
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                conn.request("GET", self.prefix + path, headers=self._headers())
                response = conn.getresponse()
                if response.status != 200:
                    raise ServiceError(response.status, _json_or_text(response.read(1 << 16)))
                size = 0
                while block := response.read(_BLOCK):
                    size += len(block)
                    if limit is not None and size > limit:
                        raise ServiceError(
                            0, f"{target.name}: more than the {limit:,} bytes listed"
                        )
                    digest.update(block)
                    handle.write(block)
            found = digest.hexdigest()
            if sha256 is not None and found != sha256:
                raise ServiceError(0, f"{target.name}: sha256 {found} differs from {sha256}")
            os.replace(tmp, target)
            return found
        except (OSError, http.client.HTTPException) as exc:
            raise ServiceError(0, f"download of {target.name} failed: {exc}") from None
        finally:
            conn.close()
            Path(tmp).unlink(missing_ok=True)

    def download_run(
        self, run_id: str, artifacts: object, out: Path
    ) -> tuple[list[str], list[str]]:
        """The listed artifacts of a run (and ``SHA256SUMS``) into ``out``, a new folder.

        Only the artifact table's names are fetched (built-in and registered: plain file
        names), from URLs built here; anything else the listing holds is left out and named
        in the second list returned (shown, never written). Returns the names written and
        the entries refused.

        Raises:
            ConfigError: ``out`` exists and is not an empty folder, or is a symbolic link.
            ServiceError: a download failed or did not match its listed sha256 or size.

        """
        run_id = checked_run_id(run_id)
        if out.is_symlink():
            raise ConfigError(f"{out} is a symbolic link; runs are downloaded into new folders")
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise ConfigError(f"{out} exists and is not empty; runs are write-once")
        out.mkdir(parents=True, exist_ok=True)
        written: list[str] = []
        refused: list[str] = []
        for artifact in artifacts if isinstance(artifacts, list) else []:
            entry = _artifact(artifact)
            if entry is None or entry[0] in written:
                refused.append(printable(artifact, 200))
                continue
            name, sha256, size = entry
            base = f"/v1/runs/{run_id}/artifacts/"
            self.download(base + name, out / name, sha256, size)
            written.append(name)
        self.download(
            f"/v1/runs/{run_id}/artifacts/{CHECKSUMS}", out / CHECKSUMS, None, MAX_CHECKSUMS_BYTES
        )
        return written, refused


def _artifact(entry: object) -> tuple[str, str, int] | None:
    """``(name, sha256, bytes)`` of a listing entry the client accepts, else ``None``."""
    if not isinstance(entry, dict):
        return None
    name, sha256, size = entry.get("name"), entry.get("sha256"), entry.get("bytes")
    # The table's names only (a registered artifact's too: its name is a plain file name).
    known = {row.name for row in artifact_table()}
    if name not in known or not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
        return None
    if type(size) is not int or size < 0:
        return None
    return str(name), sha256, size


def _json_or_text(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return raw.decode("utf-8", "replace")
