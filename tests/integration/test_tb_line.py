"""``--tb=line``: one line per failed item, its node id and its reason; errors show their reason.

pytest's line style prints a failed report and then its crash line. A record's reason was a
plain string, so each reason came twice, the second time cut at 50 characters, and the
record was never named.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .conftest import mcq_row, run_dirs, write_jsonl
from .test_report_memory import PROBE


def _run(pytester: pytest.Pytester, *extra: str) -> tuple[pytest.RunResult, list[dict]]:
    rows = [mcq_row("right"), mcq_row("wrong"), mcq_row("mute"), mcq_row("absent"),
            mcq_row("bad", choices=[{"id": "A", "text": "only"}], correct="A")]  # fmt: skip
    data = write_jsonl(pytester.path / "d.jsonl", rows)
    answers = {
        "right": "Answer: B",
        "wrong": "After a long deliberation over every option the answer is C. Answer: C",
        "mute": "I cannot tell\nwhich option\nis right.",
    }
    responses = write_jsonl(
        pytester.path / "r.jsonl", [{"record_id": k, "response": v} for k, v in answers.items()]
    )
    pytester.makeconftest(PROBE)  # counts the slimmed stand-ins of failed reports
    args = ["--dataset", str(data), "--responses", str(responses), "--run-dir", "runs"]
    result = pytester.runpytest_subprocess(*args, "--tb=line", *extra)
    result.assert_outcomes(passed=1, failed=2, errors=2)
    (run,) = run_dirs(pytester.path / "runs")
    lines = (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    return result, [json.loads(line) for line in lines]


def _graded_wrong(prediction: dict) -> bool:
    return prediction["outcome"] == "failed" and prediction["failure_type"] is None


_WORKER_LINE = re.compile(r"\[gw\d+\] \S+ -- Python ")
"""pytest-xdist's line naming the worker, which pytest prints before any failure under -n."""


def _section(out: str, title: str) -> list[str]:
    match = re.search(rf"^=+ {title} =+$\n(.*?)^=+ ", out, re.S | re.M)
    assert match is not None, out
    return [line for line in match.group(1).splitlines() if not _WORKER_LINE.match(line)]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_tb_line_prints_one_line_per_failed_item(
    pytester: pytest.Pytester, suite: Path, workers: list[str]
) -> None:
    result, predictions = _run(pytester, *workers)
    out = result.stdout.str()
    failures = _section(out, "FAILURES")
    wrong = {p["item_id"]: p for p in predictions if _graded_wrong(p)}
    assert len(failures) == len(wrong) == 2, failures
    for line in failures:
        nodeid, _, reason = line.partition(" - ")
        prediction = wrong[nodeid]  # the node id, as pytest names the item
        # the whole reason, once, on one line
        assert reason == " ".join(f"{prediction['reason']}: {prediction['explanation']}".split())
    # Errors keep pytest's header (it names the item) and give their reason on one line.
    errors = _section(out, "ERRORS")
    assert len(errors) == 4, errors
    # Each error is its header and one reason line; under xdist in report order.
    pairs = {
        re.fullmatch(r"_+ ERROR at setup of test_record\[(t/\w+)\] _+", head).group(1): reason
        for head, reason in zip(errors[::2], errors[1::2], strict=True)
    }
    assert pairs.keys() == {"t/absent", "t/bad"}
    assert pairs["t/absent"].startswith("missing_response: no response for record 'absent'")
    assert pairs["t/bad"] == (
        "invalid_record: choices must have at least 2 items, got 1 (d.jsonl line 5)"
    )


def test_other_tb_styles_keep_the_whole_reason(pytester: pytest.Pytester, suite: Path) -> None:
    result, predictions = _run(pytester, "--tb=short")
    out = result.stdout.str()
    failures = _section(out, "FAILURES")
    for prediction in filter(_graded_wrong, predictions):
        param = prediction["item_id"].split("[", 1)[1]
        at = failures.index(next(f for f in failures if f"test_record[{param} _" in f))
        assert failures[at + 1] == f"{prediction['reason']}: {prediction['explanation']}"
    assert not any(line.startswith("test_suite.py::") for line in failures)  # no line form
