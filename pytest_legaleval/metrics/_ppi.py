"""Prediction-powered inference (PPI++) for a mean, and how many labels an interval needs.

A few human labels ``Y`` with the judge's verdicts ``Ŷ`` on the same items, plus the
judge's verdicts ``Ŷu`` on every other item, give an estimate of the human mean that is
unbiased whatever the judge's bias, with an interval narrower than the labels alone give
when the judge agrees with the humans (Angelopoulos, Duchi and Zrnic, "PPI++: Efficient
Prediction-Powered Inference", arXiv:2311.01453, 2023).

The definitions follow the method authors' reference implementation ``ppi-python``
(``ppi_mean_pointestimate`` and ``ppi_mean_ci`` with their defaults: λ tuned on the data,
clipped to [0, 1], no weights, a two-sided normal interval); the tests compare with it to
1e-6. Pure Python (``statistics.NormalDist`` for the quantile): the run needs no numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from pytest_legaleval.errors import InvalidValue

__all__ = [
    "MeanInterval",
    "classical_mean",
    "labels_needed",
    "ppi_half_width",
    "ppi_lambda",
    "ppi_mean",
]


@dataclass(frozen=True, slots=True)
class MeanInterval:
    """An estimate of a mean with its two-sided interval."""

    estimate: float
    low: float
    high: float
    lam: float
    """The power-tuning λ used (0: the labels alone; 1: plain PPI)."""
    labelled: int
    """``n``, the items with a human label."""
    unlabelled: int
    """``N``, the other items with a judge verdict."""

    def to_dict(self, *, rate: bool = False) -> dict[str, object]:
        """``{"estimate", "ci95": [low, high], "lambda", "labelled", "unlabelled"}``.

        ``rate``: the mean is of a rate (a pass rate), so ``ci95`` is clipped to [0, 1]
        (``clipped`` says where, ``ci95_raw`` keeps the computed bounds) and the estimate,
        reported as computed, gets a ``note`` when it falls outside [0, 1] — PPI++ is
        unbiased, not bounded: with few labels and a biased judge it can leave the range.
        """
        out: dict[str, object] = {
            "estimate": self.estimate,
            "ci95": [self.low, self.high],
            "lambda": self.lam,
            "labelled": self.labelled,
            "unlabelled": self.unlabelled,
        }
        if rate:
            low, high = (min(1.0, max(0.0, b)) for b in (self.low, self.high))
            out["ci95"] = [low, high]
            out["clipped"] = (low, high) != (self.low, self.high)
            out["ci95_raw"] = [self.low, self.high]
            out["note"] = (
                f"the estimate {self.estimate:.4f} lies outside [0, 1]: PPI++ corrects the "
                f"judge's bias with {self.labelled} labels and is unbiased, not bounded; "
                "read the clipped interval"
                if not 0.0 <= self.estimate <= 1.0
                else None
            )
        return out

    def rate_interval(self) -> list[float]:
        """``[low, high]`` clipped to [0, 1] (the interval of a rate)."""
        return [min(1.0, max(0.0, self.low)), min(1.0, max(0.0, self.high))]


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _pop_std(values: Sequence[float]) -> float:
    """Standard deviation with ddof 0 (numpy's ``std`` default, which ppi-python uses)."""
    centre = _mean(values)
    return math.sqrt(math.fsum((v - centre) ** 2 for v in values) / len(values))


def _z(alpha: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise InvalidValue(f"alpha must be in (0, 1), got {alpha!r}")
    return NormalDist().inv_cdf(1.0 - alpha / 2.0)


def ppi_lambda(
    y: Sequence[float], yhat: Sequence[float], yhat_unlabelled: Sequence[float]
) -> float:
    """The power-tuning parameter λ of PPI++ for a mean, clipped to [0, 1].

    λ = Cov(Y, Ŷ) / ((1 + n/N) · Var(Ŷ ∪ Ŷu)) — PPI++'s power tuning for the mean (Hessian 1),
    with ``Cov`` over the n labelled pairs with divisor n, and ``Var`` the sample variance
    (divisor n + N − 1) of every judge verdict, labelled and unlabelled: exactly what
    ppi-python's ``_calc_lam_glm`` computes (its ``cov_grads`` is twice the covariance,
    divided by ``2 (1 + n/N)``).

    Where ppi-python has no number we choose the estimator the limit gives:

    * ``N = 0`` (no unlabelled item; ppi-python divides by zero): λ = 0, the labels alone.
    * ``Var(Ŷ ∪ Ŷu) = 0`` (the judge gave one verdict to every item; ppi-python returns
      NaN): λ = 0. A constant judge carries no information, and every λ gives the same
      estimate and interval then, so nothing is lost.
    """
    n, big_n = len(y), len(yhat_unlabelled)
    if n == 0 or big_n == 0:
        return 0.0
    y_mean, yhat_mean = _mean(y), _mean(yhat)
    cov = math.fsum((a - y_mean) * (b - yhat_mean) for a, b in zip(y, yhat, strict=True)) / n
    every = [*yhat, *yhat_unlabelled]
    centre = _mean(every)
    var = math.fsum((v - centre) ** 2 for v in every) / (len(every) - 1)
    if var <= 0.0:
        return 0.0
    lam = cov / ((1.0 + n / big_n) * var)
    return min(1.0, max(0.0, lam))


def ppi_mean(
    y: Sequence[float],
    yhat: Sequence[float],
    yhat_unlabelled: Sequence[float],
    *,
    alpha: float = 0.05,
    lam: float | None = None,
) -> MeanInterval:
    """The PPI++ estimate of the mean of ``Y`` and its 1 − α interval.

    θ̂ = λ·mean(Ŷu) + mean(Y − λ·Ŷ); the standard error is
    √(SD(λ·Ŷu)²/N + SD(Y − λ·Ŷ)²/n) with SD of divisor n (ddof 0, as ppi-python), and the
    interval θ̂ ± z₁₋α/₂ · SE (not clipped to [0, 1], as ppi-python). With ``N = 0`` the
    first term is absent: the classical interval of the labels.

    Args:
        y: the human labels (0/1 passes, or scores).
        yhat: the judge's verdicts on the same items, in the same order.
        yhat_unlabelled: the judge's verdicts on every item without a label.
        alpha: 1 − the confidence (0.05: a 95 % interval).
        lam: a fixed λ; ``None`` tunes it (:func:`ppi_lambda`).

    Raises:
        ValueError: no labelled item, ``y`` and ``yhat`` of different lengths, or a bad
            ``alpha``.

    """
    n, big_n = len(y), len(yhat_unlabelled)
    if n == 0:
        raise InvalidValue("PPI needs at least one labelled item")
    if len(yhat) != n:
        raise InvalidValue(f"y has {n} values but yhat has {len(yhat)}")
    z = _z(alpha)
    if lam is None:
        lam = ppi_lambda(y, yhat, yhat_unlabelled)
    if big_n == 0:
        lam = 0.0
    rectifier = [a - lam * b for a, b in zip(y, yhat, strict=True)]
    estimate = _mean(rectifier)
    variance = _pop_std(rectifier) ** 2 / n
    if big_n:
        estimate += lam * _mean(yhat_unlabelled)
        variance += _pop_std([lam * v for v in yhat_unlabelled]) ** 2 / big_n
    half = z * math.sqrt(variance)
    return MeanInterval(estimate, estimate - half, estimate + half, lam, n, big_n)


def classical_mean(y: Sequence[float], *, alpha: float = 0.05) -> MeanInterval:
    """The labels alone: mean ± z · SD/√n (SD of divisor n).

    ppi-python's ``classical_mean_ci``; the figure PPI is compared with.
    """
    return ppi_mean(y, [0.0] * len(y), (), alpha=alpha, lam=0.0)


def ppi_half_width(
    labelled: int,
    *,
    pass_rate: float = 0.5,
    correlation: float = 0.0,
    unlabelled: int | None = None,
    alpha: float = 0.05,
) -> float:
    """The expected half-width of the PPI++ interval of a pass rate with ``labelled`` labels.

    For 0/1 verdicts whose judge and human pass rates are both ``pass_rate`` (variance
    σ² = p(1 − p) each) and correlate by ``correlation`` (ρ; for two binary raters with
    equal pass rates ρ equals Cohen's κ), the optimal λ = ρ / (1 + n/N) gives
    Var(θ̂) = σ²/n · (1 − ρ²/(1 + n/N)) (PPI++), so the half-width is z · √Var.
    ``unlabelled=None`` means N → ∞ (a large run): σ²(1 − ρ²)/n. With ρ = 0 this is the
    classical interval of the labels alone.
    """
    if labelled <= 0:
        raise InvalidValue(f"labelled must be positive, got {labelled}")
    if not 0.0 <= pass_rate <= 1.0 or not -1.0 <= correlation <= 1.0:
        raise InvalidValue("pass_rate must be in [0, 1] and correlation in [-1, 1]")
    sigma2 = pass_rate * (1.0 - pass_rate)
    share = 1.0 if unlabelled is None else (unlabelled / (unlabelled + labelled))
    variance = sigma2 / labelled * (1.0 - correlation**2 * share)
    return _z(alpha) * math.sqrt(max(variance, 0.0))


def labels_needed(
    half_width: float,
    *,
    pass_rate: float = 0.5,
    correlation: float = 0.0,
    unlabelled: int | None = None,
    alpha: float = 0.05,
) -> int:
    """The fewest human labels whose PPI++ interval has at most ``half_width`` each side.

    The planning figure of :func:`ppi_half_width` (an expectation: a real interval also
    depends on the sample). ``correlation`` is the judge–human agreement expected (use a
    pilot's Cohen's κ); 0 gives the labels-alone count ⌈z²·p(1 − p)/h²⌉.
    """
    if half_width <= 0.0:
        raise InvalidValue(f"half_width must be positive, got {half_width!r}")

    def fits(n: int) -> bool:
        width = ppi_half_width(
            n, pass_rate=pass_rate, correlation=correlation, unlabelled=unlabelled, alpha=alpha
        )
        return width <= half_width

    high = 1
    while not fits(high):
        high *= 2
        if high > 1 << 40:
            raise InvalidValue("no number of labels reaches that half-width")
    low = high // 2 + 1 if high > 1 else 1
    while low < high:  # the half-width falls as n grows: the first n that fits
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle + 1
    return high
