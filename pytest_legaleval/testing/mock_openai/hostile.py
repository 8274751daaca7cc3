r"""Hostile replies: byte sequences a real HTTP library would refuse to send.

A :class:`HostileRule` answers a matching chat completion with the bytes of one hostile
reply, rendered here and written verbatim by
:class:`~pytest_legaleval.testing.mock_openai.hostile_server.HostileOpenAIServer` on its
own socket, which then closes the connection (so a lying ``Content-Length`` never
desynchronises the next request). Kinds (:data:`HOSTILE_KINDS`):

* body faults, all with status 200: ``invalid_json`` (cut-off JSON), ``lone_surrogate``
  (``"Answer: A \ud83d"``), ``control_chars`` (NUL, ESC, DEL, U+2028 …), ``huge``
  (``size`` characters of content, 10 MB by default), ``empty_choices``,
  ``missing_choices``, ``null_content``, and wrong types: ``usage_string``,
  ``choices_dict``, ``content_number``, ``message_string``, ``body_array``;
* ``usage``: a well-formed reply whose ``usage`` block is ``rule.usage`` as given
  (negative, fractional, ``NaN``, 10**30 …);
* transport faults: ``lying_length`` (``Content-Length`` off by ``length_delta``: more
  bytes announced than sent, or fewer), ``cut`` (the body stops after ``cut_at`` bytes and
  the connection closes);
* ``echo``: the request's ``Authorization`` and ``api-key`` headers and the whole request
  echoed into the reply's content (``status`` 200) or into an error message (``status``
  of 400 or more) — the canary for secrets that must never be stored or printed;
* ``raw``: ``rule.raw`` verbatim, status line and headers included;
* size faults: ``gzip_bomb`` (a ``Content-Encoding: gzip`` reply of about 1 MB that
  inflates to ``size`` bytes of content, 1 GiB by default; built once per size), and
  ``endless`` (a chunked reply whose content never ends: the server writes chunks of
  :data:`ENDLESS_CHUNK` bytes until the client goes away).

``content`` replaces the reply text the body kinds start from (``"Answer: A"``), so a
hostile reply can still carry the right answer.
"""

from __future__ import annotations

import dataclasses
import functools
import http
import json
import re
import zlib
from collections.abc import Mapping
from typing import Any, Final, Literal, get_args

from pytest_legaleval.testing.mock_openai.rules import compile_pattern

__all__ = [
    "BOMB_SIZE",
    "ENDLESS_CHUNK",
    "HOSTILE_KINDS",
    "HostileKind",
    "HostileRule",
    "echo_text",
    "hostile_repeat",
    "render_hostile",
]

HostileKind = Literal[
    "invalid_json",
    "lone_surrogate",
    "control_chars",
    "huge",
    "empty_choices",
    "missing_choices",
    "null_content",
    "usage_string",
    "choices_dict",
    "content_number",
    "message_string",
    "body_array",
    "usage",
    "lying_length",
    "cut",
    "echo",
    "raw",
    "gzip_bomb",
    "endless",
]
"""The hostile replies the server can send, see the module docstring."""

HOSTILE_KINDS: Final[tuple[str, ...]] = get_args(HostileKind)

DEFAULT_CONTENT: Final = "Answer: A"
BOMB_SIZE: Final = 1024**3
"""Inflated bytes of a ``gzip_bomb`` reply unless the rule says otherwise."""
ENDLESS_CHUNK: Final = 64 * 1024
"""Content bytes per chunk of an ``endless`` reply."""
CONTROL_CHARS: Final = "\x00\x01\x07\x08\x0b\x0c\x1b[31m\x7f\x85\u2028\u2029\ufeff\ufffe"
_REASONS: Final = {s.value: s.phrase for s in http.HTTPStatus}


@dataclasses.dataclass
class HostileRule:
    """A scripted hostile reply; hostile rules are tried before faults and replies.

    Attributes:
        kind: One of :data:`HOSTILE_KINDS`.
        match: Regular expression searched in the concatenated prompt; ``None`` matches
            every request.
        times: Answer only the first ``times`` matching requests.
        content: Reply text the body kinds start from (default ``"Answer: A"``).
        usage: The ``usage`` block of a ``usage`` reply, sent as given (``NaN`` allowed).
        size: Characters of content of a ``huge`` reply (``gzip_bomb``: inflated bytes,
            :data:`BOMB_SIZE` when left at the default).
        length_delta: ``lying_length``: announced minus sent body bytes (negative: fewer
            announced than sent).
        cut_at: ``cut``: body bytes sent before the connection closes (default: half).
        status: ``echo``: 200 echoes into the content, 400 or more into an error body.
        raw: ``raw``: the whole response (text is encoded as UTF-8 with surrogates passed
            through).
        hold: Seconds the connection stays open after the bytes before it closes (a client
            waiting for announced bytes then times out instead of seeing the close).
        delay: Seconds before the reply; ``None`` uses the configured latency.
        fired: How many requests this rule answered (maintained by the server).

    """

    kind: HostileKind
    match: str | None = None
    times: int | None = None
    content: str | None = None
    usage: Mapping[str, Any] | None = None
    size: int = 10_000_000
    length_delta: int = 1000
    cut_at: int | None = None
    status: int = 200
    raw: bytes | str = b""
    hold: float = 0.0
    delay: float | None = None
    fired: int = dataclasses.field(default=0, init=False, compare=False)
    _pattern: re.Pattern[str] | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.kind not in HOSTILE_KINDS:
            raise ValueError(
                f"unknown hostile kind {self.kind!r}; known: {', '.join(HOSTILE_KINDS)}"
            )
        if self.times is not None and self.times < 0:
            raise ValueError(f"times must be >= 0, got {self.times}")
        if self.size < 0 or self.hold < 0 or (self.cut_at is not None and self.cut_at < 0):
            raise ValueError("size, hold and cut_at must be >= 0")
        if not 100 <= self.status <= 999:
            raise ValueError(f"status must be a 3-digit HTTP status, got {self.status}")
        self._pattern = compile_pattern(self.match)

    def matches(self, prompt: str) -> bool:
        """Whether this rule may answer a request with ``prompt`` (``times`` aside)."""
        return self._pattern is None or self._pattern.search(prompt) is not None


def echo_text(method: str, target: str, headers: Mapping[str, str], body: bytes) -> str:
    """The echo of a request: its secret-bearing headers first, then the request itself."""
    lines = [
        f"Authorization: {headers.get('authorization', '')}",
        f"api-key: {headers.get('api-key', '')}",
        "",
        f"{method} {target} HTTP/1.1",
        *(f"{name}: {value}" for name, value in headers.items()),
        "",
        body.decode("utf-8", "replace"),
    ]
    return "\n".join(lines)


def _completion(message: Any, *, usage: Any = None, model: str = "mock-model") -> dict[str, Any]:
    return {
        "id": "chatcmpl-hostile",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": usage if usage is not None else {"prompt_tokens": 7, "completion_tokens": 3},
    }


def _assistant(content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def _body(rule: HostileRule, model: str, echo: str) -> Any:
    """The JSON value of a body kind (``None`` for kinds that are not JSON)."""
    text = DEFAULT_CONTENT if rule.content is None else rule.content
    kind = rule.kind
    simple: dict[str, Any] = {
        "lone_surrogate": lambda: _completion(_assistant(f"{text} \ud83d"), model=model),
        "control_chars": lambda: _completion(_assistant(text + CONTROL_CHARS), model=model),
        "huge": lambda: _completion(
            _assistant((text + " " + "x" * rule.size)[: max(rule.size, len(text))]), model=model
        ),
        "null_content": lambda: _completion(_assistant(None), model=model),
        "usage_string": lambda: _completion(_assistant(text), usage="lots", model=model),
        "content_number": lambda: _completion(_assistant(42), model=model),
        "message_string": lambda: _completion(text, model=model),
        "usage": lambda: _completion(_assistant(text), usage=dict(rule.usage or {}), model=model),
    }
    if kind in simple:
        return simple[kind]()
    if kind in ("empty_choices", "missing_choices", "choices_dict", "body_array"):
        body = _completion(_assistant(text), model=model)
        if kind == "empty_choices":
            body["choices"] = []
        elif kind == "missing_choices":
            del body["choices"]
        elif kind == "choices_dict":
            body["choices"] = {"0": body["choices"][0]}
        else:
            return [body]
        return body
    if kind == "echo":
        if rule.status >= 400:
            return {"error": {"message": echo, "type": "invalid_request_error", "code": None}}
        return _completion(_assistant(echo), model=model)
    return _completion(_assistant(text), model=model)  # lying_length, cut


@functools.lru_cache(maxsize=4)
def _bomb(size: int) -> bytes:
    """A gzip stream of a completion whose content is ``size`` bytes of ``x``."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [
        packer.compress(
            b'{"choices":[{"index":0,"finish_reason":"stop","message":'
            b'{"role":"assistant","content":"Answer: A '
        )
    ]
    block = b"x" * (1 << 20)
    left = size
    while left > 0:
        out.append(packer.compress(block[: min(left, len(block))]))
        left -= len(block)
    out.append(packer.compress(b'"}}]}'))
    out.append(packer.flush())
    return b"".join(out)


def hostile_repeat(rule: HostileRule) -> bytes:
    """What the server writes again and again after :func:`render_hostile`'s bytes.

    An ``endless`` rule's chunk (the client must stop reading); ``b""`` for every other kind.
    """
    if rule.kind != "endless":
        return b""
    return b"%x\r\n" % ENDLESS_CHUNK + b"x" * ENDLESS_CHUNK + b"\r\n"


def _head(status: int, length: int) -> bytes:
    reason = _REASONS.get(status, "Unknown")
    return (
        f"HTTP/1.1 {status} {reason}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {length}\r\n"
        "Connection: close\r\n\r\n"
    ).encode("latin-1")


def render_hostile(
    rule: HostileRule,
    *,
    method: str,
    target: str,
    headers: Mapping[str, str],
    body: bytes,
    model: str = "mock-model",
) -> bytes:
    """The bytes ``rule`` sends in answer to one request (status line to the last byte).

    Args:
        rule: The rule that fired.
        method: The request's method.
        target: The request's target (path and query).
        headers: The request's headers (lower-case names).
        body: The request's body.
        model: Echoed as the reply's ``model``.

    Returns:
        Everything to write on the socket; the server closes the connection afterwards.

    """
    if rule.kind == "raw":
        raw = rule.raw
        return raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
    if rule.kind == "gzip_bomb":
        payload = _bomb(BOMB_SIZE if rule.size == 10_000_000 else rule.size)
        head = _head(200, len(payload))
        return head[:-2] + b"Content-Encoding: gzip\r\n\r\n" + payload
    if rule.kind == "endless":
        start = b'{"choices":[{"index":0,"message":{"role":"assistant","content":"Answer: A '
        return (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            + b"%x\r\n" % len(start)
            + start
            + b"\r\n"
        )
    if rule.kind == "invalid_json":
        payload = b'{"id": "chatcmpl-hostile", "choices": [{"message": {"content": "Answer: A"'
        return _head(200, len(payload)) + payload
    echo = echo_text(method, target, headers, body) if rule.kind == "echo" else ""
    # ensure_ascii writes a lone surrogate as its \uXXXX escape, as a buggy server would;
    # allow_nan writes NaN and Infinity literals, which Python's json accepts.
    payload = json.dumps(_body(rule, model, echo), ensure_ascii=True, allow_nan=True).encode()
    status = rule.status if rule.kind == "echo" else 200
    if rule.kind == "lying_length":
        return _head(status, max(len(payload) + rule.length_delta, 0)) + payload
    if rule.kind == "cut":
        cut = len(payload) // 2 if rule.cut_at is None else min(rule.cut_at, len(payload))
        return _head(status, len(payload)) + payload[:cut]
    return _head(status, len(payload)) + payload
