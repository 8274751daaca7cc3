"""The extraction driver: from a reply and the choice ids to an :class:`Extraction`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_legaleval.grading._text import REASONING_TAG_RE, split_reasoning
from pytest_legaleval.grading.mcq._explicit import _EXPLICIT_RULES
from pytest_legaleval.grading.mcq._formatting import _FORMAT_RULES
from pytest_legaleval.grading.mcq._matching import _Context, _Hit, _is_roman_statement
from pytest_legaleval.grading.mcq._patterns import (
    _ROMAN_LETTER_IDS,
    _ROMAN_TOKEN_RE,
    _SEP_ONLY_RE,
    _WHITESPACE_RE,
    _normalize,
    _Patterns,
    _patterns,
)


@dataclass(frozen=True, slots=True)
class Extraction:
    """The choice ids found in a reply and how they were found."""

    chosen: tuple[str, ...]
    """Choice ids as spelled in the record, in the record's choice order, without duplicates;
    empty when nothing could be extracted."""
    method: str
    """The rule that matched (``json``, ``answer_line``, ``final_statement``, ``bold`` …);
    ``ambiguous`` when formatting named several different options; ``none`` when nothing
    was found."""
    evidence: str
    """The short text span that was matched (``""`` when nothing was found)."""


_NONE = Extraction(chosen=(), method="none", evidence="")


def _strip_reasoning(text: str) -> str:
    """Drop ``<think>…</think>``-style reasoning when an answer part follows it.

    When there is nothing outside the reasoning, the reasoning is all there is: its text is
    kept (tags removed) so that an answer stated inside it can still be found.
    """
    answer, tagged = split_reasoning(text)
    if not tagged or answer.strip():
        return answer
    return REASONING_TAG_RE.sub(" ", text)


def _evidence(text: str, start: int, end: int) -> str:
    span = _WHITESPACE_RE.sub(" ", text[start:end]).strip()
    return span if len(span) <= 80 else span[:79] + "…"


def _ordered(ids: Sequence[str], pats: _Patterns) -> tuple[str, ...]:
    return tuple(sorted(set(ids), key=pats.order.__getitem__))


# Rules whose hits are bare id mentions; verdicts and labels are sentences and never merge.
_MERGEABLE = frozenset({"bold", "parenthesized", "option_mention"})


def _clusters(text: str, hits: list[_Hit]) -> list[_Hit]:
    """Merge hits separated only by list separators ("**A** and **C**") into one hit."""
    merged: list[_Hit] = []
    for hit in sorted(hits, key=lambda h: h.start):
        if merged and hit.method in _MERGEABLE and hit.start >= merged[-1].end:
            prev = merged[-1]
            gap = text[prev.end : hit.start]
            if len(gap) <= 12 and _SEP_ONLY_RE.fullmatch(gap):
                merged[-1] = _Hit(prev.start, hit.end, prev.ids + hit.ids, prev.method)
                continue
        merged.append(hit)
    return merged


_JSON_DECODER = json.JSONDecoder()


def _json_object_spans(text: str, hits: list[_Hit]) -> list[tuple[int, int]]:
    """Spans of the outermost parseable JSON objects that contain a JSON answer key."""
    spans: list[tuple[int, int]] = []
    # Bounded work: the last few answer keys, objects up to 20,000 characters, 4 levels up.
    for hit in hits[-8:]:
        pos, best = hit.start, None
        for _ in range(4):
            brace = text.rfind("{", 0, pos)
            if brace < 0:
                break
            try:
                _, length = _JSON_DECODER.raw_decode(text[brace : brace + 20_000])
            except (ValueError, RecursionError):  # deeply nested junk recurses in the decoder
                length = -1
            if brace + length > hit.start:
                best = (brace, brace + length)
            pos = brace
        if best:
            spans.append(best)
    return spans


def extract_choice_ids(text: str, choice_ids: Sequence[str]) -> Extraction:
    """Extract the choice ids a reply commits to.

    Ids are matched case-insensitively as whole tokens and returned in the caller's spelling and
    order. Explicit answer statements win over formatting, and among explicit statements the last
    one in the reply wins; see the module docstring for the ordered rules and the guards.

    Args:
        text: The model's reply.
        choice_ids: The record's choice ids (``A``, ``B`` …), in choice order.

    Returns:
        The extraction; ``chosen`` is empty (method ``none`` or ``ambiguous``) when the reply
        does not commit to an answer.

    """
    pats = _patterns(tuple(choice_ids))
    if pats is None or not text:
        return _NONE
    body = _strip_reasoning(_normalize(text))
    ctx = _Context(text=body, pats=pats)

    explicit = [hit for rule in _EXPLICIT_RULES for hit in rule(ctx)]
    json_hits = [hit for hit in explicit if hit.method == "json"]
    if json_hits:
        # Prose inside a JSON answer object ("explanation": "... the answer is D ...") is
        # commentary; the object's answer key speaks for it.
        spans = _json_object_spans(body, json_hits)
        explicit = [
            hit
            for hit in explicit
            if hit.method == "json" or not any(a <= hit.start < b for a, b in spans)
        ]
    best: _Hit | None = None
    for hit in explicit:
        if best is None or hit.start > best.start:
            best = hit
    if best is not None:
        evidence = _evidence(body, best.start, best.end)
        return Extraction(_ordered(best.ids, pats), best.method, evidence)

    roman_mode = any(_is_roman_statement(t.group(), pats) for t in _ROMAN_TOKEN_RE.finditer(body))
    for format_rule in _FORMAT_RULES:
        hits = format_rule(ctx)
        if roman_mode:
            # Next to LEXam statements "ii", "iv", a formatted "i"/"v" is a statement number.
            kept = [
                _Hit(h.start, h.end, ids, h.method)
                for h in hits
                if (ids := tuple(i for i in h.ids if i.casefold() not in _ROMAN_LETTER_IDS))
            ]
            hits = kept
        if not hits:
            continue
        clusters = _clusters(body, hits)
        if len({frozenset(c.ids) for c in clusters}) == 1:
            last = clusters[-1]
            return Extraction(
                _ordered(last.ids, pats), last.method, _evidence(body, last.start, last.end)
            )
        shown = " | ".join(_evidence(body, c.start, c.end) for c in clusters[:6])
        return Extraction((), "ambiguous", shown if len(shown) <= 120 else shown[:119] + "…")
    return _NONE
