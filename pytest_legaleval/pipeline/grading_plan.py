"""Which policy and which grader apply to a record; grading pre-computed responses.

Light on purpose: a run on pre-computed responses without a judge grades through this
module alone and never imports the engine (or the ``openai`` SDK under it).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from pytest_legaleval.grading.base import Grade, Grader, GradeRequest
from pytest_legaleval.grading.policies import Policy, PolicyBook
from pytest_legaleval.grading.registry import GraderRegistry, default_registry
from pytest_legaleval.pipeline.responses import Recorded, ResponseTable
from pytest_legaleval.pipeline.results import graded_result, missing_response_result
from pytest_legaleval.records import EvalResult, Record

if TYPE_CHECKING:
    from pytest_legaleval.grading.panel import JudgePanel

__all__ = ["GradingPlan"]


class GradingPlan:
    """Which policy and which grader apply to a record, and grading without the engine."""

    def __init__(self, policies: PolicyBook, graders: GraderRegistry | None = None) -> None:
        self.policies = policies
        self.graders = graders if graders is not None else default_registry()

    def policy(self, record: Record) -> Policy:
        """The record's policy (``default`` when it names none or an unknown one).

        An id that only names a user's grader (no policy file) prompts under ``default``
        without the unknown-policy warning.
        """
        wanted = record.policy_id
        if wanted is not None and wanted not in self.policies.ids:
            if wanted in self.graders.policy_ids():
                return self.policies.get("default")
        return self.policies.for_record(record)

    def grader(self, record: Record) -> Grader:
        """The grader of ``record``: its policy's, else its task type's."""
        return self.graders.for_record(record, self.policy(record).id)

    def grade_sync(self, request: GradeRequest) -> Grade | Awaitable[Grade]:
        """Call the grader; the caller awaits what it returns if it is awaitable."""
        return self.grader(request.record).grade(request)

    def prefilled(
        self, record: Record, model: str, responses: ResponseTable, judges: JudgePanel | None
    ) -> EvalResult | Awaitable[EvalResult]:
        """A pre-computed response graded (a coroutine when its grader awaits)."""
        answer = responses.get(record.id, model)
        tag = self.policy(record)
        if answer is None:
            return missing_response_result(record, model, responses.path, tag)
        recorded = responses.recorded_for(record.id, model)
        request = GradeRequest(record, model, answer, self.policy(record), judges)
        grade = self.grade_sync(request)
        if inspect.isawaitable(grade):
            return self._prefilled_later(record, model, answer, grade, tag, recorded)
        return graded_result(
            record, model, answer, grade, source="prefilled", policy=tag, recorded=recorded
        )

    @staticmethod
    async def _prefilled_later(
        record: Record,
        model: str,
        answer: str,
        grade: Awaitable[Grade],
        tag: Policy,
        recorded: Recorded | None,
    ) -> EvalResult:
        return graded_result(
            record, model, answer, await grade, source="prefilled", policy=tag, recorded=recorded
        )
