"""pytest-legaleval: LLM evaluations where every dataset record is a pytest test.

The package face: the values a user's code handles (:class:`Record` and its parts,
:class:`EvalResult`), the ``evaluation`` fixture's type (:class:`Evaluation`), the grader
interface (:class:`Grader`, :class:`GradeRequest`, :class:`Grade`), the pytest-free run
(:func:`run_evaluation`, :class:`RunPlan`) and the exception tree. Everything but the
values and the errors loads on first use, so ``import pytest_legaleval`` (which pytest
does for every session through the plugin entry point) stays cheap and never loads pytest,
the engine or the grading code; only :class:`Evaluation`, a pytest fixture's value, loads
pytest when it is first named.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pytest_legaleval._version import __version__
from pytest_legaleval.errors import (
    ConfigError,
    DatasetRejected,
    LegalEvalError,
    LegalEvalWarning,
    NonFiniteNumber,
    NonFiniteWarning,
    ResponsesError,
    UnknownAttribute,
)
from pytest_legaleval.records import (
    Attachment,
    Choice,
    Criterion,
    EvalResult,
    Message,
    Record,
    SourceRef,
)

if TYPE_CHECKING:  # pragma: no cover - names for type checkers; loaded lazily at run time
    from pytest_legaleval.grading._base import Grade, Grader, GradeRequest
    from pytest_legaleval.pipeline.driver import run_evaluation
    from pytest_legaleval.pipeline.plan import RunPlan
    from pytest_legaleval.pytest.fixtures import Evaluation

_LAZY = {
    "Evaluation": "pytest_legaleval.pytest.fixtures",
    "Grade": "pytest_legaleval.grading._base",
    "GradeRequest": "pytest_legaleval.grading._base",
    "Grader": "pytest_legaleval.grading._base",
    "RunPlan": "pytest_legaleval.pipeline.plan",
    "run_evaluation": "pytest_legaleval.pipeline.driver",
}

__all__ = [
    "Attachment",
    "Choice",
    "ConfigError",
    "Criterion",
    "DatasetRejected",
    "EvalResult",
    "Evaluation",
    "Grade",
    "GradeRequest",
    "Grader",
    "LegalEvalError",
    "LegalEvalWarning",
    "Message",
    "NonFiniteNumber",
    "NonFiniteWarning",
    "Record",
    "ResponsesError",
    "RunPlan",
    "SourceRef",
    "__version__",
    "run_evaluation",
]


# Not util.lazy's: importing the package loads only the values and the errors.
def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise UnknownAttribute(f"module 'pytest_legaleval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
