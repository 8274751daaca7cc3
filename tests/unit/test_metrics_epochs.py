"""Epochs: reducers, the unbiased pass@k / pass^k against brute-force enumeration, flaky
records and the grouping of epoch lines into items."""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._epochs import (
    REDUCERS,
    epoch_figures,
    epoch_of,
    exact_mean,
    flaky_line,
    group_items,
    incomplete_line,
    pass_at_k,
    pass_at_k_table,
    pass_hat_k,
    pass_hat_k_table,
    reduce_rows,
    reduce_verdict,
)


def line(
    record_id: str,
    epoch: int | None,
    passed: bool | None,
    score: float | None = None,
    *,
    model: str = "m",
    threshold: float | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A prediction line; ``passed=None`` is a timeout (no verdict)."""
    row: dict[str, Any] = {
        "record_id": record_id,
        "dataset": "d",
        "model": model,
        "outcome": {True: "passed", False: "failed", None: "error"}[passed],
        "passed": passed,
        "score": float(passed) if score is None and passed is not None else score,
        "reason": {True: "correct", False: "wrong_answer", None: "timeout"}[passed],
        **extra,
    }
    if epoch is not None:
        row["epoch"] = epoch
    if threshold is not None:
        row["details"] = {"threshold": threshold}
    return row


# -- brute force --------------------------------------------------------------------------------


def brute_pass_at_k(outcomes: list[bool], k: int) -> Fraction:
    """Share of all k-subsets of the n answers that contain at least one pass."""
    subsets = list(itertools.combinations(range(len(outcomes)), k))
    return Fraction(sum(any(outcomes[i] for i in s) for s in subsets), len(subsets))


def brute_pass_hat_k(outcomes: list[bool], k: int) -> Fraction:
    """Share of all k-subsets of the n answers in which every answer passes."""
    subsets = list(itertools.combinations(range(len(outcomes)), k))
    return Fraction(sum(all(outcomes[i] for i in s) for s in subsets), len(subsets))


@pytest.mark.parametrize("n", range(1, 8))
def test_pass_at_k_and_pass_hat_k_equal_the_enumeration_of_all_subsets(n: int) -> None:
    for c in range(n + 1):
        outcomes = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == brute_pass_at_k(outcomes, k)
            assert pass_hat_k(n, c, k) == brute_pass_hat_k(outcomes, k)


def test_known_values_and_edge_cases() -> None:
    # n=5, c=2: pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10; pass^2 = C(2,2)/C(5,2) = 1/10
    assert pass_at_k(5, 2, 2) == Fraction(7, 10)
    assert pass_hat_k(5, 2, 2) == Fraction(1, 10)
    # all epochs failed: both are 0 at every k; all passed: both are 1
    assert all(pass_at_k(5, 0, k) == 0 == pass_hat_k(5, 0, k) for k in range(1, 6))
    assert all(pass_at_k(5, 5, k) == 1 == pass_hat_k(5, 5, k) for k in range(1, 6))
    # k = 1 is the pass fraction for both
    assert pass_at_k(7, 3, 1) == pass_hat_k(7, 3, 1) == Fraction(3, 7)
    with pytest.raises(ValueError, match="k <= n"):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError, match="c <= n"):
        pass_hat_k(3, 4, 1)


def test_the_tables_are_means_over_records_keyed_1_to_k() -> None:
    counts = [(5, 0), (5, 2), (5, 5), (5, 1)]
    at = pass_at_k_table(counts, 5)
    hat = pass_hat_k_table(counts, 5)
    assert list(at) == ["1", "2", "3", "4", "5"]
    for k in range(1, 6):
        expected_at = sum(
            brute_pass_at_k([True] * c + [False] * (n - c), k) for n, c in counts
        ) / len(counts)
        expected_hat = sum(
            brute_pass_hat_k([True] * c + [False] * (n - c), k) for n, c in counts
        ) / len(counts)
        assert at[str(k)] == float(expected_at)
        assert hat[str(k)] == float(expected_hat)
    assert at["1"] == hat["1"] == 8 / 20


def test_every_k_is_over_the_records_with_a_verdict_in_all_k_epochs() -> None:
    # one record lost two of its five epochs to errors (n = 3): it sits out every k, so
    # pass@1 and pass@5 speak of the same records (the audit saw 39 and 37 records)
    at = pass_at_k_table([(5, 1), (3, 0), (0, 0)], 5)
    assert at["1"] == 0.2  # only (5, 1): c / n
    assert at["3"] == 1 - 4 / 10  # 1 - C(4,3)/C(5,3)
    assert at["4"] == 0.8 and at["5"] == 1.0
    assert pass_hat_k_table([(5, 1), (3, 3)], 5)["1"] == 0.2
    assert pass_at_k_table([(0, 0)], 2) == {"1": None, "2": None}
    assert pass_at_k_table([(1, 1), (0, 0)], 1) == {"1": 1.0}


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_k_rises_and_pass_hat_k_falls_with_k(nc: tuple[int, int]) -> None:
    n, c = nc
    at = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    hat = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    assert at == sorted(at) and hat == sorted(hat, reverse=True)
    assert all(h <= Fraction(c, n) <= a for a, h in zip(at, hat, strict=True))


# -- reducers -----------------------------------------------------------------------------------


def test_reducers_on_three_of_five() -> None:
    passes = [True, False, True, True, False]
    assert reduce_verdict(passes, reducer="mean") is True  # 0.6 >= 0.5
    assert reduce_verdict(passes, reducer="majority") is True
    assert reduce_verdict(passes, reducer="all") is False
    assert reduce_verdict(passes, reducer="any") is True


def test_a_tie_fails_the_majority_but_meets_the_mean_at_one_half() -> None:
    assert reduce_verdict([True, False], reducer="majority") is False
    assert reduce_verdict([True, False], reducer="mean") is True  # 0.5 >= 0.5 (MCQ default)


def test_mean_compares_the_mean_score_with_the_threshold_exactly() -> None:
    # the DeepEval question: 0.62 / 0.58 / 0.61 against 0.6 -> mean 0.6033… passes
    assert reduce_verdict([True, False, True], [0.62, 0.58, 0.61], "mean", 0.6) is True
    # three scores of exactly the threshold pass (a float sum would give 0.5999…)
    assert reduce_verdict([True] * 3, [0.6, 0.6, 0.6], "mean", 0.6) is True
    assert reduce_verdict([True, False, False], [0.7, 0.5, 0.55], "mean", 0.6) is False


def test_no_verdict_epoch_means_no_verdict_and_one_epoch_keeps_its_own() -> None:
    for reducer in REDUCERS:
        assert reduce_verdict([], reducer=reducer) is None
        assert reduce_verdict([True], [0.1], reducer, 0.9) is True  # the grader's verdict
        assert reduce_verdict([False], [0.95], reducer, 0.9) is False
    with pytest.raises(ConfigError, match="unknown epoch reducer 'median'"):
        reduce_verdict([True], reducer="median")


# -- grouping lines into items ------------------------------------------------------------------


def test_lines_group_on_record_model_and_epoch() -> None:
    rows = [
        line("q1", 0, True),
        line("q1", 1, False),
        line("q1", 2, True),
        line("q1", 0, False, model="other"),
        line("q2", None, False),  # no epoch field: epoch 0
    ]
    items = group_items(rows)
    assert list(items) == [("d", "q1", "m"), ("d", "q1", "other"), ("d", "q2", "m")]
    q1 = items[("d", "q1", "m")]
    assert (q1.n, q1.c, q1.passed, q1.flaky) == (3, 2, True, True)
    assert q1.score == pytest.approx(2 / 3) and q1.pass_fraction == pytest.approx(2 / 3)
    assert not items[("d", "q2", "m")].flaky


def test_epochs_without_a_verdict_are_left_out_and_counted() -> None:
    rows = [
        line("q", 0, None),  # timeout
        line("q", 1, True),
        line("q", 2, False),
        line("q", 3, True, reason="missing_response", outcome="failed"),  # no answer at all
    ]
    item = group_items(rows)[("d", "q", "m")]
    assert (item.n, item.c, item.errored) == (2, 1, 2)
    assert item.passed is True  # mean of 1 and 0 = 0.5 >= 0.5


def test_an_item_whose_epochs_all_lack_a_verdict_has_none() -> None:
    rows = [line("q", 0, None), line("q", 1, None)]
    item = group_items(rows, "any")[("d", "q", "m")]
    assert item.passed is None and item.score is None and item.pass_fraction is None
    reduced = item.line()
    assert reduced["outcome"] == "error" and reduced["reason"] == "timeout"
    assert reduced["epochs"] == 2 and reduced["epoch_verdicts"] == 0


def test_the_mean_reducer_reads_the_graders_threshold_from_the_lines() -> None:
    rows = [line("q", e, s >= 0.8, s, threshold=0.8) for e, s in enumerate([0.9, 0.7, 0.75])]
    assert group_items(rows)[("d", "q", "m")].passed is False  # mean 0.783 < 0.8
    rows = [line("q", e, s >= 0.5, s) for e, s in enumerate([0.9, 0.7, 0.2])]
    assert group_items(rows)[("d", "q", "m")].passed is True  # no threshold: 0.5


def test_a_later_line_of_the_same_epoch_replaces_the_first() -> None:
    rows = [line("q", 0, False), line("q", 1, False), line("q", 0, True)]
    item = group_items(rows)[("d", "q", "m")]
    assert (item.n, item.c) == (2, 1)


@pytest.mark.parametrize("bad", [-1, "1", 1.0, True])
def test_a_bad_epoch_is_a_config_error_naming_it(bad: Any) -> None:
    with pytest.raises(ConfigError, match="epoch must be a non-negative integer"):
        epoch_of({**line("q", None, True), "epoch": bad})


def test_one_epoch_lines_come_back_unchanged() -> None:
    rows = [line("q1", None, True), line("q2", 0, False)]
    reduced = reduce_rows(rows)
    assert reduced[0] is rows[0] and reduced[1] is rows[1]


def test_a_reduced_line_stands_for_the_item() -> None:
    rows = [line("q", 0, False, explanation="e0"), line("q", 1, True, explanation="e1")]
    rows.append(line("q", 2, True, explanation="e2"))
    reduced = reduce_rows(rows, "all")[0]
    assert reduced["outcome"] == "failed" and reduced["passed"] is False
    assert reduced["explanation"] == "e0"  # an epoch whose own verdict is the item's
    assert reduced["score"] == pytest.approx(2 / 3)  # the record-level score: the mean
    assert (reduced["epochs"], reduced["epoch_passes"], reduced["epoch_reducer"]) == (3, 2, "all")
    reduced = reduce_rows(rows, "any")[0]
    assert reduced["outcome"] == "passed" and reduced["explanation"] == "e1"


# -- figures ------------------------------------------------------------------------------------


def test_figures_of_a_five_epoch_run() -> None:
    passes = {
        "a": [1, 1, 1, 1, 1],
        "b": [0, 0, 0, 0, 0],
        "c": [1, 0, 1, 0, 0],
        "d": [0, 0, 0, 0, 1],
    }
    rows = [line(r, e, bool(p)) for r, ps in passes.items() for e, p in enumerate(ps)]
    figures = epoch_figures(group_items(rows).values())
    counts = [(5, sum(ps)) for ps in passes.values()]
    assert figures.epochs == 5 and figures.records == 4
    assert figures.pass_at_k == pass_at_k_table(counts, 5)
    assert figures.pass_hat_k["5"] == 0.25  # only "a" passes all five
    assert figures.pass_at_k["5"] == 0.75  # all but "b" pass at least once
    assert figures.flaky == (("d", "c", "m"), ("d", "d", "m"))
    assert figures.mean_pass_fraction == pytest.approx(8 / 20) == figures.pass_at_k["1"]
    assert figures.to_dict() == {
        "epochs": 5,
        "pass_at_k": figures.pass_at_k,
        "pass_hat_k": figures.pass_hat_k,
        "pass_at_k_records": 4,
        "incomplete_records": 0,
        "flaky_records": 2,
        "errored_epochs": 0,
        "epoch_lines": 20,
    }
    assert figures.error_rate == 0.0
    flaky = flaky_line(group_items(rows)[("d", "c", "m")])
    assert flaky["outcomes"] == ["passed", "failed", "passed", "failed", "failed"]
    assert (flaky["passes"], flaky["verdicts"], flaky["pass_fraction"]) == (2, 5, 0.4)


def test_k_1_figures_and_the_planned_k() -> None:
    rows = [line("a", None, True), line("b", None, False)]
    figures = epoch_figures(group_items(rows).values())
    assert figures.to_dict() == {
        "epochs": 1,
        "pass_at_k": {"1": 0.5},
        "pass_hat_k": {"1": 0.5},
        "pass_at_k_records": 2,
        "incomplete_records": 0,
        "flaky_records": 0,
        "errored_epochs": 0,
        "epoch_lines": 2,
    }
    # planned 3 epochs, only epoch 0 arrived: no item is complete, so no k has a figure,
    # and both items are counted and listed as incomplete (their epochs 1 and 2 missing)
    planned = epoch_figures(group_items(rows).values(), epochs=3)
    assert planned.pass_at_k == {"1": None, "2": None, "3": None}
    assert planned.pass_at_k_records == 0 and len(planned.incomplete) == 2
    item = group_items(rows)[("d", "a", "m")]
    assert incomplete_line(item, 3)["missing_epochs"] == [1, 2]
    assert incomplete_line(item, 3)["reasons"] == {"1": "no line", "2": "no line"}


def test_errored_epoch_lines_are_counted_and_leave_the_item_incomplete() -> None:
    # the issue: --epochs 3, epoch 0 answered, epochs 1 and 2 missing_response
    rows = []
    for r in range(20):
        rows.append(line(f"r{r}", 0, r % 2 == 0))
        for e in (1, 2):
            rows.append({**line(f"r{r}", e, False), "reason": "missing_response"})
    figures = epoch_figures(group_items(rows).values(), epochs=3)
    assert (figures.errored_epochs, figures.epoch_lines) == (40, 60)
    assert figures.error_rate == pytest.approx(40 / 60)
    assert figures.pass_at_k_records == 0 and len(figures.incomplete) == 20
    assert figures.records == 20  # each still has one verdict epoch for the pass rate


# -- the exact mean's fast paths against fractions ----------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.integers(-(10**20), 10**20),
            st.floats(allow_nan=False, allow_infinity=False, width=64),
            st.sampled_from([0.0, 1.0, 0.5, 0.1, 1e308, -1e308, 5e-324]),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_exact_mean_is_the_fraction_mean_rounded_once(values: list[float | int]) -> None:
    expected = float(sum((Fraction(v) for v in values), Fraction(0)) / len(values))
    assert exact_mean(values) == expected
    assert exact_mean(list(reversed(values))) == expected  # order does not matter


def test_exact_mean_of_integral_values_is_not_a_float_sum() -> None:
    # 2**53 + 1 is not a float; the integer path keeps it, a float sum would not.
    assert exact_mean([2**53, 1, 0]) == float(Fraction(2**53 + 1, 3))
    assert exact_mean([1.0, 0.0, 1.0]) == 2 / 3
    exact = (Fraction(0.1) + Fraction(0.2) + Fraction(0.3)) / 3
    assert exact_mean([0.1, 0.2, 0.3]) == float(exact)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=60))
def test_one_epoch_tables_take_the_fast_path_and_equal_the_general_one(passes: list[bool]) -> None:
    counts = [(1, int(p)) for p in passes]
    general = float(sum((pass_at_k(1, c, 1) for _, c in counts), Fraction(0)) / len(counts))
    assert pass_at_k_table(counts, 1) == {"1": general}
    assert pass_hat_k_table(counts, 1) == {"1": general}
    figures = epoch_figures(
        group_items([line(f"r{i}", None, p) for i, p in enumerate(passes)]).values()
    )
    assert figures.mean_pass_fraction == general
    assert figures.pass_at_k == {"1": general}
