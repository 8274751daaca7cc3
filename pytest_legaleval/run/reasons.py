"""Why an item did not pass, in one line, with its details below: for CI surfaces.

pytest's short summary, JUnit's ``message`` attribute and the job summary's tables show one
line per item; the FAILURES section and JUnit's element text show the whole text (DESIGN
§4). The line says the reason and what decided it:

- ``invalid_record: prompt is required (bad.jsonl line 1)`` (the first of the record's
  ``record_errors``; the body is their JSON);
- ``below_threshold 0.16 < 0.70: missed "Cites Art. 109 of law 2011-525", "Names the
  decree", +3`` for a rubric (the missed criteria by their title, costliest first, each
  title whole or cut after 60 characters; the body lists every criterion);
- ``<reason>: <explanation>`` otherwise, on one line, cut at :data:`LINE_LIMIT`.

The functions read a ``predictions.jsonl`` line or an ``EvalResult``'s fields (a mapping
with ``reason``, ``explanation``, ``score``, ``details``); rubric titles the line lacks
(a replayed verdict names criteria by id) come from the record's rubric.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "LINE_LIMIT",
    "SHOWN_CRITERIA",
    "TITLE_LIMIT",
    "invalid_text",
    "one_line",
    "reason_line",
    "reason_text",
]

LINE_LIMIT = 400
"""Characters of a one-line reason (the whole text is in the body and the run directory)."""
TITLE_LIMIT = 60
"""Characters of a criterion title kept on the line; a longer title is cut after them."""
SHOWN_CRITERIA = 2
"""Missed criteria named on the line; the rest are counted (``+3``)."""

_SPACE = re.compile(r"\s+")


def one_line(text: str, limit: int = LINE_LIMIT) -> str:
    """``text`` with its whitespace runs made one space, cut at ``limit`` (an ellipsis)."""
    line = _SPACE.sub(" ", text).strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _title(text: str) -> str:
    return text if len(text) <= TITLE_LIMIT else text[:TITLE_LIMIT] + "…"


def _number(value: float, other: float | None) -> tuple[str, str]:
    """Two numbers with enough digits (at least two) to tell them apart."""
    for digits in range(2, 7):
        a = f"{value:.{digits}f}"
        b = "" if other is None else f"{other:.{digits}f}"
        if a != b:
            return a, b
    return f"{value:g}", "" if other is None else f"{other:g}"


def _met(value: Any) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    return None


def _criteria(details: Mapping[str, Any], titles: Mapping[str, str]) -> list[dict[str, Any]]:
    """The item's criteria: ``id``, ``title``, ``weight``, ``met`` (0…1 or ``None``), ``why``."""
    found = details.get("criteria")
    if not isinstance(found, list):
        return []
    out = []
    for entry in found:
        if not isinstance(entry, Mapping):
            continue
        cid = str(entry.get("id", ""))
        weight = entry.get("weight")
        score = entry.get("score") if "rating" in entry else entry.get("met")
        out.append(
            {
                "id": cid,
                "title": str(entry.get("title") or titles.get(cid) or cid),
                "weight": float(weight) if isinstance(weight, int | float) else 1.0,
                "met": _met(score),
                "rating": entry.get("rating"),
                "why": str(entry.get("rationale") or entry.get("error") or ""),
            }
        )
    return out


def _cost(criterion: Mapping[str, Any]) -> float:
    """What a criterion cost the item, in weight: a missed share, or a penalty incurred."""
    weight, met = criterion["weight"], criterion["met"]
    return float(weight * (1 - met) if weight > 0 else -weight * met)


def _missed(criteria: Sequence[Mapping[str, Any]]) -> str:
    """``missed "A", "B", +3``, ``penalized "C"``: the criteria that cost the item points."""
    missed = [c for c in criteria if c["weight"] > 0 and c["met"] is not None and c["met"] < 1]
    penalties = [c for c in criteria if c["weight"] < 0 and c["met"] is not None and c["met"] > 0]
    parts = []
    for word, chosen in (("missed", missed), ("penalized", penalties)):
        if not chosen:
            continue
        ranked = sorted(chosen, key=lambda c: -_cost(c))  # stable: rubric order on ties
        names = [f'"{_title(c["title"])}"' for c in ranked[:SHOWN_CRITERIA]]
        if len(ranked) > SHOWN_CRITERIA:
            names.append(f"+{len(ranked) - SHOWN_CRITERIA}")
        parts.append(f"{word} {', '.join(names)}")
    return "; ".join(parts)


def _rated_low(criteria: Sequence[Mapping[str, Any]]) -> str:
    """``low "accuracy" 0.25, "clarity" 0.50, +1``: a criteria item's ratings below the top."""
    low = sorted((c for c in criteria if c["met"] is not None and c["met"] < 1),
                 key=lambda c: c["met"])  # fmt: skip
    if not low:
        return ""
    names = [f'"{_title(c["title"])}" {c["met"]:.2f}' for c in low[:SHOWN_CRITERIA]]
    if len(low) > SHOWN_CRITERIA:
        names.append(f"+{len(low) - SHOWN_CRITERIA}")
    return "low " + ", ".join(names)


def _judge_rationale(row: Mapping[str, Any]) -> str:
    judge = row.get("judge")
    verdicts = judge.get("verdicts") if isinstance(judge, Mapping) else None
    for verdict in verdicts or ():
        if isinstance(verdict, Mapping) and verdict.get("rationale"):
            return str(verdict["rationale"])
    return ""


def reason_line(row: Mapping[str, Any], titles: Mapping[str, str] | None = None) -> str:
    """The one line that says why the item has this outcome (see the module docstring)."""
    reason = str(row.get("reason") or row.get("outcome") or "")
    explanation = str(row.get("explanation") or "")
    details = row.get("details")
    details = details if isinstance(details, Mapping) else {}
    if reason == "invalid_record" and isinstance(details.get("record_errors"), list):
        return _invalid_line(details["record_errors"])
    score = row.get("score")
    if reason == "below_threshold" and isinstance(score, int | float):
        threshold = details.get("threshold")
        limit = float(threshold) if isinstance(threshold, int | float) else None
        shown, bound = _number(float(score), limit)
        head = f"{reason} {shown} < {bound}" if bound else f"{reason} {shown}"
        criteria = _criteria(details, titles or {})
        if any("rating" in c and c["rating"] is not None for c in criteria):
            what = _rated_low(criteria)
        elif criteria:
            what = _missed(criteria)
        else:
            what = _judge_rationale(row) or explanation
        return one_line(f"{head}: {what}" if what else head)
    return one_line(f"{reason}: {explanation}" if explanation else reason)


def _criterion_lines(criteria: Sequence[Mapping[str, Any]]) -> list[str]:
    met = sum(1 for c in criteria if c["met"] is not None and c["met"] >= 1 and c["weight"] > 0)
    positive = sum(1 for c in criteria if c["weight"] > 0)
    lines = [f"criteria ({met} of {positive} met):"]
    for c in criteria:
        value = c["met"]
        if value is None:
            mark = "no verdict"
        elif "rating" in c and c["rating"] is not None:
            mark = f"rated {c['rating']:g} ({value:.2f})"
        elif c["weight"] < 0:
            mark = "penalty" if value > 0 else "avoided"
        else:
            mark = "met" if value >= 1 else ("missed" if value <= 0 else f"met {value:.0%}")
        lines.append(f"  [{mark}] (w={c['weight']:g}) {c['title']}")
        if c["why"]:
            lines.append(f"      {one_line(c['why'], 1000)}")
    return lines


def reason_text(row: Mapping[str, Any], titles: Mapping[str, str] | None = None) -> str:
    """The one line, then (after a blank line) what it leaves out.

    The grader's whole explanation when the line does not hold it, and every criterion of
    a rubric or criteria item (its verdict, weight, title and the judge's reason).
    """
    line = reason_line(row, titles)
    details = row.get("details")
    details = details if isinstance(details, Mapping) else {}
    body: list[str] = []
    explanation = str(row.get("explanation") or "").strip()
    if explanation and one_line(explanation) not in line:
        body.append(explanation)
    criteria = _criteria(details, titles or {})
    if criteria and row.get("reason") not in ("invalid_record",):
        body += _criterion_lines(criteria)
    return "\n\n".join([line, "\n".join(body)]) if body else line


def _invalid_line(errors: Sequence[Any]) -> str:
    first = errors[0] if errors else {}
    message = first.get("message") if isinstance(first, Mapping) else None
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return one_line(f"invalid_record: {message or 'the record failed validation'}{more}")


def invalid_text(errors: Sequence[Mapping[str, Any]]) -> str:
    """An invalid record's line, then its ``record_errors`` as the contract's JSON."""
    body = json.dumps({"record_errors": list(errors)}, indent=2, ensure_ascii=False)
    return f"{_invalid_line(errors)}\n\n{body}"
