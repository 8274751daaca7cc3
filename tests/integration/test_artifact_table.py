"""An artifact is one row: a toy artifact registered here is written, checked and served.

The toy (``pass_counts.jsonl``, one line per model with its passed items, derived from the
finished run's figures) is one function plus one
:func:`~pytest_legaleval.metrics.artifacts.register_artifact` call. A real session writes it
into the checksummed run directory; ``verify`` and the readers' run-directory check check it
(an edit after sealing is refused); the HTML report lists it with the run's other files; the
service lists it and its retention class decides when the sweep deletes it; ``merge``
combines the shards' copies by its row's rule (``recompute``, and ``concat`` for a second
toy).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.cli import main
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics.artifacts import (
    CHECKSUMS,
    Artifact,
    FinishedRun,
    artifact,
    register_artifact,
    unregister_artifact,
)
from pytest_legaleval.metrics.rundir_check import RunDirectoryError, verify_run_dir
from pytest_legaleval.report import write_report
from pytest_legaleval.run.directory import verify_checksums
from pytest_legaleval.run.verify import check_run_directory
from pytest_legaleval.service.retention import raw_artifacts, summary_artifacts
from pytest_legaleval.service.views import downloadable

from .conftest import mcq_row, read_jsonl, run_dirs, run_eval, write_jsonl


def _pass_counts(run: FinishedRun) -> Iterable[Mapping[str, Any]]:
    passed: dict[str, int] = {}
    for line in run.predictions():
        passed[line["model"]] = passed.get(line["model"], 0) + bool(line.get("passed"))
    return [{"run_id": run.run_id, "model": m, "passed": n} for m, n in sorted(passed.items())]


TOY = Artifact(
    "pass_counts.jsonl", "passed items per model (a test's)", None, "finalize", "optional",
    "summary", listed=True, merge="recompute", derive=_pass_counts,
)  # fmt: skip


def _line_count(run: FinishedRun) -> Iterable[Mapping[str, Any]]:
    return [{"run_id": run.run_id, "lines": sum(1 for _ in run.predictions())}]


SHARD_TOY = Artifact(
    "line_counts.jsonl", "prediction lines per shard (a test's)", None, "finalize",
    "optional", "raw", merge="concat", derive=_line_count,
)  # fmt: skip


@pytest.fixture
def toy() -> Iterator[Artifact]:
    register_artifact(TOY)
    try:
        yield TOY
    finally:
        unregister_artifact(TOY.name)
    assert artifact(TOY.name) is None


def test_a_registered_artifact_is_written_verified_listed_and_kept_by_its_class(
    pytester: pytest.Pytester, suite: Path, toy: Artifact
) -> None:
    rows = [mcq_row(f"q{n}", correct="B") for n in range(3)]
    data = write_jsonl(pytester.path / "mcq.jsonl", rows)
    responses = write_jsonl(
        pytester.path / "responses.jsonl",
        [{"record_id": f"q{n}", "response": "B" if n else "C"} for n in range(3)],
    )
    result = run_eval(pytester, data, responses)
    result.assert_outcomes(passed=2, failed=1)
    (run,) = run_dirs(pytester.path / "runs")
    summary = json.loads((run / "metrics_summary.json").read_text(encoding="utf-8"))
    (model,) = summary["models"]
    assert read_jsonl(run / "pass_counts.jsonl") == [
        {"run_id": summary["run_id"], "model": model, "passed": 2}
    ]
    # in the checksummed, read-only directory, and verified with the others
    sums = (run / "SHA256SUMS").read_text(encoding="utf-8")
    assert "  pass_counts.jsonl\n" in sums and verify_checksums(run) == []
    assert check_run_directory(run) == []
    # the service serves it, and keeps it as long as the summaries (its class)
    assert "pass_counts.jsonl" in downloadable()
    assert "pass_counts.jsonl" in summary_artifacts()
    assert "pass_counts.jsonl" not in raw_artifacts()
    # the report lists the run directory's files from the table: every one, the toy's too
    page = write_report(run, pytester.path / "report.html").read_text(encoding="utf-8")
    (listed,) = re.findall(r'<dd id="run-files">(.*?)</dd>', page)
    names = re.findall(r'<code title="([^"]*)">([^<]*)</code>', listed)
    assert sorted(name for _, name in names) == sorted(
        p.name for p in run.iterdir() if p.name != CHECKSUMS
    )
    assert ("passed items per model (a test&#x27;s)", "pass_counts.jsonl") in names
    # the readers' check (baseline, report, merge) knows it as it knows the built-ins
    assert verify_run_dir(run) is True
    copy = pytester.path / "copy"
    shutil.copytree(run, copy)
    for path in copy.iterdir():
        path.chmod(0o644)
    sums = (copy / CHECKSUMS).read_text(encoding="utf-8").splitlines(keepends=True)
    (copy / CHECKSUMS).write_text("".join(x for x in sums if "pass_counts" not in x))
    with pytest.raises(RunDirectoryError, match=r"pass_counts\.jsonl: not listed in SHA256SUMS"):
        verify_run_dir(copy)  # a file the sealed run never listed
    (copy / CHECKSUMS).unlink()
    with (copy / "pass_counts.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("{not json\n")
    with pytest.raises(RunDirectoryError, match=r"pass_counts\.jsonl:2: "):
        verify_run_dir(copy)  # unsealed: every line is checked


def test_the_table_refuses_a_clash_and_a_derived_json(toy: Artifact) -> None:
    with pytest.raises(ConfigError, match="already in the table"):
        register_artifact(TOY)
    with pytest.raises(ConfigError, match="already in the table"):
        register_artifact(Artifact("predictions.jsonl", "", None, "record", "always", "raw"))
    with pytest.raises(ConfigError, match=r"derived artifact is a \.jsonl"):
        register_artifact(Artifact("x.json", "", None, "finalize", "optional", "raw",
                                   derive=_pass_counts))  # fmt: skip


def test_merge_combines_registered_artifacts_by_their_rows_rule(
    pytester: pytest.Pytester, suite: Path, toy: Artifact
) -> None:
    register_artifact(SHARD_TOY)
    try:
        rows = [mcq_row(f"q{n}", correct="B") for n in range(5)]
        data = write_jsonl(pytester.path / "mcq.jsonl", rows)
        responses = write_jsonl(
            pytester.path / "responses.jsonl",
            [{"record_id": f"q{n}", "response": "B" if n % 2 else "C"} for n in range(5)],
        )
        shards = []
        for k in (1, 2):
            run_eval(pytester, data, responses, "--shard", f"{k}/2", "--run-id", f"s{k}")
            shards.append(pytester.path / "runs" / f"s{k}")
        out = pytester.path / "merged" / "run_merged"
        assert main(["merge", *map(str, shards), "--out", str(out)]) == 0
    finally:
        unregister_artifact(SHARD_TOY.name)
    predictions = read_jsonl(out / "predictions.jsonl")
    (model,) = {line["model"] for line in predictions}
    # recompute: from the merged run's lines, not a shard's
    passed = sum(1 for line in predictions if line["passed"])
    assert passed == 2
    assert read_jsonl(out / "pass_counts.jsonl") == [
        {"run_id": "run_merged", "model": model, "passed": passed}
    ]
    # concat: each shard's line, shard after shard, under the merged run's id
    per_shard = [len(read_jsonl(shard / "predictions.jsonl")) for shard in shards]
    assert sum(per_shard) == 5 and all(per_shard)
    assert read_jsonl(out / "line_counts.jsonl") == [
        {"run_id": "run_merged", "lines": n} for n in per_shard
    ]
    assert verify_checksums(out) == [] and verify_run_dir(out) is True
