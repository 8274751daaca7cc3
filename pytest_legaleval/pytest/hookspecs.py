"""Hooks that pytest-legaleval calls, for users' conftest files and plugins.

Implement them in a ``conftest.py`` (or a plugin) of the project that runs the suite::

    from pytest_legaleval.grading import Grade, GradeRequest

    class KeywordGrader:
        name = "keyword"
        needs_judge = False

        async def grade(self, request: GradeRequest) -> Grade:
            wanted = request.record.reference_answers[0].lower()
            if wanted in request.answer.lower():
                return Grade.passing(self.name, f"mentions {wanted!r}")
            return Grade.failing(self.name, "keyword_missing", f"does not mention {wanted!r}")

    def pytest_legaleval_register_graders(registry, config):
        registry.register(KeywordGrader(), policy_id="keywords")

    def pytest_legaleval_result(result, record, run_id, config):
        ...  # e.g. send result.to_dict() to your own store
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_legaleval.grading._registry import GraderRegistry
    from pytest_legaleval.records import EvalResult, Provenance

__all__ = ["pytest_legaleval_register_graders", "pytest_legaleval_result"]


def pytest_legaleval_register_graders(registry: GraderRegistry, config: pytest.Config) -> None:
    """Add or replace graders before any item is graded.

    Called once in every process that grades (a single process, each xdist worker), with
    the run's :class:`~pytest_legaleval.grading.GraderRegistry`: call
    ``registry.register(grader, task_type=...)`` to replace the grader of a task type, or
    ``registry.register(grader, policy_id=...)`` to grade the records of one policy with
    your own. A grader follows the :class:`~pytest_legaleval.grading.Grader`
    protocol; one whose ``needs_judge`` is true gets the judge panel in its request.
    """


def pytest_legaleval_result(
    result: EvalResult, record: Provenance | None, run_id: str, config: pytest.Config
) -> None:
    """See every finished result, once it is written to ``predictions.jsonl``.

    Called only in the process that writes the run directory (the xdist controller, or
    the single process), once per item, in the order results arrive. ``record`` is the
    record's :class:`~pytest_legaleval.records.Provenance` (``tags``, ``metadata``,
    ``dataset_version``; a frozen dataclass that also reads as a mapping), or ``None``.
    Exceptions raised here end the session like any plugin's: catch your own.
    """
