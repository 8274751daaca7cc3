"""The texts of an item's detail in the report, and their cutting to a preview length.

An item's detail shows its response, the grader's explanation, each rubric criterion (title,
weight, met, each judge's reason), the choices it picked and its attachment warnings. The
page has room for previews only: :func:`cut_texts` cuts every free text to a length the
report chose, and writes the criteria compactly (most items of a run share their rubric's
criteria). A replayed rubric item's criteria carry ids only: their titles come from the
record's rubric (``input_dataset.json``), matched by id.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_legaleval.metrics._summary import attachment_warnings
from pytest_legaleval.report.budget import MAX_TITLE, other_cap
from pytest_legaleval.run.directory import finite_dump

__all__ = [
    "NO_TEXTS",
    "PER_DETAIL",
    "Table",
    "Tables",
    "Titles",
    "cut",
    "cut_texts",
    "item_texts",
    "script_json",
    "structure_size",
    "text",
    "text_lengths",
]

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


Titles = Mapping[str, tuple[str, float | None]]
"""A record's rubric: criterion id -> ``(title, weight)``."""


def _criteria(row: Mapping[str, Any], titles: Titles) -> list[dict[str, Any]]:
    """The rubric (or rating) criteria of an item: title, weight, met, each judge's reason.

    A criterion without a title (a replayed judgment names criteria by id) takes its title,
    and its weight when it has none, from ``titles``.
    """
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
        known_title, known_weight = titles.get(cid, ("", None))
        weight = entry.get("weight")
        weight = weight if isinstance(weight, int | float) else known_weight
        yes = isinstance(met, int | float) and met > 0
        out.append(
            {
                "title": text(entry.get("title")) or known_title or cid,
                "weight": weight,
                "met": met,
                "reasons": reasons,
                # The criteria that cost the item points explain a failure: their reasons
                # come first when the page is short of room.
                "key": ((weight or 1) > 0 and not yes) or ((weight or 1) < 0 and yes),
            }
        )
    return out


def _ids(value: Any) -> list[str] | None:
    return [text(v) for v in value] if isinstance(value, list | tuple) else None


def item_texts(row: Mapping[str, Any], titles: Titles | None = None) -> dict[str, Any]:
    """The texts an item's detail shows, in full (the report cuts them to fit).

    ``titles`` is the item's record's rubric, for criteria the line names by id only.
    """
    criteria = _criteria(row, titles or {})
    explanation = text(row.get("explanation"))
    # A rubric's explanation repeats the criteria as one run-on sentence: the table shows
    # them. Keep it only when it says more (a judge error, a citation problem).
    if criteria and row.get("reason") in ("correct", "below_threshold"):
        explanation = ""
    details = row.get("details")
    details = details if isinstance(details, Mapping) else {}
    return {
        "response": text(row.get("model_response", row.get("response"))),
        "explanation": explanation,
        "criteria": criteria,
        "warnings": attachment_warnings(row),
        "threshold": details.get("threshold"),
        "chosen": _ids(details.get("chosen")),
        "correct": _ids(details.get("correct")),
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
    for key in ("chosen", "correct"):
        if texts[key] is not None:
            size += 8 + sum(len(i) + 3 for i in texts[key])
    for criterion in texts["criteria"]:
        size += _PER_CRITERION + len(criterion["reasons"]) * _PER_REASON
    return size


def cut(text: str, cap: int) -> str:
    """``text`` cut to ``cap`` characters, an ellipsis marking the cut."""
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

    def find(self, value: Any) -> int | None:
        """The index of ``value`` if the table has it."""
        return self._ids.get(value if isinstance(value, tuple) else text(value))


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
    criteria: Sequence[Mapping[str, Any]], cap: int, tables: Tables, *, urgent: bool,
    title: int,
) -> dict[str, Any]:  # fmt: skip
    """An item's criteria, compact: most items of a run share their rubric's criteria.

    ``c`` is ``[first index, count, flags]`` when the criteria are consecutive entries of
    the criteria table and each is met or not ("1"/"0" in ``flags``), else a list of
    ``[index, met]``; ``cr`` holds each criterion's reason: a text for one judge,
    ``[[judge index, text], ...]`` for several, ``null`` when the judge gave none, or the
    reason's length when the page had no room for it. Titles are cut to ``title``.
    """
    ids = [tables.criteria((cut(c["title"], title), c["weight"])) for c in criteria]
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
        if not found:
            reasons.append(None)
        elif limit <= 0:
            reasons.append(sum(len(reason) for _, reason in found))
        elif len(found) == 1:
            reasons.append(cut(found[0][1], limit))
        else:
            reasons.append([[tables.judges(judge), cut(text, limit)] for judge, text in found])
    if any(r is not None for r in reasons):
        out["cr"] = reasons
    return out


def cut_texts(
    texts: Mapping[str, Any], cap: int, tables: Tables | None = None, *, urgent: bool = True,
    title: int = MAX_TITLE,
) -> dict[str, Any]:  # fmt: skip
    """``texts`` with every free text cut to ``cap`` characters (the detail's JSON).

    Of an ``urgent`` item (a failure or an error), the reasons of the criteria it met get
    the shorter preview of passed items.

    ``rn`` and ``en`` keep the full lengths, so the page can say how much it shows; with
    ``cap`` 0 only they are left; a text shown whole has no length. ``ch`` lists the
    choices an MCQ item picked, ``co`` the correct ones as the grader saw them.
    """
    tables = tables if tables is not None else Tables()
    out: dict[str, Any] = {}
    for key, name in (("r", "response"), ("e", "explanation")):
        if texts[name]:
            if cap > 0:
                out[key] = cut(texts[name], cap)
            if len(texts[name]) > cap:
                out[key + "n"] = len(texts[name])
    if texts["criteria"]:
        out.update(_criteria_json(texts["criteria"], cap, tables, urgent=urgent, title=title))
    if texts["warnings"]:
        out["w"] = texts["warnings"]
    if texts["threshold"] is not None:
        out["t"] = texts["threshold"]
    if texts["chosen"] is not None:
        out["ch"] = texts["chosen"]
    if texts["correct"] is not None:
        out["co"] = texts["correct"]
    return out


_SCRIPT_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def script_json(value: Any) -> str:
    """``value`` as JSON that is inert inside a ``<script type="application/json">`` element.

    ``<``, ``>`` and ``&`` are written as JSON escapes, so no text can close the element or
    open a comment; ``JSON.parse`` gives the original text back. A ``NaN`` or infinity (read
    from an older or hostile run directory) is shown as ``null`` with a warning: one such
    token would make ``JSON.parse`` reject the whole page's data.
    """
    text, _ = finite_dump("the HTML report", value, _compact_json)
    return text.translate(_SCRIPT_ESCAPES)


def _compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


NO_TEXTS: dict[str, Any] = {
    "response": "", "explanation": "", "criteria": [], "warnings": [], "threshold": None,
    "chosen": None, "correct": None,
}  # fmt: skip
