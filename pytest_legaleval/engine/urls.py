"""Endpoint URLs: joining a path onto a base URL, and the one function that redacts a URL.

A base URL may carry credentials: user info (``https://user:pass@gateway/v1``) or a key in
its query (Azure API Management's ``?subscription-key=``, Azure Functions' ``?code=``, a
signed URL's ``&sig=``). :func:`redact_url` is the single place that decides what of a URL
is secret; the run's redactor (``run.redaction``) calls it for every URL in every string it
writes, and the engine for the endpoint identity it stores in the cache.

:func:`endpoint_url` joins ``/chat/completions`` onto the base URL's *path*, keeping its
query after it — never appending the path to the query.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable
from typing import Final

__all__ = [
    "SECRET_QUERY_NAMES",
    "URL_PATTERN",
    "endpoint_url",
    "redact_url",
    "secret_query_name",
    "url_secrets",
    "without_credentials",
]

SECRET_QUERY_NAMES: Final = frozenset(
    {
        "key", "apikey", "api_key", "subscription_key", "ocp_apim_subscription_key",
        "code", "token", "access_token", "id_token", "refresh_token", "auth", "auth_token",
        "authorization", "sig", "signature", "x_amz_signature", "x_amz_credential",
        "x_amz_security_token", "x_goog_signature", "x_goog_credential", "secret",
        "client_secret", "password", "passwd", "pwd", "session_token", "sas", "se_token",
    }
)  # fmt: skip
"""Query parameter names whose value is a credential (lower-cased, ``-`` and ``.`` as
``_``); a name that ends in ``_key``, ``_token``, ``_secret`` or ``_signature`` is one too."""

_SECRET_SUFFIXES: Final = ("_key", "_token", "_secret", "_signature", "_password")

REDACTED: Final = "[REDACTED:secret]"
"""What a secret query value becomes (the name stays, so the URL still reads)."""

URL_PATTERN: Final = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{1,15}://[^\s\"'<>`\\]+")
"""A URL inside free text (up to white space, a quote, a bracket or a backslash)."""


def secret_query_name(name: str) -> bool:
    """Whether a query parameter called ``name`` carries a credential."""
    norm = urllib.parse.unquote_plus(name).strip().lower().replace("-", "_").replace(".", "_")
    return norm in SECRET_QUERY_NAMES or norm.endswith(_SECRET_SUFFIXES)


def _redact_query(query: str, literals: Iterable[str]) -> str:
    values = [v for v in literals if v]
    parts = []
    for part in query.split("&"):
        name, sep, value = part.partition("=")
        plain = urllib.parse.unquote_plus(value)
        if sep and value and (secret_query_name(name) or plain in values or value in values):
            part = f"{name}={REDACTED}"
        parts.append(part)
    return "&".join(parts)


def redact_url(url: str, literals: Iterable[str] = ()) -> str:
    """``url`` with its user info and credential-bearing query values redacted.

    User info becomes ``***`` (``http://***@host/v1``); the value of every query parameter
    named like a credential (:func:`secret_query_name`) or equal to one of ``literals`` (the
    configured secrets) becomes ``[REDACTED:secret]``; a fragment's parameters likewise.
    Everything else is kept byte for byte.
    """
    scheme_end = url.find("://")
    if scheme_end < 0:
        return url
    start = scheme_end + 3
    rest = url[start:]
    # The authority ends at the first "/", "?" or "#"; user info is what precedes its last "@".
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:
        authority = "***@" + authority.rsplit("@", 1)[1]
    out = url[:start] + authority
    path, hash_mark, fragment = tail.partition("#")
    path, question, query = path.partition("?")
    literal_list = list(literals)
    if question:
        query = _redact_query(query, literal_list)
    if hash_mark and "=" in fragment:
        fragment = _redact_query(fragment, literal_list)
    return out + path + question + query + hash_mark + fragment


def url_secrets(url: str) -> list[str]:
    """The credentials ``url`` carries: its user info's password and secret query values."""
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:  # a malformed port or bracket: nothing can be read off it
        return []
    found = [password] if password else []
    for text in (parts.query, parts.fragment):
        for name, value in urllib.parse.parse_qsl(text, keep_blank_values=False):
            if secret_query_name(name):
                found.append(value)
    return found


def without_credentials(base_url: str) -> tuple[str, str | None, str | None]:
    """``base_url`` without user info, and the user and password it carried (decoded)."""
    parts = urllib.parse.urlsplit(base_url)
    if parts.username is None and parts.password is None:
        return base_url, None, None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    clean = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    return clean, user, password


def endpoint_url(base_url: str, path: str) -> str:
    """``path`` joined onto ``base_url``'s path, its query and fragment kept after it.

    ``https://h/v1?api-version=2`` and ``/chat/completions`` give
    ``https://h/v1/chat/completions?api-version=2``.
    """
    parts = urllib.parse.urlsplit(base_url)
    joined = parts.path.rstrip("/") + "/" + path.lstrip("/")
    return urllib.parse.urlunsplit(parts._replace(path=joined, fragment=""))
