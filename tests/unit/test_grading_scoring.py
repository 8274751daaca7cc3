"""Rubric scoring rules: exact values, properties, and partly failed verdicts."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pytest_legaleval.grading._scoring import (
    SCORINGS,
    clipped_score,
    minmax_score,
    passes,
    rubric_score,
    score_rubric,
    scoring_rule,
)

weights = st.floats(min_value=-20, max_value=20, allow_nan=False).filter(lambda w: w != 0)
grades = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
rubrics = st.lists(st.tuples(weights, grades), min_size=1, max_size=25)


# ------------------------------------------------------------------ exact values
def test_minmax_gives_the_float_lbr_recorded() -> None:
    # LBR's run: prbench:eb1963c8556cdebf83b100d8 x bedrock_claude_opus_4_6 (no penalty)
    # and prbench:383db25ffb4d767c69ff1c5b x bedrock_claude_opus_4_6 (a -5 penalty met).
    plain = [(10.0, 1.0), (9.0, 0.0), (10.0, 1.0), (9.0, 0.0), (10.0, 1.0), (8.0, 1.0)]
    plain += [(8.0, 0.0), (8.0, 0.0), (8.0, 1.0), (8.0, 1.0), (8.0, 1.0), (8.0, 0.0)]
    plain += [(10.0, 0.0), (8.0, 1.0)]
    assert minmax_score(plain) == 0.5737704918032787
    penalized = [(8.0, 1.0), (9.0, 0.0), (8.0, 1.0), (6.0, 1.0), (9.0, 0.0), (7.0, 0.0)]
    penalized += [(6.0, 0.0), (7.0, 1.0), (7.0, 0.0), (8.0, 0.0), (6.0, 0.0), (9.0, 1.0)]
    penalized += [(7.0, 1.0), (-5.0, 1.0)]
    assert minmax_score(penalized) == 0.4411764705882353
    # PRBench's clipped rule on the same grades: (45 - 5) / 97
    assert clipped_score(penalized) == pytest.approx(40 / 97)


@pytest.mark.parametrize(
    ("grades_", "minmax", "clipped"),
    [
        # weights 3, 2, -2: minmax = (Σw·g + 2) / 7, clipped = clip(Σw·g / 5)
        ([(3.0, 1.0), (2.0, 0.0), (-2.0, 1.0)], 3 / 7, 0.2),
        ([(3.0, 1.0), (2.0, 1.0), (-2.0, 0.0)], 1.0, 1.0),
        ([(3.0, 0.0), (2.0, 0.0), (-2.0, 1.0)], 0.0, 0.0),
        ([(3.0, 0.0), (2.0, 0.0), (-2.0, 0.0)], 2 / 7, 0.0),
        # a penalty larger than what was earned: clipped stops at 0, minmax does not
        ([(1.0, 1.0), (-5.0, 1.0)], 1 / 6, 0.0),
        # judges split 1:1 on a criterion enter as a share
        ([(2.0, 0.5), (2.0, 1.0)], 0.75, 0.75),
        # only penalties
        ([(-1.0, 1.0), (-3.0, 0.0)], 0.75, 0.75),
        # no non-zero weight: 0 (LBR's value)
        ([(0.0, 1.0)], 0.0, 0.0),
    ],
)
def test_exact_scores(grades_: list[tuple[float, float]], minmax: float, clipped: float) -> None:
    assert minmax_score(grades_) == pytest.approx(minmax, abs=1e-15)
    assert clipped_score(grades_) == pytest.approx(clipped, abs=1e-15)
    assert rubric_score(grades_, "minmax") == minmax_score(grades_)
    assert rubric_score(grades_, "clipped") == clipped_score(grades_)


def test_rules_are_named_and_versioned() -> None:
    assert SCORINGS == ("minmax", "clipped")
    assert scoring_rule("minmax").label == "minmax@1"
    assert scoring_rule("clipped").version == 1
    assert "min(0,w)" in scoring_rule("minmax").formula
    with pytest.raises(ValueError, match="unknown scoring 'mean'"):
        scoring_rule("mean")


@pytest.mark.parametrize(
    "bad",
    [[(1.0, 1.5)], [(1.0, -0.1)], [(1.0, math.nan)], [(math.inf, 1.0)], [(True, 1.0)]],
)
def test_bad_grades_and_weights_are_refused(bad: list[tuple[float, float]]) -> None:
    for rule in (minmax_score, clipped_score):
        with pytest.raises(ValueError):
            rule(bad)


def test_pass_rule_is_score_at_least_threshold() -> None:
    assert passes(0.7, 0.7) and not passes(0.6999999999, 0.7) and passes(1.0, 0.0)


# ------------------------------------------------------------------ properties
@given(rubrics)
def test_both_rules_stay_within_zero_and_one(items: list[tuple[float, float]]) -> None:
    for rule in (minmax_score, clipped_score):
        assert 0.0 <= rule(items) <= 1.0


@given(st.lists(st.tuples(st.floats(0.01, 20), grades), min_size=1, max_size=25))
def test_the_rules_agree_on_all_positive_weights(items: list[tuple[float, float]]) -> None:
    expected = sum(w * g for w, g in items) / sum(w for w, _ in items)
    assert minmax_score(items) == pytest.approx(expected, abs=1e-12)
    assert clipped_score(items) == pytest.approx(expected, abs=1e-12)


@given(rubrics)
def test_minmax_is_never_below_clipped(items: list[tuple[float, float]]) -> None:
    assert minmax_score(items) >= clipped_score(items) - 1e-12


@given(rubrics, st.data())
def test_meeting_more_never_hurts_and_a_penalty_never_helps(
    items: list[tuple[float, float]], data: st.DataObject
) -> None:
    index = data.draw(st.integers(0, len(items) - 1))
    weight, grade = items[index]
    higher = data.draw(st.floats(min_value=grade, max_value=1.0))
    raised = [*items[:index], (weight, higher), *items[index + 1 :]]
    for rule in (minmax_score, clipped_score):
        if weight > 0:
            assert rule(raised) >= rule(items) - 1e-12
        else:
            assert rule(raised) <= rule(items) + 1e-12


@given(rubrics)
def test_extremes(items: list[tuple[float, float]]) -> None:
    assume(any(w > 0 for w, _ in items))
    best = [(w, 1.0 if w > 0 else 0.0) for w, _ in items]
    worst = [(w, 0.0 if w > 0 else 1.0) for w, _ in items]
    for rule in (minmax_score, clipped_score):
        assert rule(best) == pytest.approx(1.0)
        assert rule(worst) == pytest.approx(0.0)


# ------------------------------------------------------------------ partial failure
RUBRIC = [(4.0, 1.0), (3.0, None), (2.0, 0.0), (-2.0, 0.0)]


def test_a_failed_criterion_makes_the_item_a_judge_error_by_default() -> None:
    outcome = score_rubric(RUBRIC, "minmax")
    assert outcome.score is None and outcome.error == "1 of 4 criterion verdicts failed"
    assert (outcome.judged, outcome.total) == (3, 4)
    assert outcome.full_span == 11.0  # 4 + 3 + 2 - (-2)
    assert outcome.describe() == outcome.error


def test_score_judged_scores_over_the_judged_criteria_and_says_so() -> None:
    outcome = score_rubric(RUBRIC, "minmax", "score_judged")
    # judged: 4, 2, -2 -> (4 + 2) / (6 + 2) = 0.75
    assert outcome.score == pytest.approx(0.75)
    assert outcome.partial and outcome.span == 8.0 and outcome.full_span == 11.0
    assert outcome.describe() == ("scored over the 3 judged of 4 criteria (denominator 8 of 11)")
    clipped = score_rubric(RUBRIC, "clipped", "score_judged")
    assert clipped.score == pytest.approx(4 / 6) and clipped.span == 6.0
    assert clipped.full_span == 9.0


def test_a_failed_criterion_is_never_scored_as_unmet() -> None:
    as_zero = minmax_score([(w, 0.0 if g is None else g) for w, g in RUBRIC])
    judged = score_rubric(RUBRIC, "minmax", "score_judged").score
    assert judged is not None and judged != as_zero


def test_complete_and_empty_rubrics() -> None:
    full = score_rubric([(1.0, 1.0), (1.0, 0.0)], "clipped", "score_judged")
    assert full.score == 0.5 and not full.partial
    assert full.describe() == "scored over all 2 criteria"
    none_judged = score_rubric([(1.0, None)], "minmax", "score_judged")
    assert none_judged.score is None and none_judged.error == "1 of 1 criterion verdicts failed"
    empty = score_rubric([], "minmax")
    assert empty.score is None and empty.error == "the rubric has no criteria"
    with pytest.raises(ValueError, match="on_partial_judge_failure"):
        score_rubric(RUBRIC, "minmax", "ignore")


@given(st.lists(st.tuples(weights, st.one_of(st.none(), grades)), min_size=1, max_size=20))
def test_score_judged_equals_the_rule_on_the_judged_criteria(
    items: list[tuple[float, float | None]],
) -> None:
    judged = [(w, g) for w, g in items if g is not None]
    for scoring in SCORINGS:
        outcome = score_rubric(items, scoring, "score_judged")
        if judged:
            assert outcome.score == rubric_score(judged, scoring)
        else:
            assert outcome.score is None
        strict = score_rubric(items, scoring, "error")
        assert (strict.score is None) == (len(judged) < len(items))
