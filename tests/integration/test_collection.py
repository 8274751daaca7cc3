"""Records as pytest items: real pytest sessions through pytester."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import (
    DATA,
    EXAMPLES,
    copy_in,
    mcq_row,
    read_jsonl,
    run_dirs,
    run_eval,
    write_jsonl,
)


def _responses(path: Path, answers: dict[str, str], model: str | None = None) -> Path:
    rows = []
    for record_id, text in answers.items():
        row = {"record_id": record_id, "response": text}
        if model:
            row["model"] = model
        rows.append(row)
    return write_jsonl(path, rows)


def test_example_data_one_item_per_record(pytester: pytest.Pytester, suite: Path) -> None:
    data, responses = copy_in(
        pytester, EXAMPLES / "legal_mcq.jsonl", EXAMPLES / "legal_mcq.responses.jsonl"
    )
    result = run_eval(pytester, data, responses)
    n_records = len(read_jsonl(data))
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == n_records
    assert outcomes.get("failed", 0) >= 1
    result.stdout.fnmatch_lines(["*legaleval*", "*run directory: runs*run_*"])
    (run,) = run_dirs(pytester.path / "runs")
    assert run.name.startswith("run_")
    predictions = read_jsonl(run / "predictions.jsonl")
    assert len(predictions) == n_records
    assert {p["record_id"] for p in predictions} == {r["id"] for r in read_jsonl(data)}
    summary = json.loads((run / "metrics_summary.json").read_text())
    assert summary["evaluated_records"] == n_records
    assert summary["pass_count"] == outcomes.get("passed", 0)
    manifest = json.loads((run / "run_manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert [t["state"] for t in manifest["state_transitions"]] == [
        "queued",
        "validating",
        "running",
        "finalizing",
        "completed",
    ]
    validation = read_jsonl(run / "record_validation.jsonl")
    assert all(line["status"] == "accepted" for line in validation)


def test_test_ids_are_dataset_slash_record_id(pytester: pytest.Pytester, suite: Path) -> None:
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1"), mcq_row("q2")])
    responses = _responses(pytester.path / "r.jsonl", {"q1": "Answer: B", "q2": "Answer: A"})
    result = run_eval(pytester, data, responses, "-v", "-k", "q2")
    result.stdout.fnmatch_lines(["*test_record?t/q2? FAILED*"])
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines(["*wrong_answer: chose A*correct is B*"])


@pytest.mark.parametrize(
    ("sample", "code", "path_suffix"),
    [
        ("mcq_correct_choice_not_in_choices.jsonl", "invalid_enum_value", "correct_choice_ids[0]"),
        ("mcq_empty_correct_choice_ids.jsonl", "value_out_of_range", "correct_choice_ids"),
        ("mcq_single_choice.jsonl", "value_out_of_range", "choices"),
        ("mcq_with_reference_answers.jsonl", "unsupported_field", "reference_answers"),
        ("rubric_qa_with_choices.jsonl", "unsupported_field", "choices"),
        ("rubric_qa_empty_rubric.jsonl", "value_out_of_range", "rubric"),
        ("reference_qa_with_rubric.jsonl", "unsupported_field", "rubric"),
        ("reference_qa_no_answers.jsonl", "value_out_of_range", "reference_answers"),
        ("unknown_task_type.jsonl", "invalid_enum_value", "task_type"),
        ("wrong_schema_version.jsonl", "invalid_enum_value", "schema_version"),
        ("missing_prompt.jsonl", "missing_required_field", "prompt"),
        ("bad_message_role.jsonl", "invalid_enum_value", "messages[0].role"),
        ("null_byte_in_prompt_escaped.jsonl", "invalid_encoding", "prompt"),
        ("invalid_utf8.jsonl", "invalid_encoding", ""),
        ("duplicate_id.jsonl", "duplicate_record_id", "id"),
    ],
)
def test_malformed_sample_errors_and_line_one_still_runs(
    pytester: pytest.Pytester, suite: Path, sample: str, code: str, path_suffix: str
) -> None:
    (data,) = copy_in(pytester, DATA / "malformed" / sample)
    first = json.loads(data.read_bytes().splitlines()[0])
    for attachment in first.get("attachments", []):  # the documents are not shipped
        target = pytester.path / attachment["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("stand-in for the filing", encoding="utf-8")
    responses = _responses(pytester.path / "r.jsonl", {first["id"]: "Answer: A"})
    result = run_eval(pytester, data, responses, "-rE")
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", outcomes.get("error")) == 1
    # line 1 ran: it passed, failed or (judged task types without a judge) was skipped
    assert sum(outcomes.get(k, 0) for k in ("passed", "failed", "skipped")) == 1
    text = result.stdout.str()
    assert f'"code": "{code}"' in text
    expected_path = "records[1]" + ("." + path_suffix if path_suffix else "")
    assert f'"path": "{expected_path}' in text
    assert "Traceback" not in text
    (run,) = run_dirs(pytester.path / "runs")
    validation = read_jsonl(run / "record_validation.jsonl")
    assert [line["status"] for line in validation] == ["accepted", "rejected"]
    assert validation[1]["errors"][0]["code"] == code
    manifest = json.loads((run / "run_manifest.json").read_text())
    assert manifest["status"] == "completed_with_failures"


def test_dataset_level_rejection_is_a_collection_error(
    pytester: pytest.Pytester, suite: Path
) -> None:
    doc = {
        "dataset_id": "x",
        "dataset_version": "1",
        "schema_version": "2.0",
        "records": [{"record_id": "a", "input": {"prompt": "p"}}],
    }
    data = pytester.path / "doc.json"
    data.write_text(json.dumps(doc))
    responses = _responses(pytester.path / "r.jsonl", {"a": "x"})
    result = run_eval(pytester, data, responses)
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting*",
            "*dataset rejected (HTTP 400)*",
            '*"code": "invalid_request"*',
            '*"request_id": *',
        ]
    )
    assert not (pytester.path / "runs").exists() or not run_dirs(pytester.path / "runs")


def test_all_records_invalid_rejects_the_dataset(pytester: pytest.Pytester, suite: Path) -> None:
    data = write_jsonl(pytester.path / "d.jsonl", [{"schema_version": "legal_eval_v1"}] * 2)
    responses = _responses(pytester.path / "r.jsonl", {"a": "x"})
    result = run_eval(pytester, data, responses)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*All records failed validation*"])
    assert not run_dirs(pytester.path / "runs")


def test_missing_response_errors_never_skips(pytester: pytest.Pytester, suite: Path) -> None:
    """No response: no verdict, an ERROR (it was a FAILED wrong answer before)."""
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1"), mcq_row("q2")])
    responses = _responses(pytester.path / "r.jsonl", {"q1": "B"})
    result = run_eval(pytester, data, responses)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*missing_response: no response for record 'q2'*"])
    (run,) = run_dirs(pytester.path / "runs")
    summary = json.loads((run / "metrics_summary.json").read_text())
    assert summary["failed_records"] == 1
    assert summary["outcomes_by_reason"]["missing_response"] == 1


def test_several_models_give_one_item_per_record_and_model(
    pytester: pytest.Pytester, suite: Path
) -> None:
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1"), mcq_row("q2")])
    rows = [
        {"record_id": "q1", "response": "B", "model": "m1"},
        {"record_id": "q2", "response": "C", "model": "m1"},
        {"example_id": "q1", "candidate_name": "m2", "response_text": "Answer: (B)"},
        {"example_id": "q2", "candidate_name": "m2", "response_text": "**B**"},
    ]
    responses = write_jsonl(pytester.path / "r.jsonl", rows)
    result = run_eval(pytester, data, responses, "-v")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*t/q2-m1] FAILED*", "*t/q2-m2] PASSED*"])


def test_limit_and_markers(pytester: pytest.Pytester, suite: Path) -> None:
    rows = [mcq_row(f"q{i}") for i in range(6)]
    rows.append(
        {
            "schema_version": "legal_eval_v1",
            "id": "r1",
            "dataset": "t",
            "task_type": "reference_qa",
            "prompt": "Why?",
            "reference_answers": ["x"],
        }
    )
    data = write_jsonl(pytester.path / "d.jsonl", rows)
    responses = _responses(pytester.path / "r.jsonl", {r["id"]: "B" for r in rows})
    result = run_eval(pytester, data, responses, "--limit", "3")
    result.assert_outcomes(passed=3)
    result = run_eval(pytester, data, responses, "-m", "reference_qa", "-rs")
    result.assert_outcomes(skipped=1, deselected=6)
    result.stdout.fnmatch_lines(["*needs_judge*LLM judge*"])


def test_tag_markers_select_contract_records(pytester: pytest.Pytester, suite: Path) -> None:
    doc = {
        "dataset_id": "ds",
        "dataset_version": "1",
        "schema_version": "1.0",
        "records": [
            {
                "record_id": "a",
                "input": {"prompt": "p"},
                "reference": {"answer": "x"},
                "tags": ["Contract Law"],
            },
            {
                "record_id": "b",
                "input": {"prompt": "q"},
                "reference": {"answer": "y"},
                "tags": ["tort"],
            },
        ],
    }
    data = pytester.path / "doc.json"
    data.write_text(json.dumps(doc))
    responses = _responses(pytester.path / "r.jsonl", {"a": "x", "b": "y"})
    result = run_eval(pytester, data, responses, "-m", "tag_contract_law", "--strict-markers")
    result.assert_outcomes(skipped=1, deselected=1)


def test_shards_partition_the_dataset(pytester: pytest.Pytester, suite: Path) -> None:
    rows = [mcq_row(f"q{i}") for i in range(30)]
    data = write_jsonl(pytester.path / "d.jsonl", rows)
    responses = _responses(pytester.path / "r.jsonl", {r["id"]: "B" for r in rows})
    seen: list[str] = []
    for k in (1, 2, 3):
        result = pytester.runpytest(
            "--dataset",
            str(data),
            "--responses",
            str(responses),
            "--run-dir",
            f"runs{k}",
            "--shard",
            f"{k}/3",
        )
        assert result.ret == 0
        # The other shards' response rows are no stray rows.
        assert "match no record" not in result.stdout.str()
        (run,) = run_dirs(pytester.path / f"runs{k}")
        ids = [p["record_id"] for p in read_jsonl(run / "predictions.jsonl")]
        assert ids, "every shard of 30 records gets some"
        seen.extend(ids)
        # A shard keeps only its own records in memory, yet its run directory describes
        # the whole dataset it was cut from.
        inputs = json.loads((run / "input_dataset.json").read_text())
        assert inputs["record_count"] == 30
        assert [r["record_id"] for r in inputs["records"]] == [r["id"] for r in rows]
        validation = read_jsonl(run / "record_validation.jsonl")
        assert len(validation) == 30
        manifest = json.loads((run / "run_manifest.json").read_text())
        assert manifest["selection"]["selected_records"] == len(ids)
    assert sorted(seen) == sorted(r["id"] for r in rows)


def test_a_shard_plan_holds_only_its_shard(tmp_path: Path) -> None:
    from pytest_legaleval.pipeline.plan import RunPlan
    from pytest_legaleval.pipeline.selection import in_shard
    from pytest_legaleval.pipeline.settings import Settings, parse_shard

    rows = [mcq_row(f"q{i}") for i in range(40)]
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    responses = _responses(tmp_path / "r.jsonl", {r["id"]: "B" for r in rows})
    shard = parse_shard("2/4")
    plan = RunPlan.build(Settings(dataset=(str(data),), responses=str(responses), shard=shard))
    held = [entry.id for entry in plan.dataset.load().entries]
    expected = [r["id"] for r in rows if in_shard(r["id"], shard)]
    assert held == expected and 0 < len(held) < 40
    source = plan.dataset.source()
    assert source.record_count == 40  # counted over the whole file
    assert [e.id for e in source.entries] == [r["id"] for r in rows]  # streamed again


_OWN_ENDPOINT = [
    "--dataset",
    "d.jsonl",
    "--model",
    "openai/x",
    "--base-url",
    "http://127.0.0.1:9/v1",
]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--responses", "r.jsonl"], "*--responses/--model need --dataset*"),
        (["--dataset", "d.jsonl"], "*no response source*--responses FILE*--model*"),
        (["--dataset", "d.jsonl", "--responses", "r.jsonl", "--model", "openai/x"], "*exclusive*"),
        (["--dataset", "missing.jsonl", "--responses", "r.jsonl"], "*no such file*"),
        (["--dataset", "d.jsonl", "--responses", "r.jsonl", "--shard", "4/3"], "*--shard*"),
        (
            ["--dataset", "d.jsonl", "--responses", "r.jsonl", "--gate", "pass_rate>>0.8"],
            "*--gate 'pass_rate>>0.8': expected METRIC OP NUMBER*",
        ),
        (
            ["--dataset", "d.jsonl", "--responses", "r.jsonl", "--policy-dir", "nowhere"],
            "*--policy-dir nowhere: no such directory*",
        ),
        (
            ["--dataset", "d.jsonl", "--responses", "bad.jsonl"],
            "*line 1: record_id must be a non-empty string*",
        ),
        (
            [*_OWN_ENDPOINT, "--run-dir", "r.jsonl/runs"],
            "*--run-dir r.jsonl/runs: r.jsonl is not a directory*",
        ),
        (
            [*_OWN_ENDPOINT, "--conversation-from", "nope.jsonl"],
            "*--conversation-from nope.jsonl: no such file*",
        ),
        (
            [*_OWN_ENDPOINT, "--conversation-from", "bad.jsonl"],
            "*--conversation-from bad.jsonl: 1 bad rows:*",
        ),
        (
            [*_OWN_ENDPOINT, "--cache", "notdb.sqlite"],
            "*--cache notdb.sqlite: not a usable SQLite database (file is not a database)*",
        ),
        (
            [*_OWN_ENDPOINT, "--cache", "."],
            "*--cache .: is a directory; pass a file path or --no-cache*",
        ),
        (
            [*_OWN_ENDPOINT, "--cache", "r.jsonl/c.sqlite"],
            "*--cache r.jsonl/c.sqlite: cannot be used (*Not a directory*",
        ),
        (
            ["--dataset", "d.jsonl", "--model", "openai/x", "--model", "openai/x"],
            "*--model openai/x is given more than once (each model is one item per record)*",
        ),
        (
            [
                *("--dataset", "d.jsonl", "--responses", "r.jsonl"),
                *("--judge-model", "openai/j", "--judge-model", "openai/j"),
            ],
            "*--judge-model openai/j is given more than once*drop the repeat*",
        ),
    ],
)
def test_usage_errors_name_the_fix(
    pytester: pytest.Pytester, suite: Path, args: list[str], message: str
) -> None:
    write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1")])
    _responses(pytester.path / "r.jsonl", {"q1": "B"})
    (pytester.path / "bad.jsonl").write_text('{"record_id": 3}\n')
    (pytester.path / "notdb.sqlite").write_text("a text file, not a database\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_existing_run_id_is_never_touched(pytester: pytest.Pytester, suite: Path) -> None:
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1")])
    responses = _responses(pytester.path / "r.jsonl", {"q1": "B"})
    args = [
        "--dataset",
        str(data),
        "--responses",
        str(responses),
        "--run-dir",
        "runs",
        "--run-id",
        "nightly",
    ]
    assert pytester.runpytest(*args).ret == 0
    before = {p.name: p.read_bytes() for p in (pytester.path / "runs" / "nightly").iterdir()}
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*already exists*write-once*"])
    after = {p.name: p.read_bytes() for p in (pytester.path / "runs" / "nightly").iterdir()}
    assert before == after


def test_user_suite_reads_the_evaluation(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_mine="""
        import pytest

        def test_answer(record, evaluation):
            assert evaluation.response is not None
            assert evaluation.score in (0.0, 1.0)
            assert record.task_type == "mcq"
            assert evaluation.passed == (evaluation.reason == "correct"), evaluation.explanation

        @pytest.mark.asyncio
        async def test_async(record, evaluation):
            assert evaluation.model == "prefilled"
    """
    )
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1"), mcq_row("q2")])
    responses = _responses(pytester.path / "r.jsonl", {"q1": "B", "q2": "D"})
    result = run_eval(pytester, data, responses)
    result.assert_outcomes(passed=4)


def test_collect_only_writes_nothing(pytester: pytest.Pytester, suite: Path) -> None:
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1")])
    responses = _responses(pytester.path / "r.jsonl", {"q1": "B"})
    result = run_eval(pytester, data, responses, "--collect-only", "-q")
    assert result.ret == 0
    assert not run_dirs(pytester.path / "runs")


def test_record_fixture_without_dataset_explains(pytester: pytest.Pytester, suite: Path) -> None:
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the record fixture needs a dataset*--dataset PATH*"])


def test_failed_record_report_is_the_graders_reason_only(
    pytester: pytest.Pytester, suite: Path
) -> None:
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1")])
    responses = _responses(pytester.path / "r.jsonl", {"q1": "Answer: C"})
    result = run_eval(pytester, data, responses, "-vv", "-rf")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["FAILED *t/q1] - wrong_answer: chose C (from 'Answer: C'); correct is B"]
    )
    assert "RecordFailed" not in result.stdout.str()
    assert "Traceback" not in result.stdout.str()
