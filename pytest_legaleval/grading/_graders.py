"""The built-in graders: MCQ letter extraction, and the LLM judge panel for the rest.

- :class:`McqGrader` extracts the chosen option ids (``grading.mcq``); the item passes iff
  the chosen set equals the correct set. It awaits nothing (``grades_inline``): it runs
  where the answer arrives.
- :class:`JudgeGrader` grades ``reference_qa``, ``rubric_qa`` and ``criteria`` records with
  the session's judge panel (``grading._panel``) under the record's policy; without a panel
  the item is skipped with reason ``needs_judge``. Normalized exact match and token F1
  against the reference answers, and the RAG citation check, are recorded either way.
"""

from __future__ import annotations

from typing import Any

from pytest_legaleval.errors import InvalidValue
from pytest_legaleval.grading._base import Grade, GradeRequest
from pytest_legaleval.records import Record

# The lexical, citation and judge modules are imported where a judged record is graded:
# a run of MCQ records (and an xdist controller, which grades nothing) never needs them.

__all__ = ["JudgeGrader", "McqGrader", "lexical_details", "needs_judge_grade"]


class McqGrader:
    """Multiple-choice questions: the chosen ids must equal the correct ids."""

    name = "mcq"
    needs_judge = False
    grades_inline = True

    async def grade(self, request: GradeRequest) -> Grade:
        """Extract the chosen ids from the answer and compare them with the correct ones."""
        # Imported at the first MCQ grade: its answer patterns compile at import, which an
        # xdist controller (it grades nothing) never needs.
        from pytest_legaleval.grading.mcq import grade_mcq

        grade = grade_mcq(request.record, request.answer)
        return Grade(
            outcome="passed" if grade.passed else "failed",
            passed=grade.passed,
            score=grade.score,
            reason=grade.reason,
            explanation=grade.explanation,
            grader=self.name,
            details={
                "chosen": list(grade.chosen),
                "correct": list(grade.correct),
                "method": grade.method,
            },
        )


def lexical_details(record: Record, answer: str) -> dict[str, Any]:
    """Exact match and token F1 against the reference answers, and the citation check."""
    if not record.reference_answers:
        return {}
    from pytest_legaleval.grading._citations import rag_citations
    from pytest_legaleval.grading._lexical import best_exact_match, best_token_f1
    from pytest_legaleval.grading._text import strip_reasoning

    text = strip_reasoning(answer)
    details: dict[str, Any] = {
        "exact_match": best_exact_match(text, record.reference_answers),
        "token_f1": round(best_token_f1(text, record.reference_answers), 6),
    }
    citations = rag_citations(record, text)
    if citations is not None:
        details["citations"] = citations
    return details


def needs_judge_grade(record: Record, details: dict[str, Any] | None = None) -> Grade:
    """The grade of a judged record in a session without a judge: skipped, counted."""
    return Grade(
        outcome="skipped",
        passed=None,
        score=None,
        reason="needs_judge",
        explanation=f"{record.task_type} records are graded by an LLM judge: pass "
        "--judge-model PROVIDER/NAME",
        grader="none",
        details=details or {},
    )


class JudgeGrader:
    """Reference, rubric and criteria records, graded by the judge panel."""

    name = "judge"
    needs_judge = True

    async def grade(self, request: GradeRequest) -> Grade:
        """Ask the panel; without one, the ``needs_judge`` skip."""
        details = lexical_details(request.record, request.answer)
        if request.judges is None:
            return needs_judge_grade(request.record, details)
        from pytest_legaleval.grading._judge import judge_kind
        from pytest_legaleval.grading._panel import judged_grade

        assert request.judges is not None
        kind = judge_kind(request.record)
        if kind is None:
            raise InvalidValue(f"{request.record.task_type} records are not judged")
        if kind == "reference":
            # A benchmark protocol's own judge, when the policy names its format.
            from pytest_legaleval.grading._protocols import reference_judge

            protocol_judge = reference_judge(request.policy.judge.reference_format)
            if protocol_judge is not None:
                return await protocol_judge(request, details)
        outcome = await request.judges.judge(request.record, request.answer, request.policy)
        return judged_grade(outcome, request.policy, details)
