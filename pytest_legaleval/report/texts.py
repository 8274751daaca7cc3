"""The texts of an item's detail in the report, and their cutting to a preview length.

An item's detail shows its response, the grader's explanation, each rubric criterion (title,
weight, met, each judge's reason) and its attachment warnings. The page has room for
previews only: :func:`cut_texts` cuts every free text to a length the report chose, and
writes the criteria compactly (most items of a run share their rubric's criteria).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_legaleval.metrics.summary import attachment_warnings

__all__ = [
    "NO_TEXTS",
    "PER_DETAIL",
    "Table",
    "Tables",
    "cut_texts",
    "item_texts",
    "other_cap",
    "script_json",
    "structure_size",
    "text",
    "text_lengths",
]

_OTHER_SHARE = 4
_OTHER_FROM = 400
"""Passed and skipped items get 1/4 of a failure's preview length, once that is at least
this long; below it, the page keeps its room for the failures and errors."""
_MAX_CRITERIA_SHOWN = 60
PER_DETAIL = 30
"""JSON bytes of one item's detail besides its texts (at most)."""
_PER_CRITERION = 3
_PER_REASON = 6


def text(value: Any) -> str:
    """``value`` as text; ``None`` as the empty text."""
    return "" if value is None else str(value)


def _verdict_entries(row: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], list[Any]]]:
    """Each judge's verdict as ``(judge model, criteria by id, criteria in order)``."""
    judge = row.get("judge")
    verdicts = judge.get("verdicts") if isinstance(judge, Mapping) else None
    out = []
    for verdict in verdicts if isinstance(verdicts, list) else []:
        criteria = verdict.get("criteria") if isinstance(verdict, Mapping) else None
        if isinstance(criteria, list):
            by_id: dict[str, Any] = {
                str(c.get("id")): c for c in criteria if isinstance(c, Mapping)
            }
            out.append((text(verdict.get("model")), by_id, criteria))
    return out


def _reasons(
    verdicts: list[tuple[str, dict[str, Any], list[Any]]], index: int, criterion_id: str
) -> list[tuple[str, str]]:
    """``[(judge model, reason), ...]`` for one criterion, from each judge's verdict."""
    out = []
    for model, by_id, ordered in verdicts:
        entry = by_id.get(criterion_id)
        if entry is None and index < len(ordered) and isinstance(ordered[index], Mapping):
            entry = ordered[index]
        reason = entry.get("rationale", entry.get("reason")) if entry else None
        if reason:
            out.append((model, text(reason)))
    return out


def _criteria(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rubric (or rating) criteria of an item: title, weight, met, each judge's reason."""
    details = row.get("details")
    found = details.get("criteria") if isinstance(details, Mapping) else None
    if not isinstance(found, list):
        return []
    verdicts = _verdict_entries(row)
    out = []
    for index, entry in enumerate(found[:_MAX_CRITERIA_SHOWN]):
        if not isinstance(entry, Mapping):
            continue
        cid = text(entry.get("id"))
        reasons = _reasons(verdicts, index, cid)
        if not reasons and entry.get("rationale"):
            reasons = [("", text(entry.get("rationale")))]
        met: Any = entry.get("met")
        if met is None and "rating" in entry:
            met = {"rating": entry.get("rating"), "score": entry.get("score")}
        weight = entry.get("weight")
        weight = weight if isinstance(weight, int | float) else None
        yes = isinstance(met, int | float) and met > 0
        out.append(
            {
                "title": text(entry.get("title")) or cid,
                "weight": weight,
                "met": met,
                "reasons": reasons,
                # The criteria that cost the item points explain a failure: their reasons
                # come first when the page is short of room.
                "key": ((weight or 1) > 0 and not yes) or ((weight or 1) < 0 and yes),
            }
        )
    return out


def item_texts(row: Mapping[str, Any]) -> dict[str, Any]:
    """The texts an item's detail shows, in full (the report cuts them to fit)."""
    criteria = _criteria(row)
    explanation = text(row.get("explanation"))
    # A rubric's explanation repeats the criteria as one run-on sentence: the table shows
    # them. Keep it only when it says more (a judge error, a citation problem).
    if criteria and row.get("reason") in ("correct", "below_threshold"):
        explanation = ""
    details = row.get("details")
    return {
        "response": text(row.get("model_response", row.get("response"))),
        "explanation": explanation,
        "criteria": criteria,
        "warnings": attachment_warnings(row),
        "threshold": details.get("threshold") if isinstance(details, Mapping) else None,
    }


def text_lengths(texts: Mapping[str, Any], urgent: bool) -> Iterator[tuple[int, bool]]:
    """The lengths of an item's free texts, which previews cut, each with its urgency.

    Urgent are the texts of a failure or an error, but for the reasons of criteria it met.
    """
    yield len(texts["response"]), urgent
    yield len(texts["explanation"]), urgent
    for criterion in texts["criteria"]:
        for _, reason in criterion["reasons"]:
            yield len(reason), urgent and criterion["key"]


def structure_size(texts: Mapping[str, Any]) -> int:
    """JSON bytes of an item's detail that stay whatever the preview length."""
    size = PER_DETAIL + sum(len(w) + 4 for w in texts["warnings"])
    for criterion in texts["criteria"]:
        size += _PER_CRITERION + len(criterion["reasons"]) * _PER_REASON
    return size


def _cut(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    return text[: max(cap - 1, 0)].rstrip() + "…"


class Table:
    """Interned values (datasets, models, reasons, criteria, judges): rows carry indexes."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._ids: dict[Any, int] = {}

    def __call__(self, value: Any) -> int:
        """The index of ``value`` (text, or a tuple kept as a list), added if new."""
        key = value if isinstance(value, tuple) else text(value)
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self.values)
            self.values.append(list(key) if isinstance(key, tuple) else key)
        return found


@dataclass
class Tables:
    """The tables of one page: rows and details carry indexes into them."""

    records: Table = field(default_factory=Table)
    datasets: Table = field(default_factory=Table)
    models: Table = field(default_factory=Table)
    reasons: Table = field(default_factory=Table)
    criteria: Table = field(default_factory=Table)
    """``[title, weight]`` of each distinct criterion: a rubric shared by the records of a
    dataset, and every record's by all its models, is written once."""
    judges: Table = field(default_factory=Table)


def _criteria_json(
    criteria: Sequence[Mapping[str, Any]], cap: int, tables: Tables, *, urgent: bool
) -> dict[str, Any]:
    """An item's criteria, compact: most items of a run share their rubric's criteria.

    ``c`` is ``[first index, count, flags]`` when the criteria are consecutive entries of
    the criteria table and each is met or not ("1"/"0" in ``flags``), else a list of
    ``[index, met]``; ``cr`` holds each criterion's reason: a text for one judge,
    ``[[judge index, text], ...]`` for several, ``null`` for none.
    """
    ids = [tables.criteria((_cut(c["title"], 300), c["weight"])) for c in criteria]
    mets = [c["met"] for c in criteria]
    flat = all(m in (0, 1) and not isinstance(m, Mapping) for m in mets)
    consecutive = ids == list(range(ids[0], ids[0] + len(ids)))
    out: dict[str, Any] = {
        "c": (
            [ids[0], len(ids), "".join("1" if m else "0" for m in mets)]
            if flat and consecutive
            else [[i, m] for i, m in zip(ids, mets, strict=True)]
        )
    }
    reasons: list[Any] = []
    for c in criteria:
        found = c["reasons"]
        limit = cap if urgent and c["key"] else other_cap(cap) if urgent else cap
        if not found or limit <= 0:
            reasons.append(None)
        elif len(found) == 1:
            reasons.append(_cut(found[0][1], limit))
        else:
            reasons.append([[tables.judges(judge), _cut(text, limit)] for judge, text in found])
    if any(r is not None for r in reasons):
        out["cr"] = reasons
    return out


def cut_texts(
    texts: Mapping[str, Any], cap: int, tables: Tables | None = None, *, urgent: bool = True
) -> dict[str, Any]:
    """``texts`` with every free text cut to ``cap`` characters (the detail's JSON).

    Of an ``urgent`` item (a failure or an error), the reasons of the criteria it met get
    the shorter preview of passed items.

    ``rn`` and ``en`` keep the full lengths, so the page can say how much it shows; with
    ``cap`` 0 only they are left; a text shown whole has no length.
    """
    tables = tables if tables is not None else Tables()
    out: dict[str, Any] = {}
    for key, name in (("r", "response"), ("e", "explanation")):
        if texts[name]:
            if cap > 0:
                out[key] = _cut(texts[name], cap)
            if len(texts[name]) > cap:
                out[key + "n"] = len(texts[name])
    if texts["criteria"]:
        out.update(_criteria_json(texts["criteria"], cap, tables, urgent=urgent))
    if texts["warnings"]:
        out["w"] = texts["warnings"]
    if texts["threshold"] is not None:
        out["t"] = texts["threshold"]
    return out


def other_cap(cap: int) -> int:
    """The preview length of passed and skipped items when failures get ``cap``."""
    return cap // _OTHER_SHARE if cap >= _OTHER_FROM else 0


_SCRIPT_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def script_json(value: Any) -> str:
    """``value`` as JSON that is inert inside a ``<script type="application/json">`` element.

    ``<``, ``>`` and ``&`` are written as JSON escapes, so no text can close the element or
    open a comment; ``JSON.parse`` gives the original text back.
    """
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).translate(_SCRIPT_ESCAPES)


NO_TEXTS: dict[str, Any] = {
    "response": "", "explanation": "", "criteria": [], "warnings": [], "threshold": None,
}  # fmt: skip
