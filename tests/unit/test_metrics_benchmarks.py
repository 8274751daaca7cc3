"""``metrics._benchmarks``: the official figures of a run, from its prediction lines."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pytest_legaleval.grading._base import GradeRequest, run_inline
from pytest_legaleval.grading._policies import PolicyBook
from pytest_legaleval.grading.official.graders import LegalbenchOfficialGrader
from pytest_legaleval.grading.official.legalbench import evaluate, item_verdict
from pytest_legaleval.grading.official.numeric import numpy_mean
from pytest_legaleval.metrics._benchmarks import benchmark_figures
from pytest_legaleval.records import Choice, Record

POLICY = PolicyBook().get("legalbench_official")


def lb_line(
    task: str, split: str, row: int, answer: str, gold: str, model: str = "m", **extra: Any
) -> dict[str, Any]:
    """A prediction line as the official grader writes it."""
    verdict = item_verdict(task, answer, gold)
    official = {"benchmark": "legalbench", "task": task, "metric": verdict.metric,
                "score": verdict.score, "correct": verdict.correct, **verdict.facts}  # fmt: skip
    line = {
        "record_id": f"legalbench:{task}:{split}:{row:04d}", "model": model,
        "dataset": "legalbench", "policy_id": "legalbench_official", "model_response": answer,
        "score": verdict.score, "reason": "correct" if verdict.correct else "wrong_answer",
        "details": {"official": official}, "metadata": {"task": task, "split": split},
    }  # fmt: skip
    line.update(extra)
    return line


HEARSAY_TEST = [("Yes", "Yes"), ("No", "Yes"), ("No", "No"), ("no.", "No")]
DIVERSITY_TEST = [("Yes", "No"), ("No", "No")]


def _run(model: str = "m") -> list[dict[str, Any]]:
    lines = [lb_line("hearsay", "test", i, a, g, model) for i, (a, g) in enumerate(HEARSAY_TEST, 1)]
    lines += [lb_line("hearsay", "train", 1, "Yes", "No", model)]
    lines += [lb_line("diversity_1", "test", i, a, g, model)
              for i, (a, g) in enumerate(DIVERSITY_TEST, 1)]  # fmt: skip
    lines += [lb_line("abercrombie", "train", 1, "generic", "generic", model)]
    lines += [lb_line("definition_extraction", "train", 1, "authorized", "authorize", model)]
    manual = {"record_id": "legalbench:rule_qa:test:0001", "model": model, "dataset": "legalbench",
              "policy_id": "legalbench_official", "reason": "manual_evaluation", "score": None,
              "details": {"official": {"task": "rule_qa", "metric": "manual"}},
              "metadata": {"task": "rule_qa", "split": "test"}}  # fmt: skip
    failed = {"record_id": "legalbench:hearsay:test:0005", "model": model, "dataset": "legalbench",
              "policy_id": "legalbench_official", "reason": "missing_response", "details": {},
              "metadata": {"task": "hearsay", "split": "test"}}  # fmt: skip
    return [*lines, manual, failed]


def test_legalbench_headline_is_the_mean_of_test_split_tasks() -> None:
    block = benchmark_figures(_run())["legalbench"]
    hearsay = evaluate("hearsay", [a for a, _ in HEARSAY_TEST], [g for _, g in HEARSAY_TEST])
    diversity = evaluate(
        "diversity_1", [a for a, _ in DIVERSITY_TEST], [g for _, g in DIVERSITY_TEST]
    )
    assert (hearsay, diversity) == (0.75, 0.5)
    assert block["tasks"]["hearsay"]["test"] == {
        "metric": "balanced_accuracy",
        "value": 0.75,
        "n": 4,
    }
    assert block["tasks"]["hearsay"]["train"]["value"] == 0.0  # reported, not in the headline
    assert block["score"] == numpy_mean([0.75, 0.5]) and block["n_tasks"] == 2
    assert block["categories"] == {"conclusion": {"score": 0.625, "n_tasks": 2}}
    assert block["train_only"] == {"score": 1.0, "n_tasks": 2}  # abercrombie, definition_extr.
    assert block["manual"] == ["rule_qa"]
    assert block["tasks"]["rule_qa"]["test"] == {
        "metric": "manual", "value": None, "n": 1, "needs_manual_evaluation": True,
    }  # fmt: skip
    assert block["not_scored"] == 1  # the missing response: in no figure
    assert block["protocol"] == "legalbench_official" and block["upstream"]["commit"]
    assert set(block["models"]) == {"m"} and block["models"]["m"]["score"] == block["score"]


def test_a_constant_no_scores_half_on_a_two_label_task_not_its_pooled_rate() -> None:
    golds = ["No"] * 7 + ["Yes"] * 3
    lines = [lb_line("diversity_1", "test", i, "No", g) for i, g in enumerate(golds, 1)]
    value = benchmark_figures(lines)["legalbench"]["tasks"]["diversity_1"]["test"]["value"]
    assert value == 0.5  # pooled accuracy would be 0.7


def test_several_models_have_figures_each_and_none_at_the_top() -> None:
    lines = [*_run("a"), lb_line("hearsay", "test", 1, "No", "Yes", "b")]
    block = benchmark_figures(lines)["legalbench"]
    assert "score" not in block and set(block["models"]) == {"a", "b"}
    assert block["models"]["b"]["tasks"]["hearsay"]["test"]["value"] == 0.0
    assert block["models"]["a"]["score"] == numpy_mean([0.75, 0.5])


def test_epochs_average_each_task_value() -> None:
    first = [lb_line("hearsay", "test", 1, "Yes", "Yes", epoch=0)]
    second = [lb_line("hearsay", "test", 1, "No", "Yes", epoch=1)]
    block = benchmark_figures(first + second)["legalbench"]
    assert block["tasks"]["hearsay"]["test"] == {
        "metric": "balanced_accuracy",
        "value": 0.5,
        "n": 1,
    }
    assert block["epochs"] == 2 and block["score"] == 0.5


def test_the_figures_do_not_depend_on_the_order_of_the_lines() -> None:
    topics = ("benefits", "business", "consumer", "courts", "crime", "divorce", "education")
    lines = _run() + [lb_line(f"learned_hands_{t}", "test", 1, "Yes", "Yes") for t in topics]
    expected = benchmark_figures(lines)
    for seed in range(5):
        random.Random(seed).shuffle(lines)
        assert benchmark_figures(lines) == expected


def test_items_of_another_protocol_are_counted_apart_and_bad_lines_skipped() -> None:
    ours = {"record_id": "legalbench:hearsay:test:0001", "dataset": "legalbench",
            "policy_id": "legalbench", "model": "m"}  # fmt: skip
    lines: list[Any] = [*_run(), ours, "not a line", 7, {"policy_id": 3}]
    block = benchmark_figures(lines)["legalbench"]
    assert block["other_protocols"] == {"legalbench": 1}
    assert benchmark_figures([ours]) == {}  # no official item: no block


def test_an_item_graded_by_another_grader_is_scored_from_its_answer_and_record() -> None:
    record = Record(
        id="legalbench:hearsay:test:0001", dataset="legalbench", task_type="mcq", prompt="Q",
        choices=(Choice("A", "Yes"), Choice("B", "No")), correct_choice_ids=("B",),
        metadata={"policy_id": "legalbench_official", "task": "hearsay", "split": "test"},
    )  # fmt: skip
    line = {"record_id": record.id, "model": "m", "dataset": "legalbench", "details": {}}
    line.update(policy_id="legalbench_official", model_response="(No)")
    assert benchmark_figures([line])["legalbench"]["not_scored"] == 1
    figures = benchmark_figures([line], {record.id: record})["legalbench"]
    assert figures["tasks"]["hearsay"]["test"]["value"] == 1.0
    grade = run_inline(LegalbenchOfficialGrader().grade(GradeRequest(record, "m", "(No)", POLICY)))
    assert grade.details["official"]["gold_label"] == "No" and grade.passed is True


def _lexam_mcq(record_id: str, correct: bool, model: str = "m") -> dict[str, Any]:
    return {"record_id": record_id, "model": model, "dataset": "lexam",
            "policy_id": "lexam_official", "reason": "correct" if correct else "wrong_answer",
            "details": {"official": {"kind": "mcq", "correct": correct}}}  # fmt: skip


def _lexam_open(record_id: str, official: float | None, ours: float | None) -> dict[str, Any]:
    reason = "judge_error" if ours is None else "correct"
    unusable = int(ours is None and official is not None)
    details = {"official": {"kind": "open", "score": official, "unusable_replies": unusable}}
    return {"record_id": record_id, "model": "m", "dataset": "lexam", "policy_id": "lexam_official",
            "reason": reason, "score": ours, "details": details}  # fmt: skip


def test_lexam_mcq_accuracy_per_set_and_open_mean_times_100() -> None:
    lines = [
        _lexam_mcq("lexam:mcq:1", True), _lexam_mcq("lexam:mcq:2", False),
        _lexam_mcq("lexam:mcq:3", True), _lexam_mcq("lexam:mcq32:1", False),
        _lexam_open("lexam:oq:1", 0.3, 0.3), _lexam_open("lexam:oq:2", 0.0, None),
        _lexam_open("lexam:oq:3", 0.7, 0.7), _lexam_open("lexam:oq:4", None, None),
    ]  # fmt: skip
    block = benchmark_figures(lines)["lexam"]
    assert block["mcq"]["accuracy"] == 0.5 and block["mcq"]["n"] == 4
    assert block["mcq"]["by_set"] == {
        "mcq": {"accuracy": 2 / 3, "n": 3}, "mcq32": {"accuracy": 0.0, "n": 1},
    }  # fmt: skip
    # LEXam: np.mean of grade * 100, an unusable reply counted 0 (0.3 * 100 is not 30)
    assert block["open"]["score"] == numpy_mean([0.3 * 100, 0.0, 0.7 * 100])
    assert block["open"]["n"] == 3 and block["open"]["unusable_replies_scored_0"] == 1
    assert block["open"]["ours"] == {
        "graded": 2, "mean_score_x100": numpy_mean([30.000000000000004, 70.0]), "judge_errors": 2,
    }  # fmt: skip
    assert block["not_scored"] == 1  # the failed judge call


@pytest.mark.parametrize("protocol", ["lexam", "lexam_mcq_v1"])
def test_lexam_under_our_protocols_has_no_official_block(protocol: str) -> None:
    line = {**_lexam_mcq("lexam:mcq:1", True), "policy_id": protocol, "details": {}}
    assert benchmark_figures([line]) == {}
