"""The ``record`` and ``evaluation`` fixtures, and what a suite's test sees of a result.

A suite is a plain test module that asks for ``record`` (the dataset record of the item;
an invalid record errors here with its ``record_errors``) and ``evaluation`` (the graded
answer of the item's model; an item without a verdict errors here with its reason).
``Evaluation.check()`` applies the default pass rule. How each result becomes a pytest
outcome is ``pytest/outcomes.py``'s.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_legaleval.formats import RejectedRecord
from pytest_legaleval.pipeline.plan import ItemSpec
from pytest_legaleval.pytest.outcomes import InvalidItem, NoVerdict, RecordFailed, has_no_verdict
from pytest_legaleval.pytest.state import RUNNER_KEY
from pytest_legaleval.records import EvalResult, Record
from pytest_legaleval.run.reasons import invalid_text, reason_text

__all__ = [
    "INVALID_KEY",
    "RESULT_KEY",
    "Evaluation",
    "NoVerdict",
    "RecordFailed",
    "evaluation",
    "record",
]

RESULT_KEY = pytest.StashKey[EvalResult]()
"""An item's result, handed to the recorder by the plugin's ``makereport``."""
INVALID_KEY = pytest.StashKey[ItemSpec]()
"""The item of an invalid record."""


class Evaluation:
    """The ``evaluation`` fixture's value: the graded answer of one item.

    Use ``evaluation.check()`` for the default pass rule, or assert on ``passed``,
    ``score``, ``response`` and ``explanation`` in your own suites.
    """

    def __init__(self, record: Record, result: EvalResult) -> None:
        self.record = record
        self.result = result

    @property
    def model(self) -> str:
        """The model (or response-file label) that answered."""
        return self.result.model

    @property
    def passed(self) -> bool:
        """Whether the grader's pass rule holds."""
        return bool(self.result.passed)

    @property
    def score(self) -> float | None:
        """The grader's score in [0, 1], or ``None`` when ungraded."""
        return self.result.score

    @property
    def response(self) -> str | None:
        """The model's answer text."""
        return self.result.response

    @property
    def reason(self) -> str:
        """A short machine-readable reason (``wrong_answer`` …)."""
        return self.result.reason

    @property
    def explanation(self) -> str:
        """The grader's explanation, for people."""
        return self.result.explanation

    def check(self) -> None:
        """Apply the default pass rule: skip ungraded items, fail with the grader's reasons.

        Items without a verdict never get here: the ``evaluation`` fixture raised
        :class:`NoVerdict` for them (an ERROR).
        """
        if self.result.outcome == "skipped":
            pytest.skip(f"{self.reason}: {self.explanation}")
        if not self.passed:
            raise RecordFailed(reason_text(_reason_fields(self.result), _titles(self.record)))

    def __repr__(self) -> str:
        return (
            f"Evaluation(record={self.record.id!r}, model={self.model!r}, "
            f"passed={self.passed}, score={self.score}, reason={self.reason!r})"
        )


def _reason_fields(result: EvalResult) -> dict[str, Any]:
    """The fields of ``result`` its reason is told from (``run.reasons``)."""
    return {
        "reason": result.reason,
        "explanation": result.explanation,
        "score": result.score,
        "details": result.details,
        "judge": None if result.judge is None else result.judge.to_dict(),
    }


def _titles(record: Record) -> dict[str, str]:
    """The record's rubric titles by criterion id (a replayed verdict names only the id)."""
    return {criterion.id: criterion.title for criterion in record.rubric}


def _spec(request: pytest.FixtureRequest) -> ItemSpec:
    spec = getattr(request, "param", None)
    if not isinstance(spec, ItemSpec):
        pytest.fail(
            "the record fixture needs a dataset: pass --dataset PATH with --responses "
            "FILE or --model PROVIDER/NAME",
            pytrace=False,
        )
    return spec


@pytest.fixture
def record(request: pytest.FixtureRequest) -> Record:
    """The dataset record of this test item.

    An invalid record errors here with its ``record_errors``, and so does a record that
    cannot be asked on this machine (an attachment refused or missing: the item runner's
    own rule, so nothing is sent for it either).
    """
    spec = _spec(request)
    entry = spec.entry
    if isinstance(entry, RejectedRecord):
        request.node.stash[INVALID_KEY] = spec
        raise InvalidItem(invalid_text([error.to_dict() for error in entry.errors]))
    if entry.attachments:
        early = request.config.stash[RUNNER_KEY].before_any_call(spec)
        if early is not None and early.reason == "invalid_record":
            # Recorded like any other result (failures.jsonl: invalid_record), not dropped.
            request.node.stash[RESULT_KEY] = early
            raise InvalidItem(invalid_text(list(early.details.get("record_errors") or ())))
    return entry


@pytest.fixture
def evaluation(request: pytest.FixtureRequest, record: Record) -> Evaluation:
    """The graded answer of this item's model to ``record``.

    An item without a verdict (``judge_error``, ``generation_error:<code>``, ``timeout``,
    ``cancelled``, ``missing_response``, ``latency_exceeded``) raises :class:`NoVerdict`
    here: pytest reports it as an ERROR, and the test, having nothing to assert on, does
    not run.
    """
    spec: ItemSpec = request.node.callspec.params["record"]
    result = request.config.stash[RUNNER_KEY].evaluate(spec)
    request.node.stash[RESULT_KEY] = result
    if has_no_verdict(result):
        raise NoVerdict(reason_text(_reason_fields(result), _titles(record)))
    return Evaluation(record, result)
