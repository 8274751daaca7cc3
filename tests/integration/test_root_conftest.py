"""The repository's root conftest.py: outputs are never collected, suites only to evaluate."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from .conftest import REPO, mcq_row, write_jsonl

RECORD_SUITE = "def test_record(record, evaluation):\n    evaluation.check()\n"


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """A project laid out like this repository, with its root conftest.py."""
    shutil.copyfile(REPO / "conftest.py", pytester.path / "conftest.py")
    for folder, name, text in (
        ("suites", "test_legal.py", RECORD_SUITE),
        ("tests", "test_unit.py", "def test_unit():\n    assert True\n"),
        # test-shaped files inside the outputs: collected, they would fail the run
        ("legaleval-runs/run_1", "test_output.py", "def test_output():\n    assert False\n"),
        (".legaleval/imports", "test_cached.py", "def test_cached():\n    assert False\n"),
    ):
        (pytester.path / folder).mkdir(parents=True)
        (pytester.path / folder / name).write_text(text)
    write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1")])
    write_jsonl(pytester.path / "r.jsonl", [{"record_id": "q1", "response": "B"}])
    return pytester.path


def test_pytest_dot_runs_the_projects_tests_only(pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest(".")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["tests/test_unit.py .*"])


def test_an_evaluation_collects_the_suites(pytester: pytest.Pytester, project: Path) -> None:
    args = [".", "--dataset", "d.jsonl", "--responses", "r.jsonl", "--run-dir", "out"]
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=2)  # the suite's record and the project's own test
    result.stdout.fnmatch_lines(["suites/test_legal.py .*"])


def test_a_named_suite_is_collected_without_a_dataset(
    pytester: pytest.Pytester, project: Path
) -> None:
    result = pytester.runpytest("suites/")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the record fixture needs a dataset*"])


def test_the_root_conftest_imports_nothing_heavy() -> None:
    """Every `pytest suites/ …` process loads it (tests/conftest.py says why that matters)."""
    tree = ast.parse((REPO / "conftest.py").read_text(encoding="utf-8"))
    imported = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported <= {"__future__", "pathlib", "pytest", "pytest_legaleval"}, imported
