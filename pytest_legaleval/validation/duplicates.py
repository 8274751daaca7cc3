r"""Duplicate keys in JSON text: found cheaply, then located exactly.

``json.loads('{"a": 1, "a": 2}')`` quietly keeps the last value, and other parsers keep the
first: a row that repeats ``correct_choice_ids`` means different things to different tools.
So a repeated key is an error, located by the object that holds it.

Looking for repeats while parsing (an ``object_pairs_hook``) costs a Python call per object,
about a third more parse time. Instead every parsed value is checked with a count: a ``:``
appears in JSON text once per key (as the separator) plus once per colon inside a string.
The value's own serialization has one separator per key it *kept*, and the same colons in
its strings, so the raw text has more colons exactly when keys were dropped, unless some
colon was written as the escape ``\u003a`` (then the raw text has fewer). Whenever the
counts differ, or such an escape may be present, the text is parsed again with a hook that
records the repeats; a row without repeats costs two ``count`` calls.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from pytest_legaleval.errors import DatasetRejected
from pytest_legaleval.validation.checks import Issue, format_path, show

__all__ = [
    "DuplicateKeys",
    "colon_count",
    "duplicate_key_issues",
    "find_duplicate_keys",
    "may_have_duplicate_keys",
    "reject_duplicate_keys",
]

PathParts = tuple[str | int, ...]


class DuplicateKeys(NamedTuple):
    """One object with repeated keys."""

    path: PathParts
    """Where the object is (``()`` for the top level)."""
    keys: tuple[str, ...]
    """The keys it holds more than once, in order of first repeat."""

    def describe(self, base: str = "") -> str:
        """``key "a" repeated in records[3]``: for messages."""
        names = ", ".join(show(key) for key in self.keys)
        where = format_path(base, self.path) or "the top-level object"
        return f"{'keys' if len(self.keys) > 1 else 'key'} {names} repeated in {where}"


class _Repeated(dict[str, Any]):
    """A parsed object that had repeated keys (only built on the slow path)."""

    __slots__ = ("repeated",)

    repeated: tuple[str, ...]


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    repeated: list[str] = []
    for key, _ in pairs:
        if key in seen and key not in repeated:
            repeated.append(key)
        seen.add(key)
    marked = _Repeated(obj)
    marked.repeated = tuple(repeated)
    return marked


_LOCATING_DECODER = json.JSONDecoder(object_pairs_hook=_pairs_hook)


def colon_count(value: object) -> int:
    """The number of ``:`` in ``value``'s JSON serialization (-1 when it cannot be serialized).

    Any serialization works: no JSON writer escapes ``:``, and every separator holds one.
    """
    try:
        return json.dumps(value, ensure_ascii=False, check_circular=False).count(":")
    except (TypeError, ValueError, RecursionError):
        return -1


def may_have_duplicate_keys(raw: str | bytes, colons: int) -> bool:
    """Whether ``raw`` (the JSON text) may repeat a key, given its parsed value's colon count.

    ``False`` is certain; ``True`` means "locate with :func:`find_duplicate_keys`".
    """
    if colons < 0:
        return True
    # A backslash is looked for first: many rows have no escape at all, and finding one
    # byte is a cheaper search than finding five.
    if isinstance(raw, bytes):
        return raw.count(b":") != colons or (b"\\" in raw and b"\\u003" in raw)
    return raw.count(":") != colons or ("\\" in raw and "\\u003" in raw)


def find_duplicate_keys(text: str | bytes) -> list[DuplicateKeys]:
    """Every object of the JSON ``text`` that repeats a key, in document order.

    Text that does not parse has none (its parse error is reported elsewhere).
    """
    try:
        value = _LOCATING_DECODER.decode(
            text if isinstance(text, str) else text.decode("utf-8-sig")
        )
    except (ValueError, RecursionError):
        return []
    found: list[DuplicateKeys] = []
    stack: list[tuple[object, PathParts]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            if isinstance(item, _Repeated):
                found.append(DuplicateKeys(path, item.repeated))
            stack.extend(reversed([(v, (*path, k)) for k, v in item.items()]))
        elif isinstance(item, list):
            stack.extend(reversed([(v, (*path, i)) for i, v in enumerate(item)]))
    return found


def duplicate_key_issues(raw: str | bytes, colons: int) -> list[Issue]:
    """Record issues (``invalid_encoding`` at each object's path) for repeated keys in ``raw``.

    Args:
        raw: the JSON text of one record (a JSONL line).
        colons: :func:`colon_count` of the value parsed from it (or the colons of its
            canonical JSON, already at hand in the validators).

    """
    if not may_have_duplicate_keys(raw, colons):
        return []
    return [_issue(found) for found in find_duplicate_keys(raw)]


def _issue(found: DuplicateKeys) -> Issue:
    keys: Sequence[str] = found.keys
    names = ", ".join(show(key) for key in keys)
    plural = "keys" if len(keys) > 1 else "key"
    return Issue(
        "invalid_encoding",
        found.path,
        f"has the {plural} {names} more than once; JSON parsers disagree on which value "
        "counts, so give each key once",
    )


def reject_duplicate_keys(text: str | bytes, *, where: str) -> None:
    """Reject a one-document JSON payload (a contract document, a manifest) that repeats a key.

    Such a document is one request, so the failure is the request's: HTTP 400
    ``invalid_request``, naming the first object and key; ``details`` give its ``path``,
    its ``keys`` and how many objects repeat keys. Callers that parse with a hook that
    notices repeats (:func:`~pytest_legaleval.formats.base.decode_document`) call this only
    when it did.

    Raises:
        DatasetRejected: some object of ``text`` repeats a key.

    """
    found = find_duplicate_keys(text)
    if not found:
        return
    first = found[0]
    more = f" (and {len(found) - 1} more object(s))" if len(found) > 1 else ""
    raise DatasetRejected(
        f"payload is ambiguous: {first.describe()}{more}; JSON parsers disagree on which "
        f"value counts, so give each key once ({where})",
        details={
            "path": format_path("", first.path) or "$",
            "keys": list(first.keys),
            "objects_with_repeated_keys": len(found),
        },
    )
