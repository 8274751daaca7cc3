"""pytest keeps every report until the session ends: no result is left on them.

The recorder reads an item's result from its report (or, in a single process, takes it
directly) and the report keeps nothing of it, so what pytest holds per item is what it
holds for any test. The summaries print what pytest prints.
"""

from __future__ import annotations

import json
import re
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
    carrying = sum(
        any(k.startswith("legaleval") for k in getattr(r, "__dict__", {})) for r in reports
    )
    marked = sum(bool(getattr(r, "legaleval_item", False)) for r in reports)
    sys.stdout.write(
        f"STATS passed={len(stats.get('passed', []))} carrying={carrying - marked} "
        f"failed={len(stats.get('failed', []))} marked={marked}\\n"
    )
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_stored_reports_carry_no_result_once_read(
    pytester: pytest.Pytester, suite: Path, workers: list[str]
) -> None:
    pytester.makeconftest(PROBE)
    data, responses = copy_in(
        pytester, EXAMPLES / "legal_mcq.jsonl", EXAMPLES / "legal_mcq.responses.jsonl"
    )
    result = run_eval(pytester, data, responses, *workers)
    result.assert_outcomes(passed=13, failed=7)  # counts are still right
    result.stdout.fnmatch_lines(["STATS passed=13 carrying=0 failed=7 marked=20"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_summaries_of_failed_records_print_what_pytest_prints(
    pytester: pytest.Pytester, suite: Path, workers: list[str]
) -> None:
    """Short summary, FAILURES section, --durations and the progress."""
    pytester.makeconftest(PROBE)
    data, responses = copy_in(
        pytester, EXAMPLES / "legal_mcq.jsonl", EXAMPLES / "legal_mcq.responses.jsonl"
    )
    result = run_eval(
        pytester, data, responses, "--tb=short", "-rf", "--durations=0", "-vv", *workers
    )
    result.assert_outcomes(passed=13, failed=7)
    out = result.stdout.str()
    assert "carrying=0" in out
    predictions = [
        json.loads(line)
        for run in (pytester.path / "runs").iterdir()
        for line in (run / "predictions.jsonl").read_text().splitlines()
    ]
    failed = [p for p in predictions if p["test_outcome"] == "failed"]
    assert len(failed) == 7
    for prediction in failed:
        param = prediction["item_id"].split("[", 1)[1]
        # The FAILURES section: a header per failure, then its reason (no traceback).
        assert re.search(rf"_+ test_record\[{re.escape(param)} _+", out), param
        # The short summary: node id and reason, as pytest prints them.
        line = f"FAILED {prediction['item_id']} - {prediction['reason']}"
        assert line in out, line
        # --durations lists every call, the failed ones included.
        assert re.search(rf"\d+\.\d+s call +{re.escape(prediction['item_id'])}", out)
    assert "[100%]" in out


def test_passed_reports_are_kept_when_a_summary_shows_them(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.makeconftest(PROBE)
    data, responses = copy_in(
        pytester, EXAMPLES / "legal_mcq.jsonl", EXAMPLES / "legal_mcq.responses.jsonl"
    )
    result = run_eval(pytester, data, responses, "-rA")
    result.stdout.fnmatch_lines(["PASSED test_suite.py::test_record?lexam/lexam:mcq:*"])
    result.stdout.fnmatch_lines(["STATS passed=13 carrying=0 *"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_subtests_still_fail_their_test_next_to_records(
    pytester: pytest.Pytester, suite: Path, workers: list[str]
) -> None:
    """pytest's subtests still fail their test beside record items."""
    pytester.makepyfile(
        test_other="""
        def test_with_a_failed_subtest(subtests):
            for i in range(3):
                with subtests.test("odd", i=i):
                    assert i % 2 == 0

        def test_with_passing_subtests(subtests):
            with subtests.test("fine"):
                assert True
        """
    )
    pytester.makeconftest(PROBE)
    data, responses = copy_in(
        pytester, EXAMPLES / "legal_mcq.jsonl", EXAMPLES / "legal_mcq.responses.jsonl"
    )
    result = run_eval(pytester, data, responses, *workers)
    result.stdout.fnmatch_lines(["*test_with_a_failed_subtest*contains 1 failed subtest*"])
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] == 13 + 1  # the records' and test_with_passing_subtests
    # The records', the failed subtest's and test_with_a_failed_subtest's.
    assert outcomes["failed"] == 7 + 1 + 1


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_other_plugins_fields_keep_their_report(
    pytester: pytest.Pytester, suite: Path, workers: list[str]
) -> None:
    """hypothesis' statistics ride on a passed teardown report: its summary still shows."""
    pytester.makepyfile(
        test_prop="""
        from hypothesis import given, strategies as st

        @given(st.integers(0, 5))
        def test_small(x):
            assert x < 10
        """
    )
    pytester.makeconftest(PROBE)
    data, responses = copy_in(
        pytester, EXAMPLES / "legal_mcq.jsonl", EXAMPLES / "legal_mcq.responses.jsonl"
    )
    result = run_eval(pytester, data, responses, "--hypothesis-show-statistics", *workers)
    result.assert_outcomes(passed=14, failed=7)
    result.stdout.fnmatch_lines(
        [
            "*= Hypothesis Statistics =*",
            "*test_prop.py::test_small:",
            "*passing*failing*invalid test cases*",
        ]
    )
    result.stdout.fnmatch_lines(["STATS passed=14 carrying=0 failed=7 *"])
