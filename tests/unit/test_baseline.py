from __future__ import annotations

import math
import random
from typing import Any

import pytest

from pytest_legaleval.metrics._baseline import binomial_cdf, compare_runs, mcnemar_exact


def row(record_id: str, passed: bool | None, score: float | None = None, **extra: Any) -> dict:
    outcome = {True: "passed", False: "failed", None: "error"}[passed]
    reason = {True: "correct", False: "wrong_answer", None: "timeout"}[passed]
    if score is None and passed is not None:
        score = float(passed)
    return {
        "record_id": record_id,
        "dataset": "d",
        "model": "m",
        "outcome": outcome,
        "passed": passed,
        "score": score,
        "reason": reason,
        **extra,
    }


# -- McNemar ----------------------------------------------------------------------------------


def _binom_two_sided_reference(b: int, c: int) -> float:
    """Independent reference: sum the pmf of outcomes no more likely than the observed one."""
    n = b + c
    pmf = [math.comb(n, k) / 2**n for k in range(n + 1)]
    observed = pmf[b]
    return min(1.0, sum(p for p in pmf if p <= observed * (1 + 1e-12)))


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        # hand-computed: 2 * (1 + 12 + 66) / 4096
        (10, 2, 2 * 79 / 4096),
        (2, 10, 2 * 79 / 4096),
        # 2 * (1 + 10) / 1024
        (9, 1, 22 / 1024),
        # 2 * 1/32: five flips all the same way
        (5, 0, 1 / 16),
        (0, 0, 1.0),
        (3, 3, 1.0),
        (1, 0, 1.0),
    ],
)
def test_mcnemar_known_p_values(b: int, c: int, expected: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12)


def test_mcnemar_matches_the_pmf_sum_definition() -> None:
    # For p = 1/2 the binomial is symmetric: doubling the small tail equals the sum of
    # all outcomes at most as likely as the observed one.
    for b in range(0, 25):
        for c in range(0, 25):
            if b + c:
                assert mcnemar_exact(b, c) == pytest.approx(_binom_two_sided_reference(b, c))


def test_binomial_cdf_large_n_log_space_agrees_with_exact() -> None:
    n, k = 1500, 700
    exact = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    assert binomial_cdf(k, n) == pytest.approx(exact, rel=1e-9)
    assert mcnemar_exact(40000, 41000) < 1e-3  # large counts neither overflow nor hang
    assert binomial_cdf(-1, 5) == 0.0 and binomial_cdf(5, 5) == 1.0


# -- paired bootstrap -------------------------------------------------------------------------


def test_paired_bootstrap_interval_is_seeded_and_brackets_the_delta() -> None:
    rng = random.Random(1)
    base = [row(str(i), True, score=rng.random()) for i in range(300)]
    # the same records, each a little better on average, with noise
    cur = [
        row(r["record_id"], True, score=min(1.0, max(0.0, r["score"] + rng.gauss(0.05, 0.1))))
        for r in base
    ]
    a, b = compare_runs(base, cur), compare_runs(base, cur)
    assert a.mean_score_delta_ci == b.mean_score_delta_ci
    assert a.mean_score_delta is not None and a.mean_score_delta_ci is not None
    low, high = a.mean_score_delta_ci
    assert low < a.mean_score_delta < high
    # paired: the interval reflects the noise of the differences (sd 0.1), not the spread
    # of the scores themselves (sd 0.29) — about ± 1.96 * 0.1 / sqrt(300) = ± 0.011
    assert high - low < 0.05
    assert low > 0  # a real improvement is detected
    other = compare_runs(base, cur, seed=7).mean_score_delta_ci
    assert other != a.mean_score_delta_ci
    wide = compare_runs(base, cur, level=0.99).mean_score_delta_ci
    assert wide is not None and wide[0] <= low and wide[1] >= high


# -- pairing ----------------------------------------------------------------------------------


def test_compare_runs_pairs_counts_flips_and_one_sided_items() -> None:
    base = [row(str(i), True) for i in range(10)] + [row("f1", False), row("f2", False)]
    base += [row("gone", True), row("err", True)]
    cur = [row(str(i), i >= 8) for i in range(10)] + [row("f1", True), row("f2", False)]
    cur += [row("new", True), row("err", None)]
    cmp = compare_runs(base, cur)
    assert (cmp.paired, cmp.regressions, cmp.improvements) == (12, 8, 1)
    assert (cmp.both_passed, cmp.both_failed, cmp.unverdicted) == (2, 1, 1)
    assert (cmp.only_in_baseline, cmp.only_in_current) == (1, 1)
    assert cmp.baseline_pass_rate == pytest.approx(10 / 12)
    assert cmp.current_pass_rate == pytest.approx(3 / 12)
    assert cmp.p_value == pytest.approx(mcnemar_exact(8, 1))
    changes = {(c.key[1], c.change) for c in cmp.changes}
    assert ("gone", "only_in_baseline") in changes
    assert ("new", "only_in_current") in changes
    assert ("err", "pass_to_error") in changes
    assert ("f1", "fail_to_pass") in changes
    regressed = {c.key[1] for c in cmp.regressed_items()}
    assert regressed == {*map(str, range(8)), "err", "gone"}
    line = next(c for c in cmp.changes if c.key[1] == "0").to_dict()
    assert line["change"] == "pass_to_fail"
    assert line["baseline"]["passed"] is True and line["current"]["passed"] is False


def test_the_model_is_part_of_the_pair_key_when_the_runs_share_models() -> None:
    base = [row("1", True, model="a"), row("1", True, model="b")]
    cmp = compare_runs(base, [row("1", True, model="b"), row("2", True, model="c")])
    assert cmp.paired == 1 and cmp.only_in_baseline == 1 and cmp.only_in_current == 1
    assert cmp.by_model and cmp.to_dict()["pairing"] == "(record, model, epoch)"


def test_one_model_each_pairs_by_record_as_the_report_does() -> None:
    # the issue: report A B paired these, compare said "no item in common"
    cmp = compare_runs([row("1", True, model="a")], [row("1", False, model="b")])
    assert cmp.paired == 1 and cmp.regressions == 1 and not cmp.by_model
    assert cmp.gate_lines()[0].startswith("paired 1 items by (record, epoch): one model each")
    # several models on one side and none shared: nothing pairs, nothing is guessed
    lost = compare_runs(
        [row("1", True, model="a"), row("1", True, model="c")], [row("1", True, model="b")]
    )
    assert lost.paired == 0 and lost.only_in_baseline == 2 and lost.only_in_current == 1


def test_regression_gate_needs_size_and_significance() -> None:
    base = [row(str(i), True) for i in range(40)]
    big_drop = compare_runs(base, [row(str(i), i >= 10) for i in range(40)])
    assert big_drop.pass_rate_delta == pytest.approx(-0.25)
    assert big_drop.regressed(0.02, 0.05)
    assert not big_drop.regressed(0.30, 0.05)  # the drop is within the allowance
    # two flips out of forty: p = 0.5, not significant at any usual level
    small = compare_runs(base, [row(str(i), i >= 2) for i in range(40)])
    assert small.p_value == pytest.approx(0.5)
    assert not small.regressed(None, 0.05)
    assert small.regressed(None, 0.6)


def test_improvement_is_never_a_regression() -> None:
    base = [row(str(i), False) for i in range(40)]
    better = compare_runs(base, [row(str(i), True) for i in range(40)])
    assert better.p_value < 1e-6
    assert not better.regressed(0.0, 0.05)


def test_mean_score_regression_by_paired_bootstrap() -> None:
    # pass/fail unchanged (scores stay above a 0.5 threshold) but every score drops by 0.2
    base = [row(str(i), True, score=0.9 + (i % 3) * 0.03) for i in range(30)]
    cur = [row(str(i), True, score=0.7 + (i % 3) * 0.03) for i in range(30)]
    cmp = compare_runs(base, cur)
    assert cmp.regressions == 0
    assert cmp.mean_score_delta == pytest.approx(-0.2)
    assert cmp.mean_score_delta_ci is not None and cmp.mean_score_delta_ci[1] < 0
    assert cmp.regressed(0.1, 0.05)
    assert not cmp.regressed(0.25, 0.05)


def test_runs_scored_under_other_rules_are_not_paired() -> None:
    from pytest_legaleval.errors import ConfigError
    from pytest_legaleval.metrics._baseline import check_same_scoring, rubric_scorings

    old = [{"grader": "judge:rubric", "record_id": "r"}, {"grader": "mcq", "record_id": "m"}]
    new = [{"grader": "judge:rubric", "record_id": "r", "scoring": "minmax"}]
    assert rubric_scorings(old) == {"clipped"}  # lines from before scoring was recorded
    with pytest.raises(ConfigError, match="baseline: clipped; this run: minmax"):
        check_same_scoring(old, new)
    check_same_scoring(old, [{"grader": "judge:rubric", "scoring": "clipped"}])
    check_same_scoring(old, [{"grader": "mcq", "scoring": "minmax"}])  # no rubric: nothing to say
