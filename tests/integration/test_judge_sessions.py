"""Judged records in real pytest sessions: the mock server scripted as candidate and judge."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pytest_legaleval
from pytest_legaleval.run.verify import check_run_directory
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from ..strict_json import assert_strict_run_dir
from .conftest import EXAMPLES, read_jsonl, run_dirs, write_jsonl

FAST_RETRIES = ["--retry-delays", "0.01,0.02"]


def _pdf(path: Path, text: str | None) -> Path:
    """A one-page PDF; with ``text`` None the page has no text layer (like a scan)."""
    stream = f"BT /F1 12 Tf 72 712 Td ({text}) Tj ET".encode() if text else b""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    path.write_bytes(bytes(out))
    return path


def _reference(record_id: str, **extra: Any) -> dict[str, Any]:
    row = {
        "schema_version": "legal_eval_v1",
        "id": record_id,
        "dataset": "lexam",
        "task_type": "reference_qa",
        "prompt": f"Open question {record_id}: what is culpa in contrahendo?",
        "context": f"CONTEXT-{record_id}: Swiss law of obligations.",
        "reference_answers": ["Liability for fault in contract negotiations."],
    }
    row.update(extra)
    return row


def _rubric(record_id: str, **extra: Any) -> dict[str, Any]:
    row = {
        "schema_version": "legal_eval_v1",
        "id": record_id,
        "dataset": "prbench",
        "task_type": "rubric_qa",
        "prompt": f"Rubric task {record_id}: advise the landlord.",
        "messages": [
            {"role": "user", "content": f"EARLIER-TURN-{record_id}"},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": f"Rubric task {record_id}: advise the landlord."},
        ],
        "rubric": [
            {"id": "c1", "title": "CRIT-STATUTE", "weight": 3},
            {"id": "c2", "title": "CRIT-NOTICE", "weight": 1},
            {"id": "c3", "title": "CRIT-INVENTED-CASE", "weight": -2},
        ],
        "metadata": {"policy_id": "default"},
    }
    row.update(extra)
    return row


def _met(flag: bool) -> str:
    return json.dumps({"met": flag, "rationale": "checked"})


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer(latency=0.01) as srv:
        # judge replies (the judge prompts quote the criterion titles / reference)
        srv.add_reply("CRIT-STATUTE", _met(True))
        srv.add_reply("CRIT-NOTICE", _met(False))
        srv.add_reply("CRIT-INVENTED-CASE", _met(False))
        srv.add_reply(
            r"(Answer to grade|Student answer):\n+GOOD",
            json.dumps({"score": 0.9, "verdict": "correct", "rationale": "matches the key"}),
        )
        srv.add_reply(
            r"(Answer to grade|Student answer):\n+BAD",
            json.dumps({"score": 0.1, "verdict": "incorrect", "rationale": "wrong doctrine"}),
        )
        # candidate answers
        srv.add_reply(r"Open question good", "GOOD: liability in negotiations.")
        srv.add_reply(r"Open question bad", "BAD: it is a tort of nuisance.")
        srv.add_reply(r"Rubric task", "Cite the statute.")
        yield srv


def _run(pytester: pytest.Pytester, server: MockOpenAIServer, data: Path, *extra: str) -> Any:
    return pytester.runpytest(
        "--dataset",
        str(data),
        "--base-url",
        server.base_url,
        "--judge-model",
        "openai/judge",
        "--run-dir",
        "runs",
        "--cache",
        "cache.sqlite",
        *FAST_RETRIES,
        *extra,
    )


def _predictions(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    (run,) = run_dirs(pytester.path / "runs")
    return {row["record_id"]: row for row in read_jsonl(run / "predictions.jsonl")}


def test_judged_session_grades_reference_and_rubric_records(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    data = write_jsonl(
        pytester.path / "data.jsonl",
        [
            _reference("good"),
            _reference("bad", metadata={"policy_id": "lexam"}),
            _rubric("r1"),
        ],
    )
    result = _run(pytester, server, data, "--model", "openai/cand", "-rA")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_record?lexam/bad? _*",
            "below_threshold 0.10 < 0.50: *",
            "",
            "judge score 0.10 < threshold 0.50*",
        ]
    )
    rows = _predictions(pytester)
    good = rows["good"]
    assert good["passed"] is True and good["score"] == pytest.approx(0.9)
    assert good["grader"] == "judge:reference" and good["policy_id"] == "default"
    assert len(good["policy_sha256"]) == 64
    assert good["details"]["token_f1"] > 0 and good["details"]["exact_match"] == 0.0
    judge = good["judge"]
    assert judge["models"] == ["openai/judge"] and len(judge["template_sha256"]) == 64
    assert judge["params"]["temperature"] == 0.0
    assert rows["bad"]["policy_id"] == "lexam"
    rubric = rows["r1"]
    # (3 met - 0 penalty) / (3 + 1) = 0.75
    assert rubric["score"] == pytest.approx(0.75) and rubric["passed"] is True
    assert [c["met"] for c in rubric["details"]["criteria"]] == [1.0, 0.0, 0.0]
    # nothing of the record was lost on the way to the model or the judge
    generation = [
        r
        for r in server.requests()
        if "Rubric task r1" in json.dumps(r) and "met" not in json.dumps(r)
    ]
    assert generation and "EARLIER-TURN-r1" in json.dumps(generation[0]["messages"])
    judge_prompts = [r for r in server.requests() if "CRIT-STATUTE" in json.dumps(r)]
    assert "EARLIER-TURN-r1" in json.dumps(judge_prompts[0]["messages"])
    reference_judge = [r for r in server.requests() if "Answer to grade" in json.dumps(r)]
    assert any("CONTEXT-good" in json.dumps(r["messages"]) for r in reference_judge)
    (run,) = run_dirs(pytester.path / "runs")
    assert check_run_directory(run) == []  # judged artifacts valid against their schemas
    assert_strict_run_dir(run)


def test_a_judge_error_is_an_error_outcome_and_the_run_goes_on(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    server.clear_replies()  # replies are tried in order: start over with a broken judge
    server.add_reply(r"Answer to grade:\n+GOOD", "The answer seems right to me.")
    server.add_reply(r"Open question", "GOOD: liability in negotiations.")
    data = write_jsonl(pytester.path / "data.jsonl", [_reference("good"), _reference("good2")])
    result = _run(pytester, server, data, "--model", "openai/cand", "--judge-reasks", "1")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*judge_error*no usable reply after 2 calls*"])
    rows = _predictions(pytester)
    for row in rows.values():
        assert row["outcome"] == "error" and row["reason"] == "judge_error"
        assert row["score"] is None and row["passed"] is None
        assert row["judge"]["verdicts"][0]["raw"] == "The answer seems right to me."
    # every judge call (the re-ask too) is in the attempt log, next to the generation
    (run,) = run_dirs(pytester.path / "runs")
    attempts = read_jsonl(run / "attempt_logs.jsonl")
    judged = sorted((a["record_id"], a["judge_call"]) for a in attempts if a["purpose"] == "judge")
    assert judged == [("good", 1), ("good", 2), ("good2", 1), ("good2", 2)]
    assert all(a["model"] == "openai/judge" for a in attempts if a["purpose"] == "judge")
    assert sum(a["purpose"] == "generation" for a in attempts) == 2
    assert check_run_directory(run) == []  # every artifact valid against its schema
    assert_strict_run_dir(run)


def test_prefilled_responses_are_judged_without_generation(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    data = write_jsonl(pytester.path / "data.jsonl", [_reference("good"), _reference("bad")])
    responses = write_jsonl(
        pytester.path / "responses.jsonl",
        [
            {"record_id": "good", "response": "GOOD: liability in negotiations."},
            {"record_id": "bad", "response": "BAD: nuisance."},
        ],
    )
    result = _run(pytester, server, data, "--responses", str(responses))
    result.assert_outcomes(passed=1, failed=1)
    bodies = json.dumps(server.requests())
    assert "Open question good" in bodies  # in the judge prompt ...
    assert all(
        "Answer to grade" in json.dumps(r) or "ok" in json.dumps(r) for r in server.requests()
    )


def test_without_a_judge_judged_records_are_skipped_visibly(
    pytester: pytest.Pytester, suite: Path
) -> None:
    data = write_jsonl(pytester.path / "data.jsonl", [_reference("good")])
    responses = write_jsonl(
        pytester.path / "responses.jsonl", [{"record_id": "good", "response": "GOOD"}]
    )
    result = pytester.runpytest(
        "--dataset", str(data), "--responses", str(responses), "--run-dir", "runs", "-rs"
    )
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs_judge*--judge-model*"])


def test_unknown_policy_falls_back_to_default_with_a_warning(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    data = write_jsonl(
        pytester.path / "data.jsonl", [_reference("good", metadata={"policy_id": "nope_v9"})]
    )
    result = _run(pytester, server, data, "--model", "openai/cand")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*PolicyWarning*unknown policy_id 'nope_v9'*"])
    assert _predictions(pytester)["good"]["policy_id"] == "default"


def test_attachments_are_injected_and_missing_ones_are_record_errors(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    (pytester.path / "docs").mkdir()
    _pdf(pytester.path / "docs" / "lease.pdf", "LEASE-TEXT-FROM-PDF")
    _pdf(pytester.path / "docs" / "scan.pdf", None)
    (pytester.path / "docs" / "memo.txt").write_text("MEMO-TEXT", encoding="utf-8")
    rows = [
        _reference(
            "good",
            attachments=[
                {"path": "docs/lease.pdf", "kind": "pdf", "title": "Lease"},
                {"path": "docs/memo.txt", "title": "Memo"},
            ],
        ),
        _reference("good2", attachments=[{"path": "docs/scan.pdf", "kind": "pdf"}]),
        _reference("good3", attachments=[{"path": "docs/missing.pdf"}]),
    ]
    data = write_jsonl(pytester.path / "data.jsonl", rows)
    result = _run(pytester, server, data, "--model", "openai/cand")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        ['*"code": "value_out_of_range"*', '*"path": "records?2?.attachments?0?.path"*']
    )
    prompts = [
        json.dumps(r["messages"])
        for r in server.requests()
        if "Open question good" in json.dumps(r)
    ]
    assert any("LEASE-TEXT-FROM-PDF" in p and "MEMO-TEXT" in p for p in prompts)
    rows = _predictions(pytester)
    scanned = rows["good2"]
    assert any("no text layer" in w for w in scanned["details"]["attachment_warnings"])
    # the item of the missing file is recorded, not dropped, and nothing was sent for it
    missing = rows["good3"]
    assert missing["outcome"] == "error" and missing["reason"] == "invalid_record"
    assert missing["details"]["record_errors"][0]["code"] == "value_out_of_range"
    assert not any("Open question good3" in json.dumps(r) for r in server.requests())
    (run,) = run_dirs(pytester.path / "runs")
    failures = read_jsonl(run / "failures.jsonl")
    assert [(f["record_id"], f["failure_type"]) for f in failures] == [("good3", "invalid_record")]


def test_judged_outcomes_are_the_same_with_two_workers(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    rows = [_reference(f"good{i}") for i in range(4)] + [_reference(f"bad{i}") for i in range(4)]
    rows += [_rubric(f"r{i}") for i in range(4)]
    data = write_jsonl(pytester.path / "data.jsonl", rows)
    result = _run(pytester, server, data, "--model", "openai/cand", "-n", "2")
    result.assert_outcomes(passed=8, failed=4)
    rows_n2 = _predictions(pytester)
    assert {k: (v["passed"], v["score"]) for k, v in rows_n2.items()} == {
        **{f"good{i}": (True, pytest.approx(0.9)) for i in range(4)},
        **{f"bad{i}": (False, pytest.approx(0.1)) for i in range(4)},
        **{f"r{i}": (True, pytest.approx(0.75)) for i in range(4)},
    }


def test_json_answer_contract_uses_the_form_the_endpoint_accepts(
    pytester: pytest.Pytester, suite: Path, mock_openai_factory: Any
) -> None:
    # like the llama.cpp server: json_schema refused with a 500, json_object + schema taken
    server = mock_openai_factory(response_formats=["json_object"], response_format_status=500)
    server.add_reply("Which court", '{"answer": ["B"]}')
    row = {
        "schema_version": "legal_eval_v1",
        "id": "m1",
        "dataset": "lexam",
        "task_type": "mcq",
        "prompt": "Which court decides?",
        "choices": [{"id": "A", "text": "Cantonal"}, {"id": "B", "text": "Federal"}],
        "correct_choice_ids": ["B"],
        "metadata": {"policy_id": "lexam"},
    }
    data = write_jsonl(pytester.path / "data.jsonl", [row])
    result = pytester.runpytest(
        "--dataset",
        str(data),
        "--model",
        "openai/cand",
        "--base-url",
        server.base_url,
        "--run-dir",
        "runs",
        "--no-cache",
        *FAST_RETRIES,
    )
    result.assert_outcomes(passed=1)
    body = server.last_request()
    assert body["response_format"]["type"] == "json_object"
    assert body["response_format"]["schema"]["properties"]["answer"]["items"] == {
        "enum": ["A", "B"]
    }
    assert '{"answer": ["<letter>"]}' in body["messages"][-1]["content"]


def test_rag_answers_are_judged_and_their_citations_checked(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    data = pytester.path / "qa_pairs.jsonl"
    data.write_bytes((EXAMPLES / "rag" / "qa_pairs.jsonl").read_bytes())
    first, second = "0b8f6f0e-6a57-4a53-9a43-3c1f8a0e0001", "0b8f6f0e-6a57-4a53-9a43-3c1f8a0e0002"
    server.clear_replies()
    server.add_reply(
        "Answer to grade", json.dumps({"score": 1.0, "verdict": "correct", "rationale": "ok"})
    )
    responses = write_jsonl(
        pytester.path / "responses.jsonl",
        [
            {"record_id": first, "response": "Only with a legal basis such as consent [2]."},
            {"record_id": second, "response": "See the principles [7]."},
        ],
    )
    result = _run(pytester, server, data, "--responses", str(responses), "-k", "0001 or 0002")
    result.assert_outcomes(passed=1, failed=1)
    rows = _predictions(pytester)
    assert rows[first]["details"]["citations"]["passed"] is True
    cited = rows[second]["details"]["citations"]
    assert cited["unknown"] == [7] and cited["missing"] == [1]
    assert rows[second]["reason"] == "citation_error" and rows[second]["score"] == 1.0
    assert "cites contexts that do not exist: [7]" in rows[second]["explanation"]
    judge_prompts = [json.dumps(r["messages"]) for r in server.requests()]
    assert any("[1] Personal data must be processed lawfully" in p for p in judge_prompts)


@pytest.mark.parametrize(("scoring", "score"), [("clipped", 0.75), ("minmax", 5 / 6)])
def test_a_run_is_re_scored_from_its_own_verdicts_without_a_request(
    pytester: pytest.Pytester,
    suite: Path,
    server: MockOpenAIServer,
    scoring: str,
    score: float,
) -> None:
    data = write_jsonl(pytester.path / "data.jsonl", [_rubric("r1"), _rubric("r2")])
    _run(pytester, server, data, "--model", "openai/cand").assert_outcomes(passed=2)
    (first,) = run_dirs(pytester.path / "runs")
    requests = server.stats()["requests"]
    policies = pytester.path / "policies"
    policies.mkdir()
    # The same policy, edited: another scoring rule and threshold.
    builtin = Path(pytest_legaleval.__file__).parent / "grading" / "policies" / "default.yaml"
    lines = [
        line
        for line in builtin.read_text(encoding="utf-8").splitlines()
        if not line.startswith(("scoring:", "pass_threshold:"))
    ]
    lines += [f"scoring: {scoring}", "pass_threshold: 0.8"]
    (policies / "default.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    predictions = str(first / "predictions.jsonl")
    result = pytester.runpytest(
        "--dataset", str(data), "--responses", predictions, "--judgments", predictions,
        "--policy-dir", str(policies), "--run-dir", "rescored",
    )  # fmt: skip
    assert server.stats()["requests"] == requests  # not a single HTTP request
    (run,) = run_dirs(pytester.path / "rescored")
    rows = read_jsonl(run / "predictions.jsonl")
    assert [(r["model"], r["scoring"]) for r in rows] == [("openai/cand", scoring)] * 2
    assert all(r["score"] == pytest.approx(score) for r in rows)
    # 0.75 < 0.8 fails under clipped; 5/6 passes under minmax
    result.assert_outcomes(**({"passed": 2} if score >= 0.8 else {"failed": 2}))
    assert all(r["details"]["replayed_from"]["format"] == "predictions" for r in rows)


def test_judge_epochs_rejudge_each_answer_and_report_flips(
    pytester: pytest.Pytester, suite: Path
) -> None:
    """``--judge-epochs 3``: each answer judged three times (each a call of its own); the
    first judging grades it; ``judge_consistency`` counts the answers whose verdict flipped;
    the transcript holds the judge's prompts and replies."""
    with MockOpenAIServer(latency=0.0) as server:
        # judge replies first: a judge prompt quotes the question too
        for score in (0.9, 0.2, 0.9):  # one answer's three judgings disagree (any order)
            verdict = {"score": score, "verdict": "correct", "rationale": "varies"}
            server.add_reply(r"FLIPPY", json.dumps(verdict), times=1)
        server.add_reply(
            r"(Answer to grade|Student answer)",
            json.dumps({"score": 0.9, "verdict": "correct", "rationale": "matches the key"}),
        )
        server.add_reply(r"Open question", "GOOD: liability in negotiations.")
        data = write_jsonl(
            pytester.path / "data.jsonl",
            [_reference("steady"), _reference("wobbly", reference_answers=["FLIPPY key"])],
        )
        result = _run(pytester, server, data, "--model", "openai/cand", "--judge-epochs", "3")
        outcomes = result.parseoutcomes()
        assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 2
        judge_calls = [
            r
            for r in server.requests()
            if r["model"] == "judge" and '"ok": true' not in r["messages"][-1]["content"]
        ]
        assert len(judge_calls) == 2 * 3  # besides the structured-output probe
    (run,) = run_dirs(pytester.path / "runs")
    rows = {r["record_id"]: r for r in read_jsonl(run / "predictions.jsonl")}
    verdicts = rows["wobbly"]["judge"]["verdicts"]
    assert [v["judge_epoch"] for v in verdicts] == [0, 1, 2]
    assert rows["wobbly"]["score"] == pytest.approx(verdicts[0]["score"])
    summary = json.loads((run / "metrics_summary.json").read_text(encoding="utf-8"))
    flips_block = summary["judge_consistency"]["flips"]
    assert summary["judge_consistency"]["judge_epochs"] == 3
    assert flips_block["answers"] == 2 and flips_block["flip_rate"] == 0.5
    assert "judge consistency" in result.stdout.str()
    transcripts = {t["record_id"]: t for t in read_jsonl(run / "transcripts.jsonl")}
    steady = transcripts["steady"]
    sent = steady["request"]["messages"][-1]["content"]
    assert "CONTEXT-steady" in sent and "Open question steady" in sent
    assert steady["reply"] == "GOOD: liability in negotiations."
    assert steady["judge"] and steady["judge"][0]["model"] == "openai/judge"
    assert "GOOD: liability" in json.dumps(steady["judge"][0]["messages"])
    assert "matches the key" in steady["judge"][0]["reply"]
