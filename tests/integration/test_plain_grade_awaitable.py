"""A grader whose plain ``grade()`` returns an awaitable grades every item, the first too.

Such a grader (deprecated, wrapped by ``SyncGraderAdapter``) was first driven inline, so the
first item's awaitable suspended there and failed with ``_Suspended`` ("2 passed, 1 error"
for 3 records). It now runs on the loop until a call shows ``grade()`` returns a ``Grade``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import mcq_row, read_jsonl, run_dirs, run_eval, write_jsonl

CONFTEST = """
import asyncio

from pytest_legaleval.grading._base import Grade


class AwaitingGrader:
    name = "awaiting"
    needs_judge = False

    def grade(self, request):  # plain def: returns a coroutine that really suspends
        return self._grade(request)

    async def _grade(self, request):
        await asyncio.sleep(0)
        if request.answer.strip() == "B":
            return Grade.passing(self.name)
        return Grade.failing(self.name, "wrong_answer", request.answer)


def pytest_legaleval_register_graders(registry, config):
    registry.register(AwaitingGrader(), task_type="mcq")
"""


@pytest.mark.filterwarnings("ignore:grader .* a plain grade\\(\\) is deprecated")
def test_a_plain_grade_returning_an_awaitable_grades_all_three_records(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.makeconftest(CONFTEST)
    data = write_jsonl(pytester.path / "mcq.jsonl", [mcq_row(f"q{n}") for n in range(3)])
    responses = write_jsonl(
        pytester.path / "responses.jsonl",
        [{"record_id": f"q{n}", "response": "B"} for n in range(3)],
    )
    result = run_eval(pytester, data, responses, "-W", "ignore::DeprecationWarning")
    result.assert_outcomes(passed=3)
    (run,) = run_dirs(pytester.path / "runs")
    lines = read_jsonl(run / "predictions.jsonl")
    assert sorted((p["record_id"], p["grader"], p["passed"]) for p in lines) == [
        ("q0", "awaiting", True), ("q1", "awaiting", True), ("q2", "awaiting", True),
    ]  # fmt: skip


def test_a_plain_grade_returning_a_grade_goes_inline_after_its_first_call() -> None:
    import asyncio

    from pytest_legaleval.grading._base import Grade, run_inline
    from pytest_legaleval.grading._registry import SyncGraderAdapter

    class Plain:
        name = "plain"
        needs_judge = False

        def grade(self, request: object) -> Grade:
            return Grade.passing(self.name)

    adapter = SyncGraderAdapter(Plain())
    assert adapter.grades_inline is False  # unknown yet: the first call runs on a loop
    assert asyncio.run(adapter.grade(None)).passed is True  # type: ignore[arg-type]
    assert adapter.grades_inline is True
    assert run_inline(adapter.grade(None)).passed is True  # type: ignore[arg-type]
