"""Shards joined by ``legaleval merge`` equal an unsharded run; ``compare`` and ``report`` on
real runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_legaleval.cli import main
from pytest_legaleval.run.directory import verify_checksums
from pytest_legaleval.validation import schema_validator

from ..strict_json import assert_strict_run_dir
from .conftest import DATA, EXAMPLES, copy_in, read_jsonl, run_dirs, run_eval, write_jsonl

SCHEMAS = {
    "run_manifest.json": "run_manifest",
    "input_dataset.json": "input_dataset",
    "metrics_summary.json": "metrics_summary",
    "metrics_by_slice.json": "metrics_by_slice",
    "record_validation.jsonl": "record_validation",
    "predictions.jsonl": "prediction",
    "attempt_logs.jsonl": "attempt_log",
    "failures.jsonl": "failure",
}
VOLATILE = {"run_id", "computed_at"}


def _validate(run: Path) -> None:
    for name, schema in SCHEMAS.items():
        validator = schema_validator(schema)
        path = run / name
        assert path.is_file(), name
        docs = read_jsonl(path) if name.endswith(".jsonl") else [json.loads(path.read_text())]
        for doc in docs:
            errors = [e.message for e in validator.iter_errors(doc)]
            assert not errors, f"{name}: {errors[:3]}"
    assert verify_checksums(run) == []


def _stable(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in VOLATILE}


@pytest.fixture
def sharded(pytester: pytest.Pytester, suite: Path) -> tuple[list[Path], Path]:
    """Three shard runs and one unsharded run of the same data and responses."""
    data, responses, bad = copy_in(
        pytester,
        EXAMPLES / "legal_mcq.jsonl",
        EXAMPLES / "legal_mcq.responses.jsonl",
        DATA / "malformed" / "mcq_single_choice.jsonl",
    )
    # a second model, so that items are record × model; one of its answers is missing
    rows = read_jsonl(responses)
    both = [{**r, "model": "m1"} for r in rows] + [{**r, "model": "m2"} for r in rows[1:]]
    responses = write_jsonl(pytester.path / "both.jsonl", both)
    args = ("--dataset", str(bad))
    shards = []
    for k in (1, 2, 3):
        result = run_eval(
            pytester, data, responses, *args, "--shard", f"{k}/3", "--run-id", f"s{k}"
        )
        assert result.ret in (0, 1)
        shards.append(pytester.path / "runs" / f"s{k}")
    run_eval(pytester, data, responses, *args, "--run-id", "full")
    return shards, pytester.path / "runs" / "full"


def test_three_shards_merge_into_the_unsharded_run(
    sharded: tuple[list[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    shards, full = sharded
    capsys.readouterr()  # drop the sessions' output
    sizes = [len(read_jsonl(s / "predictions.jsonl")) for s in shards]
    assert all(sizes) and sum(sizes) == len(read_jsonl(full / "predictions.jsonl"))
    out = full.parent.parent / "merged" / "run_merged"
    assert main(["merge", *map(str, shards), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    _validate(out)
    assert_strict_run_dir(out)
    for name in ("metrics_summary.json", "metrics_by_slice.json"):
        merged = json.loads((out / name).read_text())
        assert merged["run_id"] == "run_merged"
        assert _stable(merged) == _stable(json.loads((full / name).read_text())), name
    manifest = json.loads((out / "run_manifest.json").read_text())
    reference = json.loads((full / "run_manifest.json").read_text())
    assert manifest["denominators"] == reference["denominators"]
    assert manifest["status"] == reference["status"] == "completed_with_failures"
    assert manifest["selection"]["shard"] is None
    assert manifest["selection"]["items"] == reference["selection"]["items"]
    assert [m["shard"] for m in manifest["merged_from"]] == ["1/3", "2/3", "3/3"]
    key = ("record_id", "model", "outcome", "reason", "score")
    merged_rows = [tuple(r[k] for k in key) for r in read_jsonl(out / "predictions.jsonl")]
    full_rows = [tuple(r[k] for k in key) for r in read_jsonl(full / "predictions.jsonl")]
    assert merged_rows == full_rows  # same items, in the unsharded order
    assert {r["run_id"] for r in read_jsonl(out / "predictions.jsonl")} == {"run_merged"}
    failures = read_jsonl(out / "failures.jsonl")
    assert len(failures) == len(read_jsonl(full / "failures.jsonl"))
    assert {f["failure_type"] for f in failures} == {"invalid_record", "missing_response"}


def test_merge_lists_what_is_missing(
    sharded: tuple[list[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    shards, full = sharded
    out = full.parent / "partial"
    assert main(["merge", str(shards[0]), str(shards[2]), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    missing = len(read_jsonl(shards[1] / "predictions.jsonl"))
    assert "the shards do not cover the dataset:" in err
    assert f"{missing}" in err and "missing:" in err
    assert not out.exists()


def test_merge_refuses_overlap_and_foreign_runs(
    sharded: tuple[list[Path], Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    shards, full = sharded
    assert main(["merge", *map(str, shards), str(full), "--out", str(tmp_path / "x")]) == 1
    assert "in more than one shard" in capsys.readouterr().err
    # not a run directory: a usage error (the one exit-status table: 2)
    assert main(["merge", str(shards[0]), str(tmp_path), "--out", str(tmp_path / "y")]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_merge_refuses_shards_of_different_configurations(
    pytester: pytest.Pytester, suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, responses = copy_in(
        pytester, EXAMPLES / "legal_mcq.jsonl", EXAMPLES / "legal_mcq.responses.jsonl"
    )
    run_eval(pytester, data, responses, "--shard", "1/2", "--run-id", "a")
    run_eval(pytester, data, responses, "--shard", "2/2", "--run-id", "b", "--limit", "50")
    runs = pytester.path / "runs"
    code = main(["merge", str(runs / "a"), str(runs / "b"), "--out", str(pytester.path / "m")])
    assert code == 1
    assert "differ in configuration (differing keys: limit)" in capsys.readouterr().err


def test_compare_two_real_runs(
    pytester: pytest.Pytester, suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, responses = copy_in(
        pytester, EXAMPLES / "legal_mcq.jsonl", EXAMPLES / "legal_mcq.responses.jsonl"
    )
    run_eval(pytester, data, responses, "--run-id", "main")
    rows = read_jsonl(responses)
    flipped = rows[0]["record_id"]
    rows[0] = {**rows[0], "response": "I cannot tell."}
    run_eval(pytester, data, write_jsonl(pytester.path / "b.jsonl", rows), "--run-id", "pr")
    runs = pytester.path / "runs"
    capsys.readouterr()  # drop the sessions' output
    assert main(["compare", str(runs / "main"), str(runs / "pr"), "--format", "json"]) == 0
    data_out = json.loads(capsys.readouterr().out)
    pass_rate = data_out["metrics"]["pass_rate"]
    assert pass_rate["delta"] == pytest.approx(-1 / 20)
    assert pass_rate["a"]["interval"] is not None
    assert data_out["paired"]["regressions"] == 1 and data_out["paired"]["paired"] == 20
    assert [c["record_id"] for c in data_out["changes"]["pass_to_fail"]] == [flipped]
    assert main(["compare", str(runs / "main"), str(runs / "pr"), "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert "| `pass_rate` | 65.0% [" in markdown and "| -5.0% |" in markdown
    assert "<summary>pass_to_fail (1)</summary>" in markdown
    escaped = flipped.replace(":", "\\:\u200b").replace("-", "\\-")  # as md_text writes it
    # ... and a word of 7+ hex digits (a UUID's last group) cut in sixes: no commit autolink
    escaped = re.sub(
        r"(?<![0-9a-z])[0-9a-f]{7,}(?![0-9a-z])",
        lambda m: "\u200b".join(m[0][i : i + 6] for i in range(0, len(m[0]), 6)),
        escaped,
    )
    assert f"| lexam | {escaped} | example\\-model | correct | no\\_answer\\_extracted |" in (
        markdown
    )
    assert "| dataset=lexam |" in markdown
    assert main(["compare", str(runs / "main"), str(runs / "pr")]) == 0
    text = capsys.readouterr().out
    assert "McNemar exact p = 1" in text and "pass_to_fail (1):" in text


def test_report_command_writes_beside_the_run(
    pytester: pytest.Pytester, suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, responses = copy_in(
        pytester, EXAMPLES / "legal_mcq.jsonl", EXAMPLES / "legal_mcq.responses.jsonl"
    )
    run_eval(pytester, data, responses, "--run-id", "r1")
    (run,) = run_dirs(pytester.path / "runs")
    capsys.readouterr()  # drop the session's output
    assert main(["report", str(run)]) == 0
    target = Path(capsys.readouterr().out.strip())
    assert target == run.parent / "r1.html"
    assert '<table id="records">' in target.read_text()
    assert verify_checksums(run) == []  # the run directory itself is untouched
