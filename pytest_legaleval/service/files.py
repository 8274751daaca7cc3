"""Streaming an artifact: a chunk at a time, with its checksum, never held whole."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from starlette.responses import Response

__all__ = ["CHUNK_BYTES", "FileStream", "media_type"]

CHUNK_BYTES = 256 * 1024


def media_type(name: str) -> str:
    """The content type of an artifact, by its name."""
    if name.endswith(".jsonl"):
        return "application/x-ndjson"
    if name.endswith(".json"):
        return "application/json"
    return "text/plain; charset=utf-8"


class FileStream(Response):
    """A file sent in chunks; a client that stops reading for ``idle_timeout`` is dropped.

    ``sha256`` (from the run's ``SHA256SUMS``) goes into ``X-Content-SHA256`` and the ETag,
    so the client can check what it got.
    """

    media_type = "application/octet-stream"

    def __init__(self, path: Path, sha256: str | None, *, idle_timeout: float = 30.0) -> None:
        self.path = path
        self.idle_timeout = idle_timeout
        headers = {
            "Content-Length": str(path.stat().st_size),
            "Content-Disposition": f'attachment; filename="{path.name}"',
        }
        if sha256:
            headers["X-Content-SHA256"] = sha256
            headers["ETag"] = f'"{sha256}"'
        super().__init__(content=None, headers=headers, media_type=media_type(path.name))

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Send the headers, then the file a chunk at a time."""
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        if scope.get("method") == "HEAD":
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        with self.path.open("rb") as handle:
            while True:
                chunk = await asyncio.to_thread(handle.read, CHUNK_BYTES)
                more = len(chunk) == CHUNK_BYTES
                await asyncio.wait_for(
                    send({"type": "http.response.body", "body": chunk, "more_body": more}),
                    self.idle_timeout,
                )
                if not more:
                    return
