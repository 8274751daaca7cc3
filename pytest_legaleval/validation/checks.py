"""Checks a JSON Schema cannot express: text encoding, byte sizes, depth, hashes, paths.

Everything here works on plain JSON values (``dict``/``list``/``str``/numbers) and never
raises on odd input: walks are iterative, so a deeply nested value cannot hit the
recursion limit.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

__all__ = [
    "NON_FINITE",
    "Canonical",
    "Issue",
    "canonicalize",
    "check_text",
    "child_path",
    "container_depth",
    "dedupe_issues",
    "format_path",
    "json_type",
    "record_sha256",
    "scan_values",
    "serialized_size",
    "show",
    "usable_id",
]

PathParts = tuple[str | int, ...]

# U+0000 and every surrogate code point: a Python str holds surrogates only when the JSON
# text had an unpaired ``\udXXX`` escape, which ``json.loads`` lets through.
_BAD_CHARS = re.compile("[\x00\ud800-\udfff]")
NON_FINITE = "is not a finite number (NaN or out of range)"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class Issue(NamedTuple):
    """A problem found in one record, before it is given an index and a file location."""

    code: str
    """One of the contract's error codes."""
    parts: PathParts
    """Location inside the record (``("choices", 1, "id")``)."""
    text: str
    """What is wrong, phrased to follow the field name (``"must not be empty"``)."""


def child_path(base: str, key: str | int) -> str:
    """Append one key or index to a JSONPath-like path (``records[3]`` + ``"id"``)."""
    if isinstance(key, int):
        return f"{base}[{key}]"
    if _IDENTIFIER.match(key):
        return f"{base}.{key}" if base else key
    # Keys that are not identifiers are quoted; ensure_ascii keeps NULs and surrogates
    # out of the path, so the path itself is always clean UTF-8.
    return f"{base}[{json.dumps(key)}]"


def format_path(base: str, parts: Sequence[str | int]) -> str:
    """Join ``parts`` onto ``base`` with :func:`child_path`."""
    path = base
    for part in parts:
        path = child_path(path, part)
    return path


def show(value: object, limit: int = 60) -> str:
    """Render a JSON value short and always printable, for messages."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_type(value: object) -> str:
    """Return the JSON type name of a Python value (``integer``, ``array`` …)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else "non-finite number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def usable_id(value: object) -> str | None:
    """``value`` if it can be reported as a ``record_id`` (a clean string), else ``None``."""
    if isinstance(value, str) and _BAD_CHARS.search(value) is None:
        return value
    return None


def _text_problem(text: str) -> str | None:
    if text.isascii():
        # ASCII is always NFC and cannot hold surrogates; only NUL remains possible.
        return "contains U+0000 (a null byte)" if "\x00" in text else None
    bad = _BAD_CHARS.search(text)
    if bad is not None:
        char = bad.group()
        if char == "\x00":
            return "contains U+0000 (a null byte)"
        return f"contains an unpaired surrogate U+{ord(char):04X} at character {bad.start()}"
    if not unicodedata.is_normalized("NFC", text):
        return "is not in Unicode NFC form (normalize it before upload)"
    return None


def _is_clean(value: object, numbers: bool) -> bool:
    # The fast path for valid data: no path strings are built unless something is wrong.
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _text_problem(item) is not None:
                return False
        elif isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str) or _text_problem(key) is not None:
                    return False
                if isinstance(child, str):
                    if _text_problem(child) is not None:
                        return False
                elif isinstance(child, dict | list | float):
                    stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)
        elif numbers and isinstance(item, float) and not math.isfinite(item):
            return False
    return True


def scan_values(value: object, parts: PathParts = (), *, numbers: bool = True) -> list[Issue]:
    """Find encoding problems in every string (keys too) and, optionally, non-finite numbers.

    U+0000, unpaired surrogates and non-NFC text are ``invalid_encoding``; NaN and
    infinities (``1e400`` parses as ``inf``) are ``value_out_of_range``.
    """
    if _is_clean(value, numbers):
        return []
    issues: list[Issue] = []
    stack: list[tuple[object, PathParts]] = [(value, parts)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            problem = _text_problem(item)
            if problem is not None:
                issues.append(Issue("invalid_encoding", where, problem))
        elif isinstance(item, dict):
            children: list[tuple[object, PathParts]] = []
            for key, child in item.items():
                key_text = key if isinstance(key, str) else str(key)
                problem = _text_problem(key_text)
                if problem is not None:
                    issues.append(Issue("invalid_encoding", (*where, key_text), f"key {problem}"))
                children.append((child, (*where, key_text)))
            stack.extend(reversed(children))
        elif isinstance(item, list):
            stack.extend(reversed([(child, (*where, i)) for i, child in enumerate(item)]))
        elif numbers and isinstance(item, float) and not math.isfinite(item):
            issues.append(Issue("value_out_of_range", where, NON_FINITE))
    return issues


def check_text(value: object, path: str) -> list[tuple[str, str, str]]:
    r"""Find encoding problems in every string of a JSON value, dictionary keys included.

    Args:
        value: a parsed JSON value.
        path: the JSONPath-like location of ``value`` (``records[3]``), prefixed to every
            reported path.

    Returns:
        ``(code, message, path)`` triples, all with code ``invalid_encoding``: U+0000,
        unpaired surrogates (``json.loads`` accepts a lone ``"\ud800"`` escape) and text
        that is not in Unicode NFC.

    """
    found = []
    for issue in scan_values(value, numbers=False):
        where = format_path(path, issue.parts)
        found.append((issue.code, f"{where or 'value'} {issue.text}", where))
    return found


def container_depth(value: object, limit: int) -> int:
    """Measure the nesting depth of objects and arrays (a bare object is 1), up to ``limit + 1``.

    Scalars add no depth. Counting stops once the limit is exceeded, so a hostile value is
    never walked further than needed.
    """
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def serialized_size(value: object) -> int:
    """Count the bytes of ``value`` as compact UTF-8 JSON (the contract's "serialized size").

    A value too deeply nested to serialize counts as ``sys.maxsize`` bytes.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except RecursionError:
        return sys.maxsize
    # surrogatepass: a size must be measurable even for text that fails the encoding rules.
    return len(text.encode("utf-8", "surrogatepass"))


def record_sha256(obj: object) -> str:
    """Hash ``obj``'s canonical JSON with SHA-256 (hex digest).

    Canonical means sorted keys, separators ``(",", ":")``, ``ensure_ascii=False``, UTF-8.
    """
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # surrogatepass: hashing must not fail on text that breaks the encoding rules.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Canonical(NamedTuple):
    """A record's canonical JSON, measured once for hashing, sizing and the encoding rules."""

    sha256: str
    """:func:`record_sha256` of the value (empty when it cannot be serialized)."""
    size: int
    """Bytes of the canonical JSON; the contract's serialized size (key order is irrelevant
    to it). ``sys.maxsize`` when the value cannot be serialized."""
    clean: bool
    """True when every string is certainly NFC without U+0000 or surrogates and every
    number is finite; False means "run :func:`scan_values` to find out"."""
    colons: int = -1
    """How many ``:`` the canonical JSON holds (-1 when it cannot be serialized); compared
    with the raw text's to find repeated keys cheaply (see :mod:`.duplicates`)."""


def canonicalize(obj: object) -> Canonical:
    r"""Serialize ``obj`` canonically once and derive its hash, size and an encoding verdict.

    The verdict reads the canonical text instead of walking the value: U+0000 always
    appears as the escape ``\u0000``, a lone surrogate makes strict UTF-8 encoding fail,
    and NaN/infinities make ``allow_nan=False`` serialization fail. NFC of the whole text implies
    NFC of every string in it, because each string is delimited by ``"`` (a starter that
    never composes) and JSON escapes only replace such non-composing characters. The
    verdict may say "not clean" for clean text (a prompt containing a literal backslash
    followed by ``u0000``); it never says "clean" for text that is not.
    """
    clean = True
    try:
        # allow_nan=False turns a NaN or infinity into an exception instead of a scan.
        text = json.dumps(
            obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except ValueError:
        clean = False
        try:
            text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return Canonical(sha256="", size=sys.maxsize, clean=False)
    except (TypeError, RecursionError):
        return Canonical(sha256="", size=sys.maxsize, clean=False)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "surrogatepass")
        clean = False
    if clean and "\\u0000" in text:
        clean = False
    if clean and not text.isascii():
        clean = unicodedata.is_normalized("NFC", text)
    return Canonical(
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        clean=clean,
        colons=data.count(b":"),
    )


def _under(parts: PathParts, prefix: PathParts) -> bool:
    return parts[: len(prefix)] == prefix


def dedupe_issues(issues: Sequence[Issue]) -> list[Issue]:
    """One problem, one issue.

    A forbidden field (``unsupported_field``) hides every other issue at or under its path,
    and a wrong type (``invalid_field_type``) hides the issues at or under its path: neither
    the contents of a field that must not be there nor the range of a value of the wrong
    type are worth a second error. Identical ``(code, path)`` pairs are reported once.
    """
    kept: list[Issue] = []
    for blocking in ("unsupported_field", "invalid_field_type"):
        roots = [issue.parts for issue in issues if issue.code == blocking]
        if roots:
            issues = [
                issue
                for issue in issues
                if not any(_under(issue.parts, root) for root in roots)
                or (issue.code == blocking and issue.parts in roots)
            ]
    seen: set[tuple[str, PathParts]] = set()
    for issue in issues:
        key = (issue.code, issue.parts)
        if key not in seen:
            seen.add(key)
            kept.append(issue)
    return kept
