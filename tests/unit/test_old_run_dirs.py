"""A run directory written by the previous version stays readable by every reader.

``tests/data/report/run_v0`` was written by the code before this round (prediction lines
without ``artifact_version``, ``policy_version`` or ``scoring``; counts before the item
vocabulary). ``--baseline``, ``compare``, ``merge``, ``report`` and ``--judgments`` read it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_legaleval.cli import main
from pytest_legaleval.grading._verdicts import read_verdicts
from pytest_legaleval.metrics._baseline import compare_runs, pair_fields
from pytest_legaleval.metrics._compare import comparison
from pytest_legaleval.metrics._runfiles import iter_jsonl, load_run
from pytest_legaleval.pytest.gating import load_baseline
from pytest_legaleval.run.merge import MergeError, load_shard, merge_runs

OLD_RUN = Path(__file__).resolve().parents[1] / "data" / "report" / "run_v0"


def test_an_old_run_is_a_baseline_and_compares_with_itself() -> None:
    baseline = load_baseline(str(OLD_RUN))
    current = [pair_fields(row) for row in iter_jsonl(OLD_RUN / "predictions.jsonl")]
    result = compare_runs(baseline.predictions, current)
    assert result.paired > 0 and result.regressions == 0 and result.improvements == 0
    data = comparison(load_run(OLD_RUN), load_run(OLD_RUN))
    assert data["metrics"]["pass_rate"]["delta"] == 0


def test_an_old_run_merges_reports_and_replays(tmp_path: Path) -> None:
    copy = tmp_path / "run_v0"
    shutil.copytree(OLD_RUN, copy)
    shard = load_shard(copy)  # merge reads it: an unsharded run is refused for what it is
    assert shard.run_id and shard.shard is None
    with pytest.raises(MergeError, match="more than one shard"):
        merge_runs([copy, OLD_RUN], tmp_path / "merged")
    assert main(["report", str(copy), "--out", str(tmp_path / "report.html")]) == 0
    assert (tmp_path / "report.html").stat().st_size > 0
    with open(OLD_RUN / "predictions.jsonl", "rb") as handle:
        verdicts = read_verdicts(handle)
    assert verdicts.verdicts and not verdicts.problems  # its judged lines replay
