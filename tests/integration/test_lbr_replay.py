"""LBR's real run replayed offline: its responses graded, its judge verdicts re-scored.

``--responses`` (LBR's 999 answers) with ``--judgments`` (LBR's verdicts) makes no call:
every item whose judge calls succeeded gets LBR's score and pass flag back, recomputed
from the per-criterion grades under the record's policy (LBR's ids are LBR's behaviour:
min-max scoring, threshold 0.7); the items LBR could not judge are judge errors.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from ..lbr_run import DATA, gz_lines
from .conftest import read_jsonl, run_dirs

SUMMARY = json.loads((DATA / "summary.json").read_text(encoding="utf-8"))


def _unzip(source: Path, target: Path) -> Path:
    with gzip.open(source, "rb") as handle:
        target.write_bytes(handle.read())
    return target


@pytest.fixture
def lbr_files(pytester: pytest.Pytester, suite: Path) -> dict[str, Path]:
    root = pytester.path
    shutil.copytree(DATA / "documents", root / "documents")  # the APEX record's attachment
    return {
        "records": _unzip(DATA / "merged_legal_eval_v1.jsonl.gz", root / "records.jsonl"),
        "responses": _unzip(DATA / "responses_prefilled.jsonl.gz", root / "responses.jsonl"),
        "judgments": _unzip(DATA / "judgments.jsonl.gz", root / "judgments.jsonl"),
    }


def _without_totals(judgments: Path) -> Path:
    """LBR's judgments without the totals it derived from the verdicts."""
    rows = [json.loads(line) for line in judgments.read_text(encoding="utf-8").splitlines()]
    bare = judgments.with_name("judgments_without_totals.jsonl")
    bare.write_text(
        "".join(
            json.dumps({k: v for k, v in row.items() if k not in ("score", "pass", "aggregation")})
            + "\n"
            for row in rows
        ),
        encoding="utf-8",
    )
    return bare


def test_lbr_s_run_replays_offline_with_lbr_s_scores(lbr_replayed_run: Path) -> None:
    # The replay with LBR's judgments as they are (shared with test_audit_cli.py).
    _check_against_lbr(lbr_replayed_run)


def test_lbr_s_verdicts_alone_give_lbr_s_scores(
    pytester: pytest.Pytester, lbr_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the totals removed (score, pass, aggregation) every score is recomputed from
    # the verdicts alone, reference rows (criteria.overall) as rubric rows.
    judgments = _without_totals(lbr_files["judgments"])
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # no endpoint, no key: no call
    result = pytester.runpytest(
        "--dataset", str(lbr_files["records"]),
        "--responses", str(lbr_files["responses"]),
        "--judgments", str(judgments),
        "--run-dir", "runs", "--no-cache", "-p", "no:randomly", "-q",
    )  # fmt: skip
    assert result.ret in (0, 1), result.stdout.str()[-3000:]
    (run,) = run_dirs(pytester.path / "runs")
    _check_against_lbr(run)


def _check_against_lbr(run: Path) -> None:
    ours = {(p["record_id"], p["model"]): p for p in read_jsonl(run / "predictions.jsonl")}
    assert len(ours) == 1000  # 125 records x 8 models
    lbr = {}
    for line in gz_lines(DATA / "judgments.jsonl.gz"):
        row = json.loads(line)
        lbr[(row["example_id"], row["candidate_name"])] = row
    failed_judging = 0
    for key, row in lbr.items():
        mine = ours[key]
        if row["task_type"] != "mcq" and (row.get("parse_error") or row.get("judge_call_failed")):
            failed_judging += 1
            assert mine["reason"] == "judge_error", key
            continue
        assert mine["passed"] is bool(row["pass"]), key
        if row["task_type"] != "mcq":
            assert mine["score"] == pytest.approx(row["score"], abs=1e-9), key
            assert mine["scoring"] == "minmax" and mine["details"]["threshold"] == 0.7
    assert failed_judging == 44
    # The one answer LBR never got (a provider capacity error) is a missing response.
    (missing,) = [p for key, p in ours.items() if key not in lbr]
    assert missing["reason"] == "missing_response"
    # Per model, the pass counts differ from LBR's summary only by items LBR could not
    # judge yet counted as passed (its judge failures scored as a pass on two items).
    passes = Counter(p["model"] for p in ours.values() if p["passed"])
    counted_anyway = Counter(
        key[1]
        for key, row in lbr.items()
        if row["task_type"] != "mcq"
        and (row.get("parse_error") or row.get("judge_call_failed"))
        and row["pass"]
    )
    for model, stats in SUMMARY["models"].items():
        assert passes[model] == stats["pass_count"] - counted_anyway[model], model
    # Replayed verdicts count as judged (they carry no judge block: no call was made); the
    # judge errors are the 44 LBR could not judge, over every judge-graded item.
    summary = json.loads((run / "metrics_summary.json").read_text(encoding="utf-8"))
    judged = sum(
        1 for p in ours.values() if p["task_type"] != "mcq" and p["reason"] != "missing_response"
    )
    assert summary["judged_items"] == judged and summary["judge_error_count"] == 44
    assert summary["judge_error_rate"] == pytest.approx(44 / judged)


def test_verdicts_of_another_dataset_are_a_usage_error_and_bad_lines_a_warning(
    pytester: pytest.Pytester, lbr_files: dict[str, Path]
) -> None:
    records = lbr_files["records"]
    first = records.read_text(encoding="utf-8").splitlines()[0]
    other = pytester.path / "other.jsonl"
    row = json.loads(first)
    row["id"] = "not-in-the-judgments"
    other.write_text(json.dumps(row) + "\n", encoding="utf-8")
    answer = pytester.path / "answer.jsonl"
    answer.write_text(json.dumps({"record_id": row["id"], "response": "x"}) + "\n")
    result = pytester.runpytest(
        "--dataset", str(other), "--responses", str(answer),
        "--judgments", str(lbr_files["judgments"]), "--run-dir", "runs",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--judgments" in result.stderr.str() and "verdicts names a record" in result.stderr.str()
    broken = pytester.path / "broken.jsonl"
    broken.write_text(
        lbr_files["judgments"].read_text(encoding="utf-8") + "{not json\n", encoding="utf-8"
    )
    result = pytester.runpytest(
        "--dataset", str(records), "--responses", str(lbr_files["responses"]),
        "--judgments", str(broken), "--run-dir", "runs", "-k", "lexam",
    )  # fmt: skip
    result.stdout.fnmatch_lines(["*--judgments*1 unusable lines (line 1000: not JSON*"])
