"""The power planner against brute force: the exact variance by enumeration, a seeded Monte
Carlo of the paired clustered test (power ≈ 0.80 at the MDE), and recovery of the variance
components from a simulated baseline run."""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._clustered import clustered_uncertainty
from pytest_legaleval.metrics._cr2 import bell_mccaffrey_df
from pytest_legaleval.metrics._power import (
    DEFAULT_ICC,
    VarianceModel,
    cluster_sizes,
    default_model,
    design_df,
    design_effect,
    difference_se,
    estimate_model,
    minimum_detectable_difference,
    plan,
    power_at,
    records_for,
)


def binom_pmf(k: int, n: int, p: float) -> float:
    return math.comb(n, k) * p**k * (1 - p) ** (n - k)


# Record types under "no difference": B's marginal distribution of θ equals A's.
TYPES = [((0.9, 0.8), 0.25), ((0.8, 0.9), 0.25), ((0.3, 0.2), 0.25), ((0.2, 0.3), 0.25)]


def model_of(types: list[tuple[tuple[float, float], float]]) -> VarianceModel:
    """The planner's parameters of a joint distribution of (θ_A, θ_B), by definition."""
    p = sum(w * a for (a, _), w in types)
    between = sum(w * (a - p) ** 2 for (a, _), w in types)
    within = sum(w * a * (1 - a) for (a, _), w in types)
    cov = sum(w * (a - p) * (b - p) for (a, b), w in types)
    return VarianceModel(p, between, within, cov / between, 0.0)


@pytest.mark.parametrize("epochs", [1, 2, 5])
def test_the_variance_of_a_paired_difference_equals_enumeration(epochs: int) -> None:
    model = model_of(TYPES)
    assert model.p == pytest.approx(0.55) and model.between + model.within == pytest.approx(
        model.p * (1 - model.p)
    )
    # exact Var(mean of B's K answers − mean of A's K answers) over types and outcomes
    mean = 0.0
    second = 0.0
    for (a, b), weight in TYPES:
        for i, j in itertools.product(range(epochs + 1), repeat=2):
            prob = weight * binom_pmf(i, epochs, a) * binom_pmf(j, epochs, b)
            d = j / epochs - i / epochs
            mean += prob * d
            second += prob * d * d
    exact = second - mean**2
    assert mean == pytest.approx(0.0, abs=1e-12)
    planned = model.between_difference + model.within_sum / epochs
    assert planned == pytest.approx(exact, rel=1e-12)
    assert difference_se(100, epochs, model.between_difference, model.within_sum) == (
        pytest.approx(math.sqrt(exact / 100))
    )


def test_the_design_effect_is_what_eq4_measures() -> None:
    # for any data, (se_eq4 / se)² = 1 + (Σm²/n − 1)·ICC with ICC = cross/pairs/s²: the
    # design effect models the variance eq. 4 estimates (the interval itself is CR2 now)
    rng = random.Random(4)
    labels = [rng.randrange(7) for _ in range(50)]
    x = [rng.choice([0.0, 0.25, 0.5, 1.0]) for _ in labels]
    got = clustered_uncertainty(x, labels, cluster_by="c")
    assert got is not None and got.se and got.se_clustered
    mean = sum(x) / 50
    s2 = sum((v - mean) ** 2 for v in x) / 49
    eq4 = math.sqrt(s2 / 50 + sum(
        (x[i] - mean) * (x[j] - mean)
        for i in range(50)
        for j in range(50)
        if i != j and labels[i] == labels[j]
    ) / 50**2)  # fmt: skip
    cross = sum(
        (x[i] - mean) * (x[j] - mean)
        for i in range(50)
        for j in range(50)
        if i != j and labels[i] == labels[j]
    )
    sizes = [labels.count(c) for c in set(labels)]
    pairs = sum(m * (m - 1) for m in sizes)
    assert design_effect(sizes, cross / pairs / s2) == pytest.approx((eq4 / got.se) ** 2, rel=1e-12)
    assert design_effect([1] * 10, 0.9) == 1.0  # singletons: no effect
    assert design_effect([5] * 4, 0.25) == 2.0  # 1 + (5 − 1)·0.25


def test_power_is_080_at_the_mde_and_the_inverse_holds() -> None:
    se = 0.02
    mde = minimum_detectable_difference(se)
    assert mde == pytest.approx((1.959963984540054 + 0.8416212335729143) * se)
    assert power_at(mde, se) == pytest.approx(0.80, abs=1e-4)
    assert power_at(0.0, se) == pytest.approx(0.05)
    model = default_model()
    n = records_for(0.05, model, epochs=3, deff=1.4)
    se_n = difference_se(n, 3, model.between_difference, model.within_sum, 1.4)
    se_less = difference_se(n - 1, 3, model.between_difference, model.within_sum, 1.4)
    assert minimum_detectable_difference(se_n) <= 0.05 < minimum_detectable_difference(se_less)


def simulate_power(
    np: Any, delta: float, *, se_known: float | None, sims: int = 3000, seed: int = 7
) -> float:
    """Share of seeded simulated comparisons whose 95 % clustered interval excludes 0.

    100 clusters of 4 records, 3 epochs. θ_A = 0.5 ± 0.2 per record; θ_B = θ_A + δ ± 0.05 per
    cluster ± 0.1 per record: the between part of the difference has variance 0.0125 and
    ICC 0.2. With ``se_known`` the z-test uses it; otherwise Miller's eq. 4 on the d_i.
    """
    rng = np.random.default_rng(seed)
    g, m, k = 100, 4, 3
    n = g * m
    theta_a = 0.5 + 0.2 * rng.choice([-1.0, 1.0], size=(sims, n))
    cluster = np.repeat(0.05 * rng.choice([-1.0, 1.0], size=(sims, g)), m, axis=1)
    theta_b = theta_a + delta + cluster + 0.1 * rng.choice([-1.0, 1.0], size=(sims, n))
    d = rng.binomial(k, theta_b) / k - rng.binomial(k, theta_a) / k
    mean = d.mean(axis=1)
    if se_known is not None:
        se = np.full(sims, se_known)
    else:
        r = d - mean[:, None]
        s2 = (r * r).sum(axis=1) / (n - 1)
        big_r = r.reshape(sims, g, m).sum(axis=2)
        se = np.sqrt(s2 + (big_r * big_r).sum(axis=1)) / n
    return float((np.abs(mean / se) > 1.959963984540054).mean())


def test_monte_carlo_power_at_the_mde_is_080() -> None:
    np = pytest.importorskip("numpy", reason="the Monte Carlo check needs the [stats] extra")
    # the simulation's components: between difference 0.05² + 0.1², ICC 0.05²/that,
    # within E[θ_A(1−θ_A)] + E[θ_B(1−θ_B)] = 0.21 + (0.25 − δ² − 0.0525)
    between, icc, deff = 0.0125, 0.0025 / 0.0125, design_effect([4] * 100, 0.2)
    assert deff == pytest.approx(1 + 3 * icc)
    delta = 0.05
    for _ in range(20):  # the within part depends on δ itself: a fixed point
        se = difference_se(400, 3, between, 0.21 + 0.1975 - delta**2, deff)
        delta = minimum_detectable_difference(se)
    assert 0.04 < delta < 0.07
    # 3000 simulations: the standard error of a power near 0.8 is 0.0073
    assert simulate_power(np, delta, se_known=se) == pytest.approx(0.80, abs=0.025)
    assert simulate_power(np, delta, se_known=None) == pytest.approx(0.80, abs=0.03)
    assert simulate_power(np, 0.0, se_known=None) == pytest.approx(0.05, abs=0.015)


def baseline_lines(
    seed: int, clusters: int, size: int, epochs: int, spread: tuple[float, float]
) -> list[dict[str, Any]]:
    """θ = 0.5 ± spread[0] per cluster ± spread[1] per record, ``epochs`` answers each."""
    rng = random.Random(seed)
    rows = []
    for c in range(clusters):
        shift = rng.choice([-1, 1]) * spread[0]
        for r in range(size):
            theta = 0.5 + shift + rng.choice([-1, 1]) * spread[1]
            for e in range(epochs):
                passed = rng.random() < theta
                rows.append(
                    {
                        "record_id": f"c{c}r{r}",
                        "dataset": "d",
                        "model": "m",
                        "epoch": e,
                        "outcome": "passed" if passed else "failed",
                        "score": float(passed),
                        "metadata": {"exam": f"e{c}"},
                    }
                )
    return rows


def test_a_baseline_with_epochs_measures_the_components() -> None:
    # true: σ²_b = 0.15² + 0.15² = 0.045, ICC = 0.0225 / 0.045 = 0.5, σ²_w = 0.25 − 0.045
    rows = baseline_lines(1, 400, 4, 4, (0.15, 0.15))
    model = estimate_model(rows, "metadata.exam", correlation=0.6)
    assert model.p == pytest.approx(0.5, abs=0.02)
    assert model.within == pytest.approx(0.205, rel=0.05)
    assert model.between == pytest.approx(0.045, rel=0.15)
    assert model.icc == pytest.approx(0.5, abs=0.1)
    assert model.sources == {
        "p": "baseline",
        "within": "baseline",
        "between": "baseline",
        "icc": "baseline",
        "correlation": "given",
    }
    assert model.correlation == 0.6


def test_a_small_baseline_by_hand() -> None:
    # four records, 2 epochs: x = 1, 0.5, 0.5, 0; within: c(n−c)/(n(n−1)) = 0, .5, .5, 0
    passes = {"a": [1, 1], "b": [1, 0], "c": [0, 1], "d": [0, 0]}
    exams = {"a": "X", "b": "X", "c": "Y", "d": "Y"}
    rows = [
        {
            "record_id": r,
            "epoch": e,
            "outcome": "passed" if p else "failed",
            "metadata": {"exam": exams[r]},
        }
        for r, ps in passes.items()
        for e, p in enumerate(ps)
    ]
    model = estimate_model(rows, "metadata.exam")
    assert model.p == 0.5 and model.within == 0.25
    s2 = (0.25 + 0 + 0 + 0.25) / 3
    assert model.between == pytest.approx(s2 - 0.25 / 2)
    # cross-products within X: (0.5)(0) twice; within Y: (0)(−0.5) twice → 0
    assert model.icc == 0.0 and model.sources["icc"] == "baseline"


def test_a_baseline_without_variance_or_epochs_falls_back_to_stated_defaults() -> None:
    flat = [{"record_id": f"r{i}", "outcome": "passed"} for i in range(10)]
    model = estimate_model(flat)
    assert model.p == 0.95 and "clamped" in model.sources["p"]
    one_epoch = [
        {"record_id": f"r{i}", "outcome": "passed" if i % 4 else "failed"} for i in range(8)
    ]
    model = estimate_model(one_epoch, "metadata.exam")
    assert model.sources["within"] == "assumed" and model.sources["icc"] == "assumed"
    assert model.icc == DEFAULT_ICC and model.p == 0.75
    assert estimate_model([]).sources["p"] == "assumed"


def test_the_plan_and_its_table() -> None:
    records = [{"metadata": {"exam": i // 5}} for i in range(195)] + [{"metadata": {}}] * 5
    result = plan(records, epochs=3, cluster_by="metadata.exam", target=0.03)
    assert result.records == 200 and result.clusters == 39 + 5
    sizes = cluster_sizes(records, "metadata.exam")
    assert result.design_effect == pytest.approx(design_effect(sizes, DEFAULT_ICC))
    model = result.model
    assert result.se == pytest.approx(
        difference_se(200, 3, model.between_difference, model.within_sum, result.design_effect)
    )
    assert result.epoch_columns == (1, 2, 3, 5, 10)
    rows = dict(result.table)
    assert list(rows) == [100, 200, 400, 800]
    assert rows[200][2] == pytest.approx(result.mde)
    for n, mdes in result.table:  # more epochs and more records never hurt
        assert list(mdes) == sorted(mdes, reverse=True)
        assert n == 100 or mdes[0] < rows[n // 2][0]
    assert result.records_for_target == records_for(
        0.03, model, 3, result.design_effect, sizes=sizes
    )
    # the t at the design's df asks for more than the normal would, never fewer
    assert result.records_for_target >= records_for(0.03, model, 3, result.design_effect)
    assert result.df == pytest.approx(design_df(sizes))
    text = result.render()
    assert f"{result.mde * 100:.1f} points" in text and "0.10    assumed" in text
    assert result.to_dict()["table"]["rows"][1]["records"] == 200


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epochs": 0}, "epochs must be >= 1"),
        ({"alpha": 1.5}, "alpha must be in"),
        ({"power": 0.1}, "power must be in"),  # issue 41: a negative "detectable" difference
        ({"correlation": 2.0}, "correlation must be in"),
        ({"target": 0.0}, "target difference must be in"),
        ({"target": 1e-300}, "target difference must be in"),  # issue 41: an overflow
    ],
)
def test_bad_plans_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        plan([{"id": "a"}], **kwargs)
    with pytest.raises(ValueError, match="no records"):
        plan([])


def test_the_planner_uses_t_quantiles_at_the_designs_df() -> None:
    stats = pytest.importorskip("scipy.stats", reason="the reference check needs [stats]")
    sizes = [round(1 + i * 59 / 16) for i in range(17)]  # 17 exams of 1 … 60 records
    records = [{"metadata": {"exam": g}} for g, m in enumerate(sizes) for _ in range(m)]
    result = plan(records, cluster_by="metadata.exam")
    df = design_df(sizes)
    assert df is not None and result.df == pytest.approx(df) and 5 < df < 16
    quantiles = float(stats.t.ppf(0.975, df) + stats.t.ppf(0.80, df))
    assert result.mde == pytest.approx(quantiles * result.se, rel=1e-9)
    # the other tail adds about 1e-4 at 11 df (the MDE ignores it)
    assert power_at(result.mde, result.se, df=df) == pytest.approx(0.80, abs=5e-4)
    assert power_at(0.0, result.se, df=df) == pytest.approx(0.05, rel=1e-9)
    assert result.to_dict()["df"] == result.df
    assert f"t at {df:.1f} df" in result.render()
    # independent records: df = n − 1, and the t barely differs from the normal at 200
    flat = plan([{"id": str(i)} for i in range(200)])
    assert flat.df == pytest.approx(199.0)
    half = plan(records, cluster_by="metadata.exam").table[0]
    assert half[0] == round(len(records) / 2)
    assert design_df(sizes, half[0]) == pytest.approx(bell_mccaffrey_df(sizes[:8]))  # 8.5 → 8


def test_one_cluster_or_one_record_cannot_be_planned() -> None:
    with pytest.raises(ConfigError, match=r"all 3 records are in one cluster of metadata\.exam"):
        plan([{"metadata": {"exam": "x"}}] * 3, cluster_by="metadata.exam")
    with pytest.raises(ConfigError, match="one record"):
        plan([{"id": "a"}])
