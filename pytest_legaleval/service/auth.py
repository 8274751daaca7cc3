"""Who may call the service: bearer tokens, or the loopback interface without them.

Tokens come from ``LEGALEVAL_API_TOKENS`` (comma-separated). Only their SHA-256 digests are
kept; a presented token is hashed and compared with every digest in constant time, and a
run records its owner as ``tok_`` and the first 16 hex digits of the digest, never the
token. Without tokens the service answers loopback clients only, and refuses to listen on
any other address.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "LOCAL_OWNER",
    "TOKENS_ENV",
    "Tokens",
    "bearer",
    "is_loopback",
    "owner_id",
]

TOKENS_ENV = "LEGALEVAL_API_TOKENS"
"""The environment variable holding the accepted tokens."""
LOCAL_OWNER = "local"
"""The owner of every run when no token is configured."""


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def owner_id(digest: bytes) -> str:
    """The public id of a token: never the token, not enough of the digest to guess it."""
    return f"tok_{digest.hex()[:16]}"


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` (an address or ``localhost``) is on the loopback interface."""
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class Tokens:
    """The accepted tokens, as digests."""

    digests: tuple[bytes, ...] = ()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Tokens:
        """Read ``LEGALEVAL_API_TOKENS``; blanks around and between commas are ignored."""
        text = (environ if environ is not None else os.environ).get(TOKENS_ENV, "")
        tokens = [part.strip() for part in text.split(",") if part.strip()]
        return cls(tuple(_digest(token) for token in dict.fromkeys(tokens)))

    @property
    def enabled(self) -> bool:
        """Whether any token is configured."""
        return bool(self.digests)

    def owner(self, token: str) -> str | None:
        """The owner id of ``token``, or ``None`` when it is not accepted.

        Every digest is compared (no early exit), each in constant time, so the time taken
        says nothing about which token, or how much of one, matched.
        """
        presented = _digest(token)
        found: bytes | None = None
        for digest in self.digests:
            if hmac.compare_digest(presented, digest):
                found = digest
        return owner_id(found) if found is not None else None

    def __repr__(self) -> str:
        return f"Tokens({len(self.digests)} configured)"


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else ``None``."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()
