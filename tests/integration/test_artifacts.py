"""The run directory of real runs: eight artifacts, schemas, write-once, redaction, xdist."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.run.artifacts import ARTIFACTS, EXTRA_ARTIFACTS
from pytest_legaleval.run.directory import CHECKSUMS, verify_checksums
from pytest_legaleval.run.verify import check_run_directory
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from ..strict_json import assert_strict_run_dir, strict_loads
from .conftest import mcq_row, read_jsonl, run_dirs, run_eval, write_jsonl


def _mixed_run(pytester: pytest.Pytester, *extra: str, run_dir: str = "runs") -> Path:
    """Six valid MCQ records (right, wrong, unparseable, missing) plus one invalid record."""
    rows = [
        mcq_row("q1", metadata={"jurisdiction": "CH"}),
        mcq_row("q2", metadata={"jurisdiction": "DE"}),
        mcq_row("q3", correct="C", metadata={"jurisdiction": "CH"}),
        mcq_row("q4", metadata={"jurisdiction": "CH"}),
        mcq_row("q5", correct="D"),
        mcq_row("q6"),
        mcq_row("bad", choices=[{"id": "A", "text": "the only option"}], correct="A"),
    ]
    data = write_jsonl(pytester.path / "d.jsonl", rows)
    doc = {  # a contract document: reference records with tags (skipped: no judge)
        "dataset_id": "cdoc",
        "dataset_version": "2026-01-15",
        "schema_version": "1.0",
        "records": [
            {"record_id": "c1", "input": {"prompt": "Define tort."},
             "reference": {"answer": "A civil wrong."}, "tags": ["tort"]},
            {"record_id": "c2", "input": {"prompt": "Define contract."},
             "reference": {"answer": "An agreement."}, "tags": ["tort", "contract"]},
        ],
    }  # fmt: skip
    (pytester.path / "c.json").write_text(json.dumps(doc))
    answers = {"q1": "Answer: B", "q2": "(b)", "q3": "A", "q4": "I do not know", "q5": "D",
               "c1": "A civil wrong.", "c2": "A promise."}  # fmt: skip
    responses = write_jsonl(
        pytester.path / "r.jsonl", [{"record_id": k, "response": v} for k, v in answers.items()]
    )
    args = ["--dataset", str(data), "--dataset", "c.json", "--responses", str(responses)]
    result = pytester.runpytest(*args, "--run-dir", run_dir, *extra)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (run,) = run_dirs(pytester.path / run_dir)
    return run


def _json(path: Path) -> Any:
    return strict_loads(path.read_text(encoding="utf-8"))


def test_a_run_leaves_eight_valid_checksummed_read_only_artifacts(
    pytester: pytest.Pytester, suite: Path
) -> None:
    run = _mixed_run(pytester, "--slice-by", "metadata.jurisdiction")
    names = sorted(p.name for p in run.iterdir())
    assert names == sorted([*ARTIFACTS, *EXTRA_ARTIFACTS, CHECKSUMS])
    assert check_run_directory(run) == []
    assert sorted(assert_strict_run_dir(run)) == sorted([*ARTIFACTS, *EXTRA_ARTIFACTS])
    for path in run.iterdir():
        assert not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH), path.name
    sums = (run / CHECKSUMS).read_text().splitlines()
    assert [line.split("  ")[1] for line in sums] == sorted([*ARTIFACTS, *EXTRA_ARTIFACTS])
    assert all(len(line.split("  ")[0]) == 64 for line in sums)

    summary = _json(run / "metrics_summary.json")
    assert summary["total_records"] == 9
    assert (summary["invalid_records"], summary["valid_records"]) == (1, 8)
    assert (summary["pass_count"], summary["fail_count"]) == (3, 2)
    assert summary["skipped_records"] == 2
    assert summary["failed_records"] == 2  # the invalid record and the missing response
    assert summary["failures_by_type"] == {"invalid_record": 1, "missing_response": 1}
    assert summary["pass_rate"] == pytest.approx(0.6)
    assert summary["pass_rate_ci_low"] < 0.6 < summary["pass_rate_ci_high"]
    assert summary["mean_score_ci"]["seed"] == summary["bootstrap"]["seed"]

    failures = read_jsonl(run / "failures.jsonl")
    assert len(failures) == summary["failed_records"]
    by_type = {f["failure_type"]: f for f in failures}
    assert by_type["missing_response"]["record_id"] == "q6"
    assert by_type["invalid_record"]["errors"][0]["code"] == "value_out_of_range"
    assert by_type["invalid_record"]["stage"] == "validation"

    predictions = {p["record_id"]: p for p in read_jsonl(run / "predictions.jsonl")}
    assert set(predictions) == {"c1", "c2", *(f"q{i}" for i in range(1, 7))}
    q2 = predictions["q2"]
    assert q2["model_response"] == "(b)" and q2["evaluator_scores"]["passed"] is True
    assert q2["metadata"] == {"jurisdiction": "DE"}
    c2 = predictions["c2"]
    assert c2["tags"] == ["tort", "contract"] and c2["dataset_version"] == "2026-01-15"
    assert c2["evaluator_scores"]["exact_match"] == 0.0 and c2["outcome"] == "skipped"
    assert q2["evaluator"]["grader"] == "mcq" and q2["failure_type"] is None
    assert predictions["q6"]["failure_type"] == "missing_response"

    slices = _json(run / "metrics_by_slice.json")["slices"]
    assert slices["tag"]["tort"]["total_records"] == 2
    assert slices["metadata.jurisdiction"]["CH"]["total_records"] == 3
    assert slices["metadata.jurisdiction"]["(none)"]["total_records"] == 4
    assert slices["tag"]["contract"]["skipped_records"] == 1
    assert {k: b["total_records"] for k, b in slices["dataset"].items()} == {"t": 7, "cdoc": 2}

    manifest = _json(run / "run_manifest.json")
    assert manifest["status"] == "completed_with_failures"
    states = [t["state"] for t in manifest["state_transitions"]]
    assert states == ["queued", "validating", "running", "finalizing", "completed_with_failures"]
    assert manifest["completed_at"] == manifest["state_transitions"][-1]["at"]
    assert manifest["denominators"]["failed_records"] == 2
    assert manifest["schema_versions"] == ["1.0", "legal_eval_v1"]
    assert manifest["dataset_ids"] == ["cdoc", "t"]

    inputs = _json(run / "input_dataset.json")
    assert inputs["mode"] == "inline" and inputs["record_count"] == 8
    validation = {v["record_id"]: v for v in read_jsonl(run / "record_validation.jsonl")}
    for record in inputs["records"]:
        assert record["record_sha256"] == validation[record["record_id"]]["record_sha256"]
        assert record["payload"]["id"] == record["record_id"]


def test_the_checker_notices_tampering_and_schema_violations(
    pytester: pytest.Pytester, suite: Path
) -> None:
    run = _mixed_run(pytester)
    copy = pytester.path / "copy"
    copy.mkdir()
    for path in run.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    summary = _json(copy / "metrics_summary.json")
    summary["pass_rate"] = 1.5
    (copy / "metrics_summary.json").write_text(json.dumps(summary))
    (copy / "failures.jsonl").write_text('{"run_id": "x"}\n')
    problems = check_run_directory(copy)
    assert verify_checksums(copy) == ["failures.jsonl", "metrics_summary.json"]
    assert any(p.startswith("metrics_summary.json: ") and "1.5" in p for p in problems)
    assert any(p.startswith("failures.jsonl:1: ") for p in problems)


def test_an_existing_run_id_is_never_touched(pytester: pytest.Pytester, suite: Path) -> None:
    run = _mixed_run(pytester, "--run-id", "fixed")
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    data = write_jsonl(pytester.path / "d2.jsonl", [mcq_row("z1")])
    responses = write_jsonl(pytester.path / "r2.jsonl", [{"record_id": "z1", "response": "B"}])
    result = run_eval(pytester, data, responses, "--run-id", "fixed")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*already exists*write-once*"])
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


def test_stopping_early_cancels_the_rest(pytester: pytest.Pytester, suite: Path) -> None:
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row(f"q{i}") for i in range(5)])
    responses = write_jsonl(
        pytester.path / "r.jsonl", [{"record_id": f"q{i}", "response": "A"} for i in range(5)]
    )
    result = run_eval(pytester, data, responses, "-x")
    result.assert_outcomes(failed=1)
    (run,) = run_dirs(pytester.path / "runs")
    manifest = _json(run / "run_manifest.json")
    assert manifest["status"] == "cancelled"
    summary = _json(run / "metrics_summary.json")
    assert (summary["fail_count"], summary["cancelled_records"]) == (1, 4)
    assert len(read_jsonl(run / "failures.jsonl")) == 4
    assert check_run_directory(run) == []


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_stopping_early_cancels_the_rest_but_not_the_deselected(
    pytester: pytest.Pytester, suite: Path, workers: list[str]
) -> None:
    n = 200
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row(f"q{i:03d}") for i in range(n)])
    responses = write_jsonl(
        pytester.path / "r.jsonl", [{"record_id": f"q{i:03d}", "response": "A"} for i in range(n)]
    )
    result = run_eval(pytester, data, responses, "-x", "-k", "not q003", *workers)
    # xdist reports a -x stop as an interruption.
    assert result.ret in (pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.INTERRUPTED)
    (run,) = run_dirs(pytester.path / "runs")
    assert _json(run / "run_manifest.json")["status"] == "cancelled"
    predictions = read_jsonl(run / "predictions.jsonl")
    # Every selected record once (run or cancelled), the deselected one not at all.
    assert sorted(p["record_id"] for p in predictions) == [f"q{i:03d}" for i in range(n) if i != 3]
    assert sum(p["reason"] == "cancelled" for p in predictions) > n // 2
    assert check_run_directory(run) == []


def test_terminal_summary_is_a_table_with_intervals_and_slices(
    pytester: pytest.Pytester, suite: Path
) -> None:
    _mixed_run(pytester)
    result = pytester.runpytest(
        "--dataset", "d.jsonl", "--dataset", "c.json", "--responses", "r.jsonl",
        "--run-dir", "again",
        "--slice-by", "metadata.jurisdiction",
    )  # fmt: skip
    result.stdout.fnmatch_lines(
        [
            "*= legaleval =*",
            "slice *records *items *passed *failed *errors *skipped *invalid "
            "*pass rate ?Wilson 95% CI? *mean score ?95% CI? *p95 ms",
            "all *9 *9 *3 *2 *1 *2 *1 *60.0% ?2*%–8*%? *0.600 ?0.*–*?*",
            "dataset=t *7 *7 *3 *2 *1 *0 *1 *",
            "tag=tort *2 *2 *0 *0 *0 *2 *0 *- *- *-",
            "metadata.jurisdiction=CH * 3 *",
            "status: completed_with_failures (invalid_record 1, missing_response 1)",
            "run directory: again*run_*",
        ]
    )


# -- live runs against the mock server ------------------------------------------------------

SECRETS = {
    "env_key": "zq-planted-env-key-7f3a9c2b1e",  # no known shape: only the literal catches it
    "openai": "sk-proj-" + "Pl4nt3dS3cr3tK3yV4lu3xYz0123",
    "anthropic": "sk-ant-api03-" + "Pl4nt3dAnthr0picK3y0123456789ab",
    "github": "ghp_" + "Pl4nt3dGitHubT0k3n0123456789abcdefgh",
    "aws": "AKIA" + "PLANTEDKEY123456",
    "bearer": "Pl4nt3dB34r3rT0k3n.value",
    "assignment": "pl4nt3d-assigned-pw",
}
PII = {
    "email": "jane.planted@example.org",
    "iban": "DE89 3704 0044 0532 0130 00",
    "phone": "+41 44 668 18 00",
    "ssn": "123-45-6789",
}


def _planted_text(label: str) -> str:
    return (
        f"{label}: key {SECRETS['openai']} and {SECRETS['anthropic']}, "
        f"{SECRETS['github']} {SECRETS['aws']} Authorization: Bearer {SECRETS['bearer']} "
        f"password={SECRETS['assignment']} env {SECRETS['env_key']}; "
        f"contact {PII['email']}, {PII['phone']}, IBAN {PII['iban']}, SSN {PII['ssn']}."
    )


def _live_args(server: MockOpenAIServer, data: Path, *extra: str) -> list[str]:
    return [
        "--dataset", str(data), "--model", "openai/gpt-4o-mini", "--base-url", server.base_url,
        "--run-dir", "runs", "--no-cache", "--retry-delays", "0.01,0.02", *extra,
    ]  # fmt: skip


def test_secrets_and_pii_never_reach_any_artifact(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRETS["env_key"])
    rows = [
        mcq_row(
            f"q{i}",
            prompt=f"Question {i} [ans=B] {_planted_text('prompt')}",
            metadata={"note": _planted_text("metadata"), "api_key": SECRETS["openai"]},
        )
        for i in range(3)
    ]
    data = write_jsonl(pytester.path / "d.jsonl", rows)
    with MockOpenAIServer(api_key=SECRETS["env_key"]) as server:
        server.add_reply(r"\[ans=B\]", f"Answer: B. {_planted_text('response')}")
        server.add_fault("500", match="Question 1 ", times=1)  # one retry in the attempt log
        result = pytester.runpytest(*_live_args(server, data, "--redact", "pii"))
    result.assert_outcomes(passed=3)
    (run,) = run_dirs(pytester.path / "runs")
    assert check_run_directory(run) == []
    blob = b"".join(path.read_bytes() for path in sorted(run.iterdir()))
    for name, value in {**SECRETS, **PII}.items():
        assert value.encode() not in blob, name
    kinds = ["configured_key", "openai_key", "anthropic_key", "github_token", "aws_access_key",
             "bearer_token", "secret", "email", "iban", "phone", "us_ssn"]  # fmt: skip
    for kind in kinds:
        assert f"[REDACTED:{kind}]".encode() in blob, kind
    predictions = read_jsonl(run / "predictions.jsonl")
    assert all(
        p["model_response"].startswith("Answer: B. response: key [REDACTED:") for p in predictions
    )
    assert len(read_jsonl(run / "attempt_logs.jsonl")) == 4


def test_pii_stays_without_redact_pii_but_secrets_go(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRETS["env_key"])
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1", prompt="Q [ans=B]?")])
    with MockOpenAIServer() as server:
        server.add_reply(r"\[ans=B\]", f"Answer: B. {_planted_text('response')}")
        result = pytester.runpytest(*_live_args(server, data))
    result.assert_outcomes(passed=1)
    (run,) = run_dirs(pytester.path / "runs")
    blob = b"".join(path.read_bytes() for path in run.iterdir())
    assert PII["email"].encode() in blob
    assert not any(value.encode() in blob for value in SECRETS.values())


def test_live_run_records_attempts_tokens_latency_and_cost(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    rows = [mcq_row(f"q{i}", prompt=f"Question q{i} [ans=B]?") for i in range(4)]
    data = write_jsonl(pytester.path / "d.jsonl", rows)
    prices = pytester.path / "prices.yaml"
    prices.write_text("models:\n  gpt-4o-mini: {input: 1.0, output: 3.0}\n")
    with MockOpenAIServer() as server:
        server.add_reply(r"\[ans=B\]", "Answer: B")
        server.add_fault("503", match="q1\\b", times=3)
        server.add_fault("500", match="q2\\b", times=1)
        result = pytester.runpytest(*_live_args(server, data, "--price-table", str(prices)))
    result.assert_outcomes(passed=3, errors=1)
    (run,) = run_dirs(pytester.path / "runs")
    assert check_run_directory(run) == []
    summary = _json(run / "metrics_summary.json")
    assert summary["failures_by_type"] == {"generation_error:service_unavailable": 1}
    assert summary["p95_latency_ms"] is not None and summary["latency_ms"]["count"] >= 3
    assert summary["input_tokens"] > 0 and summary["output_tokens"] > 0
    expected = (summary["input_tokens"] * 1.0 + summary["output_tokens"] * 3.0) / 1e6
    assert summary["cost_usd"] == pytest.approx(expected)
    assert summary["price_table"][-1] == str(prices)
    (failure,) = read_jsonl(run / "failures.jsonl")
    assert failure["record_id"] == "q1" and failure["stage"] == "generation"
    assert failure["attempt_count"] == 3
    attempts = read_jsonl(run / "attempt_logs.jsonl")
    assert [a["retry"] for a in attempts if a["record_id"] == "q2"] == [False, True]
    manifest = _json(run / "run_manifest.json")
    assert "retrying" in [t["state"] for t in manifest["state_transitions"]]
    assert manifest["generation_settings"]["openai/gpt-4o-mini"]["temperature"] is None
    prediction = read_jsonl(run / "predictions.jsonl")[0]
    assert prediction["first_attempt_at"] and prediction["last_attempt_at"]
    assert prediction["evaluator"]["prompt_template_version"]


def test_an_unpriced_model_has_null_cost(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1", prompt="Q [ans=B]?")])
    with MockOpenAIServer() as server:
        server.add_reply(r"\[ans=B\]", "Answer: B")
        args = _live_args(server, data)
        args[args.index("openai/gpt-4o-mini")] = "openai/mock-model"
        pytester.runpytest(*args).assert_outcomes(passed=1)
    (run,) = run_dirs(pytester.path / "runs")
    summary = _json(run / "metrics_summary.json")
    assert summary["total_tokens"] > 0
    assert summary["cost_usd"] is None
    assert summary["cost"]["unpriced_models"] == ["openai/mock-model"]


# -- xdist ----------------------------------------------------------------------------------

_VOLATILE = {"run_id", "computed_at", "created_at", "started_at", "completed_at",
             "at", "request_id", "run_dir", "sources", "path"}  # fmt: skip


def _stable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _stable(v) for k, v in obj.items() if k not in _VOLATILE}
    if isinstance(obj, list):
        return [_stable(v) for v in obj]
    return obj


def _comparable(run: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ARTIFACTS:
        if name.endswith(".jsonl"):
            lines = [_stable(line) for line in read_jsonl(run / name)]
            out[name] = sorted(json.dumps(line, sort_keys=True) for line in lines)
        else:
            out[name] = _stable(_json(run / name))
    manifest = out["run_manifest.json"]
    manifest["state_transitions"] = [
        t["state"] for t in _json(run / "run_manifest.json")["state_transitions"]
    ]
    del manifest["configuration"], manifest["platform"]
    return out


@pytest.mark.slow
def test_n2_artifacts_equal_n0_up_to_order_and_timestamps(
    pytester: pytest.Pytester, suite: Path
) -> None:
    _mixed_run(pytester, run_dir="first")
    args = ["--dataset", "d.jsonl", "--dataset", "c.json", "--responses", "r.jsonl",
            "--slice-by", "metadata.jurisdiction"]  # fmt: skip
    serial = pytester.runpytest_subprocess(*args, "-p", "no:xdist", "--run-dir", "serial")
    parallel = pytester.runpytest_subprocess(*args, "-n", "2", "--run-dir", "parallel")
    for outcomes in (serial.parseoutcomes(), parallel.parseoutcomes()):
        # failed: graded wrong; errors: the missing response and the invalid record
        assert (outcomes["passed"], outcomes["failed"], outcomes["errors"]) == (3, 2, 2)
        assert outcomes["skipped"] == 2
    (run0,) = run_dirs(pytester.path / "serial")
    (run2,) = run_dirs(pytester.path / "parallel")
    assert check_run_directory(run2) == []
    first, second = _comparable(run0), _comparable(run2)
    for name in ARTIFACTS:
        assert first[name] == second[name], name
    assert os.listdir(run0) and sorted(os.listdir(run0)) == sorted(os.listdir(run2))


@pytest.mark.slow
@pytest.mark.parametrize(
    "selection",
    [["--shard", "2/3"], ["--sample", "4", "--seed", "5"], ["--limit", "4", "-k", "not q2"]],
    ids=["shard", "sample", "limit-and-k"],
)
def test_a_streaming_controller_counts_selections_like_a_collecting_one(
    pytester: pytest.Pytester, suite: Path, selection: list[str]
) -> None:
    """Under xdist the controller counts the selection from the stream; same artifacts."""
    _mixed_run(pytester, run_dir="first")
    args = ["--dataset", "d.jsonl", "--dataset", "c.json", "--responses", "r.jsonl", *selection]
    serial = pytester.runpytest_subprocess(*args, "-p", "no:xdist", "--run-dir", "serial")
    parallel = pytester.runpytest_subprocess(*args, "-n", "2", "--run-dir", "parallel")
    outcomes = serial.parseoutcomes()
    outcomes.pop("deselected", None)  # xdist's summary line does not count deselections
    assert outcomes == parallel.parseoutcomes()
    (run0,) = run_dirs(pytester.path / "serial")
    (run2,) = run_dirs(pytester.path / "parallel")
    first, second = _comparable(run0), _comparable(run2)
    for name in ARTIFACTS:
        assert first[name] == second[name], name
    manifest = _json(run2 / "run_manifest.json")
    assert manifest["selection"]["selected_records"] < 9  # the selection did narrow the run


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_a_run_with_nothing_to_report_leaves_no_directory(
    pytester: pytest.Pytester, suite: Path, workers: list[str]
) -> None:
    """Every item deselected: a usage error, not a "completed" empty directory (it was one)."""
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1"), mcq_row("q2")])
    responses = write_jsonl(
        pytester.path / "r.jsonl", [{"record_id": f"q{i}", "response": "B"} for i in (1, 2)]
    )
    result = run_eval(pytester, data, responses, "-k", "no_such_record", *workers)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert run_dirs(pytester.path / "runs") == []
