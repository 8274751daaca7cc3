"""build-dataset and check-dataset end to end, and a pytest run over the built splits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_legaleval.cli import main

from .conftest import EXAMPLES, read_jsonl, run_dirs, run_eval, write_jsonl

CONFIG = """
dataset:
  offline_dataset: data/offline_dataset.jsonl
  qa_output: out/qa_pairs.jsonl
  summary_output: out/summaries.jsonl
  manifest_output: out/manifest.json
  version: v3
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "data").mkdir()
    shutil.copy(EXAMPLES / "rag" / "offline_dataset.jsonl", tmp_path / "data")
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "default.yaml").write_text(CONFIG)
    return tmp_path


def build(project: Path, *extra: str) -> int:
    return main(["build-dataset", "--config", str(project / "configs" / "default.yaml"), *extra])


def test_build_resolves_config_paths_from_the_project_root(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "configs")
    assert build(project) == 0
    captured = capsys.readouterr()
    assert "qa: 3 record(s) -> out/qa_pairs.jsonl" in captured.out
    assert "unsupported task type 'citations': 1 record(s)" in captured.err
    manifest = json.loads((project / "out" / "manifest.json").read_text())
    assert manifest["version"] == "v3"
    assert manifest["source_offline_dataset"] == "data/offline_dataset.jsonl"
    assert manifest["splits"] == {
        "qa": {"path": "out/qa_pairs.jsonl", "count": 3},
        "summaries": {"path": "out/summaries.jsonl", "count": 2},
    }
    assert manifest["excluded_task_types"] == {"citations": 1} and manifest["filters"] == {}
    qa = read_jsonl(project / "out" / "qa_pairs.jsonl")
    assert qa[2]["contexts"][0].startswith("[1] The right to erasure")


def test_refuses_to_overwrite_without_force_and_limit_narrows(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert build(project) == 0
    capsys.readouterr()
    assert build(project) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("legaleval build-dataset: error: ")
    assert err[0].endswith("already exist; pass --force to overwrite")
    assert build(project, "--force", "--limit", "1", "--version", "v4") == 0
    manifest = json.loads((project / "out" / "manifest.json").read_text())
    assert manifest["filters"] == {"limit": 1} and manifest["version"] == "v4"
    assert {s: e["count"] for s, e in manifest["splits"].items()} == {"qa": 1, "summaries": 1}


def test_an_invalid_offline_record_fails_the_build_and_writes_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    offline = project / "data" / "offline_dataset.jsonl"
    rows = read_jsonl(offline)
    rows[1]["reference_answer"] = ""
    write_jsonl(offline, rows)
    assert build(project) == 1
    err = capsys.readouterr().err
    assert "1 invalid record(s)" in err and "line 2: reference_answer must not be empty" in err
    assert not (project / "out").exists() or list((project / "out").iterdir()) == []


def test_check_dataset_alerts_on_mismatch_and_on_a_drop(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert build(project) == 0
    config = str(project / "configs" / "default.yaml")
    assert main(["check-dataset", "--config", config]) == 0
    baseline = project / "baseline.json"
    manifest = json.loads((project / "out" / "manifest.json").read_text())
    manifest["splits"]["qa"]["count"] = 4  # 3 now: a 25 % drop
    baseline.write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(["check-dataset", "--config", config, "--baseline", str(baseline)]) == 1
    out = capsys.readouterr().out
    assert "ALERT  qa: 4 -> 3 (-25.0%) against the baseline, a drop of more than 10%" in out
    assert "ok     summaries: 2 -> 2 (+0.0%) against the baseline" in out
    assert main(["check-dataset", "--config", config, "--baseline", str(baseline),
                 "--max-drop", "0.3"]) == 0  # fmt: skip
    qa = project / "out" / "qa_pairs.jsonl"
    qa.write_text("".join(qa.read_text().splitlines(keepends=True)[:2]))
    capsys.readouterr()
    assert main(["check-dataset", "--config", config]) == 1
    assert "ALERT  qa: 2 rows in" in capsys.readouterr().out


def test_pytest_runs_the_built_splits_with_the_manifest_version(
    pytester: pytest.Pytester, suite: Path
) -> None:
    data = pytester.path / "data"
    data.mkdir()
    for name in ("qa_pairs.jsonl", "summaries.jsonl", "manifest.json", "offline_dataset.jsonl"):
        shutil.copy(EXAMPLES / "rag" / name, data / name)
    responses = write_jsonl(
        pytester.path / "responses.jsonl",
        [
            {"record_id": row["task_id"], "response": "an answer [1]"}
            for name in ("qa_pairs.jsonl", "summaries.jsonl")
            for row in read_jsonl(data / name)
        ],
    )
    collected = pytester.runpytest(
        "--dataset", str(data), "--responses", str(responses), "--collect-only", "-q"
    )
    collected.stdout.fnmatch_lines(
        [
            "*rag_qa/0b8f6f0e-6a57-4a53-9a43-3c1f8a0e0001*",
            "*rag_summaries/0b8f6f0e-6a57-4a53-9a43-3c1f8a0e0003*",
            "5 tests collected*",
        ]
    )
    run_eval(pytester, data, responses)
    (run,) = run_dirs(pytester.path / "runs")
    manifest = json.loads((run / "run_manifest.json").read_text())
    assert [
        (d["format"], d["dataset_version"], d["accepted_records"]) for d in manifest["datasets"]
    ] == [
        ("rag_qa", "v1", 3),
        ("rag_summaries", "v1", 2),
    ]
    policies = {row["record_id"]: row["policy_id"] for row in read_jsonl(run / "predictions.jsonl")}
    assert policies["0b8f6f0e-6a57-4a53-9a43-3c1f8a0e0001"] == "rag_qa_v1"
    assert policies["0b8f6f0e-6a57-4a53-9a43-3c1f8a0e0003"] == "rag_summary_v1"
