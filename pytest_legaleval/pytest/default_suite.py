"""The built-in record suite: one test per dataset record (× model), the default pass rule.

A run with ``--dataset`` that collects no record test of its own collects this module from
the installed package (``pytest_legaleval/pytest/collection.py``), so ``pytest --dataset
DATA --responses FILE`` works in any directory. Any collected test that asks for ``record``
(a suite of your own, such as the repository's ``suites/``) takes its place.

Its file name does not match pytest's ``test_*.py``: a ``pytest`` run over the installed
package never collects it by itself.
"""

from __future__ import annotations

from pytest_legaleval.pytest.fixtures import Evaluation
from pytest_legaleval.records import Record

__all__ = ["test_record"]


def test_record(record: Record, evaluation: Evaluation) -> None:
    """Pass a graded item, fail a wrong one with the grader's reasons, skip an ungraded one."""
    evaluation.check()
