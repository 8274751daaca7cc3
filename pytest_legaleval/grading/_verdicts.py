"""Recorded judge verdicts: read them, then re-score them under any policy (pure, no I/O).

Two sources, told apart line by line:

* the Legal Benchmark Runner's ``judgments.jsonl`` rows — ``example_id``,
  ``candidate_name``, ``judge_mode``, ``score``, ``pass``, ``parse_error``, and per criterion
  ``criterion_grades`` (``criterion_id``, ``weight``, ``grade``, ``judge_rationale``,
  ``judge_parse_error``, ``judge_call_failed``), or LBR's native ``raw_judge.calls``, or
  only the ``criteria`` mapping of criterion id to grade (a reference row: its judge's
  score as ``criteria.overall``);
* our ``predictions.jsonl`` lines — ``record_id``, ``model`` and the ``judge`` summary with
  one verdict per judge model (per criterion ``met``/``score`` or ``error``).

Each judged (record, model) becomes one ``RecordedVerdict``: per-criterion grades with
weight and rationale (or a reference score) and failure flags. A verdict that LBR marked
failed or unparseable is a failure here (a judge error when scored), never a 0. Scores are
always recomputed (``score_verdict``) from the grades under a policy's scoring and
threshold, for every judge mode; the score, pass flag and aggregation the file recorded
are never read to score (the recorded score and pass are kept for comparison only), so a
file without them replays the same.

Nothing here raises on bad input: a line that is not JSON, has the wrong types, repeats a
(record, model), or names criteria the record does not have is reported as a
``VerdictProblem`` with its line number, and the rest is read. A line holding ``NaN``,
``Infinity`` or ``1e999`` is not standard JSON: its item's verdict is a judge error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_legaleval.errors import NonFiniteNumber
from pytest_legaleval.grading._policies import Policy
from pytest_legaleval.grading._scoring import (
    RubricOutcome,
    passes,
    round_to_step,
    score_rubric,
)
from pytest_legaleval.grading._verdict_rows import CriterionVerdict, criteria_of, reference_of
from pytest_legaleval.records import Record
from pytest_legaleval.util import strict_json

__all__ = [
    "CriterionVerdict",
    "RecordedVerdict",
    "VerdictFile",
    "VerdictProblem",
    "VerdictScore",
    "read_verdicts",
    "score_verdict",
]


@dataclass(frozen=True, slots=True)
class RecordedVerdict:
    """Everything recorded about judging one (record, model) item."""

    record_id: str
    model: str
    kind: str
    """``rubric``, ``reference`` or ``criteria``."""
    line: int
    """One-based line of the file it came from."""
    source: str
    """``lbr`` (LBR's judgments.jsonl) or ``predictions`` (our predictions.jsonl)."""
    criteria: tuple[CriterionVerdict, ...] = ()
    """Rubric and criteria items: one per criterion, in the record's order."""
    reference_score: float | None = None
    """Reference items: the judge's score in [0, 1]."""
    error: str | None = None
    """The verdict as a whole is unusable (a judge error when scored)."""
    recorded_score: float | None = None
    """The score the file recorded — for comparison only, never used to score."""
    recorded_pass: bool | None = None
    """The pass flag the file recorded — for comparison only."""
    epoch: int = 0
    """The item's epoch (``--epochs``): a predictions line's ``epoch``; LBR's rows: 0."""

    @property
    def failed_criteria(self) -> tuple[CriterionVerdict, ...]:
        """The criteria without a usable verdict."""
        return tuple(c for c in self.criteria if c.grade is None)


@dataclass(frozen=True, slots=True)
class VerdictProblem:
    """Something wrong with a line of a verdict file (reported, never raised)."""

    line: int
    code: str
    """``invalid_json``, ``wrong_type``, ``missing_field``, ``duplicate``,
    ``unknown_criterion``, ``missing_criterion``, ``weight_mismatch``, ``unknown_record``,
    ``kind_mismatch``, ``score_mismatch`` (a recorded total that is not its verdict's),
    ``non_finite`` (a ``NaN``/``Infinity`` in the line: its item is a judge error)."""
    message: str
    record_id: str | None = None
    model: str | None = None

    def __str__(self) -> str:
        where = f"line {self.line}"
        if self.record_id is not None:
            where += f" ({self.record_id}" + (f", {self.model})" if self.model else ")")
        return f"{where}: {self.message} [{self.code}]"


@dataclass(slots=True)
class VerdictFile:
    """What a verdict file held."""

    verdicts: dict[tuple[str, str, int], RecordedVerdict] = field(default_factory=dict)
    """By (record id, model, epoch)."""
    problems: list[VerdictProblem] = field(default_factory=list)
    not_judged: int = 0
    """Lines of items graded without a judge (MCQ) or never judged (no judge summary)."""


_KINDS = {"rubric": "rubric", "rubric_qa": "rubric", "reference": "reference"}
_KINDS.update({"reference_qa": "reference", "criteria": "criteria"})


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _is_lbr(row: Mapping[str, Any]) -> bool:
    return "example_id" in row or "candidate_name" in row


def _kind(row: Mapping[str, Any], lbr: bool) -> str | None:
    """``rubric``, ``reference`` or ``criteria``; ``None`` when not judged; ``?`` unknown."""
    if lbr:
        mode = row.get("judge_mode", row.get("task_type"))
        if mode == "mcq" or row.get("judge_name") == "deterministic_mcq":
            return None
        return _KINDS.get(mode, "?") if isinstance(mode, str) else "?"
    judge = row.get("judge")
    if not judge:
        return None
    kind = judge.get("kind") if isinstance(judge, Mapping) else None
    return _KINDS.get(kind, "?") if isinstance(kind, str) else "?"


def _recorded(row: Mapping[str, Any], lbr: bool) -> tuple[float | None, bool | None]:
    score = row.get("score")
    flag = row.get("pass" if lbr else "passed")
    good_score = (
        float(score)
        if isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score)
        else None
    )
    return good_score, flag if isinstance(flag, bool) else None


def read_verdicts(
    lines: Iterable[str | bytes], *, records: Mapping[str, Record] | None = None
) -> VerdictFile:
    """Read a verdict file's lines (LBR's judgments or our predictions, mixed allowed).

    Args:
        lines: the file's lines, in order (text or UTF-8 bytes).
        records: the records by id. With them, criterion ids are checked against each
            record's rubric, weights come from the record (the file's weight, if any,
            must agree), and criteria the file lacks count as failed; a verdict for an
            unknown record is reported and dropped. Without them the file's own ids and
            weights are used (an absent weight counts 1.0, as LBR assumes).

    Returns:
        The verdicts, the problems found (with line numbers) and the count of lines that
        were not judge verdicts.

    """
    out = VerdictFile()
    for number, raw in enumerate(lines, 1):
        text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
        if not text.strip():
            continue
        non_finite = None
        try:
            row = strict_json.loads(text)
        except NonFiniteNumber as exc:
            # Read again only to name the item the line was for: it gets a judge error.
            row, non_finite = json.loads(text), str(exc)
        except (ValueError, RecursionError) as exc:
            out.problems.append(VerdictProblem(number, "invalid_json", f"not JSON: {exc}"))
            continue
        if not isinstance(row, dict):
            out.problems.append(VerdictProblem(number, "wrong_type", "a line must be an object"))
            continue
        verdict = _read_row(row, number, records, out.problems, non_finite)
        if verdict is None:
            out.not_judged += int(_is_unjudged(row))
            continue
        key = (verdict.record_id, verdict.model, verdict.epoch)
        first = out.verdicts.get(key)
        if first is not None:
            out.problems.append(
                VerdictProblem(
                    number,
                    "duplicate",
                    f"a second verdict for this record, model and epoch (the first, line "
                    f"{first.line}, is kept)",
                    *key[:2],
                )
            )
            continue
        out.verdicts[key] = verdict
    return out


def _is_unjudged(row: Mapping[str, Any]) -> bool:
    lbr = _is_lbr(row)
    ids_ok = _text(row.get("example_id" if lbr else "record_id")) is not None
    return ids_ok and _kind(row, lbr) is None


def _read_row(
    row: Mapping[str, Any],
    line: int,
    records: Mapping[str, Record] | None,
    problems: list[VerdictProblem],
    non_finite: str | None = None,
) -> RecordedVerdict | None:
    lbr = _is_lbr(row)
    record_id = _text(row.get("example_id" if lbr else "record_id"))
    model = _text(row.get("candidate_name" if lbr else "model"))
    if record_id is None or model is None:
        names = "example_id and candidate_name" if lbr else "record_id and model"
        problems.append(VerdictProblem(line, "missing_field", f"needs {names} (strings)"))
        return None
    kind = _kind(row, lbr)
    if kind is None:
        return None
    if kind == "?":
        problems.append(VerdictProblem(line, "wrong_type", "unknown judge kind", record_id, model))
        return None
    record = None
    if records is not None:
        record = records.get(record_id)
        if record is None:
            problems.append(
                VerdictProblem(line, "unknown_record", "no such record", record_id, model)
            )
            return None
        expected = _KINDS.get(record.task_type)
        if expected != kind:
            problems.append(
                VerdictProblem(
                    line,
                    "kind_mismatch",
                    f"a {kind} verdict for a {record.task_type} record",
                    record_id,
                    model,
                )
            )
            return None
    if non_finite is not None:
        problems.append(
            VerdictProblem(line, "non_finite", f"not standard JSON: {non_finite}", record_id, model)
        )
        return RecordedVerdict(
            record_id,
            model,
            kind,
            line,
            "lbr" if lbr else "predictions",
            error=f"the recorded verdict is not standard JSON ({non_finite})",
        )
    score, flag = _recorded(row, lbr)
    epoch = row.get("epoch")
    base = RecordedVerdict(
        record_id, model, kind, line, "lbr" if lbr else "predictions",
        recorded_score=score, recorded_pass=flag,
        epoch=epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else 0,
    )  # fmt: skip

    def problem(code: str, message: str) -> None:
        problems.append(VerdictProblem(line, code, message, record_id, model))

    if kind == "reference":
        value, error = reference_of(row, lbr, problem)
        return _replace(base, reference_score=value, error=error)
    criteria, error = criteria_of(row, lbr, kind, record, problem)
    return _replace(base, criteria=criteria, error=error)


def _replace(verdict: RecordedVerdict, **changes: Any) -> RecordedVerdict:
    values = {name: getattr(verdict, name) for name in RecordedVerdict.__dataclass_fields__}
    values.update(changes)
    return RecordedVerdict(**values)


@dataclass(frozen=True, slots=True)
class VerdictScore:
    """A recorded verdict re-scored under a policy."""

    score: float | None
    passed: bool | None
    reason: str
    """``correct``, ``below_threshold`` or ``judge_error``."""
    explanation: str
    rubric: RubricOutcome | None = None
    """Rubric and criteria items: the share of the rubric the score covers."""


def score_verdict(verdict: RecordedVerdict, policy: Policy) -> VerdictScore:
    """Re-score a recorded verdict under ``policy`` (its scoring, step and threshold).

    A failed verdict, or failed criteria under ``on_partial_judge_failure: error``, give a
    judge error (``score`` and ``passed`` ``None``), never a 0.
    """
    threshold = policy.pass_threshold
    if verdict.error is not None:
        return VerdictScore(None, None, "judge_error", verdict.error)
    rubric = None
    if verdict.kind == "reference":
        if verdict.reference_score is None:
            return VerdictScore(None, None, "judge_error", "no reference score was recorded")
        score = round_to_step(verdict.reference_score, policy.judge.reference_step)
        detail = f"reference score {score:g}"
    else:
        rubric = score_rubric(
            [(c.weight, c.grade) for c in verdict.criteria],
            policy.scoring,
            policy.on_partial_judge_failure,
        )
        if rubric.score is None:
            return VerdictScore(None, None, "judge_error", rubric.describe(), rubric)
        score = rubric.score
        detail = f"{policy.scoring} score {score:.4f}, {rubric.describe()}"
    passed = passes(score, threshold)
    relation = ">=" if passed else "<"
    explanation = f"{detail} {relation} threshold {threshold:g} (policy {policy.id})"
    return VerdictScore(
        score, passed, "correct" if passed else "below_threshold", explanation, rubric
    )
