"""The OpenAI Chat Completions wire format over aiohttp: the engine's default HTTP client.

One POST per attempt: a JSON body out, the response bytes back. Everything the engine
needs of a reply (the completion, a status error with its code and ``Retry-After``) is
read here from the bytes and headers the server sent, with aiohttp's public API only. The
openai SDK's public client (``engine.sdk_client``) speaks the same format and is the
reference this client is tested against (``tests/unit/test_engine_wire.py``): the same
requests reach the server, the same outcomes come back.

Why not the SDK on the hot path: its per-call request building and response typing cost
more CPU than the whole rest of an item (``benchmarks/RESULTS.md``), and its faster paths
are private.
"""

from __future__ import annotations

import asyncio
import base64
import json
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

import aiohttp

from pytest_legaleval.engine.bounded import (
    ACCEPT_ENCODING,
    DEFAULT_MAX_RESPONSE_BYTES,
    BodyDecoder,
    too_large,
)
from pytest_legaleval.engine.openai_reply import DUMMY_KEY
from pytest_legaleval.engine.retry import ProviderError, classify_status, parse_retry_after
from pytest_legaleval.engine.urls import endpoint_url, without_credentials

__all__ = ["MAX_ERROR_BODY", "WireClient", "error_from_status"]

MAX_ERROR_BODY = 64 * 1024
"""Bytes of an error response read for its message (the rest is discarded)."""

_USER_AGENT = "pytest-legaleval"


def _message_of(body: bytes) -> tuple[str, str | None]:
    """The error message and ``error.code`` in an error body (JSON or plain text)."""
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return text.strip(), None
    error = data.get("error", data) if isinstance(data, dict) else None
    if isinstance(error, dict):
        message = error.get("message")
        code = error.get("code")
        return (
            message if isinstance(message, str) else text.strip(),
            str(code) if code is not None else None,
        )
    return text.strip(), None


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``NO_PROXY`` …), if any.

    Read once per client: aiohttp's ``trust_env`` reads the whole environment (and
    ``.netrc``) on every request, which costs more CPU than the request itself.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


def error_from_status(status: int, headers: Mapping[str, str], body: bytes) -> ProviderError:
    """The classified failure of an HTTP error response (the SDK's status errors, as ours)."""
    message, body_code = _message_of(body)
    code, transient = classify_status(status, body_code)
    return ProviderError(
        code,
        f"Error code: {status} - {message}" if message else f"Error code: {status}",
        transient=transient,
        status_code=status,
        retry_after_s=parse_retry_after(headers),
    )


async def _error_body(response: aiohttp.ClientResponse, encoding: str | None) -> bytes:
    """At most ``MAX_ERROR_BODY`` decoded bytes of an error reply (the rest is not read)."""
    try:
        decoder = BodyDecoder(encoding, MAX_ERROR_BODY, truncate=True)
    except ProviderError:
        return b""
    async for chunk in response.content.iter_any():
        decoder.feed(chunk)
        if decoder.full:
            break
    return decoder.body()


class WireClient:
    """POSTs chat completions to one base URL with one key, over one connection pool.

    Args:
        base_url: the OpenAI-compatible endpoint (``…/v1``); a query is kept after the
            path; user info is sent as HTTP Basic credentials when there is no key.
        api_key: sent as ``Authorization: Bearer``; empty for servers that need none.
        pool_size: connections kept open (the process's concurrency and some spare).
        max_response_bytes: most bytes of a reply, counted after decompression as they
            arrive (``engine.bounded``); a longer reply is ``invalid_response``.

    The session is created on the engine's loop at the first call (aiohttp binds it to the
    running loop). Proxy variables (``HTTPS_PROXY``, ``NO_PROXY``) are honoured, as the SDK
    honours them (read once, see :func:`proxy_for`). aiohttp's own decompression is off:
    it inflates a whole network chunk at once, so a reply is inflated here with a bound.

    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        pool_size: int,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        base_url, user, password = without_credentials(base_url)
        self.url = endpoint_url(base_url, "/chat/completions")
        self._limit = max_response_bytes
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Accept-Encoding": ACCEPT_ENCODING,
            "User-Agent": _USER_AGENT,
        }
        if user is not None and (not api_key or api_key == DUMMY_KEY):
            # A gateway's credentials in the URL, and no key: HTTP Basic, as curl sends them.
            pair = f"{user}:{password or ''}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        elif api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._headers = headers
        self._pool_size = pool_size
        self._proxy = proxy_for(self.url)
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        session = self._session
        if session is None:
            connector = aiohttp.TCPConnector(limit=self._pool_size, limit_per_host=self._pool_size)
            # The engine bounds every attempt with its own timeout (engine.scheduler).
            session = aiohttp.ClientSession(
                connector=connector,
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=None),
                auto_decompress=False,
            )
            self._session = session
        return session

    async def post(self, body: Mapping[str, Any], idempotency_key: str) -> bytes:
        """Send one request; the response body of a success.

        Raises:
            ProviderError: an HTTP error status, classified (its ``Retry-After`` kept).
            aiohttp.ClientError, asyncio.TimeoutError, OSError: transport failures, which
                ``engine.retry.classify_error`` classifies.

        """
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        session = self._open()
        async with session.post(
            self.url,
            data=data.encode(),
            headers={"Idempotency-Key": idempotency_key},
            proxy=self._proxy,
            # A redirect is no completion; following one would resend the key elsewhere.
            allow_redirects=False,
        ) as response:
            encoding = response.headers.get("Content-Encoding")
            if not 200 <= response.status < 300:
                raise error_from_status(
                    response.status, response.headers, await _error_body(response, encoding)
                )
            declared = response.content_length
            if not encoding and declared is not None:
                # A plain body of a declared length: the parser reads that many bytes and
                # no more, so the declaration is the bound (the common case, kept cheap).
                if declared > self._limit:
                    raise too_large(self._limit)
                return await response.read()
            decoder = BodyDecoder(encoding, self._limit)
            async for chunk in response.content.iter_any():
                decoder.feed(chunk)
            return decoder.body()

    async def aclose(self) -> None:
        """Close the connection pool."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()
            # Lets the connector's transports finish closing before the loop stops.
            await asyncio.sleep(0)
