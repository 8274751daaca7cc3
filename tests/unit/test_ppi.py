"""PPI++ for a mean against the method authors' ppi-python, to 1e-6.

Random binary and continuous data sets, and the edges: all agree, all disagree, one class,
a constant judge, tiny n, no unlabelled item. Where ppi-python has no number (it divides by
zero or returns NaN) the test states our choice and checks it against a brute-force formula.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from pytest_legaleval.metrics._ppi import (
    classical_mean,
    labels_needed,
    ppi_half_width,
    ppi_lambda,
    ppi_mean,
)

from ..extras import needs_stats

pytestmark = needs_stats
TOL = 1e-6


@pytest.fixture(scope="module")
def ref() -> Any:
    import ppi_py

    return ppi_py


def _np(values: list[float]) -> Any:
    import numpy as np

    return np.asarray(values, dtype=float)


def _check(ref: Any, y: list[float], yhat: list[float], unlabelled: list[float]) -> None:
    ours = ppi_mean(y, yhat, unlabelled, alpha=0.05)
    estimate = ref.ppi_mean_pointestimate(_np(y), _np(yhat), _np(unlabelled))
    low, high = ref.ppi_mean_ci(_np(y), _np(yhat), _np(unlabelled), alpha=0.05)
    assert ours.estimate == pytest.approx(float(estimate[0]), abs=TOL)
    assert ours.low == pytest.approx(float(low[0]), abs=TOL)
    assert ours.high == pytest.approx(float(high[0]), abs=TOL)


def _binary_case(rng: random.Random) -> tuple[list[float], list[float], list[float]]:
    n, big_n = rng.randint(2, 80), rng.randint(1, 400)
    human_rate, judge_bias, noise = rng.random(), rng.uniform(-0.3, 0.3), rng.random() * 0.5
    y = [float(rng.random() < human_rate) for _ in range(n)]

    def judge(truth: float) -> float:
        flipped = rng.random() < noise
        value = (1.0 - truth) if flipped else truth
        if rng.random() < abs(judge_bias):
            value = 1.0 if judge_bias > 0 else 0.0
        return value

    yhat = [judge(t) for t in y]
    unlabelled = [judge(float(rng.random() < human_rate)) for _ in range(big_n)]
    return y, yhat, unlabelled


@pytest.mark.parametrize("seed", range(60))
def test_binary_pass_rates_equal_ppi_python(ref: Any, seed: int) -> None:
    y, yhat, unlabelled = _binary_case(random.Random(seed))
    if len(set(yhat + unlabelled)) == 1:
        pytest.skip("a constant judge: ppi-python returns NaN (see the test below)")
    _check(ref, y, yhat, unlabelled)


@pytest.mark.parametrize("seed", range(30))
def test_continuous_scores_equal_ppi_python(ref: Any, seed: int) -> None:
    rng = random.Random(1000 + seed)
    n, big_n = rng.randint(2, 60), rng.randint(1, 300)
    y = [rng.random() for _ in range(n)]
    yhat = [min(1.0, max(0.0, v + rng.gauss(0.05, 0.2))) for v in y]
    unlabelled = [min(1.0, max(0.0, rng.random() + rng.gauss(0.05, 0.2))) for _ in range(big_n)]
    _check(ref, y, yhat, unlabelled)


@pytest.mark.parametrize(
    ("y", "yhat", "unlabelled"),
    [
        ([1, 0, 1, 1, 0], [1, 0, 1, 1, 0], [1, 0, 0, 1, 1, 0, 1]),  # all agree: λ = 1 region
        ([1, 0, 1, 1, 0], [0, 1, 0, 0, 1], [1, 0, 0, 1, 1, 0, 1]),  # all disagree: λ clipped 0
        ([1, 1, 1, 1], [1, 0, 1, 1], [0, 1, 1, 0, 1]),  # humans one class
        ([0, 1], [0, 1], [1]),  # tiny n and N
        ([1], [1], [0, 1, 1]),  # n = 1: the rectifier has no spread
        ([1, 0, 0], [1, 1, 0], [0] * 50 + [1] * 50),
    ],
)
def test_edge_cases_equal_ppi_python(
    ref: Any, y: list[float], yhat: list[float], unlabelled: list[float]
) -> None:
    _check(ref, [float(v) for v in y], [float(v) for v in yhat], [float(v) for v in unlabelled])


def test_lambda_equals_ppi_python_s_tuning(ref: Any) -> None:
    import numpy as np
    from ppi_py.ppi import _calc_lam_glm

    rng = random.Random(7)
    for _ in range(20):
        y, yhat, unlabelled = _binary_case(rng)
        if len(set(yhat + unlabelled)) == 1:
            continue
        centre = 0.3  # the gradients are centred: any point estimate gives the same λ
        lam = _calc_lam_glm(
            _np(y) - centre, _np(yhat) - centre, _np(unlabelled) - centre, np.eye(1), clip=True
        )
        assert ppi_lambda(y, yhat, unlabelled) == pytest.approx(float(lam), abs=TOL)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_a_constant_judge_gives_the_labels_alone(ref: Any) -> None:
    """ppi-python returns NaN (0/0 in λ); every λ gives the same figures, we take λ = 0."""
    y, yhat, unlabelled = [1.0, 0.0, 1.0, 1.0], [1.0] * 4, [1.0] * 9
    assert math.isnan(float(ref.ppi_mean_pointestimate(_np(y), _np(yhat), _np(unlabelled))[0]))
    ours = ppi_mean(y, yhat, unlabelled)
    assert ours.lam == 0.0
    fixed = ref.ppi_mean_ci(_np(y), _np(yhat), _np(unlabelled), alpha=0.05, lam=0.0)
    assert (ours.low, ours.high) == pytest.approx((fixed[0][0], fixed[1][0]), abs=TOL)
    assert ours.estimate == pytest.approx(0.75, abs=TOL)


def test_no_unlabelled_item_is_the_classical_interval(ref: Any) -> None:
    """ppi-python divides by N = 0; the limit N → 0 of PPI++ is the labels alone."""
    y, yhat = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
    ours = ppi_mean(y, yhat, [])
    low, high = ref.classical_mean_ci(_np(y), alpha=0.05)
    assert (ours.low, ours.high) == pytest.approx((low, high), abs=TOL)
    mean = 4 / 6
    half = 1.959963984540054 * math.sqrt(mean * (1 - mean) / 6)  # by hand
    assert (ours.estimate, ours.high) == pytest.approx((mean, mean + half), abs=TOL)
    assert classical_mean(y).low == pytest.approx(low, abs=TOL)


def test_bad_inputs_raise() -> None:
    with pytest.raises(ValueError, match="at least one labelled"):
        ppi_mean([], [], [1.0])
    with pytest.raises(ValueError, match="yhat has"):
        ppi_mean([1.0], [1.0, 0.0], [1.0])
    with pytest.raises(ValueError, match="alpha"):
        ppi_mean([1.0], [1.0], [1.0], alpha=1.5)


def test_labels_needed_without_a_judge_is_the_textbook_count() -> None:
    # n = ceil(z² p(1 - p) / h²): 385 for ±0.05 at p = 0.5 (the classic survey figure).
    assert labels_needed(0.05) == 385
    assert labels_needed(0.03, pass_rate=0.2) == math.ceil(1.959963984540054**2 * 0.16 / 0.0009)


def test_labels_needed_is_the_first_count_that_fits() -> None:
    for rho in (0.0, 0.5, 0.8, 0.95):
        for unlabelled in (None, 200, 5000):
            n = labels_needed(0.04, correlation=rho, unlabelled=unlabelled)
            assert ppi_half_width(n, correlation=rho, unlabelled=unlabelled) <= 0.04
            if n > 1:
                assert ppi_half_width(n - 1, correlation=rho, unlabelled=unlabelled) > 0.04


def test_the_planning_width_matches_ppi_python_on_data_with_that_correlation(ref: Any) -> None:
    """Labelled pairs with p = 0.5 and correlation ρ exactly, and many unlabelled verdicts
    at p = 0.5: ppi-python's half-width equals the planning formula (up to its n/(n−1))."""
    for rho, n, big_n in ((0.6, 200, 20000), (0.8, 400, 40000), (0.0, 100, 10000)):
        same = round(n * (1 + rho) / 4)
        other = n // 2 - same
        pairs = [(1, 1)] * same + [(0, 0)] * same + [(1, 0)] * other + [(0, 1)] * other
        y = [float(a) for a, _ in pairs]
        yhat = [float(b) for _, b in pairs]
        unlabelled = [1.0, 0.0] * (big_n // 2)
        low, high = ref.ppi_mean_ci(_np(y), _np(yhat), _np(unlabelled), alpha=0.05)
        measured = (float(high[0]) - float(low[0])) / 2
        planned = ppi_half_width(n, correlation=rho, unlabelled=big_n)
        assert measured == pytest.approx(planned, rel=2e-2)


def test_the_interval_is_not_clipped_to_zero_one(ref: Any) -> None:
    """As ppi-python: a tiny labelled set may give bounds outside [0, 1]; we report them."""
    y, yhat, unlabelled = [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0], [0.0] * 5 + [1.0]
    result = ppi_mean(y, yhat, unlabelled)
    assert result.low < 0.0
    _check(ref, y, yhat, unlabelled)
    assert result.to_dict()["ci95"] == [result.low, result.high]
    assert set(result.to_dict()) == {"estimate", "ci95", "lambda", "labelled", "unlabelled"}


def test_a_rate_outside_zero_one_is_reported_as_computed_with_its_interval_clipped() -> None:
    # a judge that passes every labelled item the humans failed (λ fixed at 1 for the
    # example): PPI++ subtracts the whole bias and lands below 0
    from pytest_legaleval.metrics._ppi import ppi_mean

    found = ppi_mean([0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.0] * 20 + [1.0], lam=1.0)
    assert found.estimate < 0 and found.low < 0
    block = found.to_dict(rate=True)
    assert block["estimate"] == found.estimate  # as computed
    assert block["ci95_raw"] == [found.low, found.high] and block["clipped"] is True
    low, high = block["ci95"]  # type: ignore[misc]
    assert low == 0.0 and high == min(1.0, max(0.0, found.high))
    assert "outside [0, 1]" in str(block["note"])
    inside = ppi_mean([1.0, 0.0, 1.0, 1.0], [1.0, 0.0, 1.0, 0.0], [1.0, 0.0] * 10)
    assert inside.to_dict(rate=True)["note"] is None
    assert "clipped" not in inside.to_dict()  # a score's mean is not a rate: as before
