"""PRBench's and APEX's own protocols: prompts, readers, task scores and headline figures.

Expected values were produced by running the upstream functions themselves
(scaleapi/PRBench@070abdf ``util.py``; Mercor-Intelligence/apex-evals@fc4ca76
``grading/executor.py`` and ``examples/run_with_hf.py``) on the inputs below; NumPy and the
standard library's ``statistics`` check the headline figures independently.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from pathlib import Path

import numpy as np
import pytest

from pytest_legaleval.grading.official import apex as ax
from pytest_legaleval.grading.official import prbench as pr
from pytest_legaleval.importers.base import ImportOptions
from pytest_legaleval.importers.registry import get_importer
from pytest_legaleval.metrics._benchmarks import benchmark_figures

DATA = Path(__file__).parents[1] / "data"
APEX = json.loads((DATA / "official" / "apex_expected.json").read_text("utf-8"))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_official_prompts_are_upstream_s_bytes() -> None:
    assert _sha(pr.GRADER_TEMPLATE) == (
        "0821305c3d82d01fe4e8cc4e98c78761b71416a5c221d07527e97a74ec488708"
    )
    assert _sha(ax.GRADING_PROMPT) == (
        "0f126c1c033b5b409a49e36c564de5eca96f27e0b5103ce66a2edd581b638fbf"
    )
    assert _sha(ax.RESPONSE_GENERATION_PROMPT) == (
        "277a118270a6c32a5a11d44a7c367333b42e4babc06b770e8b2aa8a73060d876"
    )


# (reply, what get_criteria_met returns), from the upstream function
PRBENCH_REPLIES = [
    ('```json\n{\n  "explanation": "x",\n  "criteria_met": true\n}\n```', "true"),
    ('{"criteria_met": false}', "false"),
    ('{"criteria_met": "TRUE"}', "true"),
    ('{"criteria_met": true, "note": false}', "false"),
    ('{"criteria_met": maybe}', "false"),
    ('{"criteria_met":\ntrue}', "false"),
    ("criteria_met: true", "true"),
    ("The answer is true.", "true"),
    ("", "false"),
    ('{"criteria_met": false} then later "criteria_met": true', "true"),
    ('"criteria_met": true\n"criteria_met": false', "false"),
    ("N/A", "false"),
    ('{"criteria_met": "untrue"}', "true"),
]


@pytest.mark.parametrize(("reply", "upstream"), PRBENCH_REPLIES)
def test_prbench_reads_a_reply_as_get_criteria_met(reply: str, upstream: str) -> None:
    assert pr.criteria_met(reply).met is (upstream == "true")


@pytest.mark.parametrize(
    ("reply", "readable"),
    [('{"criteria_met": false}', True), ('"criteria_met": true', True),
     ('{"criteria_met": maybe}', False), ('{"criteria_met":\ntrue}', False),
     ('{"criteria_met": true, "note": false}', False)],
)  # fmt: skip
def test_prbench_our_accounting_calls_only_one_word_a_verdict(reply: str, readable: bool) -> None:
    # ours: a reply upstream scores not met for want of true or false is a judge error
    assert pr.criteria_met(reply).readable is readable


def test_a_failed_call_is_not_met_and_not_readable() -> None:
    assert pr.criteria_met(None) == pr.CriterionVerdict(False, False, "the judge call failed")
    assert ax.criterion_verdict(None).met is False


# (reply, met, upstream got a verdict), from parse_llm_json_response + the autorating rule
APEX_REPLIES = [
    ('{"result": 1, "reason": "ok"}', True, True),
    ('```json\n{"result": 0, "reason": "no"}\n```', False, True),
    ('{"result": "1"}', True, True),
    ('{"result": true}', True, True),
    ('{"result": 1.0}', True, True),
    ('{"result": "yes"}', False, True),
    ('{"result": 2}', False, True),
    ('{"result": null}', False, False),
    ('{"score": 1}', False, False),
    ("no json", False, False),
    ('"result": 1', False, False),
    ('[{"result": 1}]', True, True),
    ('["result"]', False, False),
    ('"result"', False, False),
    ("42", False, False),
    ('{"result": 1, "reason": "unterminated}', True, True),
    ('{"a": {"result": 0}} {"result": 1}', True, True),
    ('}{"result": 1}', False, False),
    ('{"result": 0} {"result": 1}', False, True),
    ('  ```\n{"result": 1}\n```  ', True, True),
    ('{"result": NaN}', False, True),
    ('{"result": [1]}', False, True),
    ('{"result":1}x{"result":0', True, True),
]


@pytest.mark.parametrize(("reply", "met", "readable"), APEX_REPLIES)
def test_apex_reads_a_reply_as_its_grader(reply: str, met: bool, readable: bool) -> None:
    verdict = ax.criterion_verdict(reply)
    assert (verdict.met, verdict.readable) == (met, readable)


# (weights, met, points, Σ w·met / Σ w⁺, normalized), from util.py
PRBENCH_TASKS = [
    ([10, 5, -8], [False, True, True], -3, -0.2, 0.21739130434782608),
    ([10, 5, -8], [False, False, False], 0, 0.0, 0.34782608695652173),
    ([3, 3, 3], [True, True, True], 9, 1.0, 1.0),
    ([7.5, 2.5, -1.5, -0.5], [True, False, True, True], 5.5, 0.55, 0.625),
    ([1, 2, -10], [False, False, True], -10, -3.3333333333333335, 0.0),
    ([0.1, 0.2, 0.3], [True, True, True], 0.6000000000000001, 1.0, 1.0),
]


@pytest.mark.parametrize(("weights", "met", "points", "clipped", "normalized"), PRBENCH_TASKS)
def test_prbench_task_scores_equal_util_py(
    weights: list[float], met: list[bool], points: float, clipped: float, normalized: float
) -> None:
    score = pr.task_score(weights, met)
    assert (score.points, score.clipped, score.normalized) == (points, clipped, normalized)


def test_prbench_refuses_a_rubric_without_a_positive_weight() -> None:
    with pytest.raises(pr.PrbenchScoringError, match="positive weight"):
        pr.task_score([-1, -2], [True, False])


def test_the_weight_is_the_one_weight_class_names() -> None:
    two = {"weight_class": "critically detrimental", "critically_detrimental_weight": -8,
           "critically_important_weight": 8}  # fmt: skip
    assert pr.weight_of(two) == -8
    with pytest.raises(pr.PrbenchScoringError):
        pr.weight_of({"weight_class": "important", "critically_important_weight": 8})


@pytest.mark.parametrize(
    "values",
    [[0.5], [-0.9, 0.2], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, -0.25],
     [i / 7 - 0.3 for i in range(300)]],
)  # fmt: skip
def test_prbench_headline_is_numpy_s_mean_and_std_bit_for_bit(values: list[float]) -> None:
    figures = pr.split_figures(values, values)
    assert figures["mean"] == float(np.mean(values))
    assert figures["mean_clipped"] == max(0, float(np.mean(values)))  # evals.py@d6a7042
    assert figures["std_clipped"] == float(np.std(values)) == figures["std_normalized"]
    assert figures["n"] == len(values)


def test_thinking_tags_and_the_conversation_as_upstream_writes_them() -> None:
    removed = [pr.remove_thinking_tags(t) for t in [
        "<THINK>a</think>b", "x<reasoning>\ny</reasoning>\n\n\n\nz", "<think>open only",
        "  <reason>r</reason>  keep  "]]  # fmt: skip
    assert removed == ["b", "x\n\nz", "<think>open only", "keep"]  # util.py's values
    convo = pr.conversation_text([("user", "a\n"), ("assistant", None), ("user", " b ")])
    assert convo == "user: a\n\nassistant: N/A\nuser:  b"


def test_prbench_import_keeps_hard_splits_and_upstream_turns(tmp_path: Path) -> None:
    folder = DATA / "official" / "prbench"
    files = [folder / "legal.jsonl", folder / "legal_hard.jsonl", folder / "finance.jsonl"]
    rows = list(get_importer("prbench").rows(files, ImportOptions()))
    records = {r.record["id"]: r.record for r in rows if r.record}
    assert records["prbench:t1"]["metadata"]["split_positions"] == {"legal": 0, "legal_hard": 1}
    assert {k: v["metadata"]["splits"] for k, v in records.items()} == {
        "prbench:t1": ["legal", "legal_hard"], "prbench:t2": ["legal"],
        "prbench:t3": ["legal", "legal_hard"], "prbench:f1": ["finance"],
    }  # fmt: skip
    t1 = records["prbench:t1"]
    assert t1["metadata"]["policy_id"] == "prbench_official"
    assert t1["messages"][0]["content"].startswith("Reference Text 0:\nLease § 4")
    assert t1["messages"][0]["content"].endswith("attached lease?\n")  # not stripped
    assert [c["weight"] for c in t1["rubric"]] == [10, 5, -8]
    lbr = list(get_importer("prbench").rows(files[:1], ImportOptions(protocol="lbr")))
    assert {r.record["metadata"]["policy_id"] for r in lbr if r.record} == {"prbench_v1"}
    hard = list(get_importer("prbench").rows(files, ImportOptions(split="legal_hard")))
    assert {r.record["id"] for r in hard if r.record} == {"prbench:t1", "prbench:t3"}


def test_prbench_parquet_rows_get_no_reference_blocks_as_upstream_reads_them() -> None:
    # pandas gives upstream's process_reference_texts an array, not a list, for Parquet
    weights = {"weight_class": "important", "important_weight": 1}
    row = {"task": "p", "prompt_0": "Q?", "reference_texts_0": ["R"],
           "rubric": [{"id": "c", "title": "T", "annotations": weights}]}  # fmt: skip
    from pytest_legaleval.importers.prbench import record

    assert (
        record(row, "prbench_official", Path("x.jsonl"))["prompt"] == "Reference Text 0:\nR\n\nQ?"
    )
    assert record(row, "prbench_official", Path("x.parquet"))["prompt"] == "Q?"


def test_apex_import_writes_the_official_generation_prompt() -> None:
    rows = list(get_importer("apex").rows([DATA / "official" / "apex" / "tasks.csv"],
                                          ImportOptions()))  # fmt: skip
    records = [r.record for r in rows if r.record]
    assert [_sha(r["prompt"]) for r in records] == APEX["generation_sha256"]
    assert {r["metadata"]["policy_id"] for r in records} == {"apex_official"}
    lbr = list(get_importer("apex").rows([DATA / "official" / "apex" / "tasks.csv"],
                                         ImportOptions(protocol="lbr")))  # fmt: skip
    assert {r.record["metadata"]["policy_id"] for r in lbr if r.record} == {"apexv1_extended_v1"}


def test_apex_generation_prompt_with_files_and_judge_prompt() -> None:
    text = ax.generation_prompt("Legal", "Do {{Domain}} it", [("a.pdf", " one \n"), ("b", "two")])
    assert text.startswith(ax.RESPONSE_GENERATION_PROMPT.replace("{{Domain}}", "Legal")[:50])
    assert "• Task Prompt: Do {{Domain}} it\n" in text  # Domain first, then Prompt
    assert text.endswith(
        "\n\n==== Attached files content: ====\n\n=== a.pdf ===\none\n\n=== b ===\ntwo"
    )
    # a blank file still has its "=== name ===" line, so the block is there (as upstream)
    assert ax.generation_prompt("L", "P", [("a", "  ")]).endswith("\n\n=== a ===\n")
    prompt = ax.judge_prompt({"description": "Quotes {x}", "weight": "w"}, "Answer {solution}")
    assert (
        "Criterion to evaluate: Quotes {x}\n\nResponse to evaluate: Answer {solution}\n" in prompt
    )
    assert '{\n    "result": <1 or 0>,' in prompt


@pytest.mark.parametrize(
    ("answer", "skipped"),
    [("", True), ("  \n", True), ("Error: timeout", True), (" error:x", True),
     ("An error: here", False), ("ok", False)],
)  # fmt: skip
def test_apex_skips_what_upstream_skips(answer: str, skipped: bool) -> None:
    assert ax.answer_skipped(answer) is skipped


def test_apex_percent_is_rounded_as_upstream_rounds_it() -> None:
    assert ax.task_percent([True, True, False]) == 66.67
    assert ax.task_percent([True] + [False] * 6) == 14.29
    assert ax.task_percent([True, False]) == 50.0


def _apex_line(task: str, epoch: int, percent: float | None, domain: str, model: str = "m") -> dict:
    official = {"percent": percent, "domain": domain, "judge_models": ["gemini/gemini-2.5-flash"]}
    if percent is None:
        official["skipped"] = True
    return {"record_id": f"apexv1:{task}", "model": model, "epoch": epoch,
            "policy_id": "apex_official", "details": {"official": official}}  # fmt: skip


def test_apex_headline_is_the_mean_of_medians_of_the_tasks_not_left_out() -> None:
    runs = {"a": [66.67, 33.33, 100.0], "b": [42.86, 42.86, 50.0], "c": [10.0, 20.0, 30.0],
            "d": [100.0, None, 100.0]}  # fmt: skip
    domains = {"a": "Legal", "b": "Finance", "c": "Legal", "d": "Legal"}
    lines = [_apex_line(t, e, p, domains[t]) for t, ps in runs.items() for e, p in enumerate(ps)]
    lines += [_apex_line("c", 0, None, "Legal", model="other")]  # that model's answer only
    block = benchmark_figures(lines)["apex"]["models"]["m"]
    medians = [statistics.median(runs[t]) for t in ("a", "b", "c")]  # d is left out
    assert block["score"] == statistics.mean(medians)
    assert block["n_tasks"] == 3 and block["skipped_tasks"] == 1
    legal = [statistics.median(runs[t]) for t in ("a", "c")]
    assert block["domains"]["Legal"] == {"score": statistics.mean(legal), "n_tasks": 2}
    assert block["judge"] == {"used": ["gemini/gemini-2.5-flash"], "published": "gemini-2.5-flash",
                              "differs": False}  # fmt: skip
    other = benchmark_figures(lines)["apex"]["models"]["other"]
    assert (other["n_tasks"], other["skipped_tasks"], other["score"]) == (0, 1, None)


def test_prbench_figures_average_tasks_in_file_order_per_split() -> None:
    # 0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1 in floating point: the order must be the file's
    scores = [0.3, 0.7, 0.2, 0.1]
    hard = {0: 2, 2: 1, 3: 0}  # the Hard file lists t3, t2, t0
    lines = [
        {"record_id": f"prbench:t{i}", "model": "m", "policy_id": "prbench_official",
         "details": {"official": {
             "score": s, "normalized": s / 2, "order": 3 - i,
             "splits": ["legal", "legal_hard"] if i in hard else ["legal"],
             "positions": {"legal": 3 - i, **({"legal_hard": hard[i]} if i in hard else {})},
         }}}
        for i, s in enumerate(scores)
    ]  # fmt: skip
    block = benchmark_figures(lines)["prbench"]
    in_file_order = scores[::-1]
    assert block["mean"] == block["mean_clipped"] == float(np.mean(in_file_order))
    assert block["std_normalized"] == float(np.std([s / 2 for s in in_file_order]))
    hard_order = [scores[3], scores[2], scores[0]]
    assert block["splits"]["legal_hard"]["mean"] == float(np.mean(hard_order))
    assert float(np.mean(hard_order)) != float(np.mean(hard_order[::-1]))
    assert block["splits"]["legal_hard"]["n"] == 3 and block["splits"]["legal"]["n"] == 4
    assert block["negative_tasks"] == 0
    assert block["judge"]["differs"] is True  # no judge recorded: not the published one


def test_rows_the_official_code_cannot_score_are_refused_with_the_reason() -> None:
    from pytest_legaleval.importers import apex, prbench
    from pytest_legaleval.importers.base import RowError

    rubric = json.dumps({"a": {"description": "d"}, "b": "not an object"})
    with pytest.raises(RowError, match="APEX skips the task"):
        apex.record({"Task ID": "x", "Prompt": "P", "Rubric JSON": rubric}, None, "apex_official")
    criterion = {"id": "c", "title": "T", "annotations": {"weight_class": "important"}}
    no_weight = {"task": "p", "prompt_0": "Q?", "rubric": [criterion]}
    with pytest.raises(RowError, match="important_weight is not a number"):
        prbench.record(no_weight, "prbench_official")
    assert prbench.record(no_weight, "lbr")["rubric"][0]["id"] == "c"  # LBR's reading keeps it
