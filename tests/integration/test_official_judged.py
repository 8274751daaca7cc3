"""Runs under PRBench's and APEX's official protocols, judged by the real mock server.

The expected prompts (their sha256) and figures were computed by running the upstream
code itself on the same files, answers and judge replies (``tests/data/official/
prbench_expected.json``, ``apex_expected.json``; see ``tests/data/importers/README.md``).
The judge fails on some criteria (a 500 on every attempt, unreadable replies): the
official figures count those criteria not met, our own accounting calls the items
judge errors, and a replay of the verdicts (``--judgments``) makes no call.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.formats.loader import load_dataset
from pytest_legaleval.grading._policies import PolicyBook
from pytest_legaleval.grading._prompts import build_messages
from pytest_legaleval.metrics._runfiles import load_run
from pytest_legaleval.pipeline.sources import dataset_paths
from pytest_legaleval.records import Record
from pytest_legaleval.report import render_report
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from .conftest import DATA, read_jsonl, run_dirs, write_jsonl

PRBENCH = json.loads((DATA / "official" / "prbench_expected.json").read_text("utf-8"))
APEX = json.loads((DATA / "official" / "apex_expected.json").read_text("utf-8"))
FINANCE = "benchmarks.prbench.splits.finance.mean"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _judge(server: MockOpenAIServer, replies: dict[str, str | None]) -> None:
    for token, reply in replies.items():
        if reply is None:
            server.add_fault("500", match=token)  # on every attempt: the call fails
        else:
            server.add_reply(token, reply)


def _run(
    pytester: pytest.Pytester, dataset: str, responses: Path, run_dir: str, *extra: str
) -> tuple[pytest.RunResult, list[dict[str, Any]], dict[str, Any]]:
    result = pytester.runpytest(
        "--dataset", dataset, "--responses", str(responses), "--run-dir", run_dir,
        "--no-cache", "-p", "no:randomly", "--retry-delays", "0.001,0.001",
        "--max-attempts", "2", *extra,
    )  # fmt: skip
    assert result.ret in (0, 1), result.stdout.str()[-3000:]
    (run,) = run_dirs(pytester.path / run_dir)
    summary = json.loads((run / "metrics_summary.json").read_text("utf-8"))
    return result, read_jsonl(run / "predictions.jsonl"), summary


def _user_messages(server: MockOpenAIServer) -> list[str]:
    out = []
    for body in server.requests():
        messages = body["messages"]
        assert [m["role"] for m in messages] == ["user"], messages  # no system prompt
        out.append(messages[0]["content"])
    return out


def test_prbench_official_prompts_scores_and_figures_equal_upstream(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    shutil.copytree(DATA / "official" / "prbench", pytester.path / "prbench")
    answers = [{"record_id": f"prbench:{t}", "response": a} for t, a in PRBENCH["answers"].items()]
    responses = write_jsonl(pytester.path / "responses.jsonl", answers)
    splits = PRBENCH["splits"]
    with MockOpenAIServer() as server:
        _judge(server, {f"({k})": v for k, v in PRBENCH["replies"].items()})
        judge = ("--judge-model", "openai/o4-mini", "--judge-base-url", server.base_url)
        result, lines, summary = _run(pytester, "prbench:prbench", responses, "runs", *judge)
        sent = {_sha(text) for text in _user_messages(server)}
        calls = server.stats()["requests"]
    expected_prompts = {sha for split in splits.values() for sha in split["prompt_sha256"]}
    assert sent == expected_prompts  # every judge prompt is the official one, filled in
    assert calls == len(expected_prompts) + 1  # one call each; the failing one twice
    by_task = {line["record_id"].split(":")[1]: line for line in lines}
    for split in splits.values():
        for task, clipped in zip(split["tasks"], split["clipped"], strict=True):
            official = by_task[task]["details"]["official"]
            assert official["score"] == clipped and official["protocol"] == "prbench_official"
    assert by_task["t1"]["outcome"] == "failed" and by_task["t1"]["score"] == 0.4666666666666667
    # a criterion the judge failed on: not met officially, a judge error in ours
    assert {t for t, line in by_task.items() if line["reason"] == "judge_error"} == {
        "t2", "t3", "f1",
    }  # fmt: skip
    assert all(line["score"] is None for t, line in by_task.items() if t != "t1")
    block = summary["benchmarks"]["prbench"]
    for name, split in splits.items():
        figures = block["splits"][name]
        for key in ("mean_clipped", "mean", "std_clipped", "mean_normalized", "std_normalized"):
            assert figures[key] == split[key], (name, key)
        assert figures["n"] == len(split["tasks"])
    assert block["splits"]["finance"]["negative_tasks"] == 1
    assert block["splits"]["finance"]["mean_clipped"] == 0  # max(0, -0.9), as upstream
    assert block["judge_failed_unmet"] == 4 and block["ours"]["judge_errors"] == 3
    assert block["judge"] == {"used": ["openai/o4-mini"], "published": "o4-mini", "differs": False}
    result.stdout.fnmatch_lines(["*official prbench (prbench_official): mean_clipped*"])
    assert "not comparable with the leaderboard" not in result.stdout.str()

    # replay: the recorded verdicts re-scored under the official protocol, no call
    (run,) = run_dirs(pytester.path / "runs")
    shutil.copyfile(run / "predictions.jsonl", pytester.path / "verdicts.jsonl")
    with MockOpenAIServer() as server:
        _, again, replayed = _run(
            pytester, "prbench:prbench", responses, "replayed", "--judgments", "verdicts.jsonl"
        )
        assert server.stats()["requests"] == 0
    for name, split in splits.items():
        assert (
            replayed["benchmarks"]["prbench"]["splits"][name]["mean_clipped"]
            == split["mean_clipped"]
        )
    assert {line["reason"] for line in again} == {line["reason"] for line in lines}
    assert replayed["benchmarks"]["prbench"]["judge"]["differs"] is True  # unknown judge

    gated = pytester.runpytest(
        "--dataset", "prbench:prbench", "--responses", str(responses), "--run-dir", "gated",
        "--judgments", "verdicts.jsonl", "--gate", f"{FINANCE}>=0",
    )  # fmt: skip
    gated.stdout.fnmatch_lines([f"FAILED gate {FINANCE}>=0*"])
    page = render_report(load_run(run))
    assert '<div class="benchmark" data-benchmark="prbench"><h3>PRBench</h3>' in page
    assert 'data-metric="benchmarks.prbench.mean_clipped"' in page
    assert '<table class="official" id="prbench-splits">' in page


def _records(path: str) -> list[Record]:
    entries = load_dataset(dataset_paths([path])).entries
    return [e for e in entries if isinstance(e, Record)]


def _generation_sha(record: Record, book: PolicyBook) -> str:
    messages = build_messages(record, book.get(record.policy_id or ""))
    return _sha(json.dumps(messages, ensure_ascii=False))


def test_the_generation_messages_are_the_official_ones(pytester: pytest.Pytester) -> None:
    shutil.copytree(DATA / "official" / "prbench", pytester.path / "prbench")
    book = PolicyBook()
    sent = {
        record.id.split(":")[1]: _generation_sha(record, book)
        for record in _records(f"prbench:{pytester.path / 'prbench'}")
    }
    for split in PRBENCH["splits"].values():
        assert [sent[t] for t in split["tasks"]] == split["gen_sha256"]
    shutil.copyfile(DATA / "official" / "apex" / "tasks.csv", pytester.path / "tasks.csv")
    apex = _records(f"apex:{pytester.path / 'tasks.csv'}")
    messages = [build_messages(r, book.get(r.policy_id or "")) for r in apex]
    assert all([m["role"] for m in one] == ["user"] for one in messages)
    assert [_sha(one[0]["content"]) for one in messages] == APEX["generation_sha256"]


def test_apex_official_runs_median_skips_and_judge_failures(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    shutil.copyfile(DATA / "official" / "apex" / "tasks.csv", pytester.path / "tasks.csv")
    answers = [
        {"record_id": f"apexv1:{task}", "response": answer, "epoch": epoch}
        for task, runs in APEX["answers"].items()
        for epoch, answer in enumerate(runs)
    ]
    responses = write_jsonl(pytester.path / "responses.jsonl", answers)
    with MockOpenAIServer() as server:
        _judge(server, APEX["replies"])
        result, lines, summary = _run(
            pytester, "apex:tasks.csv", responses, "runs", "--epochs", "3",
            "--judge-model", "openai/judge", "--judge-base-url", server.base_url,
            "--judge-reasks", "1",
        )  # fmt: skip
        sent = [_sha(text) for text in _user_messages(server)]
    assert set(sent) == set(APEX["prompt_sha256"])  # the official prompts, filled in
    for line in lines:
        task = line["record_id"].split(":")[1]
        expected = APEX["percent"][task][line["epoch"]]
        official = line["details"]["official"]
        if expected is None:
            assert line["outcome"] == "skipped" and official["skipped"] is True
        else:
            assert official.get("percent") == expected, (task, line["epoch"], line)
    block = summary["benchmarks"]["apex"]
    assert block["score"] == APEX["score"]
    assert block["n_tasks"] == APEX["n_tasks"] and block["skipped_tasks"] == APEX["skipped"]
    assert block["domains"] == APEX["domains"]
    # a4: one 500 (epoch 2) and one unreadable reply (epoch 1); a5: 3 unreadable, each epoch
    assert block["judge"]["differs"] is True and block["judge_failed_unmet"] == 11
    assert block["ours"]["judge_errors"] == 5
    result.stdout.fnmatch_lines(
        ["*official apex (apex_official): score*not comparable with the leaderboard*"]
    )
    (run,) = run_dirs(pytester.path / "runs")
    shutil.copyfile(run / "predictions.jsonl", pytester.path / "verdicts.jsonl")
    with MockOpenAIServer() as server:
        _, _, replayed = _run(
            pytester, "apex:tasks.csv", responses, "replayed", "--epochs", "3",
            "--judgments", "verdicts.jsonl",
        )  # fmt: skip
        assert server.stats()["requests"] == 0
    again = replayed["benchmarks"]["apex"]
    assert (again["score"], again["domains"], again["skipped_tasks"]) == (
        APEX["score"], APEX["domains"], APEX["skipped"],
    )  # fmt: skip
    assert again["judge_failed_unmet"] == 11


def test_apex_attached_files_follow_the_prompt_as_upstream_lays_them_out(
    pytester: pytest.Pytester,
) -> None:
    import csv

    (pytester.path / "docs").mkdir()
    (pytester.path / "docs" / "lease.txt").write_text("\n  Rent: EUR 900.  \n", "utf-8")
    (pytester.path / "docs" / "notice.txt").write_text("Notice given.", "utf-8")
    with (pytester.path / "train.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Task ID", "Domain", "Prompt", "Rubric JSON", "File Attachments"])
        writer.writerow(["t", "Legal", "Review the lease.", '{"c": {"description": "d"}}',
                         "docs/lease.txt\ndocs/notice.txt"])  # fmt: skip
    (record,) = _records(f"apex:{pytester.path / 'train.csv'}")
    (message,) = build_messages(record, PolicyBook().get("apex_official"))
    from pytest_legaleval.grading.official.apex import generation_prompt

    expected = generation_prompt(
        "Legal", "Review the lease.", [("lease.txt", "\n  Rent: EUR 900.  \n"),
                                       ("notice.txt", "Notice given.")]
    )  # fmt: skip
    assert message == {"role": "user", "content": expected}
    assert expected.endswith(
        "\n\n==== Attached files content: ====\n\n=== lease.txt ===\nRent: EUR 900.\n\n"
        "=== notice.txt ===\nNotice given."
    )
