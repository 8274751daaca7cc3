"""Cohen's κ, Krippendorff's α, φ and their bootstrap intervals, against the references.

κ against scikit-learn's ``cohen_kappa_score`` and α against ``krippendorff.alpha`` to
1e-6 on random and edge-case data; the bootstrap against the exact bootstrap distribution
(every one of the nⁿ resamples enumerated) on a tiny sample.
"""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import pytest

from pytest_legaleval.metrics._rater_agreement import (
    Confusion,
    alpha_interval,
    confusion_of,
    kappa_agreement_intervals,
    krippendorff_alpha_interval,
    phi,
)

from ..extras import needs_stats

TOL = 1e-6


@pytest.fixture(scope="module")
def sklearn_kappa() -> Any:
    from sklearn.metrics import cohen_kappa_score

    return cohen_kappa_score


@pytest.fixture(scope="module")
def kalpha() -> Any:
    import krippendorff

    return krippendorff.alpha


@needs_stats
@pytest.mark.parametrize("seed", range(40))
def test_kappa_equals_scikit_learn(sklearn_kappa: Any, seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(2, 200)
    rate, noise = rng.random(), rng.random() * 0.6
    human = [rng.random() < rate for _ in range(n)]
    judge = [(not h) if rng.random() < noise else h for h in human]
    ours = confusion_of(list(zip(judge, human, strict=True)))
    theirs = float(sklearn_kappa([int(h) for h in human], [int(j) for j in judge]))
    if math.isnan(theirs):
        assert ours.kappa is None
    else:
        assert ours.kappa == pytest.approx(theirs, abs=TOL)
    assert ours.agreement == pytest.approx(
        sum(h == j for h, j in zip(human, judge, strict=True)) / n
    )


@needs_stats
@pytest.mark.filterwarnings("ignore")  # scikit-learn warns where kappa is undefined
@pytest.mark.parametrize(
    ("judge", "human", "expected"),
    [
        ([1, 1, 0, 0], [1, 1, 0, 0], 1.0),  # all agree
        ([0, 0, 1, 1], [1, 1, 0, 0], -1.0),  # all disagree, balanced
        ([1, 1, 1, 1], [1, 1, 1, 1], None),  # one class on both sides: sklearn NaN
        ([0, 0, 0], [0, 0, 0], None),
        ([1, 1, 1, 1], [0, 0, 0, 0], 0.0),  # each rater one class, different ones
        ([1, 0, 1, 1], [1, 1, 1, 1], 0.0),  # humans one class
        ([1], [0], 0.0),
    ],
)
def test_kappa_edge_cases(
    sklearn_kappa: Any, judge: list[int], human: list[int], expected: float | None
) -> None:
    ours = confusion_of([(bool(j), bool(h)) for j, h in zip(judge, human, strict=True)]).kappa
    theirs = float(sklearn_kappa(human, judge))
    assert ours == (None if expected is None else pytest.approx(expected, abs=TOL))
    if expected is None:
        assert math.isnan(theirs)  # where we say None, the reference has no number either
    else:
        assert theirs == pytest.approx(expected, abs=TOL)


def test_no_pairs_have_no_figures() -> None:
    empty = Confusion()
    assert (empty.n, empty.agreement, empty.kappa) == (0, None, None)
    assert kappa_agreement_intervals(empty) == (None, None)
    assert krippendorff_alpha_interval([]) is None and alpha_interval([]) is None


@needs_stats
@pytest.mark.parametrize("seed", range(30))
def test_alpha_equals_krippendorff(kalpha: Any, seed: int) -> None:
    import numpy as np

    rng = random.Random(500 + seed)
    units = rng.randint(2, 120)
    human = [round(rng.random(), rng.choice((1, 2, 3))) for _ in range(units)]
    judge = [min(1.0, max(0.0, h + rng.gauss(0, rng.random() * 0.4))) for h in human]
    theirs = kalpha(
        reliability_data=np.array([judge, human], dtype=float), level_of_measurement="interval"
    )
    ours = krippendorff_alpha_interval(list(zip(judge, human, strict=True)))
    assert ours == pytest.approx(float(theirs), abs=TOL)


@needs_stats
@pytest.mark.parametrize(
    "pairs",
    [
        [(0.2, 0.2), (0.8, 0.8), (0.5, 0.5)],  # perfect: 1
        [(0.0, 1.0), (1.0, 0.0)],  # opposite
        [(0.3, 0.7)],  # one unit
        [(1.0, 1.0), (1.0, 0.0), (1.0, 1.0)],  # judge constant
    ],
)
def test_alpha_edge_cases(kalpha: Any, pairs: list[tuple[float, float]]) -> None:
    import numpy as np

    data = np.array([[j for j, _ in pairs], [h for _, h in pairs]], dtype=float)
    theirs = float(kalpha(reliability_data=data, level_of_measurement="interval"))
    assert krippendorff_alpha_interval(pairs) == pytest.approx(theirs, abs=TOL)


def test_alpha_is_undefined_when_every_value_is_the_same() -> None:
    assert krippendorff_alpha_interval([(0.5, 0.5), (0.5, 0.5)]) is None


@needs_stats
def test_phi_equals_pearson() -> None:
    import numpy as np

    rng = random.Random(3)
    for _ in range(20):
        n = rng.randint(3, 50)
        a = [rng.random() < 0.5 for _ in range(n)]
        b = [x if rng.random() < 0.7 else not x for x in a]
        if len(set(a)) < 2 or len(set(b)) < 2:
            assert phi(a, b) is None
            continue
        assert phi(a, b) == pytest.approx(float(np.corrcoef(a, b)[0, 1]), abs=TOL)
    assert phi([True, True], [True, False]) is None and phi([], []) is None


def _exact_bootstrap(pairs: list[tuple[bool, bool]]) -> tuple[list[float], list[float]]:
    """Every resample of n pairs from n (nⁿ of them), each with probability n⁻ⁿ."""
    agreements, kappas = [], []
    for draw in itertools.product(pairs, repeat=len(pairs)):
        sample = confusion_of(list(draw))
        agreements.append(sample.agreement)
        if sample.kappa is not None:
            kappas.append(sample.kappa)
    return sorted(agreements), sorted(kappas)  # type: ignore[arg-type]


def _exact_quantile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]


def test_the_bootstrap_matches_the_exact_bootstrap_distribution() -> None:
    pairs = [(True, True), (True, True), (True, False), (False, False), (False, False),
             (False, True)]  # fmt: skip
    agreements, kappas = _exact_bootstrap(pairs)
    agreement_ci, kappa_ci = kappa_agreement_intervals(
        confusion_of(pairs), seed=11, resamples=20000
    )
    assert agreement_ci is not None and kappa_ci is not None
    # The Monte Carlo percentiles fall between the exact 1.5 % and 3.5 % (96.5 % and
    # 98.5 %) quantiles of the bootstrap distribution.
    for exact, (low, high) in ((agreements, agreement_ci), (kappas, kappa_ci)):
        assert _exact_quantile(exact, 0.015) <= low <= _exact_quantile(exact, 0.035)
        assert _exact_quantile(exact, 0.965) <= high <= _exact_quantile(exact, 0.985)


def test_the_bootstraps_are_seeded_and_deterministic() -> None:
    confusion = Confusion(30, 5, 7, 18)
    assert kappa_agreement_intervals(confusion, seed=5) == kappa_agreement_intervals(
        confusion, seed=5
    )
    assert kappa_agreement_intervals(confusion, seed=5) != kappa_agreement_intervals(
        confusion, seed=6
    )
    rng = random.Random(2)
    pairs = [(rng.random(), rng.random()) for _ in range(40)]
    assert alpha_interval(pairs, seed=1) == alpha_interval(pairs, seed=1)
    low, high = alpha_interval(pairs, seed=1) or (math.nan, math.nan)
    alpha = krippendorff_alpha_interval(pairs)
    assert alpha is not None and low <= alpha <= high


def test_a_constant_sample_has_a_point_interval_for_agreement_and_none_for_kappa() -> None:
    agreement_ci, kappa_ci = kappa_agreement_intervals(Confusion(both_pass=12))
    assert agreement_ci == (1.0, 1.0) and kappa_ci is None


@needs_stats
def test_the_alpha_bootstrap_agrees_with_one_built_on_krippendorff(kalpha: Any) -> None:
    """The same percentile bootstrap done with the reference's α on numpy resamples: the
    bounds agree to Monte Carlo precision."""
    import numpy as np

    rng = random.Random(12)
    pairs = [(h, min(1.0, max(0.0, h + rng.gauss(0, 0.25)))) for h in
             (rng.random() for _ in range(60))]  # fmt: skip
    data = np.array(pairs).T
    generator = np.random.default_rng(12)
    alphas = []
    for _ in range(600):
        drawn = data[:, generator.integers(0, 60, 60)]
        alphas.append(kalpha(reliability_data=drawn, level_of_measurement="interval"))
    low, high = np.percentile(alphas, [2.5, 97.5])
    ours = alpha_interval(pairs, seed=3, resamples=4000)
    assert ours is not None
    assert ours[0] == pytest.approx(low, abs=0.04) and ours[1] == pytest.approx(high, abs=0.04)
