"""Student's t distribution at any (fractional) degrees of freedom, standard library only.

The small-sample intervals (:mod:`._clustered`, :mod:`._paired`) and the power planner
(:mod:`._power`) need t quantiles at the Bell–McCaffrey degrees of freedom, which are
rarely whole numbers. scipy is not a runtime dependency, so the distribution is computed
here:

- the CDF through the regularized incomplete beta function,
  ``P(T ≤ t) = 1 − ½·I_{ν/(ν+t²)}(ν/2, ½)`` for ``t ≥ 0`` (symmetric below 0), with
  ``I_x(a, b)`` evaluated by its continued fraction (modified Lentz; Numerical Recipes
  §6.4, the classic expansion), using the symmetry ``I_x(a, b) = 1 − I_{1−x}(b, a)`` where
  the fraction converges slowly;
- the quantile by a safeguarded Newton iteration on the CDF (bisection whenever a Newton
  step leaves the bracket), started from the normal quantile, to a relative tolerance of
  about 1e-12.

The tests check both against ``scipy.stats.t`` over ν from 0.3 to 10¹⁵ (to 1e-9).
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

from pytest_legaleval.errors import ConfigError

__all__ = ["regularized_beta", "t_cdf", "t_quantile", "t_two_sided_p"]

_EPS = 1e-16
_TINY = 1e-300
_MAX_TERMS = 10_000
_NORMAL_DF = 1e12
"""Above this many degrees of freedom the t is the normal to double precision."""


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of ``I_x(a, b)`` (converges fast for ``x < (a+1)/(a+b+2)``)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_TERMS + 1):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        step = d * c
        h *= step
        if abs(step - 1.0) < _EPS:
            break
    return h


def _log_gamma_ratio(a: float, b: float) -> float:
    """``ln Γ(a+b) − ln Γ(a)``, accurate for large ``a`` too.

    ``lgamma`` differences lose about ``ln(a)·1e-16·a`` absolutely when ``a`` is large (the
    t at 10⁸ degrees of freedom); there the difference of Stirling's series is taken term by
    term instead (its next term is below 1e-18 for ``a ≥ 1000``).
    """
    if a < 1000.0:
        return math.lgamma(a + b) - math.lgamma(a)
    z = a + b
    return (
        (a - 0.5) * math.log1p(b / a)
        + b * math.log(z)
        - b
        + (1.0 / z - 1.0 / a) / 12.0
        - (1.0 / z**3 - 1.0 / a**3) / 360.0
    )


def _ibeta(a: float, b: float, x: float, y: float, log_x: float, log_y: float) -> float:
    """``I_x(a, b)`` with ``y = 1 − x`` and both logarithms given exactly by the caller."""
    # Tested on the exact one of x and y = 1 − x: the other may round to 1 and still carry
    # the value through its logarithm.
    if x == 0.0:
        return 0.0
    if y == 0.0:
        return 1.0
    if a >= b:
        log_beta = _log_gamma_ratio(a, b) - math.lgamma(b)
    else:
        log_beta = _log_gamma_ratio(b, a) - math.lgamma(a)
    front = math.exp(log_beta + a * log_x + b * log_y)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, y) / b


def regularized_beta(a: float, b: float, x: float) -> float:
    """``I_x(a, b)``, the regularized incomplete beta function (``a, b > 0``, ``0 ≤ x ≤ 1``).

    Raises:
        ConfigError: an argument out of range or not finite.

    """
    if not (a > 0.0 and b > 0.0 and 0.0 <= x <= 1.0) or not math.isfinite(a + b):
        raise ConfigError(f"regularized_beta needs a, b > 0 and 0 <= x <= 1, got {a}, {b}, {x}")
    if x == 0.0 or x == 1.0:
        return x
    return _ibeta(a, b, x, 1.0 - x, math.log(x), math.log1p(-x))


def _check_df(df: float) -> None:
    if not (isinstance(df, int | float) and df > 0.0) or math.isnan(df):
        raise ConfigError(f"degrees of freedom must be a number > 0, got {df!r}")


def _upper_tail(t: float, df: float) -> float:
    """``P(T > |t|)`` (one tail), accurate far into the tail.

    ``P(T > |t|) = ½·I_x(ν/2, ½)`` with ``x = ν/(ν+t²)``; ``1 − x = t²/(ν+t²)`` and both
    logarithms are formed without subtracting from 1, so neither small nor huge ``t`` loses
    digits.
    """
    if math.isinf(df) or df > _NORMAL_DF:
        return 0.5 * math.erfc(abs(t) / math.sqrt(2.0))
    if t == 0.0:
        return 0.5
    t2 = t * t
    if math.isinf(t2):
        return 0.0
    x, y = df / (df + t2), t2 / (df + t2)
    log_x = -math.log1p(t2 / df)
    log_y = 2.0 * math.log(abs(t)) - math.log(df + t2)
    return 0.5 * _ibeta(df / 2.0, 0.5, x, y, log_x, log_y)


def t_cdf(t: float, df: float) -> float:
    """``P(T ≤ t)`` for Student's t with ``df`` degrees of freedom (any ``df > 0``).

    Raises:
        ConfigError: ``df`` not a positive number, or ``t`` NaN.

    """
    _check_df(df)
    if math.isnan(t):
        raise ConfigError("t_cdf of NaN")
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = _upper_tail(t, df)
    return 1.0 - tail if t >= 0 else tail


def t_two_sided_p(t: float, df: float) -> float:
    """The two-sided p-value ``P(|T| ≥ |t|)`` (computed from the tail, so tiny p survive)."""
    _check_df(df)
    if math.isnan(t):
        raise ConfigError("t_two_sided_p of NaN")
    if math.isinf(t):
        return 0.0
    return min(1.0, 2.0 * _upper_tail(t, df))


@lru_cache(maxsize=1024)
def t_quantile(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t with ``df`` degrees of freedom (``0 < q < 1``).

    Safeguarded Newton on the tail probability (so ``q = 1e-10`` keeps its digits), started
    at the normal quantile; cached, since the same (level, df) pair is asked for many times.

    Raises:
        ConfigError: ``q`` outside (0, 1) or ``df`` not a positive number.

    """
    _check_df(df)
    if not 0.0 < q < 1.0:
        raise ConfigError(f"quantile level must be in (0, 1), got {q!r}")
    if q == 0.5:
        return 0.0
    tail = min(q, 1.0 - q)
    sign = 1.0 if q > 0.5 else -1.0
    normal = -NormalDist().inv_cdf(tail)
    if math.isinf(df) or df > _NORMAL_DF:
        return sign * normal
    return sign * _tail_quantile(tail, df, normal)


def _tail_quantile(tail: float, df: float, start: float) -> float:
    """The ``t > 0`` with ``P(T > t) = tail`` (``0 < tail < ½``)."""
    low, high = 0.0, max(1.0, start)
    while _upper_tail(high, df) > tail:
        low, high = high, high * 2.0
        if high > 1e300:
            return math.inf
    x = min(max(start, low), high)
    log_norm = math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi)
    for _ in range(400):
        diff = _upper_tail(x, df) - tail  # decreasing in x
        if diff == 0.0:
            return x
        if diff > 0:
            low = x
        else:
            high = x
        density = math.exp(log_norm - (df + 1.0) / 2.0 * math.log1p(x * x / df))
        candidate = x + diff / density if density > 0.0 else math.nan
        if not low < candidate < high:
            candidate = 0.5 * (low + high)
        if abs(candidate - x) <= 4e-16 * abs(x) or high - low <= 4e-16 * high:
            return candidate
        x = candidate
    return x
