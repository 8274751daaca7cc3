"""Small, dependency-free statistics: Wilson and bootstrap intervals, quantiles, histograms.

Everything here works on plain sequences of floats (``array('d')`` in the accumulators), so
the metrics need no numpy.
"""

from __future__ import annotations

import bisect
import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_legaleval.errors import InvalidValue

__all__ = [
    "BOOTSTRAP_CONFIDENCE",
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "BinomialSampler",
    "BootstrapInterval",
    "binomial_variate",
    "bootstrap_mean_interval",
    "histogram",
    "quantile",
    "wilson_interval",
]

Z95 = 1.959963984540054
"""The standard normal quantile of 0.975."""

BOOTSTRAP_SEED = 20240101
"""Default seed of the bootstrap (recorded in every summary)."""
BOOTSTRAP_RESAMPLES = 2000
"""Default number of bootstrap resamples."""
BOOTSTRAP_CONFIDENCE = 0.95
"""Confidence level of every interval."""

MULTINOMIAL_MAX_DISTINCT = 64
"""Up to this many distinct scores, resamples are drawn as multinomial counts (exact, cost
independent of n); above it, value by value, within ``DRAW_BUDGET``."""
DRAW_BUDGET = 2_000_000
"""Value-by-value resampling draws at most this many values per interval (≈ 0.4 s)."""
MIN_RESAMPLES = 100
"""Floor of the value-by-value resample count, whatever the budget says."""


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion; ``None`` when ``n == 0``.

    Unlike the normal approximation it never collapses to a zero-width interval at 0 % or
    100 %: with 0 of 10 the upper bound is about 0.28.
    """
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise InvalidValue(f"successes must be in [0, n], got {successes} of {n}")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At 0 % and 100 % the bound on that side is exactly 0 or 1 (rounding would miss it).
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def quantile(sorted_values: Sequence[float], q: float) -> float | None:
    """The ``q``-quantile of already sorted values, linear interpolation (type 7, as numpy).

    ``None`` for an empty sequence.
    """
    n = len(sorted_values)
    if n == 0:
        return None
    if not 0.0 <= q <= 1.0:
        raise InvalidValue(f"q must be in [0, 1], got {q}")
    pos = (n - 1) * q
    low = math.floor(pos)
    high = min(low + 1, n - 1)
    frac = pos - low
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * frac


def histogram(
    values: Sequence[float], bins: int = 10, low: float = 0.0, high: float = 1.0
) -> dict[str, list[float] | list[int]]:
    """Counts of ``values`` in ``bins`` equal bins over ``[low, high]`` (last bin closed).

    Values outside the range are clamped into the first or last bin, so counts always sum
    to ``len(values)``.
    """
    if bins < 1 or not high > low:
        raise InvalidValue("histogram needs bins >= 1 and high > low")
    width = (high - low) / bins
    counts = [0] * bins
    for value in values:
        index = int((value - low) / width)
        counts[min(max(index, 0), bins - 1)] += 1
    edges = [round(low + i * width, 12) for i in range(bins + 1)]
    return {"edges": edges, "counts": counts}


def _inversion(n: int, p: float, u: float, table: list[tuple[float, int]] | None = None) -> int:
    """Exact inversion for Binomial(``n``, ``p``), ``0 < p < 1``, ``n >= 1``, at uniform ``u``.

    Outcomes are visited in the fixed order mode, mode+1, mode-1, mode+2, … and the first
    one whose cumulative probability reaches ``u`` is returned. With ``table`` every
    outcome is visited and ``(cumulative, outcome)`` appended in that order (pass
    ``u = inf``); one walk serves both, so a table gives exactly the direct draws.
    """
    q = 1.0 - p
    mode = min(int((n + 1) * p), n)
    log_pmf = (
        math.lgamma(n + 1)
        - math.lgamma(mode + 1)
        - math.lgamma(n - mode + 1)
        + mode * math.log(p)
        + (n - mode) * math.log(q)
    )
    pmf_mode = math.exp(log_pmf)
    cumulative = pmf_mode
    if table is not None:
        table.append((cumulative, mode))
    if u <= cumulative:
        return mode
    up, up_pmf = mode, pmf_mode
    down, down_pmf = mode, pmf_mode
    ratio = p / q
    while up < n or down > 0:
        if up < n:
            up_pmf *= (n - up) / (up + 1) * ratio
            up += 1
            cumulative += up_pmf
            if table is not None:
                table.append((cumulative, up))
            if u <= cumulative:
                return up
        if down > 0:
            down_pmf *= down / (n - down + 1) / ratio
            down -= 1
            cumulative += down_pmf
            if table is not None:
                table.append((cumulative, down))
            if u <= cumulative:
                return down
    return mode  # u fell into the rounding slack above the summed pmf (probability ~1e-15)


def binomial_variate(rng: random.Random, n: int, p: float) -> int:
    """One exact Binomial(``n``, ``p``) draw by inversion, searching outward from the mode.

    Visiting outcomes in the fixed order mode, mode+1, mode-1, mode+2, … and stopping where
    the cumulative probability passes a uniform draw is exact inversion; it takes about
    ``sqrt(n p (1-p))`` steps instead of ``n`` (the stdlib's ``binomialvariate`` needs 3.12).
    """
    if n <= 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    return _inversion(n, p, rng.random())


class BinomialSampler:
    """Many draws of one Binomial(``n``, ``p``): the same draws as :func:`binomial_variate`.

    The walk of :func:`_inversion` is done once to the end (``n`` steps), keeping the
    cumulative sums; each draw is then a bisection. A bootstrap of pass/fail outcomes draws
    one binomial of the same ``n`` and ``p`` per resample.
    """

    __slots__ = ("_cumulative", "_fixed", "_mode", "_outcomes")

    def __init__(self, n: int, p: float) -> None:
        self._fixed: int | None = None
        if n <= 0 or p <= 0.0:
            self._fixed = 0
        elif p >= 1.0:
            self._fixed = n
        else:
            table: list[tuple[float, int]] = []
            self._mode = _inversion(n, p, math.inf, table)
            self._cumulative = [cumulative for cumulative, _ in table]
            self._outcomes = [outcome for _, outcome in table]

    def draw(self, rng: random.Random) -> int:
        """One draw (consumes one ``rng.random()``, as :func:`binomial_variate` does)."""
        if self._fixed is not None:
            return self._fixed
        index = bisect.bisect_left(self._cumulative, rng.random())
        return self._outcomes[index] if index < len(self._outcomes) else self._mode


@dataclass(frozen=True, slots=True)
class BootstrapInterval:
    """A percentile bootstrap interval of a mean, with what is needed to reproduce it."""

    low: float
    high: float
    resamples: int
    seed: int
    method: str
    """``multinomial`` (resample counts of each distinct value) or ``values``."""
    confidence: float = BOOTSTRAP_CONFIDENCE

    def to_dict(self) -> dict[str, float | int | str]:
        """The JSON form stored in the summaries."""
        return {
            "low": self.low,
            "high": self.high,
            "method": "bootstrap_percentile",
            "sampler": self.method,
            "confidence": self.confidence,
            "resamples": self.resamples,
            "seed": self.seed,
        }


def _multinomial_means(
    rng: random.Random, counts: Counter[float], n: int, resamples: int
) -> list[float]:
    values = sorted(counts)
    weights = [counts[v] / n for v in values]
    # The first binomial of every resample has the same n and p (for pass/fail outcomes it
    # is the only one): drawn from a table built once, with the same results.
    first = BinomialSampler(n, min(1.0, weights[0]))
    means = []
    for _ in range(resamples):
        remaining_n, remaining_p, total = n, 1.0, 0.0
        for level, (value, weight) in enumerate(zip(values[:-1], weights[:-1], strict=True)):
            if remaining_n == 0:
                break
            if level == 0:
                drawn = first.draw(rng)
            else:
                drawn = binomial_variate(rng, remaining_n, min(1.0, weight / remaining_p))
            total += drawn * value
            remaining_n -= drawn
            remaining_p -= weight
        total += remaining_n * values[-1]
        means.append(total / n)
    return means


def bootstrap_mean_interval(
    values: Sequence[float],
    *,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = BOOTSTRAP_CONFIDENCE,
) -> BootstrapInterval | None:
    """Seeded percentile bootstrap interval of the mean of ``values``; ``None`` when empty.

    With few distinct values (MCQ 0/1, judge scales) each resample is drawn as multinomial
    counts through conditional binomials, so the cost does not grow with ``n``. With many
    distinct values the resamples are drawn value by value and their number is capped so
    that at most ``DRAW_BUDGET`` values are drawn (never fewer than ``MIN_RESAMPLES``).
    The same input, seed and count always give the same interval.
    """
    n = len(values)
    if n == 0:
        return None
    rng = random.Random(seed)
    counts = Counter(values)
    if len(counts) == 1:
        only = next(iter(counts))
        return BootstrapInterval(only, only, resamples, seed, "multinomial", confidence)
    if len(counts) <= MULTINOMIAL_MAX_DISTINCT:
        method = "multinomial"
        means = _multinomial_means(rng, counts, n, resamples)
    else:
        method = "values"
        resamples = max(MIN_RESAMPLES, min(resamples, DRAW_BUDGET // n))
        population = list(values)
        means = [math.fsum(rng.choices(population, k=n)) / n for _ in range(resamples)]
    means.sort()
    alpha = (1.0 - confidence) / 2
    low = quantile(means, alpha)
    high = quantile(means, 1.0 - alpha)
    assert low is not None and high is not None
    return BootstrapInterval(low, high, resamples, seed, method, confidence)
