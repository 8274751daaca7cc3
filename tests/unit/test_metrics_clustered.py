"""Clustered standard errors (Miller 2024 eq. 4): a direct double loop, statsmodels'
cluster-robust error (ddof-0 form, accounted for) and every edge case."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_legaleval.metrics.clustered import (
    CI95_Z,
    cluster_key,
    cluster_value,
    clustered_se,
    clustered_uncertainty,
    slim_cluster_field,
)


def eq4_double_loop(x: Sequence[float], labels: Sequence[object]) -> tuple[float, float]:
    """(se, se_clustered) written as the issue writes them: ddof-1 s², then the i≠j sum."""
    n = len(x)
    mean = sum(x) / n
    s2 = sum((v - mean) ** 2 for v in x) / (n - 1)
    cross = 0.0
    for i in range(n):
        for j in range(n):
            if i != j and labels[i] == labels[j]:
                cross += (x[i] - mean) * (x[j] - mean)
    return math.sqrt(s2 / n), math.sqrt(s2 / n + cross / n**2)


def sample(seed: int, n: int, clusters: int, epochs: int) -> tuple[list[float], list[int]]:
    """Record means of ``epochs`` 0/1 answers with a shared cluster effect."""
    rng = random.Random(seed)
    effect = [rng.uniform(0.1, 0.9) for _ in range(clusters)]
    labels = [rng.randrange(clusters) for _ in range(n)]
    x = [sum(rng.random() < effect[c] for _ in range(epochs)) / epochs for c in labels]
    return x, labels


CASES = [(seed, n, g, k) for seed, (n, g, k) in enumerate([(60, 12, 5), (40, 5, 1), (25, 25, 3)])]


@pytest.mark.parametrize(("seed", "n", "clusters", "epochs"), CASES)
def test_eq4_equals_the_direct_double_loop(seed: int, n: int, clusters: int, epochs: int) -> None:
    x, labels = sample(seed, n, clusters, epochs)
    se, se_c = eq4_double_loop(x, labels)
    got = clustered_uncertainty(x, labels, cluster_by="metadata.exam")
    assert got is not None
    assert got.se == pytest.approx(se, rel=1e-12)
    assert got.se_clustered == pytest.approx(se_c, rel=1e-12)
    assert got.clusters == len(set(labels)) and got.n == n
    assert got.ci95 == pytest.approx((got.mean - CI95_Z * se_c, got.mean + CI95_Z * se_c))


@pytest.mark.parametrize(("seed", "n", "clusters", "epochs"), CASES)
def test_statsmodels_is_the_ddof0_form_of_eq4(
    seed: int, n: int, clusters: int, epochs: int
) -> None:
    np = pytest.importorskip("numpy", reason="the reference check needs the [stats] extra")
    sm = pytest.importorskip("statsmodels.api", reason="the reference check needs [stats]")
    x, labels = sample(seed, n, clusters, epochs)
    fit = sm.OLS(np.asarray(x), np.ones(n)).fit(
        cov_type="cluster", cov_kwds={"groups": np.asarray(labels), "use_correction": False}
    )
    reference = float(fit.bse[0])
    # statsmodels: σ̂²/n + cross/n² with σ̂² the ddof-0 variance; eq. 4 uses ddof 1, so it
    # is larger by (s² − σ̂²)/n = s²/n² under the root.
    s2 = float(np.var(x, ddof=1))
    _, se_c = clustered_se(x, labels) or (0.0, 0.0)
    assert se_c == pytest.approx(math.sqrt(reference**2 + s2 / n**2), rel=1e-10)
    # and the naive se is statsmodels' nonrobust one on a constant
    naive = sm.OLS(np.asarray(x), np.ones(n)).fit()
    assert clustered_uncertainty(x).se == pytest.approx(float(naive.bse[0]), rel=1e-10)  # type: ignore[union-attr]


def test_the_issues_sixty_records_in_twelve_exams_widen_the_interval() -> None:
    # 12 exams of 5: within an exam the records agree (all pass or all fail, by exam)
    x = [float(e % 3 == 0) for e in range(12) for _ in range(5)]
    labels = [e for e in range(12) for _ in range(5)]
    got = clustered_uncertainty(x, labels, cluster_by="metadata.exam")
    assert got is not None and got.se is not None and got.se_clustered is not None
    _, se_c = eq4_double_loop(x, labels)
    assert got.se_clustered == pytest.approx(se_c)
    # R_c = 5 r_c, so Σ_c R_c² = 5 Σ_i r_i² = 5 (n − 1) s², and se_c² / se² = (1 + 5·59) / 60
    assert got.se_clustered / got.se == pytest.approx(math.sqrt((1 + 5 * 59) / 60))
    assert got.se_clustered / got.se > 2.2


# -- edge cases ---------------------------------------------------------------------------------


def test_no_records_and_one_record() -> None:
    assert clustered_uncertainty([]) is None
    one = clustered_uncertainty([0.4], ["a"], cluster_by="dataset")
    assert one is not None
    assert (one.mean, one.se, one.se_clustered, one.ci95, one.clusters) == (
        0.4,
        None,
        None,
        None,
        1,
    )
    assert clustered_se([1.0], None) is None


def test_singleton_clusters_and_no_clusters_equal_the_naive_error() -> None:
    x, _ = sample(7, 30, 3, 4)
    naive = clustered_uncertainty(x)
    singletons = clustered_uncertainty(x, list(range(30)), cluster_by="record")
    assert naive is not None and singletons is not None
    assert naive.cluster_by is None and naive.clusters == 30
    assert naive.se_clustered == naive.se
    assert singletons.se_clustered == pytest.approx(singletons.se, rel=1e-12)
    assert eq4_double_loop(x, list(range(30)))[1] == pytest.approx(singletons.se_clustered)


def test_one_cluster_gives_s_over_n_never_a_negative_root() -> None:
    x = [1.0, 0.0, 1.0, 1.0, 0.0, 0.5]
    got = clustered_uncertainty(x, ["exam"] * 6, cluster_by="metadata.exam")
    assert got is not None and got.clusters == 1
    s = math.sqrt(sum((v - sum(x) / 6) ** 2 for v in x) / 5)
    assert got.se_clustered == pytest.approx(s / 6)
    assert got.se_clustered == pytest.approx(eq4_double_loop(x, ["exam"] * 6)[1])


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_all_wrong_or_all_right_has_zero_width(value: float) -> None:
    got = clustered_uncertainty([value] * 8, ["a", "a", "b", "b", "c", "c", "d", "d"])
    assert got is not None
    assert (got.mean, got.se, got.se_clustered, got.ci95) == (value, 0.0, 0.0, (value, value))


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
def test_property_eq4_matches_the_loop_and_is_at_least_s_over_n(
    data: list[tuple[float, int]],
) -> None:
    x = [v for v, _ in data]
    labels = [c for _, c in data]
    result = clustered_se(x, labels)
    assert result is not None
    se, se_c = result
    ref_se, ref_c = eq4_double_loop(x, labels)
    assert se == pytest.approx(ref_se, abs=1e-12)
    assert se_c == pytest.approx(ref_c, abs=1e-12)
    n = len(x)
    assert se_c >= se / math.sqrt(n) - 1e-15  # s/n: the floor of eq. 4


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
