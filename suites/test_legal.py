"""An example of a suite of your own: one test per dataset record (× model).

Run it with ``pytest suites/ --dataset DATA --responses FILE`` (or ``--model PROVIDER/NAME``).
This one applies the default pass rule, as the built-in suite does
(``pytest_legaleval/pytest/default_suite.py``, collected when a run has no record test of its
own). Write yours the same way: ask for ``record`` and ``evaluation`` and assert what you need
(``evaluation.passed``, ``evaluation.score``, ``evaluation.response``).
"""

from pytest_legaleval import Record
from pytest_legaleval.pytest.fixtures import Evaluation


def test_record(record: Record, evaluation: Evaluation) -> None:
    evaluation.check()
