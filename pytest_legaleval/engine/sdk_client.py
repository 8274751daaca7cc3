"""The openai SDK's public client as a transport (``--transport sdk``): the reference.

The engine's default client (``engine.wire``) speaks the Chat Completions wire format over
aiohttp; this one sends the same body through ``openai.AsyncOpenAI.post``, the SDK's
documented way to call an endpoint, on the SDK's own HTTP transport, with the SDK's
retries off. Its failures are mapped to the engine's ``ProviderError`` with the same
classification as the wire client's (``engine.retry.classify_status``), so the two give the
same outcomes for the same replies (``tests/unit/test_engine_wire.py``).

Imported only when a run asks for it: the SDK's import is the largest of the engine's.
"""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import AsyncIterator, Mapping
from typing import Any, cast

import httpx2
import openai

from pytest_legaleval.engine.bounded import ACCEPT_ENCODING, BodyDecoder, too_large
from pytest_legaleval.engine.openai_reply import DUMMY_KEY
from pytest_legaleval.engine.retry import ProviderError, classify_status, parse_retry_after
from pytest_legaleval.engine.types import DEFAULT_MAX_RESPONSE_BYTES
from pytest_legaleval.engine.urls import without_credentials
from pytest_legaleval.engine.wire import MAX_ERROR_BODY

__all__ = ["SdkClient"]

_PATH = "/chat/completions"


def _body_code(body: object) -> str | None:
    if not isinstance(body, Mapping):
        return None
    error = body.get("error", body)
    if isinstance(error, Mapping) and error.get("code") is not None:
        return str(error["code"])
    return None


def _causes(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    current: BaseException | None = exc.__cause__ or exc.__context__
    while current is not None and len(out) < 8 and current not in out:
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


def _dropped(exc: BaseException) -> bool:
    """Whether a connection fault (not a timeout) is behind an SDK timeout error.

    The SDK's aiohttp adapter reports a reset connection as a connect timeout; only the
    original cause tells them apart.
    """
    for inner in _causes(exc):
        if isinstance(inner, TimeoutError):
            return False
        if isinstance(inner, ConnectionError) or type(inner).__name__ in (
            "ServerDisconnectedError",
            "ClientOSError",
            "ClientConnectorError",
            "RemoteProtocolError",
            "ReadError",
        ):
            return True
    return False


class _BoundedStream(httpx2.AsyncByteStream):
    """A reply's raw stream, decoded here with a bound (``engine.bounded``)."""

    def __init__(self, raw: httpx2.AsyncByteStream, decoder: BodyDecoder) -> None:
        self._raw = raw
        self._decoder = decoder

    async def __aiter__(self) -> AsyncIterator[bytes]:
        decoder = self._decoder
        async for chunk in self._raw:
            decoder.feed(chunk)
            if decoder.full:
                break
        yield decoder.body()

    async def aclose(self) -> None:
        await self._raw.aclose()


def _bounded(limit: int) -> Any:
    """A response hook that swaps httpx's whole-chunk decoding for the bounded one."""

    async def hook(response: httpx2.Response) -> None:
        ok = 200 <= response.status_code < 300
        encoding = response.headers.get("content-encoding")
        declared = response.headers.get("content-length", "")
        if ok and not encoding and declared.isdigit() and len(declared) < 16:
            # A plain body of a declared length: h11 reads that many bytes and no more, so
            # the declaration is the bound (the common case, kept cheap).
            if int(declared) > limit:
                raise too_large(limit)
            return
        try:
            decoder = BodyDecoder(encoding, limit if ok else MAX_ERROR_BODY, truncate=not ok)
        except ProviderError:
            if ok:
                raise
            decoder = BodyDecoder(None, 0, truncate=True)
        if "content-encoding" in response.headers:
            del response.headers["content-encoding"]  # decoded here, not by httpx again
        if isinstance(response.stream, httpx2.AsyncByteStream):
            response.stream = _BoundedStream(response.stream, decoder)

    return hook


def _provider_error(exc: BaseException) -> ProviderError | None:
    return next((c for c in _causes(exc) if isinstance(c, ProviderError)), None)


class SdkClient:
    """``AsyncOpenAI.post`` for one base URL and key; failures as ``ProviderError``.

    Redirects are not followed (a redirect is no completion, and following one would send
    the key elsewhere); a reply is decoded with ``max_response_bytes`` as its bound; a base
    URL's query is sent with every request (the SDK would append the path to it), its user
    info as HTTP Basic credentials when there is no key.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        pool_size: int,
        timeout_s: float,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        limits = httpx2.Limits(max_connections=pool_size, max_keepalive_connections=pool_size)
        base_url, user, password = without_credentials(base_url)
        parts = urllib.parse.urlsplit(base_url)
        query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
        headers = {"Accept-Encoding": ACCEPT_ENCODING}
        self._basic = user is not None and (not api_key or api_key == DUMMY_KEY)
        if self._basic:
            pair = f"{user}:{password or ''}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        self._client = openai.AsyncOpenAI(
            base_url=urllib.parse.urlunsplit(parts._replace(query="", fragment="")),
            api_key=api_key,
            max_retries=0,
            timeout=timeout_s,
            default_headers=headers,
            default_query=query or None,
            http_client=openai.DefaultAsyncHttpxClient(
                limits=limits,
                timeout=timeout_s,
                follow_redirects=False,
                event_hooks={"response": [_bounded(max_response_bytes)]},
            ),
        )

    async def post(self, body: Mapping[str, Any], idempotency_key: str) -> bytes:
        """Send one request; the response body of a success.

        Raises:
            ProviderError: every failure the SDK reports, classified.
            OSError: a transport failure the SDK did not wrap.

        """
        options = cast(
            openai.RequestOptions,
            {"security": {"bearer_auth": not self._basic}, "idempotency_key": idempotency_key},
        )
        try:
            response = await self._client.post(
                _PATH, cast_to=httpx2.Response, body=dict(body), options=options
            )
        except openai.APIStatusError as exc:
            code, transient = classify_status(exc.status_code, _body_code(exc.body))
            raise ProviderError(
                code,
                exc.message,
                transient=transient,
                status_code=exc.status_code,
                retry_after_s=parse_retry_after(exc.response.headers),
            ) from None
        except openai.APITimeoutError as exc:
            found = _provider_error(exc)
            if found is not None:
                raise found from None
            if _dropped(exc):
                raise ProviderError("connection_error", "connection lost") from None
            raise ProviderError("timeout", "request timed out") from None
        except openai.APIConnectionError as exc:
            found = _provider_error(exc)
            if found is not None:  # the reply was refused here (too large, bad coding)
                raise found from None
            causes = _causes(exc)
            detail = type(causes[-1]).__name__ if causes else "APIConnectionError"
            raise ProviderError("connection_error", f"connection: {detail}") from None
        except openai.APIResponseValidationError as exc:
            raise ProviderError("invalid_response", f"invalid response: {exc}") from None
        return response.content

    async def aclose(self) -> None:
        """Close the client and its connection pool."""
        await self._client.close()
