"""Runs under the official protocols: ``--dataset legalbench:PATH`` / ``lexam:PATH`` graded as
the benchmarks grade, per item and per task, and gates on the official figures of the run.

The expected values were computed by LegalBench's own ``evaluation.py``
(``tests/data/official/legalbench_expected.json``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_legaleval.importers import ImportOptions, get_importer
from pytest_legaleval.metrics._benchmarks import benchmark_figures
from pytest_legaleval.metrics._gates import evaluate_gates, parse_gates

from ..extras import needs_import
from .conftest import DATA, read_jsonl, run_dirs, run_eval, write_jsonl

EXPECTED = json.loads((DATA / "official" / "legalbench_expected.json").read_text("utf-8"))
SAMPLES = [DATA / "importers" / "legalbench" / "tasks", DATA / "official" / "legalbench" / "tasks"]


def test_a_legalbench_run_gives_evaluation_py_s_verdicts_figures_and_gates(
    pytester: pytest.Pytester, suite: Path
) -> None:
    tasks = pytester.path / "tasks"
    for root in SAMPLES:
        shutil.copytree(root, tasks, dirs_exist_ok=True)
    # one answer set per task and split: the fourth, whose forms vary item by item
    chosen = {}
    for case in EXPECTED["cases"]:
        key = (case["task"], case["split"])
        if case["sample"] != "invented" and key not in chosen:
            chosen[key] = [c for c in EXPECTED["cases"] if (c["task"], c["split"]) == key][3]
    answers = []
    for (task, split), case in chosen.items():
        for row, generation in enumerate(case["generations"], start=1):
            answers.append({"record_id": f"legalbench:{task}:{split}:{row:04d}",
                            "response": generation})  # fmt: skip
    responses = write_jsonl(pytester.path / "responses.jsonl", answers)
    run_eval(pytester, Path("legalbench:tasks"), responses, "-p", "no:randomly")
    (run,) = run_dirs(pytester.path / "runs")
    lines = [p for p in read_jsonl(run / "predictions.jsonl")
             if p["record_id"] in {a["record_id"] for a in answers}]  # fmt: skip
    by_id = {p["record_id"]: p for p in lines}
    for (task, split), case in chosen.items():
        for row, expected in enumerate(case["item_scores"], start=1):
            line = by_id[f"legalbench:{task}:{split}:{row:04d}"]
            assert line["policy_id"] == "legalbench_official"
            if expected is None:
                assert line["outcome"] == "skipped" and line["reason"] == "manual_evaluation"
            else:
                assert (line["score"], line["passed"]) == (expected, expected == 1.0), line
    figures = benchmark_figures(lines)["legalbench"]
    for (task, split), case in chosen.items():
        value = figures["tasks"][task][split]["value"]
        assert value == case["figure"], (task, split)
    assert figures["manual"] == ["rule_qa"] and figures["n_tasks"] == 1  # hearsay's test split
    # the official figures gate the run: computed from its rows while its summary lacks them
    hearsay = chosen[("hearsay", "train")]["figure"]
    texts = [f"benchmarks.legalbench.tasks.hearsay.train.value>={hearsay}",
             "benchmarks.legalbench.score>=1.01"]  # fmt: skip
    summary = json.loads((run / "metrics_summary.json").read_text(encoding="utf-8"))
    results = evaluate_gates(parse_gates(texts), read_jsonl(run / "predictions.jsonl"),
                             summary=summary)  # fmt: skip
    assert [r.passed for r in results] == [True, False]
    assert results[0].value == hearsay and results[1].value == figures["score"]


@needs_import
def test_a_lexam_run_reads_the_last_marker(pytester: pytest.Pytester, suite: Path) -> None:
    sheet = pytester.path / "MCQs_test_perturbation.xlsx"
    shutil.copyfile(DATA / "importers" / "lexam" / "MCQs_test_perturbation.xlsx", sheet)
    rows = [
        row.record
        for row in get_importer("lexam").rows([sheet], ImportOptions())
        if row.record is not None
    ]
    answers = []
    for number, record in enumerate(rows):
        gold = record["metadata"]["gold_index"]
        wide = len(record["choices"]) > 26
        right = str(gold + 1) if wide else chr(65 + gold)
        wrong = str(gold + 2) if wide else chr(65 + (gold + 1) % len(record["choices"]))
        response = (f"Reasoning ###{wrong}###.\n Correct Answer: ###{right}### "
                    if number % 2 == 0 else f"###{right}###, no: ###{wrong}###")  # fmt: skip
        answers.append({"record_id": record["id"], "response": response})
    responses = write_jsonl(pytester.path / "responses.jsonl", answers)
    result = run_eval(pytester, Path("lexam:MCQs_test_perturbation.xlsx"), responses)
    assert result.parseoutcomes() == {"passed": 8, "failed": 8}
    (run,) = run_dirs(pytester.path / "runs")
    lines = read_jsonl(run / "predictions.jsonl")
    assert {p["record_id"]: p["passed"] for p in lines} == {
        a["record_id"]: n % 2 == 0 for n, a in enumerate(answers)
    }
    assert all(p["policy_id"] == "lexam_official" for p in lines)
    figures = benchmark_figures(lines)["lexam"]["mcq"]
    assert figures["accuracy"] == 0.5 and figures["by_set"].keys() == {
        "mcq4", "mcq8", "mcq16", "mcq32",
    }  # fmt: skip
    (gate,) = evaluate_gates(parse_gates(["benchmarks.lexam.mcq.accuracy==0.5"]), lines)
    assert gate.passed is True
    # The run's own metrics carry the official figure, a gate reads it, the terminal says it.
    summary = json.loads((run / "metrics_summary.json").read_text(encoding="utf-8"))
    assert summary["benchmarks"]["lexam"]["mcq"]["accuracy"] == 0.5
    assert "official lexam (lexam_official): MCQ accuracy 0.5000 (n=16)" in result.stdout.str()
    gated = run_eval(
        pytester, Path("lexam:MCQs_test_perturbation.xlsx"), responses,
        "--gate", "benchmarks.lexam.mcq.accuracy>=0.6",
    )  # fmt: skip
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
    gated.stdout.fnmatch_lines(["FAILED gate benchmarks.lexam.mcq.accuracy>=0.6*"])


def test_protocol_picks_our_own_protocol_for_a_dataset_import(
    pytester: pytest.Pytester, suite: Path
) -> None:
    sheet = pytester.path / "MCQs_test_perturbation.xlsx"
    shutil.copyfile(DATA / "importers" / "lexam" / "MCQs_test_perturbation.xlsx", sheet)
    rows = [
        row.record
        for row in get_importer("lexam").rows([sheet], ImportOptions())
        if row.record is not None
    ]
    responses = write_jsonl(
        pytester.path / "responses.jsonl",
        [{"record_id": r["id"], "response": "Answer: A"} for r in rows],
    )
    result = run_eval(
        pytester, Path("lexam:MCQs_test_perturbation.xlsx"), responses, "--protocol", "lexam"
    )
    assert "INTERNALERROR" not in result.stdout.str()
    (run,) = run_dirs(pytester.path / "runs")
    lines = read_jsonl(run / "predictions.jsonl")
    assert lines and {p["policy_id"] for p in lines} == {"lexam"}
    summary = json.loads((run / "metrics_summary.json").read_text(encoding="utf-8"))
    assert "benchmarks" not in summary  # no item under the official protocol
    refused = run_eval(
        pytester, Path("lexam:MCQs_test_perturbation.xlsx"), responses, "--protocol", "nope"
    )
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*--protocol 'nope' is not a protocol of lexam*"])
