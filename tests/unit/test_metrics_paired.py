"""The paired difference of record means: clustered errors (against a double loop), the cluster
bootstrap (against the exact enumeration of every resample) and the gate's decision."""

from __future__ import annotations

import itertools
import math

import pytest

from pytest_legaleval.metrics._cr2 import bell_mccaffrey_df
from pytest_legaleval.metrics._paired import (
    cluster_bootstrap,
    normal_quantile,
    paired_difference,
)
from pytest_legaleval.metrics._stats import quantile
from pytest_legaleval.metrics._tdist import t_quantile, t_two_sided_p

from .test_metrics_clustered import cr2_direct


def test_the_difference_and_its_clustered_interval_are_cr2_t() -> None:
    pairs = [(1.0, 0.8), (0.6, 0.6), (0.4, 1.0), (1.0, 0.2), (0.0, 0.0), (0.8, 0.4)]
    labels = ["a", "a", "b", "b", "c", None]
    got = paired_difference(pairs, labels, cluster_by="metadata.exam", level=0.9, seed=3)
    assert got is not None
    diffs = [c - b for b, c in pairs]
    delta = sum(diffs) / 6
    # the record without a cluster is its own: give it a unique label for the reference
    se, se_c = cr2_direct(diffs, ["a", "a", "b", "b", "c", "own"])
    assert got.delta == pytest.approx(delta)
    assert (got.baseline_mean, got.current_mean) == pytest.approx((3.8 / 6, 3.0 / 6))
    assert got.se == pytest.approx(se) and got.se_clustered == pytest.approx(se_c)
    df = bell_mccaffrey_df([2, 2, 1, 1])
    assert df is not None and got.df == pytest.approx(df)
    q = t_quantile(0.95, df)
    assert got.ci == pytest.approx((delta - q * se_c, delta + q * se_c))
    assert got.p_value == pytest.approx(t_two_sided_p(delta / se_c, df))
    assert got.clusters == 4 and got.n == 6
    data = got.to_dict()
    assert data["ci"] == list(got.ci) and data["bootstrap"]["seed"] == 3
    assert (data["df"], data["p_value"]) == (got.df, got.p_value)
    assert "CR2" in data["method"] and "Bell-McCaffrey" in data["method"]
    assert f"df {df:.1f}, p {got.p_value:.4f}" in got.describe()


def test_scipy_agrees_on_the_unclustered_paired_t() -> None:
    stats = pytest.importorskip("scipy.stats", reason="the reference check needs [stats]")
    pairs = [(1.0, 0.0), (0.0, 0.0), (1.0, 1.0), (0.0, 1.0), (1.0, 0.0), (0.5, 0.0)]
    got = paired_difference(pairs)
    reference = stats.ttest_rel([c for _, c in pairs], [b for b, _ in pairs])
    assert got is not None and got.df == pytest.approx(5.0)
    assert got.p_value == pytest.approx(float(reference.pvalue), rel=1e-9)
    low, high = reference.confidence_interval(0.95)
    assert got.ci == pytest.approx((float(low), float(high)), rel=1e-9)


def test_one_cluster_has_no_interval_and_says_why() -> None:
    pairs = [(1.0, 0.0), (0.0, 0.0), (1.0, 1.0), (0.0, 1.0)]
    got = paired_difference(pairs, ["x"] * 4, cluster_by="metadata.exam")
    assert got is not None and got.ci is None and got.p_value is None and got.df is None
    assert got.note is not None and "one cluster" in got.note
    assert "no interval: all 4 units are in one cluster" in got.describe()
    assert not got.regressed(None)


def test_without_clusters_the_interval_is_the_naive_one() -> None:
    pairs = [(1.0, 0.0), (0.0, 0.0), (1.0, 1.0), (0.0, 1.0), (1.0, 0.0)]
    got = paired_difference(pairs)
    assert got is not None and got.cluster_by is None
    assert got.se_clustered == got.se and got.clusters == 5
    assert "records independent" in got.method


def test_one_pair_has_no_interval_and_no_pairs_no_difference() -> None:
    assert paired_difference([]) is None
    one = paired_difference([(1.0, 0.0)])
    assert one is not None and one.delta == -1.0 and one.ci is None
    assert not one.regressed(None)  # one pair proves nothing
    assert "no interval: one unit" in one.describe()


def test_the_bootstrap_matches_the_exact_distribution_of_cluster_resamples() -> None:
    # 4 clusters: every ordered resample of 4 clusters (4^4 = 256) is equally likely
    diffs = [-1.0, -1.0, 0.0, 0.0, 0.0, 1.0, -1.0, 0.0, 0.0]
    labels = ["a", "a", "a", "b", "b", "c", "d", "d", "d"]
    clusters = {c: [d for d, lab in zip(diffs, labels, strict=True) if lab == c] for c in "abcd"}
    exact = sorted(
        sum(sum(clusters[c]) for c in draw) / sum(len(clusters[c]) for c in draw)
        for draw in itertools.product("abcd", repeat=4)
    )
    got = cluster_bootstrap(diffs, labels, level=0.9, seed=11, resamples=20_000)
    assert got is not None
    low, high, used = got
    assert used == 20_000
    # the percentile interval lies between the exact 3 % and 7 % (93 % and 97 %) quantiles
    assert quantile(exact, 0.03) <= low <= quantile(exact, 0.07)  # type: ignore[operator]
    assert quantile(exact, 0.93) <= high <= quantile(exact, 0.97)  # type: ignore[operator]
    # resampling items instead of clusters would be far narrower: it is not what we do
    item_level = cluster_bootstrap(diffs, None, level=0.9, seed=11, resamples=20_000)
    assert item_level is not None and item_level[1] - item_level[0] < high - low


def test_the_bootstrap_is_seeded_and_within_the_draw_budget() -> None:
    diffs = [((i * 37) % 101) / 100 - 0.5 for i in range(300)]  # many distinct means
    labels = [i // 3 for i in range(300)]
    first = cluster_bootstrap(diffs, labels, seed=5)
    assert first == cluster_bootstrap(diffs, labels, seed=5)
    assert first != cluster_bootstrap(diffs, labels, seed=6)
    big = cluster_bootstrap([0.0, 1.0] * 2_000, None, resamples=2000)
    assert big is not None and big[2] == 500  # DRAW_BUDGET: 2M draws / 4000 clusters


def test_clusters_turn_a_naive_regression_into_noise() -> None:
    # 10 exams of 10 items; two whole exams regressed (d = -1), the rest unchanged
    pairs = [(1.0, 0.0)] * 20 + [(1.0, 1.0)] * 80
    labels = [i // 10 for i in range(100)]
    naive = paired_difference(pairs)
    clustered = paired_difference(pairs, labels, cluster_by="metadata.exam")
    assert naive is not None and clustered is not None
    assert naive.delta == clustered.delta == pytest.approx(-0.2)
    # naive: s² = (20·0.64 + 80·0.04)/99, se = √(s²/100); CR2: Σ S_g² / (N² (1 − 1/10))
    s2 = (20 * 0.64 + 80 * 0.04) / 99
    assert naive.se == pytest.approx(math.sqrt(s2 / 100))
    assert clustered.se_clustered == pytest.approx(math.sqrt((2 * 64 + 8 * 4) / 0.9) / 100)
    assert clustered.df == pytest.approx(9.0) and naive.df == pytest.approx(99.0)
    assert naive.regressed(None) and not clustered.regressed(None)
    assert naive.ci is not None and naive.ci[1] < 0
    assert clustered.ci is not None and clustered.ci[0] < 0 < clustered.ci[1]
    assert clustered.bootstrap is not None and clustered.bootstrap[0] < -0.2


def test_the_gate_respects_max_regression() -> None:
    pairs = [(1.0, 0.0)] * 30 + [(1.0, 1.0)] * 70  # delta -0.3, clearly below 0
    got = paired_difference(pairs)
    assert got is not None and got.ci is not None and got.ci[1] < 0
    assert got.regressed(None) and got.regressed(0.2)
    assert not got.regressed(0.35)  # a drop within the allowed one
    better = paired_difference([(b, c) for c, b in pairs])
    assert better is not None and not better.regressed(None)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.5])
def test_levels_outside_zero_one_are_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="level must be in"):
        normal_quantile(bad)
