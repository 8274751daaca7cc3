"""The same per-record outcomes with and without xdist; only the controller writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_legaleval.run.verify import check_run_directory

from .conftest import DATA, EXAMPLES, copy_in, read_jsonl, run_dirs


def _outcomes(run: Path) -> dict[tuple[str, str], tuple[str, str]]:
    return {
        (p["record_id"], p["model"]): (p["outcome"], p["reason"])
        for p in read_jsonl(run / "predictions.jsonl")
    }


@pytest.mark.slow
def test_n2_equals_n0(pytester: pytest.Pytester, suite: Path) -> None:
    data, responses, bad = copy_in(
        pytester,
        EXAMPLES / "legal_mcq.jsonl",
        EXAMPLES / "legal_mcq.responses.jsonl",
        DATA / "malformed" / "mcq_single_choice.jsonl",
    )
    args = ["--dataset", str(data), "--dataset", str(bad), "--responses", str(responses)]
    serial = pytester.runpytest_subprocess(*args, "-p", "no:xdist", "--run-dir", "serial")
    parallel = pytester.runpytest_subprocess(*args, "-n", "2", "--run-dir", "parallel")
    assert serial.parseoutcomes() == {k: v for k, v in parallel.parseoutcomes().items()}
    (run0,) = run_dirs(pytester.path / "serial")
    (run2,) = run_dirs(pytester.path / "parallel")
    assert _outcomes(run0) == _outcomes(run2)
    assert len(_outcomes(run0)) == len(read_jsonl(data)) + 1  # plus line 1 of the sample
    assert (run0 / "record_validation.jsonl").read_text() == (
        run2 / "record_validation.jsonl"
    ).read_text()


_SKIP_AND_BREAK = """
import pytest

SKIPPED = "lexam:mcq:21136bd4-7068-4988-ab11-6a011635a08d"
BROKEN = "lexam:mcq:43874994-f53c-493a-a22a-61691e7a3a55"


def pytest_collection_modifyitems(items):
    for item in items:
        if SKIPPED in item.nodeid:
            item.add_marker(pytest.mark.skip(reason="not this one today"))


@pytest.fixture(autouse=True)
def _breaks_one(request):
    if BROKEN in request.node.nodeid:
        raise RuntimeError("the fixture broke")
"""

_CRASH_ONCE = """
import os
from pathlib import Path

VICTIM = "lexam:mcq:43874994-f53c-493a-a22a-61691e7a3a55"


def pytest_runtest_call(item):
    flag = Path(__file__).with_name("crashed")
    if VICTIM in item.nodeid and not flag.exists():
        flag.write_text("once")
        os._exit(3)  # the worker dies in the middle of the item
"""


def _lines_by_record(run: Path) -> dict[str, dict]:
    return {p["record_id"]: p for p in read_jsonl(run / "predictions.jsonl")}


def _every_item_counted(run: Path, n_items: int) -> dict:
    manifest = json.loads((run / "run_manifest.json").read_text())
    assert manifest["selection"]["items"] == n_items
    assert manifest["denominators"]["total_records"] == n_items
    assert len(read_jsonl(run / "predictions.jsonl")) == n_items
    assert check_run_directory(run) == []
    return manifest


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["n0", "n2"])
def test_items_that_end_without_a_result_still_get_their_line(
    pytester: pytest.Pytester, suite: Path, workers: list[str]
) -> None:
    """A skipped item and one whose fixture errored are in the artifacts, not left out."""
    data, responses = copy_in(
        pytester, EXAMPLES / "legal_mcq.jsonl", EXAMPLES / "legal_mcq.responses.jsonl"
    )
    pytester.makeconftest(_SKIP_AND_BREAK)
    result = pytester.runpytest_subprocess(
        "--dataset", str(data), "--responses", str(responses), "--run-dir", "runs", *workers
    )
    assert result.parseoutcomes()["skipped"] == 1 and result.parseoutcomes()["errors"] == 1
    (run,) = run_dirs(pytester.path / "runs")
    manifest = _every_item_counted(run, len(read_jsonl(data)))
    assert manifest["status"] == "completed_with_failures"
    assert manifest["denominators"]["skipped_records"] == 1
    lines = _lines_by_record(run)
    skipped = lines["lexam:mcq:21136bd4-7068-4988-ab11-6a011635a08d"]
    assert (skipped["outcome"], skipped["reason"], skipped["test_outcome"]) == (
        "skipped",
        "skipped",
        "skipped",
    )
    assert skipped["explanation"] == "pytest skipped the item: not this one today"
    assert skipped["item_id"].startswith("test_suite.py::test_record[")
    broken = lines["lexam:mcq:43874994-f53c-493a-a22a-61691e7a3a55"]
    assert (broken["outcome"], broken["reason"]) == ("error", "evaluation_error")
    assert "RuntimeError: the fixture broke" in broken["explanation"]
    (failure,) = read_jsonl(run / "failures.jsonl")
    assert (failure["failure_type"], failure["stage"]) == ("evaluation_error", "run")


def test_the_item_of_a_crashed_worker_is_an_evaluation_error(
    pytester: pytest.Pytester, suite: Path
) -> None:
    """xdist replaces the worker and runs the rest; the lost item is counted, named, failed."""
    data, responses = copy_in(
        pytester, EXAMPLES / "legal_mcq.jsonl", EXAMPLES / "legal_mcq.responses.jsonl"
    )
    pytester.makeconftest(_CRASH_ONCE)
    result = pytester.runpytest_subprocess(
        "--dataset", str(data), "--responses", str(responses), "--run-dir", "runs", "-n", "2"
    )
    result.stdout.fnmatch_lines(["*crashed while running*"])
    (run,) = run_dirs(pytester.path / "runs")
    manifest = _every_item_counted(run, len(read_jsonl(data)))
    assert manifest["status"] == "completed_with_failures"
    lost = _lines_by_record(run)["lexam:mcq:43874994-f53c-493a-a22a-61691e7a3a55"]
    assert (lost["outcome"], lost["reason"], lost["test_outcome"]) == (
        "error",
        "evaluation_error",
        "failed",
    )
    assert "crashed while running" in lost["explanation"]
    reasons = [p["reason"] for p in read_jsonl(run / "predictions.jsonl")]
    assert reasons.count("evaluation_error") == 1  # only the lost item; its re-run is not


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "ERROR: OPENAI_API_KEY is not set: export it for 'openai/gpt-x'*"),
        (["--model", "foo/x"], "ERROR: Unknown model provider 'foo'*"),
        (["--cache", "notdb.sqlite"], "ERROR: --cache notdb.sqlite: not a usable SQLite database*"),
    ],
    ids=["no-key", "provider", "cache"],
)
def test_a_live_configuration_error_is_a_usage_error_under_xdist(
    pytester: pytest.Pytester,
    suite: Path,
    monkeypatch: pytest.MonkeyPatch,
    extra: list[str],
    message: str,
) -> None:
    """Checked by the controller: a worker that met it could only end in an INTERNALERROR."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    (data,) = copy_in(pytester, EXAMPLES / "legal_mcq.jsonl")
    (pytester.path / "notdb.sqlite").write_text("a text file, not a database\n")
    if extra:  # an endpoint of our own: no key needed, the other check speaks
        extra = [*extra, "--base-url", "http://127.0.0.1:9/v1"]
    result = pytester.runpytest_subprocess(
        "--dataset", str(data), "--model", "openai/gpt-x", *extra, "--run-dir", "runs", "-n", "2"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert not (pytester.path / "runs").exists()
    assert (pytester.path / "notdb.sqlite").read_text() == "a text file, not a database\n"
