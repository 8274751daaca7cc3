"""Async suites run under pytest-asyncio (the ``[async]`` extra), which no other project pays for.

pytest-asyncio was a core dependency: installed with the plugin, it loaded in every pytest
process of the environment and warned in every project that does not set its loop scope.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import mcq_row, write_jsonl

ASYNC_SUITE = """
import asyncio

async def test_record(record, evaluation):
    await asyncio.sleep(0)  # a real coroutine, run on pytest-asyncio's loop
    evaluation.check()
"""


def _data(pytester: pytest.Pytester) -> list[str]:
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1"), mcq_row("q2"), mcq_row("q3")])
    responses = write_jsonl(
        pytester.path / "r.jsonl",
        [{"record_id": "q1", "response": "Answer: B"}, {"record_id": "q2", "response": "C"}],
    )
    return ["--dataset", str(data), "--responses", str(responses), "--run-dir", "runs"]


@pytest.mark.parametrize("mode", ["strict", "auto"])
def test_an_async_record_test_runs_without_a_marker(pytester: pytest.Pytester, mode: str) -> None:
    """pytest-asyncio's default (strict) mode runs only marked tests: record tests are marked."""
    pytester.makeini(
        f"[pytest]\nasyncio_mode = {mode}\nasyncio_default_fixture_loop_scope = function\n"
    )
    pytester.makepyfile(test_async=ASYNC_SUITE)
    result = pytester.runpytest(*_data(pytester))
    # right, wrong (FAILED in the coroutine), missing (ERROR before it)
    result.assert_outcomes(passed=1, failed=1, errors=1)
    result.stdout.fnmatch_lines(["*wrong_answer: chose C*", "*missing_response*"])


def test_an_async_record_test_without_pytest_asyncio_names_the_extra(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_async=ASYNC_SUITE)
    result = pytester.runpytest(*_data(pytester), "-p", "no:asyncio")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)
    message = (
        "*test_async.py::test_record is an async def test: it needs pytest-asyncio; "
        "run: pip install 'pytest-legaleval[[]async]'*"
    )
    result.stdout.fnmatch_lines([message])


def test_an_unrelated_project_gets_no_warning_from_the_plugin(pytester: pytest.Pytester) -> None:
    """A project that never uses legaleval, in an environment where pytest-legaleval is
    installed without extras (here: pytest-asyncio not loaded): no warning at all."""
    pytester.makeini("[pytest]\n")  # no asyncio settings: the project knows nothing of it
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest("-p", "no:asyncio", "-W", "error")
    assert result.parseoutcomes() == {"passed": 1}  # no "warnings" count
    assert "warnings summary" not in result.stdout.str()
    result.stdout.fnmatch_lines(["plugins: *legaleval-*"])  # the plugin was loaded all the same


def test_pytest_asyncio_is_an_extra_of_the_installed_distribution() -> None:
    from importlib.metadata import requires

    requirements = requires("pytest-legaleval") or []
    asyncio = [r.replace("'", '"') for r in requirements if r.startswith("pytest-asyncio")]
    assert any(r.endswith('extra == "async"') for r in asyncio), asyncio
    assert all("extra ==" in r for r in asyncio), asyncio  # never without an extra


def test_async_suite_example_in_the_readme_is_this_suite() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert "async def test_record(record, evaluation):" in readme
    assert "pip install 'pytest-legaleval[async]'" in readme
