"""Reading one verdict line's grades (LBR judgments row or our prediction line); pure.

Helpers of ``grading._verdicts``: they turn a row into per-criterion entries or a reference
score plus a failure message, and report every oddity through ``problem(code, message)``
instead of raising.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_legaleval.records import Record

__all__ = ["CriterionVerdict", "criteria_of", "reference_of"]


@dataclass(frozen=True, slots=True)
class CriterionVerdict:
    """The recorded verdict on one rubric criterion."""

    criterion_id: str
    weight: float
    grade: float | None
    """In [0, 1]; ``None`` when this criterion's judge call failed or its reply was unusable."""
    rationale: str = ""
    error: str | None = None
    """Why there is no grade, else ``None``."""


Problem = Callable[[str, str], None]

_CALL_FAILED = "LBR: the judge call failed"
_UNPARSEABLE = "LBR: the judge reply could not be parsed"
_NOT_RECORDED = "no verdict recorded for this criterion"


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _grade(value: object) -> float | None:
    if value is True or value is False:
        return 1.0 if value else 0.0
    number = _number(value)
    return number if number is not None and 0.0 <= number <= 1.0 else None


def _lbr_reference(row: Mapping[str, Any], problem: Problem) -> tuple[float | None, str | None]:
    """LBR's reference verdict: ``criteria.overall`` (its judge's score), never ``score``.

    The row's ``score`` is LBR's total, derived from the verdict: it is only compared with
    it (a disagreement is reported), so a row without it replays the same.
    """
    if row.get("judge_call_failed") is True:
        return None, _CALL_FAILED
    if row.get("parse_error") is True:
        return None, _UNPARSEABLE
    criteria = row.get("criteria")
    value = criteria.get("overall") if isinstance(criteria, Mapping) else None
    if value is None and isinstance(criteria, Mapping) and len(criteria) == 1:
        value = next(iter(criteria.values()))
    if value is None:
        problem("missing_field", "a reference row needs its verdict, criteria.overall")
        return None, "no reference verdict was recorded (criteria.overall)"
    grade = _grade(value)
    if grade is None:
        problem("wrong_type", f"criteria.overall must be a number in [0, 1], got {value!r}")
        return None, "the recorded verdict is unusable"
    recorded = _number(row.get("score"))
    if recorded is not None and not math.isclose(recorded, grade, abs_tol=1e-9):
        problem(
            "score_mismatch",
            f"the recorded score {recorded:g} is not its verdict's {grade:g} (the verdict is used)",
        )
    return grade, None


def reference_of(
    row: Mapping[str, Any], lbr: bool, problem: Problem
) -> tuple[float | None, str | None]:
    """The reference score of a row (from its verdict), or why it has none."""
    if lbr:
        return _lbr_reference(row, problem)
    verdicts = _judge_verdicts(row, problem)
    if verdicts is None:
        return None, "the judge summary is unusable"
    scores, errors = [], []
    for verdict in verdicts:
        score = _grade(verdict.get("score"))
        if score is None:
            errors.append(str(verdict.get("error") or "no score recorded"))
        else:
            scores.append(score)
    if errors or not scores:
        return None, "; ".join(errors) or "no judge verdict recorded"
    return sum(scores) / len(scores), None


def _judge_verdicts(row: Mapping[str, Any], problem: Problem) -> list[Mapping[str, Any]] | None:
    judge = row.get("judge")
    verdicts = judge.get("verdicts") if isinstance(judge, Mapping) else None
    if not isinstance(verdicts, list) or not all(isinstance(v, Mapping) for v in verdicts):
        problem("wrong_type", "judge.verdicts must be a list of objects")
        return None
    # With --judge-epochs the answer was judged again; the first judging is the verdict.
    return [v for v in verdicts if not v.get("judge_epoch")]


Entry = tuple[str, float | None, float | None, str, str | None]
"""criterion id, weight (None: not recorded), grade (None: failed), rationale, error."""


def _lbr_entries(row: Mapping[str, Any], problem: Problem) -> tuple[list[Entry], str | None]:
    item_failed = row.get("parse_error") is True or row.get("judge_call_failed") is True
    grades = row.get("criterion_grades")
    raw_judge = row.get("raw_judge")
    calls = raw_judge.get("calls") if isinstance(raw_judge, Mapping) else None
    if grades is None and isinstance(calls, list):
        grades = [
            {
                "criterion_id": c.get("criterion_id"),
                "grade": c.get("score"),
                "judge_rationale": c.get("rationale"),
                "judge_parse_error": c.get("parse_error"),
                "judge_call_failed": bool(c.get("error")),
            }
            for c in calls
            if isinstance(c, Mapping)
        ]
    if grades is None:
        criteria = row.get("criteria")
        if not isinstance(criteria, Mapping) or not criteria:
            problem("missing_field", "a rubric row needs criterion_grades or criteria")
            return [], "no criterion verdicts were recorded"
        if item_failed:
            # LBR recorded 0 for the failed criteria but not which ones they were.
            return [], _UNPARSEABLE + " (which criterion is not recorded)"
        grades = [{"criterion_id": k, "grade": v} for k, v in criteria.items()]
    if not isinstance(grades, list):
        problem("wrong_type", "criterion_grades must be a list")
        return [], "the recorded criterion verdicts are unusable"
    entries: list[Entry] = []
    for position, item in enumerate(grades):
        cid = item.get("criterion_id") if isinstance(item, Mapping) else None
        if not isinstance(cid, str) or not cid:
            problem("wrong_type", f"criterion_grades[{position}] needs a string criterion_id")
            continue
        assert isinstance(item, Mapping)
        weight = _number(item.get("weight"))
        rationale = str(item.get("judge_rationale") or "")
        if item.get("judge_call_failed") is True:
            entries.append((cid, weight, None, rationale, _CALL_FAILED))
        elif item.get("judge_parse_error") is True:
            entries.append((cid, weight, None, rationale, _UNPARSEABLE))
        else:
            entries.append(_graded(cid, weight, item.get("grade"), rationale, problem))
    flagged = any(entry[2] is None for entry in entries)
    if item_failed and not flagged:
        return entries, _UNPARSEABLE + " (no criterion is marked failed)"
    return entries, None


def _graded(cid: str, weight: float | None, value: object, why: str, problem: Problem) -> Entry:
    grade = _grade(value)
    if grade is None:
        problem("wrong_type", f"criterion {cid!r}: grade must be a number in [0, 1]")
        return cid, weight, None, why, "the recorded grade is unusable"
    return cid, weight, grade, why, None


def _our_entries(
    row: Mapping[str, Any], kind: str, problem: Problem
) -> tuple[list[Entry], str | None]:
    verdicts = _judge_verdicts(row, problem)
    if verdicts is None:
        return [], "the judge summary is unusable"
    if not verdicts:
        return [], "no judge verdict recorded"
    weights: dict[str, float] = {}
    details = row.get("details")
    for item in details.get("criteria") or [] if isinstance(details, Mapping) else []:
        if isinstance(item, Mapping) and isinstance(item.get("id"), str):
            weight = _number(item.get("weight"))
            if weight is not None:
                weights[item["id"]] = weight
    per_judge: list[dict[str, tuple[float | None, str, str | None]]] = []
    order: list[str] = []
    for verdict in verdicts:
        seen: dict[str, tuple[float | None, str, str | None]] = {}
        entries = verdict.get("criteria")
        for item in entries if isinstance(entries, list) else []:
            cid = item.get("id") if isinstance(item, Mapping) else None
            if not isinstance(cid, str) or cid == "verdict":
                continue
            assert isinstance(item, Mapping)
            if cid not in order:
                order.append(cid)
            why = str(item.get("rationale") or "")
            if item.get("error"):
                seen[cid] = (None, why, str(item["error"]))
                continue
            value = item.get("score") if kind == "criteria" else item.get("met", item.get("score"))
            grade = _grade(value)
            if grade is None:
                problem("wrong_type", f"criterion {cid!r}: no usable met/score")
                seen[cid] = (None, why, "the recorded grade is unusable")
            else:
                seen[cid] = (grade, why, None)
        per_judge.append(seen)
    combined: list[Entry] = []
    for cid in order:
        marks = [judge.get(cid, (None, "", _NOT_RECORDED)) for judge in per_judge]
        errors = [error for _, _, error in marks if error is not None]
        grades = [grade for grade, _, _ in marks if grade is not None]
        why = marks[0][1]
        if errors:
            combined.append((cid, weights.get(cid), None, why, errors[0]))
        else:
            combined.append((cid, weights.get(cid), sum(grades) / len(grades), why, None))
    return combined, None


def _expected(record: Record, kind: str) -> list[tuple[str, float]]:
    if kind == "criteria":
        return [(name, 1.0) for name in record.required_criteria]
    return [(criterion.id, criterion.weight) for criterion in record.rubric]


def criteria_of(
    row: Mapping[str, Any],
    lbr: bool,
    kind: str,
    record: Record | None,
    problem: Problem,
) -> tuple[tuple[CriterionVerdict, ...], str | None]:
    """Per-criterion verdicts of a rubric or criteria row, and the item-level failure.

    With the record, the verdicts follow its criteria (weights from the record); without
    it, the row's own order and weights.
    """
    entries, error = _lbr_entries(row, problem) if lbr else _our_entries(row, kind, problem)
    by_id: dict[str, Entry] = {}
    for entry in entries:
        if entry[0] in by_id:
            problem("duplicate", f"criterion {entry[0]!r} appears twice (the first is kept)")
            continue
        by_id[entry[0]] = entry
    if record is None:
        verdicts = tuple(
            CriterionVerdict(cid, 1.0 if weight is None else weight, grade, why, err)
            for cid, weight, grade, why, err in by_id.values()
        )
        return verdicts, error
    expected = _expected(record, kind)
    known = {cid for cid, _ in expected}
    unknown = [cid for cid in by_id if cid not in known]
    if unknown:
        problem("unknown_criterion", f"criteria not in the record: {_listed(unknown)}")
    out: list[CriterionVerdict] = []
    missing: list[str] = []
    for cid, weight in expected:
        found = by_id.get(cid)
        if found is None:
            missing.append(cid)
            out.append(CriterionVerdict(cid, weight, None, "", _NOT_RECORDED))
            continue
        _, recorded, grade, why, err = found
        if recorded is not None and not math.isclose(recorded, weight, abs_tol=1e-9):
            problem(
                "weight_mismatch",
                f"criterion {cid!r}: weight {recorded:g} recorded, {weight:g} in the record "
                "(the record's is used)",
            )
        out.append(CriterionVerdict(cid, weight, grade, why, err))
    # A row that reports a failure may lack the criteria it never got to (our panel kept
    # only the failed ones); a row that claims success must have them all.
    if missing and entries and error is None and all(e[2] is not None for e in entries):
        problem("missing_criterion", f"no verdict for {_listed(missing)}")
    return tuple(out), error


def _listed(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:5])
    return shown + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
