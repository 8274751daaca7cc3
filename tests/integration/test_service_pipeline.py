"""``run_evaluation`` (the service's driver) and a real pytest session write the same run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.pipeline.driver import run_evaluation
from pytest_legaleval.pipeline.settings import resolve_settings
from pytest_legaleval.run.verify import check_run_directory

from .conftest import EXAMPLES, read_jsonl, run_dirs, write_jsonl

# What differs by construction between two runs of the same inputs: ids, clocks, the
# item id (pytest's node id versus the plain item id) and pytest's own outcome name.
VOLATILE = {"run_id", "item_id", "test_outcome", "computed_at", "first_attempt_at",
            "last_attempt_at", "created_at", "started_at", "completed_at"}  # fmt: skip


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _inputs(tmp: Path) -> tuple[Path, Path]:
    """The MCQ example, one record broken and one response missing."""
    rows = read_jsonl(EXAMPLES / "legal_mcq.jsonl")
    rows[3]["choices"] = "not a list"  # an invalid record
    data = write_jsonl(tmp / "mcq.jsonl", rows)
    answers = read_jsonl(EXAMPLES / "legal_mcq.responses.jsonl")
    responses = write_jsonl(tmp / "answers.jsonl", answers[:-1])  # the last one is missing
    return data, responses


def test_run_evaluation_writes_what_a_pytest_session_writes(
    pytester: pytest.Pytester, suite: Path, tmp_path: Path
) -> None:
    data, responses = _inputs(pytester.path)
    result = pytester.runpytest(
        "--dataset", str(data), "--responses", str(responses), "--run-dir", "runs"
    )
    result.assert_outcomes(passed=12, failed=6, errors=2)  # a missing response: an error
    (session_run,) = run_dirs(pytester.path / "runs")

    settings = resolve_settings(
        {"dataset": [str(data)], "responses": str(responses), "run_dir": str(tmp_path / "runs")}
    )
    states: list[str] = []
    outcome = run_evaluation(settings, "run_direct", on_state=lambda s, _: states.append(s))
    assert (
        outcome.status
        == "completed_with_failures"
        == json.loads((session_run / "run_manifest.json").read_text())["status"]
    )
    assert states == ["queued", "validating", "running", "finalizing", "completed_with_failures"]
    direct_run = tmp_path / "runs" / "run_direct"
    assert check_run_directory(direct_run) == []

    for name in ("predictions.jsonl", "failures.jsonl", "record_validation.jsonl"):
        ours, theirs = read_jsonl(direct_run / name), read_jsonl(session_run / name)
        assert len(ours) == len(theirs) > 0, name
        assert [_stable(r) for r in ours] == [_stable(r) for r in theirs], name
    # The item ids differ only by pytest's node-id wrapping.
    node_ids = [row["item_id"] for row in read_jsonl(session_run / "predictions.jsonl")]
    item_ids = [row["item_id"] for row in read_jsonl(direct_run / "predictions.jsonl")]
    assert [n.split("[", 1)[1].rstrip("]") for n in node_ids] == item_ids
    # pytest's outcome names are what the default suite's check() gives.
    session_outcomes = [r["test_outcome"] for r in read_jsonl(session_run / "predictions.jsonl")]
    assert session_outcomes == [
        r["test_outcome"] for r in read_jsonl(direct_run / "predictions.jsonl")
    ]
    for name in ("metrics_summary.json", "metrics_by_slice.json"):
        ours_doc = json.loads((direct_run / name).read_text())
        theirs_doc = json.loads((session_run / name).read_text())
        assert _stable(ours_doc) == _stable(theirs_doc), name
    manifest = json.loads((direct_run / "run_manifest.json").read_text())
    assert manifest["denominators"] == dict(outcome.denominators)
    assert manifest["denominators"]["invalid_records"] == 1
