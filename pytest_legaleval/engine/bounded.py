"""Reading a reply body with a bound on its size, counted after decompression.

A model endpoint is not trusted (SECURITY.md): a 1 MB gzip body can inflate to 1 GiB, and a
chunked body can go on for ever. Both transports therefore read a reply through
:class:`BodyDecoder`, which inflates it here, step by step, as the bytes arrive — never more
than :data:`STEP` bytes of output per step, so the engine's loop is never blocked long and
the per-attempt deadline (``EngineSettings.request_timeout_s``) can always fire — and stops
with a ``ProviderError`` as soon as the decoded body passes the limit.

Over the limit is ``invalid_response`` (permanent: the same server would send the same body
again, Dataset Contract §3.2 retries transient errors only); too slow is ``timeout``
(transient), raised by the engine's deadline around the whole call, body included.

Only the codings the transports advertise (:data:`ACCEPT_ENCODING`: ``gzip``, ``deflate``)
are decoded; any other ``Content-Encoding`` is refused rather than passed on undecoded.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from typing import Final, Protocol

from pytest_legaleval.engine.retry import ProviderError
from pytest_legaleval.engine.types import DEFAULT_MAX_RESPONSE_BYTES

__all__ = [
    "ACCEPT_ENCODING",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "STEP",
    "BodyDecoder",
    "too_large",
]

STEP: Final = 256 * 1024
"""Most bytes inflated in one step (a bomb's chunk is expanded piece by piece)."""

ACCEPT_ENCODING: Final = "gzip, deflate"
"""What both transports ask for and can decode with a bound."""


class _Inflater(Protocol):
    @property
    def unconsumed_tail(self) -> bytes: ...

    @property
    def eof(self) -> bool: ...

    def decompress(self, data: bytes, max_length: int = ..., /) -> bytes: ...


def too_large(limit: int, what: str = "response") -> ProviderError:
    """The error of a body past ``limit`` decoded bytes (permanent ``invalid_response``)."""
    return ProviderError(
        "invalid_response",
        f"{what} too large: more than {limit} bytes after decompression (max_response_bytes)",
        transient=False,
    )


class _Stage:
    """One ``Content-Encoding`` step (gzip or deflate), inflated with a bounded output."""

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._inflater: _Inflater | None = None
        self._head = b""
        if coding in ("gzip", "x-gzip"):
            self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)

    def _start(self, data: bytes) -> bytes:
        # "deflate" is zlib-wrapped by the standard and raw in some servers: the first two
        # bytes tell (a zlib header is a multiple of 31 with method 8).
        head = self._head + data
        if len(head) < 2:
            self._head = head
            return b""
        self._head = b""
        wrapped = head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0
        self._inflater = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        return head

    def decode(self, data: bytes) -> Iterator[bytes]:
        """The decoded output of ``data``, lazily, in pieces of at most :data:`STEP` bytes.

        Raises:
            ProviderError: the compressed data is corrupt (``invalid_response``).

        """
        if self._inflater is None:
            data = self._start(data)
            if self._inflater is None:
                return
        inflater = self._inflater
        try:
            while data and not inflater.eof:
                piece = inflater.decompress(data, STEP)
                data = inflater.unconsumed_tail
                if piece:
                    yield piece
                # A full piece may leave output pending inside zlib: ask again.
                while len(piece) == STEP and not data and not inflater.eof:
                    piece = inflater.decompress(b"", STEP)
                    if piece:
                        yield piece
        except zlib.error as exc:
            raise ProviderError(
                "invalid_response", f"invalid response: corrupt {self._coding} body ({exc})"
            ) from None
        # Bytes after the end of the stream are ignored, never kept (zlib would pile them
        # up in ``unused_data``).


def _through(stage: _Stage, pieces: Iterable[bytes]) -> Iterator[bytes]:
    for part in pieces:
        yield from stage.decode(part)


def _stages(content_encoding: str | None) -> list[_Stage]:
    codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    stages: list[_Stage] = []
    # Codings are listed in the order they were applied: undo them last first.
    for coding in reversed(codings):
        if coding == "identity":
            continue
        if coding not in ("gzip", "x-gzip", "deflate"):
            raise ProviderError(
                "invalid_response",
                f"invalid response: unsupported Content-Encoding {coding[:40]!r} "
                f"(asked for {ACCEPT_ENCODING})",
            )
        stages.append(_Stage(coding))
    return stages


class BodyDecoder:
    """Decodes one reply body as it arrives, refusing more than ``limit`` decoded bytes.

    Args:
        content_encoding: the reply's ``Content-Encoding`` header (``None``: identity).
        limit: most decoded bytes accepted.
        truncate: keep the first ``limit`` bytes and ignore the rest instead of raising
            (for an error body, read only for its message).

    Raises:
        ProviderError: an unsupported coding (``invalid_response``), from the constructor.

    """

    def __init__(self, content_encoding: str | None, limit: int, *, truncate: bool = False) -> None:
        self._stages = _stages(content_encoding)
        self._limit = limit
        self._truncate = truncate
        self._parts: list[bytes] = []
        self._size = 0
        self.full = False
        """Whether the limit was reached (``truncate`` mode): the caller may stop reading."""

    def take(self, piece: bytes) -> bool:
        """Add decoded ``piece``; whether the (truncating) decoder is now full.

        Raises:
            ProviderError: the body passed the limit (not in ``truncate`` mode).

        """
        room = self._limit - self._size
        if len(piece) > room:
            if not self._truncate:
                raise too_large(self._limit)
            piece = piece[:room]
            self.full = True
        self._parts.append(piece)
        self._size += len(piece)
        return self.full

    def feed(self, chunk: bytes) -> None:
        """Decode one chunk of the body as received.

        Raises:
            ProviderError: the decoded body passed the limit, or is corrupt.

        """
        if self.full or not chunk:
            return
        pieces: Iterable[bytes] = (chunk,)
        for stage in self._stages:
            # Lazy all the way: a nested bomb is never inflated past one piece per stage.
            pieces = _through(stage, pieces)
        for piece in pieces:
            if self.take(piece):
                return

    def body(self) -> bytes:
        """The decoded body so far."""
        return self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)
