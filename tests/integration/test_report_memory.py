"""The controller does not keep results on pytest's stored reports (memory stays flat)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import EXAMPLES, copy_in, run_eval

PROBE = """
import sys

def pytest_unconfigure(config):
    if hasattr(config, "workerinput"):
        return
    stats = config.pluginmanager.get_plugin("terminalreporter").stats
    reports = [r for bucket in stats.values() for r in bucket if hasattr(r, "when")]
    carrying = sum("legaleval" in r.__dict__ for r in reports)
    distinct_passed = len({id(r) for r in stats.get("passed", [])})
    sys.stdout.write(
        f"STATS passed={len(stats.get('passed', []))} distinct={distinct_passed} "
        f"blank={len(stats.get('', []))} carrying={carrying}\\n"
    )
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_stored_reports_are_slimmed_once_read(
    pytester: pytest.Pytester, suite: Path, workers: list[str]
) -> None:
    pytester.makeconftest(PROBE)
    data, responses = copy_in(
        pytester, EXAMPLES / "legal_mcq.jsonl", EXAMPLES / "legal_mcq.responses.jsonl"
    )
    result = run_eval(pytester, data, responses, *workers)
    result.assert_outcomes(passed=13, failed=7)  # counts are still right
    result.stdout.fnmatch_lines(["STATS passed=13 distinct=1 blank=0 carrying=0"])


def test_passed_reports_are_kept_when_a_summary_shows_them(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.makeconftest(PROBE)
    data, responses = copy_in(
        pytester, EXAMPLES / "legal_mcq.jsonl", EXAMPLES / "legal_mcq.responses.jsonl"
    )
    result = run_eval(pytester, data, responses, "-rA")
    result.stdout.fnmatch_lines(["PASSED test_suite.py::test_record?lexam/lexam:mcq:*"])
    result.stdout.fnmatch_lines(["STATS passed=13 distinct=13 blank=0 carrying=0"])
