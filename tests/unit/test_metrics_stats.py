"""Wilson and bootstrap intervals, quantiles, histograms and the binomial sampler."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_legaleval.metrics import _stats as stats
from pytest_legaleval.metrics._stats import (
    BinomialSampler,
    binomial_variate,
    bootstrap_mean_interval,
    histogram,
    quantile,
    wilson_interval,
)


def test_wilson_matches_a_hand_computed_value() -> None:
    low, high = wilson_interval(8, 10) or (0, 0)
    # p=0.8, n=10, z=1.96: centre 0.7167, half-width 0.2156 (Wilson 1927, eq. as in Agresti)
    assert low == pytest.approx(0.4902, abs=1e-4)
    assert high == pytest.approx(0.9433, abs=1e-4)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (10, 10), (0, 1), (1, 1), (0, 50_000)])
def test_wilson_is_never_zero_width_at_the_extremes(k: int, n: int) -> None:
    low, high = wilson_interval(k, n) or (0.0, 0.0)
    assert high - low > 0
    assert 0.0 <= low <= k / n <= high <= 1.0


def test_wilson_of_nothing_is_none_and_bad_counts_are_refused() -> None:
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(11, 10)


def test_quantile_interpolates_like_numpy_type_7() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    assert quantile(values, 0.0) == 1.0
    assert quantile(values, 1.0) == 4.0
    assert quantile(values, 0.5) == 2.5
    assert quantile(values, 0.95) == pytest.approx(3.85)
    assert quantile([], 0.5) is None
    with pytest.raises(ValueError):
        quantile(values, 1.5)


def test_histogram_counts_every_value_once_and_closes_the_last_bin() -> None:
    hist = histogram([0.0, 0.05, 0.1, 0.55, 1.0, 1.0, -0.2, 1.7], bins=10)
    assert hist["counts"] == [3, 1, 0, 0, 0, 1, 0, 0, 0, 3]
    assert hist["edges"][0] == 0.0 and hist["edges"][-1] == 1.0 and len(hist["edges"]) == 11
    assert sum(hist["counts"]) == 8


@pytest.mark.parametrize(("n", "p"), [(50_000, 0.8), (1_000, 0.03), (20, 0.5), (7, 0.999)])
def test_binomial_variate_has_the_binomial_mean_and_variance(n: int, p: float) -> None:
    rng = random.Random(7)
    draws = [binomial_variate(rng, n, p) for _ in range(4000)]
    assert all(0 <= d <= n for d in draws)
    mean, var = n * p, n * p * (1 - p)
    # 4000 draws: the sample mean is within 5 standard errors of n*p
    assert abs(statistics.fmean(draws) - mean) < 5 * math.sqrt(var / 4000) + 1e-9
    assert statistics.pvariance(draws) == pytest.approx(var, rel=0.15, abs=0.05)


def test_binomial_variate_edges() -> None:
    rng = random.Random(1)
    assert binomial_variate(rng, 0, 0.5) == 0
    assert binomial_variate(rng, 10, 0.0) == 0
    assert binomial_variate(rng, 10, 1.0) == 10


@given(
    n=st.integers(min_value=-1, max_value=3000),
    p=st.one_of(st.floats(min_value=-0.1, max_value=1.1), st.sampled_from([1e-9, 0.5, 1 - 1e-9])),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_the_tabled_sampler_draws_exactly_what_the_direct_one_draws(
    n: int, p: float, seed: int
) -> None:
    """Bootstraps stay reproducible: the table changes the cost, never a draw."""
    direct, tabled = random.Random(seed), random.Random(seed)
    sampler = BinomialSampler(n, p)
    assert [sampler.draw(tabled) for _ in range(60)] == [
        binomial_variate(direct, n, p) for _ in range(60)
    ]
    assert tabled.random() == direct.random()  # one uniform per draw on both paths


def test_bootstrap_is_seeded_and_recorded() -> None:
    values = [1.0] * 70 + [0.0] * 30
    first = bootstrap_mean_interval(values, seed=3, resamples=500)
    again = bootstrap_mean_interval(values, seed=3, resamples=500)
    other = bootstrap_mean_interval(values, seed=4, resamples=500)
    assert first == again
    assert first is not None and other is not None
    assert (first.low, first.high) != (other.low, other.high)
    assert first.to_dict()["seed"] == 3 and first.to_dict()["resamples"] == 500
    assert first.low < 0.7 < first.high


def test_bootstrap_interval_is_close_to_the_normal_interval_for_a_proportion() -> None:
    values = [1.0] * 600 + [0.0] * 400
    interval = bootstrap_mean_interval(values)
    assert interval is not None and interval.method == "multinomial"
    half = 1.96 * math.sqrt(0.6 * 0.4 / 1000)
    assert interval.low == pytest.approx(0.6 - half, abs=0.006)
    assert interval.high == pytest.approx(0.6 + half, abs=0.006)


def test_many_distinct_values_use_capped_value_resampling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stats, "DRAW_BUDGET", 200_000)
    rng = random.Random(0)
    values = [rng.random() for _ in range(2000)]
    interval = bootstrap_mean_interval(values, resamples=2000)
    assert interval is not None and interval.method == "values"
    assert interval.resamples == 100  # 200,000 draws / 2,000 values
    mean = statistics.fmean(values)
    se = statistics.pstdev(values) / math.sqrt(len(values))
    assert interval.low < mean < interval.high
    assert interval.high - interval.low == pytest.approx(2 * 1.96 * se, rel=0.3)


def test_bootstrap_of_nothing_and_of_a_constant() -> None:
    assert bootstrap_mean_interval([]) is None
    constant = bootstrap_mean_interval([0.5] * 10)
    assert constant is not None and (constant.low, constant.high) == (0.5, 0.5)
