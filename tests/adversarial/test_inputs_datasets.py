"""A careless first hour with build-dataset, check-dataset and pytest (issue 18).

QA rows only: the build wrote an empty ``summaries.jsonl``, check-dataset called it ok and
``pytest --dataset DIR`` rejected it, after a stray "During handling of the above
exception" line. check-dataset resolved the manifest's split paths from the working
directory, and build-dataset named one missing field per run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_legaleval.cli import main

REPO = Path(__file__).resolve().parents[2]
OFFLINE = REPO / "examples" / "rag" / "offline_dataset.jsonl"
SUITE = "def test_record(record, evaluation):\n    evaluation.check()\n"


def _offline(path: Path, keep: str = "qa", drop: tuple[str, ...] = ()) -> Path:
    rows = [json.loads(line) for line in OFFLINE.read_text(encoding="utf-8").splitlines()]
    kept = [{k: v for k, v in r.items() if k not in drop} for r in rows if r["task_type"] == keep]
    path.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    return path


def _build(work: Path, offline: Path, *extra: str) -> int:
    return main([
        "build-dataset", "--offline-dataset", str(offline), "--qa-output", "out/qa_pairs.jsonl",
        "--summary-output", "out/summaries.jsonl", "--manifest-output", "out/manifest.json",
        *extra,
    ])  # fmt: skip


def test_qa_rows_only_build_check_and_run_agree(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    work = pytester.path
    monkeypatch.chdir(work)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    assert _build(work, _offline(work / "offline.jsonl")) == 0
    err = capsys.readouterr().err
    assert "no summaries records: out/summaries.jsonl was not written" in err
    assert sorted(p.name for p in (work / "out").iterdir()) == ["manifest.json", "qa_pairs.jsonl"]
    manifest = json.loads((work / "out" / "manifest.json").read_text())
    assert manifest["splits"]["summaries"] == {"path": "out/summaries.jsonl", "count": 0}
    # check-dataset from elsewhere: paths resolve from the manifest's folder, not the cwd
    elsewhere = work / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["check-dataset", "--manifest", str(work / "out" / "manifest.json")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "ok     qa: 3 rows, as the manifest says",
        "ok     summaries: 0 rows and no file, as the manifest says",
    ]
    monkeypatch.chdir(work)
    pytester.makepyfile(test_suite=SUITE)
    responses = work / "responses.jsonl"
    rows = (work / "out" / "qa_pairs.jsonl").read_text().splitlines()
    responses.write_text(
        "".join(
            json.dumps({"record_id": json.loads(r)["task_id"], "response": "x [1]"}) + "\n"
            for r in rows
        )
    )
    result = pytester.runpytest(
        "--dataset", "out", "--responses", str(responses), "--run-dir", "runs", "--collect-only"
    )
    result.stdout.fnmatch_lines(["*3 tests collected*"])
    assert "rejected" not in result.stdout.str()


def test_a_rebuild_removes_a_split_that_became_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _build(tmp_path, _offline(tmp_path / "summaries.jsonl.src", keep="summaries")) == 0
    assert (tmp_path / "out" / "summaries.jsonl").stat().st_size > 0
    assert _build(tmp_path, _offline(tmp_path / "qa.src"), "--force") == 0
    assert not (tmp_path / "out" / "summaries.jsonl").exists()
    capsys.readouterr()
    assert main(["check-dataset", "--manifest", "out/manifest.json"]) == 0


def test_an_empty_split_file_alerts_and_pytest_rejects_it_without_a_stray_chain(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    work = pytester.path
    monkeypatch.chdir(work)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    assert _build(work, _offline(work / "offline.jsonl")) == 0
    (work / "out" / "summaries.jsonl").write_text("")  # as earlier builds left it
    capsys.readouterr()
    assert main(["check-dataset", "--manifest", "out/manifest.json"]) == 1
    out = capsys.readouterr().out
    assert "ALERT  summaries:" in out and "has no rows" in out and "pytest --dataset" in out
    pytester.makepyfile(test_suite=SUITE)
    responses = work / "responses.jsonl"
    responses.write_text('{"record_id": "x", "response": "y"}\n')
    result = pytester.runpytest("--dataset", "out", "--responses", str(responses))
    result.stdout.fnmatch_lines(["*dataset rejected (HTTP 400)*", '*"code": "invalid_request"*'])
    assert "During handling of the above exception" not in result.stdout.str()


def test_build_dataset_reports_every_missing_field_of_every_row_in_one_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    offline = _offline(tmp_path / "offline.jsonl", drop=("question", "reference_answer"))
    assert _build(tmp_path, offline) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "3 invalid record(s)" in line and "6 problem(s)" in line
    for number in (1, 2, 3):
        for field in ("question", "reference_answer"):
            assert f"offline.jsonl line {number}: {field} is required" in line
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_a_manifest_cannot_point_check_dataset_outside_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _build(tmp_path, _offline(tmp_path / "offline.jsonl")) == 0
    manifest_path = tmp_path / "out" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["splits"]["qa"]["path"] = "/proc/self/environ"
    manifest["splits"]["summaries"] = {"path": "../../../../../../etc/hostname", "count": 1}
    manifest_path.write_text(json.dumps(manifest))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    capsys.readouterr()
    assert main(["check-dataset", "--manifest", str(manifest_path)]) == 1
    out = capsys.readouterr().out
    assert "ALERT  qa: path '/proc/self/environ'" in out and "/proc, /sys or /dev" in out
    assert "ALERT  summaries: path '../../../../../../etc/hostname'" in out
    assert "'..' leads outside the manifest's folder" in out
