"""A small client of the service on the standard library (``legaleval submit`` uses it).

The upload is streamed from the file and the artifacts to their files, each checked against
the sha256 the service gives; nothing is held whole.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from pytest_legaleval.errors import ConfigError

__all__ = ["ServiceClient", "ServiceError"]

_BLOCK = 1 << 20


class ServiceError(Exception):
    """An answer the client did not expect (``status`` 0: no answer at all)."""

    def __init__(self, status: int, body: Any) -> None:
        error = body.get("error") if isinstance(body, dict) else None
        message = error.get("message") if isinstance(error, dict) else str(body)[:500]
        request_id = body.get("request_id") if isinstance(body, dict) else None
        text = f"HTTP {status}: {message}" if status else str(message)
        super().__init__(text + (f" (request_id {request_id})" if request_id else ""))
        self.status = status
        self.body = body


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
            raw = response.read()
            found = {k.lower(): v for k, v in response.getheaders()}
        except OSError as exc:
            raise ServiceError(0, f"cannot reach {self.host}: {exc}") from None
        finally:
            conn.close()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode("utf-8", "replace")
        return response.status, found, parsed

    def json(self, method: str, path: str, *, expect: Iterable[int] = (200,)) -> dict[str, Any]:
        """A JSON answer with one of the ``expect`` statuses, else :class:`ServiceError`."""
        status, _, body = self.request(method, path)
        if status not in tuple(expect) or not isinstance(body, dict):
            raise ServiceError(status, body)
        return body

    def upload(self, document: Path, model: str | None) -> tuple[int, dict[str, str], Any]:
        """``POST /v1/runs`` with the document streamed from its file."""
        query = f"?model={quote(model, safe='')}" if model else ""
        with document.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            return self.request(
                "POST",
                f"/v1/runs{query}",
                body=handle,
                headers={"Content-Type": "application/json", "Content-Length": str(size)},
            )

    def download(self, path: str, target: Path, sha256: str | None) -> str:
        """Stream ``path`` into ``target``; return its sha256 (checked when given)."""
        conn = self._connection()
        digest = hashlib.sha256()
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                conn.request("GET", self.prefix + path, headers=self._headers())
                response = conn.getresponse()
                if response.status != 200:
                    raw = response.read()
                    raise ServiceError(response.status, _json_or_text(raw))
                while block := response.read(_BLOCK):
                    digest.update(block)
                    handle.write(block)
            found = digest.hexdigest()
            if sha256 is not None and found != sha256:
                raise ServiceError(0, f"{target.name}: sha256 {found} differs from {sha256}")
            os.replace(tmp, target)
            return found
        except OSError as exc:
            raise ServiceError(0, f"download of {path} failed: {exc}") from None
        finally:
            conn.close()
            Path(tmp).unlink(missing_ok=True)

    def download_run(self, run_id: str, artifacts: Iterable[Mapping[str, Any]], out: Path) -> None:
        """Every listed artifact (and ``SHA256SUMS``) of a run into ``out``."""
        if out.exists() and any(out.iterdir()):
            raise ConfigError(f"{out} exists and is not empty; runs are write-once")
        for artifact in artifacts:
            name = str(artifact["name"])
            if "/" in name or name.startswith("."):
                raise ServiceError(0, f"refusing the artifact name {name!r}")
            self.download(str(artifact["url"]), out / name, str(artifact["sha256"]))
        self.download(f"/v1/runs/{run_id}/artifacts/SHA256SUMS", out / "SHA256SUMS", None)


def _json_or_text(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")
