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

from collections.abc import Mapping
from typing import Any, cast

import httpx2
import openai

from pytest_legaleval.engine.retry import ProviderError, classify_status, parse_retry_after

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


class SdkClient:
    """``AsyncOpenAI.post`` for one base URL and key; failures as ``ProviderError``."""

    def __init__(self, base_url: str, api_key: str, pool_size: int, timeout_s: float) -> None:
        limits = httpx2.Limits(max_connections=pool_size, max_keepalive_connections=pool_size)
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key,
            max_retries=0,
            timeout=timeout_s,
            http_client=openai.DefaultAsyncHttpxClient(limits=limits, timeout=timeout_s),
        )

    async def post(self, body: Mapping[str, Any], idempotency_key: str) -> bytes:
        """Send one request; the response body of a success.

        Raises:
            ProviderError: every failure the SDK reports, classified.
            OSError: a transport failure the SDK did not wrap.

        """
        options = cast(
            openai.RequestOptions,
            {"security": {"bearer_auth": True}, "idempotency_key": idempotency_key},
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
            if _dropped(exc):
                raise ProviderError("connection_error", "connection lost") from None
            raise ProviderError("timeout", "request timed out") from None
        except openai.APIConnectionError as exc:
            causes = _causes(exc)
            detail = type(causes[-1]).__name__ if causes else "APIConnectionError"
            raise ProviderError("connection_error", f"connection: {detail}") from None
        except openai.APIResponseValidationError as exc:
            raise ProviderError("invalid_response", f"invalid response: {exc}") from None
        return response.content

    async def aclose(self) -> None:
        """Close the client and its connection pool."""
        await self._client.close()
