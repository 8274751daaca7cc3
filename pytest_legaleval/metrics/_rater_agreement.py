"""Agreement of two raters (a judge and the humans, or two judges), with bootstrap intervals.

Pure Python; each estimator names its formula and source, and the tests compare it with
the reference libraries (scikit-learn's ``cohen_kappa_score``, ``krippendorff.alpha``) to
1e-6. An undefined figure is ``None`` with a reason, never NaN: JSON has no NaN.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_legaleval.metrics._stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    binomial_variate,
    quantile,
)

__all__ = [
    "ALPHA_UNDEFINED",
    "DRAW_BUDGET",
    "KAPPA_UNDEFINED",
    "Confusion",
    "Interval",
    "alpha_interval",
    "confusion_of",
    "kappa_agreement_intervals",
    "krippendorff_alpha_interval",
    "phi",
]

DRAW_BUDGET = 2_000_000
"""The value-by-value bootstrap of α draws at most this many units per interval."""
_MIN_RESAMPLES = 100

Interval = tuple[float, float]

KAPPA_UNDEFINED = (
    "undefined: the judge and the humans gave the same single verdict to every labelled "
    "item (chance agreement is 1)"
)
ALPHA_UNDEFINED = "undefined: every labelled score, judge's and humans', is the same"


@dataclass(frozen=True, slots=True)
class Confusion:
    """Counts of (judge verdict, human verdict) pairs of pass/fail verdicts."""

    both_pass: int = 0
    judge_pass_human_fail: int = 0
    judge_fail_human_pass: int = 0
    both_fail: int = 0

    @property
    def n(self) -> int:
        """The number of pairs."""
        return (
            self.both_pass
            + self.judge_pass_human_fail
            + self.judge_fail_human_pass
            + self.both_fail
        )

    @property
    def agreement(self) -> float | None:
        """The share of pairs on which both agree; ``None`` without pairs."""
        return (self.both_pass + self.both_fail) / self.n if self.n else None

    @property
    def kappa(self) -> float | None:
        """Cohen's κ = (p_o − p_e) / (1 − p_e) (Cohen, 1960).

        p_o is the observed agreement and p_e the agreement expected by chance from the two
        raters' marginal pass rates. Computed in integers, n²·p_e = Σ row·column, so the
        one undefined case is exact: p_e = 1, both raters gave one and the same verdict to
        every pair (scikit-learn returns NaN there). ``None`` then, and without pairs.
        """
        n = self.n
        judge_pass = self.both_pass + self.judge_pass_human_fail
        human_pass = self.both_pass + self.judge_fail_human_pass
        chance = judge_pass * human_pass + (n - judge_pass) * (n - human_pass)
        denominator = n * n - chance
        if n == 0 or denominator == 0:
            return None
        return (n * (self.both_pass + self.both_fail) - chance) / denominator

    def to_dict(self) -> dict[str, int]:
        """The four cells by name (rows: judge, columns: human)."""
        return {
            "judge_pass_human_pass": self.both_pass,
            "judge_pass_human_fail": self.judge_pass_human_fail,
            "judge_fail_human_pass": self.judge_fail_human_pass,
            "judge_fail_human_fail": self.both_fail,
        }


def confusion_of(pairs: Sequence[tuple[bool, bool]]) -> Confusion:
    """Count ``(judge passed, human passed)`` pairs."""
    cells = [0, 0, 0, 0]
    for judge, human in pairs:
        cells[(0 if judge else 2) + (0 if human else 1)] += 1
    return Confusion(*cells)


def _percentile(values: list[float], confidence: float = 0.95) -> Interval | None:
    if not values:
        return None
    values.sort()
    tail = (1.0 - confidence) / 2
    low, high = quantile(values, tail), quantile(values, 1.0 - tail)
    assert low is not None and high is not None
    return low, high


def kappa_agreement_intervals(
    confusion: Confusion,
    *,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> tuple[Interval | None, Interval | None]:
    """Percentile bootstrap 95 % intervals of the agreement and of Cohen's κ.

    Resampling n pairs with replacement is drawing the four cells' counts from a
    multinomial with the observed shares (conditional binomials, exact), so the cost does
    not grow with n. Resamples whose κ is undefined are left out of κ's interval; with
    none left, or without pairs, the interval is ``None``. Seeded: the same counts, seed
    and resamples give the same intervals.
    """
    n = confusion.n
    if n == 0:
        return None, None
    rng = random.Random(seed)
    cells = [
        confusion.both_pass,
        confusion.judge_pass_human_fail,
        confusion.judge_fail_human_pass,
        confusion.both_fail,
    ]
    agreements: list[float] = []
    kappas: list[float] = []
    for _ in range(resamples):
        drawn, left, share_left = [], n, 1.0
        for cell in cells[:-1]:
            share = cell / n
            count = binomial_variate(rng, left, min(1.0, share / share_left)) if left else 0
            drawn.append(count)
            left -= count
            share_left -= share
        drawn.append(left)
        sample = Confusion(*drawn)
        agreements.append((sample.both_pass + sample.both_fail) / n)
        kappa = sample.kappa
        if kappa is not None:
            kappas.append(kappa)
    return _percentile(agreements), _percentile(kappas)


def krippendorff_alpha_interval(pairs: Sequence[tuple[float, float]]) -> float | None:
    """Krippendorff's α of two raters' scores, interval metric, every unit rated by both.

    α = 1 − D_o / D_e (Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011,
    with δ² = (v − v′)²): with N units of two values each, n = 2N values,
    D_o = Σ_u (a_u − b_u)² / N and D_e = 2 · Σ_v (v − v̄)² / (n − 1) over all n values.
    ``None`` without a unit or when every value is the same (D_e = 0).
    """
    units = len(pairs)
    if units == 0:
        return None
    values = [v for pair in pairs for v in pair]
    centre = math.fsum(values) / len(values)
    expected = 2.0 * math.fsum((v - centre) ** 2 for v in values) / (len(values) - 1)
    if expected <= 0.0:
        return None
    observed = math.fsum((a - b) ** 2 for a, b in pairs) / units
    return 1.0 - observed / expected


def alpha_interval(
    pairs: Sequence[tuple[float, float]],
    *,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> Interval | None:
    """Percentile bootstrap 95 % interval of :func:`krippendorff_alpha_interval`.

    Units are resampled with replacement; the number of resamples is capped so that at
    most ``DRAW_BUDGET`` units are drawn (never fewer than 100). Undefined resamples are
    left out; ``None`` when none is defined.
    """
    units = len(pairs)
    if units == 0:
        return None
    rng = random.Random(seed)
    resamples = max(_MIN_RESAMPLES, min(resamples, DRAW_BUDGET // units))
    # α of a resample from three sums over its units (the formula above, expanded):
    # D_o = Σ(a − b)² / N and Σ(v − v̄)² = Σ(a² + b²) − (Σ(a + b))² / 2N.
    gaps = [(a - b) ** 2 for a, b in pairs]
    sums = [a + b for a, b in pairs]
    squares = [a * a + b * b for a, b in pairs]
    indices = range(units)
    values = 2 * units
    alphas = []
    for _ in range(resamples):
        drawn = rng.choices(indices, k=units)
        total = sum(map(sums.__getitem__, drawn))
        spread = sum(map(squares.__getitem__, drawn)) - total * total / values
        expected = 2.0 * spread / (values - 1)
        if expected > 1e-12:
            observed = sum(map(gaps.__getitem__, drawn)) / units
            alphas.append(1.0 - observed / expected)
    return _percentile(alphas)


def phi(first: Sequence[bool], second: Sequence[bool]) -> float | None:
    """Pearson's correlation of two 0/1 series (the φ coefficient).

    ``None`` when either series is constant or empty (its variance is 0).
    """
    n = len(first)
    if n == 0 or len(second) != n:
        return None
    a = sum(1 for x, y in zip(first, second, strict=True) if x and y)
    p1, p2 = sum(map(bool, first)), sum(map(bool, second))
    denominator = p1 * (n - p1) * p2 * (n - p2)
    if denominator == 0:
        return None
    return (n * a - p1 * p2) / math.sqrt(denominator)
