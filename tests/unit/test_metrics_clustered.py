"""The run's own interval: CR2 standard errors, Bell–McCaffrey t intervals in [0, 1], and the
cluster field. The estimator itself is checked against numpy matrices in test_metrics_cr2."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_legaleval.metrics._clustered import (
    METHOD,
    cluster_key,
    cluster_value,
    clustered_se,
    clustered_uncertainty,
    slim_cluster_field,
)
from pytest_legaleval.metrics._cr2 import bell_mccaffrey_df


def cr2_direct(x: Sequence[float], labels: Sequence[object]) -> tuple[float, float]:
    """(se, se_CR2) as the issue writes them: V = Σ_g S_g² / (N² (1 − n_g/N))."""
    n = len(x)
    mean = sum(x) / n
    s2 = sum((v - mean) ** 2 for v in x) / (n - 1)
    sums: dict[object, list[float]] = {}
    for v, label in zip(x, labels, strict=True):
        sums.setdefault(label, []).append(v - mean)
    v = sum(sum(r) ** 2 / (n**2 * (1 - len(r) / n)) for r in sums.values())
    return math.sqrt(s2 / n), math.sqrt(v)


def sample(seed: int, n: int, clusters: int, epochs: int) -> tuple[list[float], list[int]]:
    """Record means of ``epochs`` 0/1 answers with a shared cluster effect."""
    rng = random.Random(seed)
    effect = [rng.uniform(0.1, 0.9) for _ in range(clusters)]
    labels = [rng.randrange(clusters) for _ in range(n)]
    x = [sum(rng.random() < effect[c] for _ in range(epochs)) / epochs for c in labels]
    return x, labels


CASES = [(seed, n, g, k) for seed, (n, g, k) in enumerate([(60, 12, 5), (40, 5, 1), (25, 25, 3)])]


@pytest.mark.parametrize(("seed", "n", "clusters", "epochs"), CASES)
def test_the_block_is_cr2_with_a_t_interval(seed: int, n: int, clusters: int, epochs: int) -> None:
    scipy_stats = pytest.importorskip("scipy.stats", reason="the t quantile check needs [stats]")
    x, labels = sample(seed, n, clusters, epochs)
    se, se_c = cr2_direct(x, labels)
    got = clustered_uncertainty(x, labels, cluster_by="metadata.exam")
    assert got is not None
    assert got.se == pytest.approx(se, rel=1e-12)
    assert got.se_clustered == pytest.approx(se_c, rel=1e-12)
    assert got.clusters == len(set(labels)) and got.n == n
    sizes = [labels.count(c) for c in set(labels)]
    assert got.df == pytest.approx(bell_mccaffrey_df(sizes))
    q = float(scipy_stats.t.ppf(0.975, got.df))
    raw = (got.mean - q * se_c, got.mean + q * se_c)
    assert got.ci95_raw == pytest.approx(raw, rel=1e-10)
    assert got.ci95 == pytest.approx((max(0.0, raw[0]), min(1.0, raw[1])), rel=1e-10)
    block = got.to_dict()
    assert block["method"] == METHOD and block["df"] == got.df and block["note"] is None


def test_statsmodels_naive_se_is_the_blocks_se() -> None:
    np = pytest.importorskip("numpy", reason="the reference check needs the [stats] extra")
    sm = pytest.importorskip("statsmodels.api", reason="the reference check needs [stats]")
    x, _ = sample(3, 40, 5, 2)
    naive = sm.OLS(np.asarray(x), np.ones(len(x))).fit()
    got = clustered_uncertainty(x)
    assert got is not None and got.se == pytest.approx(float(naive.bse[0]), rel=1e-10)


def test_the_issues_sixty_records_in_twelve_exams_widen_the_interval() -> None:
    # 12 exams of 5: within an exam the records agree (all pass or all fail, by exam)
    x = [float(e % 3 == 0) for e in range(12) for _ in range(5)]
    labels = [e for e in range(12) for _ in range(5)]
    got = clustered_uncertainty(x, labels, cluster_by="metadata.exam")
    assert got is not None and got.se is not None and got.se_clustered is not None
    assert got.se_clustered == pytest.approx(cr2_direct(x, labels)[1])
    # equal clusters: S_g = 5 r_g, V = Σ 25 r_g² / (60² · 11/12) and df = G − 1
    assert got.df == pytest.approx(11.0)
    assert got.se_clustered / got.se > 2.2


# -- edge cases ---------------------------------------------------------------------------------


def test_no_records_and_one_record() -> None:
    assert clustered_uncertainty([]) is None
    one = clustered_uncertainty([0.4], ["a"], cluster_by="dataset")
    assert one is not None
    assert (one.mean, one.se, one.se_clustered, one.ci95, one.df, one.clusters) == (
        0.4,
        None,
        None,
        None,
        None,
        1,
    )
    assert one.note is not None and "one unit" in one.note
    assert "no interval (one unit" in one.describe()
    assert clustered_se([1.0], None) is None


def test_no_clusters_is_the_classic_t_interval_on_n_minus_one_df() -> None:
    scipy_stats = pytest.importorskip("scipy.stats", reason="the t quantile check needs [stats]")
    x, _ = sample(7, 30, 3, 4)
    naive = clustered_uncertainty(x)
    singletons = clustered_uncertainty(x, list(range(30)), cluster_by="record")
    assert naive is not None and singletons is not None
    assert naive.cluster_by is None and naive.clusters == 30
    assert naive.se_clustered == pytest.approx(naive.se, rel=1e-12)
    assert naive.df == pytest.approx(29.0) and singletons.df == pytest.approx(29.0)
    assert singletons.se_clustered == pytest.approx(singletons.se, rel=1e-12)
    low, high = scipy_stats.t.interval(0.95, 29, loc=naive.mean, scale=naive.se)
    assert naive.ci95 == pytest.approx((low, high), rel=1e-10)


@pytest.mark.parametrize("labels", [["exam"] * 6, None])
def test_one_cluster_has_no_clustered_error_and_says_why(labels: list[str] | None) -> None:
    x = [1.0, 0.0, 1.0, 1.0, 0.0, 0.5]
    if labels is None:  # a cluster that holds every unit, but named by the field
        got = clustered_uncertainty(x, ["all"] * 6, cluster_by="dataset")
    else:
        got = clustered_uncertainty(x, labels, cluster_by="metadata.exam")
    assert got is not None and got.clusters == 1
    assert (got.se_clustered, got.df, got.ci95, got.ci95_raw) == (None, None, None, None)
    assert got.se is not None and got.se > 0  # the naive error stays, for what it is
    assert got.note is not None and "one cluster" in got.note
    block = got.to_dict()
    assert block["method"] is None and block["clipped"] is False
    assert "no interval (all 6 units are in one cluster" in got.describe()


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_all_wrong_or_all_right_has_zero_width(value: float) -> None:
    got = clustered_uncertainty([value] * 8, ["a", "a", "b", "b", "c", "c", "d", "d"])
    assert got is not None
    assert (got.mean, got.se, got.se_clustered, got.ci95) == (value, 0.0, 0.0, (value, value))
    assert got.clipped is False


def test_a_two_item_run_is_clipped_to_zero_one_and_keeps_the_raw_bounds() -> None:
    # the issue's "95% CI [-0.48, 1.48]" of a 2-item run
    got = clustered_uncertainty([1.0, 0.0])
    assert got is not None and got.df == pytest.approx(1.0)
    assert got.ci95 == (0.0, 1.0) and got.clipped
    assert got.ci95_raw is not None and got.ci95_raw[0] < -5 and got.ci95_raw[1] > 6
    block = got.to_dict()
    assert block["clipped"] is True and block["ci95"] == [0.0, 1.0]
    assert block["ci95_raw"] == list(got.ci95_raw)
    assert "clipped to [0, 1]" in got.describe()


def test_a_clustered_pass_rate_never_goes_below_zero() -> None:
    # issue #41: a low pass rate in few clusters (its t interval reaches far below 0)
    x = [0.0] * 20 + [1.0] * 3
    labels = ["a"] * 10 + ["b"] * 10 + ["c"] * 3
    got = clustered_uncertainty(x, labels, cluster_by="metadata.exam")
    assert got is not None and got.ci95 is not None and got.ci95_raw is not None
    assert got.ci95_raw[0] < 0 and got.ci95[0] == 0.0 and got.clipped
    assert 0.0 <= got.ci95[0] <= got.mean <= got.ci95[1] <= 1.0


def test_records_without_the_field_are_clusters_of_their_own() -> None:
    x = [1.0, 1.0, 0.0, 0.0, 1.0]
    labels = ["a", "a", None, None, "b"]
    got = clustered_uncertainty(x, labels, cluster_by="metadata.exam")
    assert got is not None and got.unclustered == 2 and got.clusters == 4
    # the same as giving each a label of its own
    explicit = clustered_uncertainty(x, ["a", "a", "u1", "u2", "b"])
    assert explicit is not None and got.se_clustered == pytest.approx(explicit.se_clustered)
    with pytest.raises(ValueError, match="2 cluster labels for 5 values"):
        clustered_se(x, ["a", "b"])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.2, 0.4, 0.5, 0.6, 0.8, 1.0]), st.integers(0, 5)),
        min_size=2,
        max_size=40,
    )
)
def test_property_cr2_matches_the_formula_and_the_interval_is_a_rate(
    data: list[tuple[float, int]],
) -> None:
    x = [v for v, _ in data]
    labels = [c for _, c in data]
    got = clustered_uncertainty(x, labels, cluster_by="metadata.exam")
    assert got is not None
    if len(set(labels)) == 1:
        assert got.se_clustered is None and got.ci95 is None
        return
    ref_se, ref_c = cr2_direct(x, labels)
    assert got.se == pytest.approx(ref_se, abs=1e-12)
    assert got.se_clustered == pytest.approx(ref_c, abs=1e-12)
    assert got.ci95 is not None and 0.0 <= got.ci95[0] <= got.ci95[1] <= 1.0
    assert got.df is not None and 0 < got.df <= len(set(labels)) - 1 + 1e-9


# -- the cluster field --------------------------------------------------------------------------


def test_cluster_values_by_dotted_path() -> None:
    row = {
        "dataset": "lexam",
        "task_type": "mcq",
        "metadata": {"exam": "Tax 2022", "exam.id": 7, "nested": {"task": "hearsay"}},
    }
    assert cluster_value(row, "metadata.exam") == "Tax 2022"
    assert cluster_value(row, "metadata.exam.id") == 7  # a key with a dot in it
    assert cluster_value(row, "metadata.nested.task") == "hearsay"
    assert cluster_value(row, "dataset") == "lexam"
    assert cluster_value(row, "task_type") == "mcq"
    assert cluster_value(row, "metadata.course") is None
    assert cluster_value(row, "dataset.name") is None  # a string has no fields
    assert cluster_value({"metadata": None}, "metadata.exam") is None
    assert cluster_key(1) != cluster_key("1") and cluster_key(None) is None
    assert cluster_key(["a", "b"]) == cluster_key(["a", "b"])


def test_a_slim_copy_keeps_only_the_cluster_field_where_it_was() -> None:
    row = {"metadata": {"exam": "E1", "long": "x" * 1000}, "dataset": "d"}
    slim = slim_cluster_field(row, "metadata.exam")
    assert slim == {"metadata": {"exam": "E1"}}
    assert cluster_value(slim, "metadata.exam") == "E1"
    assert slim_cluster_field(row, "metadata.course") == {}
    assert slim_cluster_field(row, "dataset") == {"dataset": "d"}
