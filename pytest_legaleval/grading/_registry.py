"""Which grader grades a record: by policy id first, then by task type.

The built-in graders are registered by :func:`default_registry`; users add or replace
graders through the ``pytest_legaleval_register_graders`` hook (``pytest/hookspecs.py``)
or, outside pytest, by calling :meth:`GraderRegistry.register`.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

from pytest_legaleval.errors import ConfigError, InvalidState
from pytest_legaleval.grading._base import Grade, Grader, GradeRequest
from pytest_legaleval.records import TASK_TYPES, Record

__all__ = ["GraderRegistry", "SyncGraderAdapter", "default_registry"]


class SyncGraderAdapter:
    """A grader whose ``grade`` is a plain function, made a ``Grader`` (deprecated).

    The protocol's ``grade`` is a coroutine; a plain ``grade`` returning a ``Grade`` (or,
    as before, an awaitable of one) still works through this wrapper, with a
    ``DeprecationWarning`` at registration.
    """

    def __init__(self, grader: Any) -> None:
        self.wrapped = grader
        self.name = str(grader.name)
        self.needs_judge = bool(grader.needs_judge)
        # Not inline until a call has shown that grade() returns a Grade: driven inline,
        # an awaitable that suspends could not be resumed (the first item failed with
        # _Suspended). On the loop, either kind of grade() works.
        self.grades_inline = False

    async def grade(self, request: GradeRequest) -> Grade:
        """Call the wrapped ``grade``; await what it returns if it is awaitable."""
        value = self.wrapped.grade(request)
        if inspect.isawaitable(value):
            self.grades_inline = False  # it does await: from now on, on the loop
            value = await value
        elif not self.needs_judge:
            self.grades_inline = True  # a plain Grade: the next ones need no loop
        return value  # type: ignore[no-any-return]


class GraderRegistry:
    """Graders by task type and by policy id (a policy's grader wins)."""

    def __init__(self) -> None:
        self._by_task: dict[str, Grader] = {}
        self._by_policy: dict[str, Grader] = {}
        self._by_pair: dict[tuple[str, str], Grader] = {}
        self._frozen = False

    def copy(self, *, frozen: bool = False) -> GraderRegistry:
        """A registry with the same graders; ``frozen``: one that refuses :meth:`register`.

        A run plan keeps a frozen copy, so the caller's registry is never changed by the
        plan and the plan's never changes after it is built.
        """
        other = GraderRegistry()
        other._by_task = dict(self._by_task)
        other._by_policy = dict(self._by_policy)
        other._by_pair = dict(self._by_pair)
        other._frozen = frozen
        return other

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
        if self._frozen:
            raise InvalidState("this registry belongs to a built run plan: register before build")
        if task_type is None and policy_id is None:
            raise ConfigError("register a grader for task_type=, policy_id= or both")
        if not isinstance(grader, Grader):
            raise ConfigError(
                f"Expected a Grader (name, needs_judge, async grade(request)) but got "
                f"{grader!r} ({type(grader).__name__})"
            )
        if not inspect.iscoroutinefunction(grader.grade):
            warnings.warn(
                f"grader {grader.name!r}: a plain grade() is deprecated; define "
                "`async def grade(self, request)` (it is wrapped for now)",
                DeprecationWarning,
                stacklevel=2,
            )
            grader = SyncGraderAdapter(grader)
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

    Every registered benchmark protocol (``grading._protocols``) adds its graders for the
    records of its policy id (LegalBench's metrics for every record of
    ``legalbench_official``; LEXam's ``###X###`` extraction for the MCQs of
    ``lexam_official``, whose open questions go to the judge in LEXam's reply format).
    """
    from pytest_legaleval.grading._graders import JudgeGrader, McqGrader
    from pytest_legaleval.grading._protocols import protocols

    registry = GraderRegistry()
    registry.register(McqGrader(), task_type="mcq")
    for protocol in protocols():
        for grader, task_type in protocol.graders():
            registry.register(grader, policy_id=protocol.id, task_type=task_type)
    judge = JudgeGrader()
    for task_type in ("reference_qa", "rubric_qa", "criteria"):
        registry.register(judge, task_type=task_type)
    return registry
