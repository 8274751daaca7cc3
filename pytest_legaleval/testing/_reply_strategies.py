"""Hypothesis strategies for hostile endpoint replies, from JSON bodies to raw HTTP bytes.

Re-exported by :mod:`pytest_legaleval.testing.strategies`. Every strategy is public and
composable: :func:`completion_bodies` mutates a well-formed chat completion (wrong types
anywhere, missing or empty fields, hostile text, hostile usage), :func:`hostile_bodies`
encodes one as bytes the way a broken server might (lone surrogate escapes, ``NaN``, cut,
invalid UTF-8, garbage), and :func:`hostile_responses` wraps a body in a status line and
headers (odd statuses, a lying or missing ``Content-Length``, hostile ``Retry-After``).

Example::

    @given(hostile_responses())
    def test_no_reply_stops_a_call(response):
        server.add_hostile("raw", raw=response, match=...)
        result = engine.submit(request).result(timeout=budget)
        assert result.ok or result.error_code in ERROR_CODES
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import strategies as st

__all__ = [
    "completion_bodies",
    "hostile_bodies",
    "hostile_reply_text",
    "hostile_responses",
    "token_counts",
    "usage_blocks",
]

_NASTY = ["\ud83d", "\udfff", "\x00", "\x1b[2J", "\u2028", "\ufeff", "\ufffe", "e\u0301"]


def hostile_reply_text(max_size: int = 30) -> st.SearchStrategy[str]:
    """Reply text that may hold lone surrogates, NUL, escapes and odd separators."""
    pieces = st.text(max_size=8) | st.sampled_from(["Answer: A", "Answer: B", *_NASTY])
    return st.lists(pieces, max_size=max_size).map("".join)


def token_counts() -> st.SearchStrategy[Any]:
    """What an endpoint may put where a token count belongs, sane or not."""
    return st.one_of(
        st.integers(min_value=0, max_value=5000),
        st.integers(min_value=-(10**30), max_value=-1),
        st.integers(min_value=10**9, max_value=10**30),
        st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(),
        st.none(),
        st.text(max_size=5),
        st.lists(st.integers(), max_size=2),
    )


def usage_blocks() -> st.SearchStrategy[Any]:
    """A ``usage`` value: a mapping of hostile counts, or something that is no mapping."""
    counts = st.fixed_dictionaries(
        {},
        optional={
            "prompt_tokens": token_counts(),
            "completion_tokens": token_counts(),
            "total_tokens": token_counts(),
        },
    )
    return counts | st.none() | st.text(max_size=5) | st.integers() | st.lists(st.integers())


def _json_leaf() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**20), max_value=10**20),
        st.floats(allow_nan=True),
        hostile_reply_text(6),
        st.just([]),
        st.just({}),
    )


@st.composite
def completion_bodies(draw: st.DrawFn) -> Any:
    """A chat completion JSON value, well formed or broken in a few places.

    Mutations: any node replaced by another JSON value (wrong types anywhere), a key
    removed, ``choices`` emptied, content and usage drawn from the hostile strategies.
    """
    body: dict[str, Any] = {
        "id": "chatcmpl-hypothesis",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": draw(hostile_reply_text())},
                "finish_reason": draw(st.sampled_from(["stop", "length", "content_filter"])),
            }
        ],
        "usage": draw(usage_blocks()),
    }
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        paths = list(_paths(body))
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "delete"]))
        body = _mutate(body, path, action, draw(_json_leaf()))
    if draw(st.booleans()):
        return body
    return draw(st.sampled_from([[body], "text", 42, None])) if draw(st.booleans()) else body


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Any:
    yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _paths(inner, (*prefix, index))


def _mutate(body: Any, path: tuple[Any, ...], action: str, leaf: Any) -> Any:
    if not path:
        return leaf
    out = copy.deepcopy(body)
    parent = out
    for step in path[:-1]:
        parent = parent[step]
    if action == "delete":
        del parent[path[-1]]
    else:
        parent[path[-1]] = leaf
    return out


@st.composite
def hostile_bodies(draw: st.DrawFn) -> bytes:
    """Bytes of a response body: an encoded completion (maybe cut), or garbage."""
    kind = draw(st.sampled_from(["json", "json", "json", "cut", "garbage", "deep", "empty"]))
    if kind == "garbage":
        return draw(st.binary(max_size=64))
    if kind == "deep":
        depth = draw(st.integers(min_value=1, max_value=200_000))
        return b"[" * depth + b"]" * draw(st.integers(min_value=0, max_value=depth))
    if kind == "empty":
        return b""
    # ensure_ascii writes lone surrogates as \uXXXX escapes; without it they cannot be
    # encoded, so those bodies go out with surrogatepass (invalid UTF-8 on the wire).
    ascii_only = draw(st.booleans())
    text = json.dumps(draw(completion_bodies()), ensure_ascii=ascii_only, allow_nan=True)
    data = text.encode("utf-8", "surrogatepass")
    if kind == "cut" and data:
        data = data[: draw(st.integers(min_value=0, max_value=len(data) - 1))]
    return data


_STATUSES = [200, 200, 200, 200, 201, 204, 299, 301, 400, 404, 408, 418, 429, 500, 503, 599]


@st.composite
def hostile_responses(draw: st.DrawFn) -> bytes:
    """A whole HTTP/1.1 response as bytes: status line, headers and a hostile body.

    ``Content-Length`` is true, off by a few bytes either way, or absent (the body then
    ends with the connection); the server is expected to close the connection after
    writing, as :class:`~pytest_legaleval.testing.mock_openai.HostileOpenAIServer` does.
    """
    status = draw(st.sampled_from(_STATUSES))
    body = draw(hostile_bodies())
    headers = [
        draw(
            st.sampled_from(
                [
                    b"Content-Type: application/json",
                    b"Content-Type: text/html; charset=latin-1",
                    b"Content-Type: application/json; charset=utf-16",
                ]
            )
        )
    ]
    length = draw(st.sampled_from(["true", "true", "more", "less", "absent"]))
    if length != "absent":
        delta = {"true": 0, "more": draw(st.integers(1, 64)), "less": -draw(st.integers(1, 64))}
        headers.append(b"Content-Length: %d" % max(len(body) + delta[length], 0))
    if status in (429, 503) or draw(st.booleans()):
        retry = draw(st.sampled_from([b"0", b"0.01", b"-5", b"nan", b"inf", b"1e400", b"soon"]))
        headers.append(b"Retry-After: " + retry)
    headers.append(b"Connection: close")
    head = b"HTTP/1.1 %d Hostile\r\n" % status + b"\r\n".join(headers) + b"\r\n\r\n"
    return head + body
