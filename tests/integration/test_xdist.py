"""The same per-record outcomes with and without xdist; only the controller writes."""

from __future__ import annotations

from pathlib import Path

import pytest

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
