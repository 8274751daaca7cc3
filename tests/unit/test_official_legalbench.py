"""``legalbench_official``: LegalBench's own scoring, item by item and task by task.

The expected values in ``tests/data/official/legalbench_expected.json`` were computed by
LegalBench's own ``evaluation.py`` (commit ce48244) on answer forms written for these
tests (``tests/data/official/make_expected.py``); the upstream code is not a dependency.
Reference libraries (scikit-learn, NumPy, NLTK: the ``[dev]`` extra) check the
estimators on many more inputs.
"""

from __future__ import annotations

import csv
import json
import math
import warnings
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_legaleval.formats import load_dataset
from pytest_legaleval.grading._base import GradeRequest, run_inline
from pytest_legaleval.grading._policies import PolicyBook
from pytest_legaleval.grading.official import legalbench as lb
from pytest_legaleval.grading.official.graders import LegalbenchOfficialGrader
from pytest_legaleval.grading.official.legalbench_tasks import (
    BALANCED_ACCURACY_TASKS,
    CATEGORIES,
    category_of,
    metric_of,
)
from pytest_legaleval.grading.official.numeric import numpy_mean
from pytest_legaleval.grading.official.porter import porter_stem
from pytest_legaleval.importers import ImportOptions, run_import
from pytest_legaleval.metrics._benchmarks import benchmark_figures
from pytest_legaleval.records import Record

from ..extras import import_or_skip

DATA = Path(__file__).resolve().parents[1] / "data"
EXPECTED = json.loads((DATA / "official" / "legalbench_expected.json").read_text("utf-8"))
SAMPLES = {
    "importers": DATA / "importers" / "legalbench" / "tasks",
    "official": DATA / "official" / "legalbench" / "tasks",
}
REFERENCE = "a reference library of the [dev] extra: pip install 'pytest-legaleval[dev]'"
POLICY = PolicyBook().get("legalbench_official")
CASES = EXPECTED["cases"]


def _case_id(case: dict[str, Any]) -> str:
    return f"{case['task']}-{case['split']}-{CASES.index(case)}"


# -- the upstream values, item by item and per task --------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_every_item_and_every_task_figure_equals_evaluation_py(case: dict[str, Any]) -> None:
    task, gens, answers = case["task"], case["generations"], case["answers"]
    if case["raises"] is not None:  # rule_qa (graded by hand) and a task upstream lacks
        with pytest.raises(lb.OfficialScoringError):
            lb.evaluate(task, gens, answers)
        assert ("manual" in case["raises"]) is (metric_of(task) == "manual")
        return
    assert lb.evaluate(task, gens, answers) == case["figure"]  # equal, not close
    for generation, answer, expected in zip(gens, answers, case["item_scores"], strict=True):
        verdict = lb.item_verdict(task, generation, answer)
        assert verdict.score == expected, (generation, answer)
        assert verdict.correct is (expected == 1.0)


def test_the_fixture_covers_every_metric_and_many_answer_forms() -> None:
    metrics = Counter(metric_of(case["task"]) for case in CASES)
    assert set(metrics) == {
        "balanced_accuracy", "sara_numeric", "citation_open", "definition_extraction",
        "ssla_f1", "manual", None,
    }  # fmt: skip
    generations = {g for case in CASES for g in case["generations"]}
    forms = ("", "yes", "YES", "Yes.", "No,", "(Yes)", "[No]", '"Yes"', "“Yes”", "Answer: Yes",
             "The answer is No.", "B", "N/A", "٣٤٥", "Yes\x00", "$1,050.00 is owed")  # fmt: skip
    for form in forms:
        assert form in generations, form
    # the figures are not all trivial: a task below, one at and one between the extremes
    figures = [case["figure"] for case in CASES if case["figure"] is not None]
    assert 0.0 in figures and 1.0 in figures and any(0 < f < 1 for f in figures)


# -- the grader on imported records ----------------------------------------------------------


@pytest.fixture(scope="module")
def official_records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Record]:
    out = tmp_path_factory.mktemp("lb") / "lb.jsonl"
    summary = run_import("legalbench", list(SAMPLES.values()), out, options=ImportOptions())
    assert summary.failed == 0
    loaded = load_dataset([str(out)])
    assert not loaded.errors
    return {record.id: record for record in loaded.records}


def test_the_grader_on_imported_records_gives_the_upstream_verdicts_and_figures(
    official_records: dict[str, Record],
) -> None:
    grader = LegalbenchOfficialGrader()
    checked = 0
    for case in CASES:
        if case["sample"] == "invented":
            continue
        lines = []
        for row, generation in enumerate(case["generations"], start=1):
            record = official_records[f"legalbench:{case['task']}:{case['split']}:{row:04d}"]
            assert record.policy_id == "legalbench_official"
            grade = run_inline(grader.grade(GradeRequest(record, "m", generation, POLICY)))
            expected = case["item_scores"][row - 1]
            if expected is None:  # graded by hand upstream: no verdict, never a 0
                assert (grade.outcome, grade.reason, grade.score) == (
                    "skipped", "manual_evaluation", None,
                )  # fmt: skip
            else:
                assert grade.score == expected and grade.passed is (expected == 1.0)
            lines.append(
                {"record_id": record.id, "model": "m", "policy_id": record.policy_id,
                 "dataset": "legalbench", "reason": grade.reason, "score": grade.score,
                 "details": dict(grade.details), "metadata": dict(record.metadata)}
            )  # fmt: skip
            checked += 1
        figure = benchmark_figures(lines)["legalbench"]["tasks"][case["task"]][case["split"]]
        if case["figure"] is None:
            assert figure == {
                "metric": "manual", "value": None, "n": len(lines), "needs_manual_evaluation": True,
            }  # fmt: skip
        else:
            assert figure == {
                "metric": metric_of(case["task"]), "value": case["figure"], "n": len(lines),
            }  # fmt: skip
    assert checked == sum(len(c["generations"]) for c in CASES if c["sample"] != "invented")


def test_the_gold_is_the_tsv_label_also_for_maud_option_tasks(
    official_records: dict[str, Record],
) -> None:
    maud = official_records["legalbench:maud_tail_period_length:train:0001"]
    assert maud.metadata["gold_label"] == "C"  # the TSV's answer: the option letter
    texts = {c.id: c.text for c in maud.choices}
    assert texts[maud.correct_choice_ids[0]] == "within 12 months"
    grader = LegalbenchOfficialGrader()
    assert run_inline(grader.grade(GradeRequest(maud, "m", "C", POLICY))).passed is True
    assert (
        run_inline(grader.grade(GradeRequest(maud, "m", "within 12 months", POLICY))).passed
        is False
    )


def test_official_prompts_are_base_prompt_txt_filled_as_upstream(
    official_records: dict[str, Record],
) -> None:
    folder = SAMPLES["importers"] / "hearsay"
    base = (folder / "base_prompt.txt").read_text(encoding="utf-8")
    with (folder / "train.tsv").open(encoding="utf-8", newline="") as handle:
        row = list(csv.DictReader(handle, delimiter="\t"))[1]
    record = official_records["legalbench:hearsay:train:0002"]
    assert record.prompt == base.replace("{{text}}", row["text"])  # demonstrations kept
    assert record.metadata["prompt_template"] == "base_prompt.txt as given"


# -- normalization, metrics and the task facts ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("Yes", "yes"), (" (Yes) ", "yes"), ("[No].", "no"), ('"Yes"', "yes"), ("Yes?", "yes"),
        ("Answer: Yes", "answer yes"), ("“Yes”", "“yes”"), ("B)", "b"), ("", ""), ("\n", ""),
        ("de facto merger,mere continuation", "de facto mergermere continuation"),
        ("  A  B  ", "a  b"), ("Yes\x00", "yes\x00"),
    ],
)  # fmt: skip
def test_normalize_strips_ascii_punctuation_then_space_then_case(
    text: str, normalized: str
) -> None:
    assert lb.normalize(text) == normalized


def test_metric_order_and_categories_follow_upstream() -> None:
    assert metric_of("successor_liability") == "balanced_accuracy"  # listed first upstream
    assert metric_of("ssla_individual_defendants") == "ssla_f1"
    assert metric_of("rule_qa") == "manual" and metric_of("nope") is None
    assert (
        len(BALANCED_ACCURACY_TASKS) == 156
        and "intra_rule_distinguishing" in BALANCED_ACCURACY_TASKS
    )
    sizes = {name: len(tasks) for name, tasks in CATEGORIES.items()}
    assert sizes == {
        "issue": 17,
        "rule": 5,
        "conclusion": 12,
        "interpretation": 118,
        "rhetoric": 10,
    }
    everyone = [task for tasks in CATEGORIES.values() for task in tasks]
    assert len(everyone) == len(set(everyone)) == 162
    assert category_of("hearsay") == "conclusion" and category_of("nope") is None


def _brute_balanced_accuracy(pairs: list[tuple[str, str]]) -> Fraction:
    labels = {gold for gold, _ in pairs}
    recalls = [
        Fraction(sum(g == p == label for g, p in pairs), sum(g == label for g, _ in pairs))
        for label in labels
    ]
    return sum(recalls, Fraction(0)) / len(recalls)


labels = st.sampled_from(["yes", "no", "maybe", "", "a\x00", "z", "generic", "x y"])


@given(st.lists(st.tuples(labels, labels), min_size=1, max_size=40))
def test_balanced_accuracy_is_the_mean_recall_of_the_gold_labels(
    pairs: list[tuple[str, str]],
) -> None:
    value = lb.balanced_accuracy(pairs)
    assert math.isclose(value, float(_brute_balanced_accuracy(pairs)), rel_tol=1e-12)


@settings(max_examples=150)
@given(st.lists(st.tuples(labels, labels), min_size=1, max_size=300))
def test_balanced_accuracy_equals_scikit_learn_bit_for_bit(pairs: list[tuple[str, str]]) -> None:
    sklearn = import_or_skip("sklearn.metrics", REFERENCE)
    gold = [g for g, _ in pairs]
    predicted = [p for _, p in pairs]
    with warnings.catch_warnings():  # it warns when a prediction is no gold label
        warnings.simplefilter("ignore")
        expected = float(sklearn.balanced_accuracy_score(gold, predicted))
    # NumPy strings drop trailing NULs: the item verdicts compare labels the same way
    verdicts = [lb.item_verdict("hearsay", p, g).facts for g, p in pairs]
    assert lb.task_score("balanced_accuracy", verdicts) == expected


@settings(max_examples=300)
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=600))
def test_numpy_mean_equals_numpy_bit_for_bit(values: list[float]) -> None:
    numpy = import_or_skip("numpy", REFERENCE)
    assert numpy_mean(values) == float(numpy.mean(numpy.array(values, dtype=numpy.float64)))


def test_numpy_mean_is_pairwise_not_left_to_right() -> None:
    values = [0.1] * 10 + [1e16, 1.0, -1e16] + [0.3] * 120
    assert numpy_mean([0.5]) == 0.5 and numpy_mean([0.1, 0.2]) == (0.1 + 0.2) / 2
    assert numpy_mean(values) != sum(values) / len(values)  # the order of additions shows
    with pytest.raises(ValueError):
        numpy_mean([])


WORDS = st.text(st.sampled_from("aeiouybcdlmnrstwxz"), max_size=14)


@settings(max_examples=1000)
@given(st.one_of(WORDS, st.builds(lambda a, b: f"{a} {b}", WORDS, WORDS), st.text(max_size=12)))
def test_porter_stem_equals_nltk(word: str) -> None:
    porter = import_or_skip("nltk.stem.porter", REFERENCE)
    assert porter_stem(word) == porter.PorterStemmer().stem(word)


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("caresses", "caress"), ("ponies", "poni"), ("ties", "tie"), ("relational", "relat"),
        ("conditional", "condit"), ("hopping", "hop"), ("filing", "file"), ("happy", "happi"),
        ("dying", "die"), ("hawkers and peddlers", "hawkers and peddl"), ("by", "by"),
        ("generalization", "gener"), ("controlling", "control"), ("authorized", "author"),
    ],
)  # fmt: skip
def test_porter_stem_known_words(word: str, stem: str) -> None:
    assert porter_stem(word) == stem


def test_sara_numeric_reads_the_first_number_and_never_crashes() -> None:
    assert lb.item_verdict("sara_numeric", "It is $1,050.00.", "$1000").correct is False  # 105000
    assert lb.item_verdict("sara_numeric", "1,050 dollars", "$1000").correct is True
    # |p / (0 + 0.1) - 1| < 0.1 holds for no whole p: an answer of $0 is never right
    assert lb.item_verdict("sara_numeric", "nothing", "$0").correct is False
    assert lb.item_verdict("sara_numeric", "$0", "$0").correct is False
    huge = lb.item_verdict("sara_numeric", "9" * 400, "$10")  # upstream: OverflowError
    assert huge.correct is False and "OverflowError" in huge.facts["unreadable_number"]
    with pytest.raises(lb.OfficialScoringError, match="not a whole number"):
        lb.item_verdict("sara_numeric", "1", "about ten")


def test_ssla_counts_every_unused_generation_part_after_each_answer_part() -> None:
    verdict = lb.item_verdict("ssla_plaintiff", "A,A,B,D", "A,B,C")
    # A: tp (one A used), 3 left -> fp 3; B: tp, 2 left -> fp 2; C: fn, 2 left -> fp 2
    assert verdict.facts == {"tp": 2, "fp": 7, "fn": 1}
    assert verdict.score == 2 * 2 / (2 * 2 + 7 + 1) and verdict.correct is False
    assert lb.task_score("ssla_f1", [verdict.facts, {"tp": 1, "fp": 0, "fn": 0}]) == 6 / 14
