"""Which grader grades a record: by policy id first, then by task type.

The built-in graders are registered by :func:`default_registry`; users add or replace
graders through the ``pytest_legaleval_register_graders`` hook (``pytest/hookspecs.py``)
or, outside pytest, by calling :meth:`GraderRegistry.register`.
"""

from __future__ import annotations

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.grading.base import Grader
from pytest_legaleval.records import TASK_TYPES, Record

__all__ = ["GraderRegistry", "default_registry"]


class GraderRegistry:
    """Graders by task type and by policy id (a policy's grader wins)."""

    def __init__(self) -> None:
        self._by_task: dict[str, Grader] = {}
        self._by_policy: dict[str, Grader] = {}
        self._by_pair: dict[tuple[str, str], Grader] = {}

    def register(
        self, grader: Grader, *, task_type: str | None = None, policy_id: str | None = None
    ) -> None:
        """Grade records of ``task_type``, of ``policy_id``, or of both, with ``grader``.

        With both, the grader takes only that policy's records of that task type (a policy
        whose task types need different graders). A later registration for the same key
        replaces the earlier one (this is how a user replaces a built-in grader).

        Raises:
            ConfigError: no key given, an unknown task type, or an object that is not a
                ``Grader``.

        """
        if task_type is None and policy_id is None:
            raise ConfigError("register a grader for task_type=, policy_id= or both")
        if not isinstance(grader, Grader):
            raise ConfigError(
                f"Expected a Grader (name, needs_judge, grade(request)) but got "
                f"{grader!r} ({type(grader).__name__})"
            )
        if task_type is not None and task_type not in TASK_TYPES:
            raise ConfigError(f"Unknown task_type {task_type!r}; accepted: {', '.join(TASK_TYPES)}")
        if task_type is not None and policy_id is not None:
            self._by_pair[(policy_id, task_type)] = grader
        elif task_type is not None:
            self._by_task[task_type] = grader
        else:
            assert policy_id is not None
            self._by_policy[policy_id] = grader

    def policy_ids(self) -> frozenset[str]:
        """The policy ids that have a grader of their own."""
        return frozenset([*self._by_policy, *(policy for policy, _ in self._by_pair)])

    def for_record(self, record: Record, policy_id: str | None = None) -> Grader:
        """The grader of ``record``.

        Its own ``policy_id``'s grader (for its task type, else for all), else that of the
        policy it is graded under (``policy_id``, when the record's is unknown), else its
        task type's.

        Raises:
            ConfigError: no grader is registered for its policy or task type.

        """
        for key in (record.policy_id, policy_id):
            if key is None:
                continue
            pair = self._by_pair.get((key, record.task_type))
            if pair is not None:
                return pair
            if key in self._by_policy:
                return self._by_policy[key]
        grader = self._by_task.get(record.task_type)
        if grader is None:
            raise ConfigError(f"no grader is registered for task type {record.task_type!r}")
        return grader


def default_registry() -> GraderRegistry:
    """The built-in graders: MCQ letter extraction, and the LLM judge for the rest.

    The official protocols add theirs: LegalBench's metrics for every record of
    ``legalbench_official``, LEXam's ``###X###`` extraction for the MCQs of
    ``lexam_official`` (its open questions go to the judge, in LEXam's reply format).
    """
    from pytest_legaleval.grading.graders import JudgeGrader, McqGrader
    from pytest_legaleval.grading.official.graders import (
        LegalbenchOfficialGrader,
        LexamMcqOfficialGrader,
    )

    registry = GraderRegistry()
    registry.register(McqGrader(), task_type="mcq")
    registry.register(LegalbenchOfficialGrader(), policy_id="legalbench_official")
    registry.register(LexamMcqOfficialGrader(), policy_id="lexam_official", task_type="mcq")
    judge = JudgeGrader()
    for task_type in ("reference_qa", "rubric_qa", "criteria"):
        registry.register(judge, task_type=task_type)
    return registry
