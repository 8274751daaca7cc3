"""CR2 and the Bell–McCaffrey degrees of freedom against matrices built in numpy, the t
distribution against scipy, and a seeded simulation of 20,000 null data sets of 17 uneven
clusters: the clustered comparison's false-alarm rate and the run interval's coverage."""

from __future__ import annotations

import math
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._cr2 import (
    bell_mccaffrey_df,
    cluster_error,
    cr2_from_totals,
)
from pytest_legaleval.metrics._paired import paired_difference
from pytest_legaleval.metrics._tdist import (
    regularized_beta,
    t_cdf,
    t_quantile,
    t_two_sided_p,
)

STATS = "the reference check needs the [stats] extra (numpy, scipy)"


def reference_cr2(np: Any, y: Any, groups: Any) -> tuple[float | None, float | None]:
    """CR2 and the BM df of a mean, built as Imbens & Kolesár (2016) write them.

    X = 1 (an intercept), H = X(X'X)⁻¹X', A_g = (I − H_gg)^{-1/2} by eigen-decomposition,
    V = (X'X)⁻¹ Σ_g X_g'A_g e_g e_g'A_g X_g (X'X)⁻¹; G_g = (I − H)_{·g} A_g X_g (X'X)⁻¹ and the
    degrees of freedom (Σλ)²/Σλ² over the eigenvalues of G'G (Ω = σ²I, σ² cancels).
    """
    n = len(y)
    x = np.ones((n, 1))
    bread = np.linalg.inv(x.T @ x)
    hat = x @ bread @ x.T
    resid = y - hat @ y
    meat = np.zeros((1, 1))
    columns = []
    for g in np.unique(groups):
        idx = np.flatnonzero(groups == g)
        inner = np.eye(len(idx)) - hat[np.ix_(idx, idx)]
        w, v = np.linalg.eigh(inner)
        if np.min(w) < 1e-12:
            return None, None  # I − H_gg singular: one cluster holds every unit
        adjust = v @ np.diag(w**-0.5) @ v.T
        u = x[idx].T @ adjust @ resid[idx]
        meat += np.outer(u, u)
        columns.append(((np.eye(n) - hat)[:, idx] @ adjust @ x[idx] @ bread).ravel())
    variance = (bread @ meat @ bread).item()
    g_matrix = np.array(columns).T
    lam = np.linalg.eigvalsh(g_matrix.T @ g_matrix)
    return math.sqrt(variance), float(lam.sum() ** 2 / (lam**2).sum())


SIZES = [
    [1] * 12,  # singletons: s/√N and N − 1
    [5, 5, 5, 5],  # equal: G − 1
    [1, 2, 3, 40],
    [3, 7],  # two clusters
    [1, 60, 2, 30, 9, 14, 1, 1],
    [1, 1],  # K = 1 record per cluster, two records
    list(range(1, 18)),
]


@pytest.mark.parametrize("sizes", SIZES, ids=lambda s: f"{len(s)}clusters")
def test_cr2_and_df_equal_the_matrix_computation(sizes: list[int]) -> None:
    np = pytest.importorskip("numpy", reason=STATS)
    rng = np.random.default_rng(sum(sizes))
    groups = np.repeat(np.arange(len(sizes)), sizes)
    for y in (rng.integers(0, 2, len(groups)).astype(float), rng.random(len(groups))):
        se_ref, df_ref = reference_cr2(np, y, groups)
        got = cluster_error(y.tolist(), groups.tolist())
        assert got is not None
        assert got.se_clustered == pytest.approx(se_ref, rel=1e-9, abs=1e-15)
        assert got.df == pytest.approx(df_ref, rel=1e-9)
        assert bell_mccaffrey_df(sizes) == pytest.approx(df_ref, rel=1e-9)
        assert got.se == pytest.approx(float(np.std(y, ddof=1) / math.sqrt(len(y))))


def test_known_answers_singletons_and_equal_clusters() -> None:
    y = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    got = cluster_error(y)  # no clusters: every unit its own
    assert got is not None and got.df == pytest.approx(7.0)
    s = math.sqrt(sum((v - 0.625) ** 2 for v in y) / 7)
    assert got.se_clustered == pytest.approx(s / math.sqrt(8)) == got.se
    assert bell_mccaffrey_df([4] * 6) == pytest.approx(5.0)
    # two equal clusters of two: S = ±1 each, V = 2·1/(16·½) = ¼
    two = cluster_error([1.0, 1.0, 0.0, 0.0], ["a", "a", "b", "b"])
    assert two is not None and two.se_clustered == pytest.approx(0.5) and two.df == 1.0


@pytest.mark.parametrize("labels", [["e"] * 5, None])
def test_one_cluster_or_a_cluster_of_every_unit_has_no_error(labels: list[str] | None) -> None:
    np = pytest.importorskip("numpy", reason=STATS)
    y = [1.0, 0.0, 0.0, 1.0, 1.0]
    groups = labels or [0] * 5
    assert reference_cr2(np, np.asarray(y), np.asarray(groups)) == (None, None)
    got = cluster_error(y, groups)
    assert got is not None and got.clusters == 1
    assert (got.se_clustered, got.df) == (None, None)
    assert got.note is not None and "one cluster" in got.note
    assert bell_mccaffrey_df([5]) is None and cr2_from_totals([5], [0.0]) is None


def test_one_unit_and_bad_input() -> None:
    one = cluster_error([0.5], ["a"])
    assert one is not None and (one.se, one.se_clustered, one.df) == (None, None, None)
    assert cluster_error([]) is None
    with pytest.raises(ConfigError, match="2 cluster sizes for 1 residual sums"):
        cr2_from_totals([1, 2], [0.0])
    with pytest.raises(ConfigError, match="at least one unit"):
        cr2_from_totals([0, 2], [0.0, 0.0])


# -- the t distribution ------------------------------------------------------------------------

DFS = [0.3, 0.5, 1, 1.5, 2, 2.7, 3, 4.2, 7.9, 11.58, 30, 100, 999.5, 1e4, 1e6, 1e15]
QS = [1e-10, 1e-6, 0.001, 0.025, 0.05, 0.1, 0.3, 0.5, 0.8, 0.975, 0.995, 0.999999]
TS = [-50.0, -5.0, -2.0, -1e-3, 0.0, 0.5, 1.96, 3.0, 10.0, 100.0, 1e4]


@pytest.mark.parametrize("df", DFS)
def test_t_quantile_cdf_and_p_equal_scipy(df: float) -> None:
    stats = pytest.importorskip("scipy.stats", reason=STATS)
    for q in QS:
        assert t_quantile(q, df) == pytest.approx(float(stats.t.ppf(q, df)), rel=1e-9, abs=1e-12)
    for t in TS:
        assert t_cdf(t, df) == pytest.approx(float(stats.t.cdf(t, df)), rel=1e-9, abs=1e-14)
        reference = 2 * float(stats.t.sf(abs(t), df))
        assert t_two_sided_p(t, df) == pytest.approx(reference, rel=1e-9, abs=1e-300)


def test_t_edge_cases_and_errors() -> None:
    stats = pytest.importorskip("scipy.stats", reason=STATS)
    # the Cauchy (df 1) near 0: ½ + atan(t)/π exactly, where a naive 1 − x loses every digit
    assert t_cdf(1e-8, 1) == pytest.approx(0.5 + math.atan(1e-8) / math.pi, rel=1e-15)
    assert t_cdf(math.inf, 3) == 1.0 and t_cdf(-math.inf, 3) == 0.0
    assert t_two_sided_p(math.inf, 3) == 0.0 and t_two_sided_p(0.0, 3) == 1.0
    assert regularized_beta(2.5, 0.5, 0.3) == pytest.approx(
        float(stats.beta.cdf(0.3, 2.5, 0.5)), rel=1e-12
    )
    assert regularized_beta(1, 1, 0.0) == 0.0 and regularized_beta(1, 1, 1.0) == 1.0
    for bad in (0.0, -1.0, math.nan):
        with pytest.raises(ConfigError, match="degrees of freedom"):
            t_quantile(0.9, bad)
    with pytest.raises(ConfigError, match="quantile level"):
        t_quantile(1.0, 5)
    with pytest.raises(ConfigError, match="regularized_beta"):
        regularized_beta(0.0, 1.0, 0.5)


# -- the seeded simulation -----------------------------------------------------------------------

CLUSTER_SIZES = [round(1 + i * 59 / 16) for i in range(17)]  # 17 clusters of 1 … 60
DATA_SETS = 20_000
TRUE_RATE = 0.6
CONCENTRATION = 8.0  # cluster pass rates ~ Beta(4.8, 3.2): intracluster correlation 1/9


def test_simulation_clustered_comparison_and_coverage_hold_their_level() -> None:
    """20,000 null data sets of 17 clusters of 1 to 60 binary records, each cluster with a
    pass rate of its own (a Beta cluster effect around 0.6).

    Binary outcomes enter the estimator only through each cluster's sum, which is exactly
    Binomial(n_g, p_g), so the data sets are drawn as cluster sums (vectorised) and each is
    passed to the estimator the library uses (:func:`cr2_from_totals`, the t quantile and
    p-value). A run's interval must cover the true 0.6 at least 93 % of the time; the
    paired comparison of two such runs (independent cluster effects, no true difference)
    must call a difference at p < 0.05 at most 6.5 % of the time.
    """
    np = pytest.importorskip("numpy", reason=STATS)
    rng = np.random.default_rng(36)
    sizes = np.asarray(CLUSTER_SIZES)
    n = int(sizes.sum())
    a, b = TRUE_RATE * CONCENTRATION, (1 - TRUE_RATE) * CONCENTRATION

    def cluster_sums() -> Any:
        return rng.binomial(sizes, rng.beta(a, b, size=(DATA_SETS, len(sizes)))).astype(float)

    baseline, current = cluster_sums(), cluster_sums()
    size_list = [int(m) for m in sizes]
    df = bell_mccaffrey_df(size_list)
    assert df is not None and 5 < df < 16  # far below the 516 of independent records
    q = t_quantile(0.975, df)

    covered = 0
    means = baseline.sum(axis=1) / n
    residuals = baseline - np.outer(means, sizes)
    for mean, row in zip(means.tolist(), residuals.tolist(), strict=True):
        found = cr2_from_totals(size_list, row)
        assert found is not None
        covered += abs(mean - TRUE_RATE) <= q * found[0]
    coverage = covered / DATA_SETS

    alarms = 0
    diffs = current - baseline
    deltas = diffs.sum(axis=1) / n
    residuals = diffs - np.outer(deltas, sizes)
    for delta, row in zip(deltas.tolist(), residuals.tolist(), strict=True):
        found = cr2_from_totals(size_list, row)
        assert found is not None
        se, found_df = found
        alarms += se > 0 and t_two_sided_p(delta / se, found_df) < 0.05
    false_alarm = alarms / DATA_SETS

    assert coverage >= 0.93, coverage
    assert false_alarm <= 0.065, false_alarm
    # the README states these figures; keep them honest (measured: 0.946 and 0.056)
    assert abs(coverage - 0.946) < 0.005 and abs(false_alarm - 0.056) < 0.005


def test_the_comparison_uses_the_estimator_of_the_simulation() -> None:
    """paired_difference on record-level pairs gives the cluster-sum figures exactly."""
    pairs = [(0.0, 1.0), (1.0, 1.0), (0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0), (0.0, 1.0)]
    clusters = ["a", "a", "b", "b", "b", "c", "c"]
    got = paired_difference(pairs, clusters, cluster_by="metadata.exam")
    assert got is not None
    diffs = [c - b for b, c in pairs]
    delta = sum(diffs) / 7
    residuals = [(d - delta, g) for d, g in zip(diffs, clusters, strict=True)]
    sums = {k: sum(r for r, g in residuals if g == k) for k in "abc"}
    found = cr2_from_totals([2, 3, 2], [sums["a"], sums["b"], sums["c"]])
    assert found is not None
    assert got.se_clustered == pytest.approx(found[0]) and got.df == pytest.approx(found[1])
    assert got.p_value == pytest.approx(t_two_sided_p(delta / found[0], found[1]))
    half = t_quantile(0.975, found[1]) * found[0]
    assert got.ci == pytest.approx((delta - half, delta + half))
