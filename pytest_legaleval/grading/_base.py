"""The grader interface: one ``Grader`` protocol, what it is asked and what it answers.

A grader gets a :class:`GradeRequest` (the record, the answer, the policy, the judge
panel when one is configured) and its coroutine ``grade`` returns a :class:`Grade`. Graders
run on the item runner's event loop, so judging one item overlaps generating the next; a
grader whose ``grade`` never awaits anything may say so (``grades_inline = True``) and is
then driven without a loop. The pipeline turns a grade into the item's
:class:`~pytest_legaleval.records.EvalResult` once; nothing changes it afterwards.
"""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pytest_legaleval.errors import LegalEvalError
from pytest_legaleval.records import JudgeSummary, Outcome, Record

if TYPE_CHECKING:
    from pytest_legaleval.grading._panel import JudgePanel
    from pytest_legaleval.grading._policies import Policy

__all__ = ["Grade", "GradeRequest", "Grader", "run_inline"]


@dataclass(frozen=True, slots=True)
class Grade:
    """A grader's verdict on one answer."""

    outcome: Outcome
    """``passed``, ``failed`` (the answer's fault), ``skipped`` or ``error`` (no verdict)."""
    passed: bool | None
    """Whether the pass rule held; ``None`` without a verdict."""
    score: float | None
    """A score in [0, 1]; ``None`` without one."""
    reason: str
    """A short machine-readable reason (``correct``, ``wrong_answer``, ``judge_error`` …)."""
    explanation: str
    """The reasons, for people."""
    grader: str
    """The grader's name as results record it (``mcq``, ``judge:rubric`` …)."""
    details: Mapping[str, Any] = field(default_factory=dict)
    """JSON-safe details kept on the prediction line."""
    judge: JudgeSummary | None = None
    """Judging provenance and verdicts, for graders that asked a judge."""
    exchanges: tuple[Mapping[str, Any], ...] = ()
    """What the judges were sent and answered, for the item's transcript: per judge
    question ``model``, ``criterion_id`` (or ``None``), ``messages`` and ``reply``."""

    @classmethod
    def passing(cls, grader: str, explanation: str = "", **details: Any) -> Grade:
        """A pass with score 1."""
        return cls("passed", True, 1.0, "correct", explanation, grader, details)

    @classmethod
    def failing(cls, grader: str, reason: str, explanation: str, **details: Any) -> Grade:
        """A failure (the answer's fault) with score 0."""
        return cls("failed", False, 0.0, reason, explanation, grader, details)


@dataclass(frozen=True, slots=True)
class GradeRequest:
    """Everything a grader may use to grade one answer."""

    record: Record
    """The record the model answered."""
    model: str
    """Who answered."""
    answer: str
    """The answer text, exactly as the model gave it."""
    policy: Policy
    """The record's policy (prompts, judge templates, pass threshold)."""
    judges: JudgePanel | None = None
    """The session's judge panel, or ``None`` when no ``--judge-model`` is configured."""
    epoch: int = 0
    """Which sample of the item the answer is (``--epochs K``; 0-based)."""


@runtime_checkable
class Grader(Protocol):
    """Grades answers of one task type or policy (register it with a ``GraderRegistry``).

    ``needs_judge`` says whether the grader asks a judge: without a judge panel, the items
    it would grade are skipped with reason ``needs_judge`` before any model is called.
    ``grade`` is a coroutine; a grader may also set ``grades_inline = True`` when its
    ``grade`` never suspends (it awaits nothing): the runner then drives it where the
    answer arrives, without scheduling a task.
    """

    name: str
    """Recorded as the result's ``grader``."""
    needs_judge: bool
    """Whether :meth:`grade` needs ``request.judges``."""

    async def grade(self, request: GradeRequest) -> Grade:
        """Grade one answer."""
        ...


class _Suspended(LegalEvalError, RuntimeError):
    """A coroutine driven inline awaited something."""


def run_inline(coroutine: Coroutine[object, object, Grade]) -> Grade:
    """The value of a coroutine that never suspends, driven without an event loop.

    For graders with ``grades_inline = True``: one ``send`` runs them to the end.

    Raises:
        RuntimeError: the coroutine awaited something (it is closed first).

    """
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()
    raise _Suspended("a grader that says grades_inline = True awaited something")
