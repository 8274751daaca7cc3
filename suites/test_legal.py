"""The default legaleval suite: one test per dataset record (× model).

Run it with ``pytest suites/ --dataset DATA --responses FILE`` (or ``--model PROVIDER/NAME``).
Write your own suites the same way: ask for ``record`` and ``evaluation`` and assert what
you need (``evaluation.passed``, ``evaluation.score``, ``evaluation.response``).
"""

from pytest_legaleval import Record
from pytest_legaleval.pytest.fixtures import Evaluation


def test_record(record: Record, evaluation: Evaluation) -> None:
    evaluation.check()
