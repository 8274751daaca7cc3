"""``legaleval review`` for real: the JSON API over HTTP, the audit of its labels, the export."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="legaleval review needs the [serve] extra")
pytest.importorskip("hypercorn", reason="legaleval review needs the [serve] extra")

from pytest_legaleval.formats.turing import read_turing_file
from pytest_legaleval.metrics._human_labels import read_human_labels

from ..review_run import JUDGE_MARK, RUN_ID, write_run
from .review_server import ReviewServer

CLI = [sys.executable, "-m", "pytest_legaleval.cli"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)


def test_the_api_labels_resumes_refuses_bad_input_and_the_audit_reads_it(tmp_path: Path) -> None:
    run = write_run(tmp_path)
    folder = tmp_path / "review"
    with ReviewServer(run, "ann", folder, "--sample", "8", "--double", "0.5", "--seed", "1") as ann:
        status, progress = ann.call("GET", "progress")
        assert status == 200 and progress["total"] == 8 and progress["done"] == 0
        status, shown = ann.call("GET", "next")
        assert status == 200 and JUDGE_MARK not in json.dumps(shown)
        first = shown["item"]["id"]
        status, done = ann.call("POST", "labels", {"item": first, "passed": True, "note": "ok"})
        assert status == 201 and done["progress"]["done"] == 1
        labels = folder / "labels" / "ann.jsonl"
        before = labels.read_bytes()
        for body, code, text in (
            ({"item": first, "passed": False}, 409, "already submitted"),
            ({"item": "it_unknown", "passed": True}, 404, "unknown item"),
            ({"item": first, "passed": "pass"}, 409, "already submitted"),
            (b"{not json", 400, "not JSON"),
            (b"x" * 70_000, 413, "over"),
        ):
            status, error = ann.call("POST", "labels", body)
            assert status == code and text in error["error"]["message"], error
        status, shown = ann.call("GET", "next")
        status, error = ann.call("POST", "labels", {"item": shown["item"]["id"], "passed": 1})
        assert status == 422 and "passed must be true or false" in error["error"]["message"]
        assert labels.read_bytes() == before
    # a restart resumes: the same item comes next, the first stays done
    with ReviewServer(run, "ann", folder) as ann:
        status, again = ann.call("GET", "next")
        assert again["item"]["id"] == shown["item"]["id"]
        assert again["progress"]["submitted"] == [first]
        while True:
            status, shown = ann.call("GET", "next")
            if status == 204:
                break
            ann.call("POST", "labels", {"item": shown["item"]["id"], "passed": True})
        assert ann.call("GET", "progress")[1]["remaining"] == 0
    with ReviewServer(run, "bob", folder) as bob:
        assert bob.call("GET", "progress")[1]["total"] == 4  # the shared half
        while (found := bob.call("GET", "next"))[0] == 200:
            bob.call("POST", "labels", {"item": found[1]["item"]["id"], "passed": False})
    third = ReviewServer(run, "cid", folder)
    with pytest.raises(AssertionError, match="every seat of this sample is taken"):
        third.start()
    audit = _cli("audit", str(run), "--human-labels", str(folder / "labels"), "--json")
    assert audit.returncode == 0, audit.stderr
    block = json.loads(audit.stdout)["judge_audit"]
    experts = block["expert_agreement"]["items"]
    assert experts["raters"] == ["ann", "bob"] and experts["shared_items"] == 4
    assert experts["agreement"] == 0.0  # ann passed every item, bob failed every one
    assert block["sample"]["run_id"] == RUN_ID and block["sample"]["size"] == 8
    assert block["ppi_pass_rate"] is not None
    text = _cli("audit", str(run), "--human-labels", str(folder / "labels")).stdout
    assert "on 4 shared items (ann, bob)" in text and "labels drawn at random" in text
    # labels on an item that was not drawn: no PPI estimate, a note instead
    extra = folder / "labels" / "zed.jsonl"
    drawn = {i["record_id"] for i in json.loads((folder / "sample.json").read_text())["items"]}
    outside = next(f"rec-{i:02d}" for i in range(18) if f"rec-{i:02d}" not in drawn)
    extra.write_text(json.dumps({"record_id": outside, "model": "alpha-model", "passed": True,
                                 "rater": "zed"}) + "\n")  # fmt: skip
    block = json.loads(
        _cli("audit", str(run), "--human-labels", str(folder / "labels"), "--json").stdout
    )["judge_audit"]
    assert block["ppi_pass_rate"] is None
    assert "not in the drawn sample" in block["notes"]["ppi_pass_rate"]
    extra.unlink()
    # the Turing export reads back through our own reader unchanged
    exported = _cli("review", "export", str(run), "--review-dir", str(folder), "--format",
                    "turing", "--out", str(tmp_path / "turing"))  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    for rater, count in (("ann", 8), ("bob", 4)):
        path = tmp_path / "turing" / "evaluations" / f"{rater}.json"
        turing = read_turing_file(path, "human_evaluation")
        assert not turing.errors and len(turing.entries) == count
        back = read_human_labels(path).labels
        mine = [
            label for label in read_human_labels(folder / "labels" / f"{rater}.jsonl").labels
            if label.criterion_id is None
        ]  # fmt: skip
        assert [(b.record_id, b.model, b.passed, b.rater) for b in back] == [
            (m.record_id, m.model, m.passed, m.rater) for m in mine
        ]
    assert not (run / "labels").exists() and sorted(p.name for p in run.iterdir()) == [
        "input_dataset.json", "predictions.jsonl", "run_manifest.json",
    ]  # fmt: skip


def test_usage_errors_exit_2_with_the_fix(tmp_path: Path) -> None:
    run = write_run(tmp_path)
    for args, text in (
        ([str(tmp_path)], "not a run directory"),
        ([str(run), "--sample", "3", "--half-width", "0.1"], "not both"),
        ([str(run), "--sample", "3", "--prepare", "--strata", "no such"], "--strata"),
        ([str(run), "--sample", "3"], "--rater NAME is required"),
        (["export", str(run), "--out", str(tmp_path / "t"), "--format", "csv"], "turing"),
    ):
        done = _cli("review", *args)
        assert done.returncode == 2 and text in done.stderr, (args, done.stderr)
