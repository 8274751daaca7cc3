"""Grading judged records from recorded judge verdicts: no judge is called.

``--judgments FILE`` names LBR's ``judgments.jsonl`` or one of our ``predictions.jsonl``;
:class:`ReplayGrader` grades each judged item from its recorded per-criterion verdicts (or
reference score) under the record's policy — its scoring, step and threshold — so a run
can be re-scored under another policy for free, and an LBR run reproduced offline. A
recorded total is never copied; a verdict the file marks failed or unparseable is a
``judge_error``, never a 0; an item with no recorded verdict is a ``judge_error`` too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_legaleval.grading._base import Grade, GradeRequest
from pytest_legaleval.grading._graders import lexical_details
from pytest_legaleval.grading._judge import judge_kind
from pytest_legaleval.grading._verdicts import RecordedVerdict, VerdictFile, score_verdict
from pytest_legaleval.grading.official.judged import (
    JUDGED_PROTOCOLS,
    official_skip,
    replayed_grade,
)

__all__ = ["ReplayGrader"]


def _criteria(verdict: RecordedVerdict) -> list[dict[str, Any]]:
    out = []
    for c in verdict.criteria:
        entry: dict[str, Any] = {
            "id": c.criterion_id,
            "weight": c.weight,
            "met": c.grade,
            "rationale": c.rationale,
        }
        if c.error is not None:
            entry["error"] = c.error
        out.append(entry)
    return out


class ReplayGrader:
    """Grades reference, rubric and criteria records from a verdict file.

    Args:
        verdicts: reads the file once, on first use (it needs the records).
        source: the file's path, named in results.

    """

    name = "judge"
    needs_judge = False
    grades_inline = True

    def __init__(self, verdicts: Callable[[], VerdictFile], source: str) -> None:
        self._load = verdicts
        self._verdicts: VerdictFile | None = None
        self.source = source

    @property
    def verdicts(self) -> VerdictFile:
        """The file's verdicts (read on first use)."""
        if self._verdicts is None:
            self._verdicts = self._load()
        return self._verdicts

    async def grade(self, request: GradeRequest) -> Grade:
        """The recorded verdict of this item, re-scored under its policy."""
        record, policy = request.record, request.policy
        kind = judge_kind(record) or record.task_type
        grader = f"judge:{kind}"
        details: dict[str, Any] = {
            **lexical_details(record, request.answer),
            "threshold": policy.pass_threshold,
        }
        verdict = self.verdicts.verdicts.get((record.id, request.model, request.epoch))
        if verdict is None and policy.id in JUDGED_PROTOCOLS:
            skipped = official_skip(request)
            if skipped is not None:
                return skipped
        if verdict is None:
            return Grade(
                "error",
                None,
                None,
                "judge_error",
                f"no recorded verdict for record {record.id!r} and model {request.model!r} "
                f"in {self.source}",
                grader,
                details,
            )
        replayed_from = {
            "file": self.source,
            "line": verdict.line,
            "format": verdict.source,
            "recorded_score": verdict.recorded_score,
            "recorded_pass": verdict.recorded_pass,
        }
        if policy.id in JUDGED_PROTOCOLS:
            extra = {**details, "replayed_from": replayed_from}
            recorded = {c.criterion_id: c for c in verdict.criteria}
            rows = [recorded.get(c.id) for c in record.rubric]
            grades = [None if row is None else row.grade for row in rows]
            errors = [None if row is None else row.error for row in rows]
            return replayed_grade(request, grades, errors, extra)
        scored = score_verdict(verdict, policy)
        details["replayed_from"] = {
            "file": self.source,
            "line": verdict.line,
            "format": verdict.source,
            "recorded_score": verdict.recorded_score,
            "recorded_pass": verdict.recorded_pass,
        }
        if verdict.criteria:
            details["criteria"] = _criteria(verdict)
        if scored.rubric is not None:
            details["rubric"] = scored.rubric.details(policy.scoring)
        if scored.passed is None:
            return Grade(
                "error",
                None,
                None,
                "judge_error",
                f"the recorded verdict is unusable — {scored.explanation}",
                grader,
                details,
            )
        return Grade(
            "passed" if scored.passed else "failed",
            scored.passed,
            scored.score,
            scored.reason,
            f"replayed: {scored.explanation}",
            grader,
            details,
        )
