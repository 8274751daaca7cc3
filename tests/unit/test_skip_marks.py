"""Which items the engine leaves out of its prefetch: those pytest skips before fixtures."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_legaleval.pytest.scheduling import skipped_up_front

_MODULE = """
import pytest

pytestmark = pytest.mark.skipif(False, reason="module: runs")


def test_plain():
    pass


@pytest.mark.skip(reason="no")
def test_skip():
    pass


@pytest.mark.skipif(True, reason="no")
def test_skipif_true():
    pass


@pytest.mark.skipif(condition=1, reason="no")
def test_skipif_truthy_keyword():
    pass


@pytest.mark.skipif(reason="no condition: always")
def test_skipif_bare():
    pass


@pytest.mark.skipif("True", reason="a string: pytest evaluates it, not us")
def test_skipif_string():
    pass


@pytest.mark.skipif(False, reason="no")
def test_skipif_false():
    pass


@pytest.mark.skipif(True, reason="the class")
class TestSkippedClass:
    def test_a(self):
        pass

    def test_b(self):
        pass
"""


@pytest.fixture(autouse=True)
def _quiet_asyncio(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def testskipped_up_front(pytester: pytest.Pytester) -> None:
    items = pytester.getitems(_MODULE)
    parents: dict[Any, bool] = {}
    verdicts = {item.name: skipped_up_front(item, parents) for item in items}
    assert verdicts == {
        "test_plain": False,
        "test_skip": True,
        "test_skipif_true": True,
        "test_skipif_truthy_keyword": True,
        "test_skipif_bare": True,
        "test_skipif_string": False,
        "test_skipif_false": False,
        "test_a": True,
        "test_b": True,
    }
    # one verdict per parent: the module and the class
    assert sorted(type(node).__name__ for node in parents) == ["Class", "Module"]


def test_a_whole_skipped_module(pytester: pytest.Pytester) -> None:
    items = pytester.getitems(
        "import pytest\npytestmark = pytest.mark.skip\ndef test_x():\n    pass\n"
    )
    assert [skipped_up_front(item, {}) for item in items] == [True]
