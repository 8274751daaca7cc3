"""The plugin carries its default suite, and a run without a record item is a usage error.

``pytest --dataset DATA --responses FILE`` in a directory with no record test (no
``suites/``, or a path holding other tests) used to collect nothing, say ``status:
completed``, write an empty run directory, skip every ``--gate`` and exit 5.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_legaleval.pipeline.selection import in_shard
from pytest_legaleval.pipeline.settings import Shard

from .conftest import EXAMPLES, copy_in, mcq_row, run_dirs, write_jsonl

BUILTIN = "pytest_legaleval/pytest/default_suite.py::test_record"


def _examples(pytester: pytest.Pytester) -> list[str]:
    data, responses = copy_in(
        pytester, EXAMPLES / "legal_mcq.jsonl", EXAMPLES / "legal_mcq.responses.jsonl"
    )
    return ["--dataset", data.name, "--responses", responses.name, "--run-dir", "runs"]


def _status(root: Path) -> str:
    (run,) = run_dirs(root / "runs")
    return str(json.loads((run / "run_manifest.json").read_text())["status"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_an_empty_directory_runs_the_builtin_suite(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    args = _examples(pytester)
    run = pytester.runpytest_subprocess if workers else pytester.runpytest
    result = run(*args, "--junitxml", "out.xml", "-rf", *workers)
    result.assert_outcomes(passed=13, failed=7)
    result.stdout.fnmatch_lines([f"FAILED {BUILTIN}[[]lexam/lexam:mcq:*]*"])
    assert _status(pytester.path) == "completed"
    junit = (pytester.path / "out.xml").read_text()
    # Classed by dataset (and task), not by the built-in suite's module.
    classes = re.findall(r'classname="([^"]*)"', junit)
    assert len(classes) == 20 and "pytest_legaleval.pytest.default_suite" not in classes
    assert {c.partition(".")[0] for c in classes} == {"lexam", "legalbench"}


def test_a_path_without_a_record_test_gets_the_builtin_suite(pytester: pytest.Pytester) -> None:
    """The project's own tests run as well; -k selects among the built-in suite's items."""
    pytester.makepyfile(test_unit="def test_arithmetic():\n    assert 1 + 1 == 2\n")
    args = _examples(pytester)
    result = pytester.runpytest("test_unit.py", *args, "-k", "arithmetic or hearsay")
    result.assert_outcomes(passed=1 + 3, failed=3, deselected=14)  # 6 hearsay records
    result = pytester.runpytest("test_unit.py", *args, "--collect-only", "-q")
    result.stdout.fnmatch_lines(["test_unit.py::test_arithmetic", f"{BUILTIN}[[]lexam/*"])


def test_a_suite_of_your_own_replaces_the_builtin_one(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_mine="""
        def test_cites(record, evaluation):
            assert evaluation.response
        """
    )
    result = pytester.runpytest(*_examples(pytester), "--collect-only", "-q")
    assert "default_suite" not in result.stdout.str()
    result.stdout.fnmatch_lines(["test_mine.py::test_cites[[]lexam/*", "20 tests collected*"])


def test_a_broken_suite_is_not_replaced_by_the_builtin_one(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_broken="import not_a_module_anywhere\n")
    args = _examples(pytester)
    result = pytester.runpytest(*args, "--continue-on-collection-errors")
    assert "default_suite" not in result.stdout.str()
    result.assert_outcomes(errors=1)


def test_a_rejected_dataset_is_one_collection_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "d.jsonl").write_text('{"schema_version": "legal_eval_v1"}\n')
    write_jsonl(pytester.path / "r.jsonl", [{"record_id": "x", "response": "A"}])
    result = pytester.runpytest("--dataset", "d.jsonl", "--responses", "r.jsonl")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*dataset rejected (HTTP 400)*"])


def _empty_shard() -> str:
    return next(f"{k}/2" for k in (1, 2) if not in_shard("q1", Shard(k, 2)))


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["n0", "n2"])
@pytest.mark.parametrize(
    ("selection", "message"),
    [
        (["-k", "nothing_matches"], "*no record item to run: -k deselected *"),
        (["-m", "rubric_qa"], "*no record item to run: -m deselected *"),
        (["--shard", "EMPTY"], "*no record item to run: the selection (--shard) keeps no record*"),
    ],
    ids=["k", "m", "shard"],
)
def test_a_run_without_a_record_item_is_a_usage_error(
    pytester: pytest.Pytester, workers: list[str], selection: list[str], message: str
) -> None:
    pytester.makepyfile(test_unit="def test_arithmetic():\n    assert 1 + 1 == 2\n")
    write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1")])
    write_jsonl(pytester.path / "r.jsonl", [{"record_id": "q1", "response": "B"}])
    selection = [_empty_shard() if arg == "EMPTY" else arg for arg in selection]
    args = ["--dataset", "d.jsonl", "--responses", "r.jsonl", "--run-dir", "runs"]
    run = pytester.runpytest_subprocess if workers else pytester.runpytest
    result = run(*args, *selection, *workers)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([message])
    assert not run_dirs(pytester.path / "runs")  # never a completed, empty run directory


def test_collect_only_lists_an_empty_selection_without_an_error(pytester: pytest.Pytester) -> None:
    write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1")])
    write_jsonl(pytester.path / "r.jsonl", [{"record_id": "q1", "response": "B"}])
    args = ["--dataset", "d.jsonl", "--responses", "r.jsonl", "--collect-only", "-k", "nothing"]
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_the_builtin_suite_imports_in_importlib_mode(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*_examples(pytester), "--import-mode=importlib")
    result.assert_outcomes(passed=13, failed=7)
