"""Reading an id list at a position of a reply, with the guards that reject it.

A rule finds where an answer may stand; these helpers read the id list there (or the one
right before a predicate) and refuse words, negations, conditions, hedges and Roman
statement numbers. A :class:`_Hit` is one accepted list.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pytest_legaleval.grading.mcq._patterns import (
    _CLOSE_RE,
    _CONDITIONAL_AFTER_RE,
    _FOLLOWING_WORD_RE,
    _HEDGED_BEFORE_RE,
    _ID_FOLLOWERS,
    _LOOSE_FOLLOW_RE,
    _LOOSE_NEGATION_RE,
    _NAMING_BEFORE_RE,
    _NEGATION_AFTER_RE,
    _ROMAN_AFTER_RE,
    _ROMAN_BEFORE_RE,
    _WORDLIKE_IDS,
    _Patterns,
)


@dataclass(frozen=True, slots=True)
class _Hit:
    start: int
    end: int
    ids: tuple[str, ...]
    method: str


@dataclass(frozen=True, slots=True)
class _Context:
    text: str
    pats: _Patterns


_Rule = Callable[[_Context], list[_Hit]]


def _used_as_word(text: str, end: int) -> bool:
    """Whether a word-like id ending at ``end`` reads as the article/pronoun ("A contract")."""
    follow = _FOLLOWING_WORD_RE.match(text, end)
    return follow is not None and follow.group(1).casefold() not in _ID_FOLLOWERS


def _is_roman_statement(token: str, pats: _Patterns) -> bool:
    # "ii" is never a letter id; a lone "i" is a statement only when "I" is not an id.
    return len(token) >= 2 or token.casefold() not in pats.canon


def _accept_list(ctx: _Context, start: int, end: int, method: str, hit_start: int) -> _Hit | None:
    """Validate the id list in ``text[start:end]`` and turn it into a hit (or reject it)."""
    text, pats = ctx.text, ctx.pats
    ids: list[str] = []
    first = -1
    last = end
    for token in pats.id_re.finditer(text, start, end):
        key = token.group().casefold()
        if key in _WORDLIKE_IDS and _used_as_word(text, token.end()):
            break  # "Answer: C and I think ..." keeps C, drops the pronoun
        canonical = pats.canon.get(key)
        if canonical is None:
            continue
        if first < 0:
            first = token.start()
        ids.append(canonical)
        last = token.end()
    if not ids:
        return None
    closed = _CLOSE_RE.match(text, last)
    after = closed.end() if closed else last
    if (
        _NEGATION_AFTER_RE.match(text, after)
        or _CONDITIONAL_AFTER_RE.match(text, after)
        or pats.hedge_re.match(text, after)
    ):
        return None
    roman_after = _ROMAN_AFTER_RE.match(text, after)
    if roman_after and _is_roman_statement(roman_after.group("r"), pats):
        return None
    roman_before = _ROMAN_BEFORE_RE.search(text, max(0, first - 24), first)
    if roman_before and _is_roman_statement(roman_before.group("r"), pats):
        return None
    return _Hit(start=hit_start, end=after, ids=tuple(ids), method=method)


def _list_at(ctx: _Context, pos: int, method: str, hit_start: int) -> _Hit | None:
    """Parse an id list starting at ``pos`` (leading whitespace allowed)."""
    found = ctx.pats.list_re.match(ctx.text, pos)
    if found is None:
        return None
    return _accept_list(ctx, found.start("list"), found.end("list"), method, hit_start)


def _loose_at(ctx: _Context, pos: int, method: str, hit_start: int) -> _Hit | None:
    """Take the first sentence-ending id on the keyword's line ("Answer: I think it is B.").

    Used when the text after an explicit keyword does not start with an id; a line that
    negates or hedges ("not", "or") gives nothing.
    """
    text = ctx.text
    newline = text.find("\n", pos)
    stop = min(len(text) if newline < 0 else newline, pos + 160)
    if _LOOSE_NEGATION_RE.search(text, pos, stop):
        return None
    for token in ctx.pats.id_re.finditer(text, pos, stop):
        key = token.group().casefold()
        if key in _WORDLIKE_IDS and _used_as_word(text, token.end()):
            continue
        if not _LOOSE_FOLLOW_RE.match(text, token.end()):
            continue
        if _NAMING_BEFORE_RE.search(text, max(pos, token.start() - 24), token.start()):
            continue
        return _list_at(ctx, token.start(), method, hit_start)
    return None


def _value_ids(ctx: _Context, value: str) -> tuple[str, ...]:
    """Ids in a JSON value or bold span: the whole value is ids, or it starts with a label."""
    pats = ctx.pats
    sub = _Context(value, pats)
    found = pats.value_full_re.fullmatch(value) or pats.value_label_re.match(value)
    if found is None:
        return ()
    hit = _accept_list(sub, found.start("list"), found.end("list"), "", 0)
    return hit.ids if hit else ()


def _hedged(text: str, start: int) -> bool:
    return _HEDGED_BEFORE_RE.search(text, max(0, start - 48), start) is not None


def _list_before(ctx: _Context, end: int, tail_re: re.Pattern[str]) -> tuple[int, int, int] | None:
    """Find the id list that ends right before ``end``: (match start, list start, list end)."""
    if ctx.pats.id_end_re.search(ctx.text, max(0, end - 8), end) is None:
        return None  # cheap pre-check: no id right before the predicate
    found = tail_re.search(ctx.text, max(0, end - 160), end)
    if found is None:
        return None
    return found.start(), found.start("list"), found.end("list")
