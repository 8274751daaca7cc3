"""CR2 cluster-robust standard error of a mean, with Bell–McCaffrey degrees of freedom.

Legal sets come in a dozen exams or courses of very different sizes. With so few, uneven
clusters the plain cluster-robust error (Miller 2024, eq. 4; CR1) is too small — in the
round-3 audit's simulation of 17 clusters of 1 to 60 records its variance averaged 0.85× the
true one and a nominal 5 % test fired 11 % of the time — so the error here is CR2 (Bell &
McCaffrey 2002) and the interval a t interval at the Bell–McCaffrey degrees of freedom,
computed under the homoskedastic working model as Imbens & Kolesár (2016, §4) write it.

For the mean of ``N`` units ``y_i`` (an intercept-only regression), with clusters ``g`` of
``n_g`` units, ``p_g = n_g / N`` and ``S_g = Σ_{i∈g} (y_i − ȳ)``:

- the hat matrix's block of ``g`` is ``(1/N)·J``, so the CR2 adjustment
  ``(I − H_gg)^{-1/2}`` scales the sum of the residuals of ``g`` by ``1/√(1 − p_g)``::

      V_CR2 = Σ_g S_g² / (N² (1 − p_g))          se_clustered = √V_CR2

- with ``G_g = (I − H)_{·g} A_g 1 / N`` and the working model ``Ω = σ² I``, the
  Bell–McCaffrey degrees of freedom ``(Σλ)² / Σλ²`` over the eigenvalues of ``G'G``
  reduce to a closed form in the sizes alone: ``G'G ∝ B`` with ``B_gg = n_g`` and
  ``B_gh = −n_g n_h / (N √((1 − p_g)(1 − p_h)))``, hence ``tr B = N`` and, writing
  ``u_g = n_g² / (N − n_g)``::

      df = N² / (Σ_g n_g² + (Σ_g u_g)² − Σ_g u_g²)

Checks: every unit its own cluster gives ``V = s²/N`` and ``df = N − 1`` (the classic t);
``G`` equal clusters give ``df = G − 1``. One cluster (or one holding every unit) has
``p_g = 1``: no between-cluster variation can be measured, so there is no error at all —
never ``s/N`` as eq. 4 gave. The tests compare both formulas with the matrices built
directly in numpy. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from pytest_legaleval.errors import ConfigError

__all__ = [
    "ClusteredError",
    "bell_mccaffrey_df",
    "cluster_error",
    "cr2_from_totals",
    "group_residuals",
]

ONE_CLUSTER_NOTE = (
    "all {n} units are in one cluster: with no variation between clusters to measure there "
    "is no clustered standard error or interval"
)
ONE_UNIT_NOTE = "one unit: no spread to measure, so no standard error or interval"


def bell_mccaffrey_df(sizes: Sequence[int]) -> float | None:
    """The Bell–McCaffrey degrees of freedom of a mean over clusters of ``sizes`` units.

    ``None`` with fewer than two clusters (a cluster holding every unit).
    """
    sizes = [int(m) for m in sizes if m > 0]
    n = sum(sizes)
    if len(sizes) < 2:
        return None
    u = [m * m / (n - m) for m in sizes]
    total_u = math.fsum(u)
    denominator = math.fsum([*(m * m for m in sizes), total_u * total_u, *(-v * v for v in u)])
    return n * n / denominator


def cr2_from_totals(
    sizes: Sequence[int], residual_sums: Sequence[float]
) -> tuple[float, float] | None:
    """``(se_CR2, df)`` from each cluster's size and sum of residuals ``S_g``.

    The sufficient statistics of the module docstring; a vectorised simulation computes
    them for thousands of data sets at once and calls this per data set.

    Returns:
        ``None`` with fewer than two clusters.

    Raises:
        ConfigError: the two sequences differ in length or a size is below 1.

    """
    if len(sizes) != len(residual_sums):
        raise ConfigError(f"{len(sizes)} cluster sizes for {len(residual_sums)} residual sums")
    if any(m < 1 for m in sizes):
        raise ConfigError("every cluster needs at least one unit")
    n = sum(sizes)
    df = bell_mccaffrey_df(sizes)
    if df is None:
        return None
    variance = math.fsum(s * s / (n - m) for m, s in zip(sizes, residual_sums, strict=True)) / n
    return math.sqrt(variance), df


def group_residuals(
    values: Sequence[float], clusters: Sequence[Hashable | None] | None
) -> tuple[float, float, list[int], list[float], int]:
    """``(ȳ, Σ r_i², sizes, S_g, unclustered)`` of ``values`` (not empty) in ``clusters``.

    ``clusters[i]`` is the cluster of ``values[i]``; ``None`` there, or ``clusters=None``
    altogether, puts a value in a cluster of its own (counted in ``unclustered`` only in the
    first case). Clusters keep the order of their first value.

    Raises:
        ConfigError: ``clusters`` and ``values`` differ in length.

    """
    n = len(values)
    mean = math.fsum(values) / n
    residuals = [x - mean for x in values]
    squares = math.fsum(r * r for r in residuals)
    if clusters is None:
        return mean, squares, [1] * n, residuals, 0
    if len(clusters) != n:
        raise ConfigError(f"{len(clusters)} cluster labels for {n} values")
    totals: dict[Hashable, list[float]] = {}
    unclustered = 0
    for index, (r, label) in enumerate(zip(residuals, clusters, strict=True)):
        if label is None:
            unclustered += 1
            label = ("\x00own", index)  # a cluster of its own
        totals.setdefault(label, []).append(r)
    sizes = [len(rs) for rs in totals.values()]
    sums = [math.fsum(rs) for rs in totals.values()]
    return mean, squares, sizes, sums, unclustered


@dataclass(frozen=True, slots=True)
class ClusteredError:
    """The mean of some units with its naive and CR2 errors and the t's degrees of freedom."""

    mean: float
    n: int
    """Units."""
    clusters: int
    """Distinct clusters (a unit without a cluster counts as one)."""
    unclustered: int
    """Units that had no cluster label (each a cluster of its own)."""
    se: float | None
    """The naive ``s/√n`` (units independent); ``None`` for one unit."""
    se_clustered: float | None
    """CR2; ``None`` for one unit or one cluster (see ``note``)."""
    df: float | None
    """Bell–McCaffrey degrees of freedom (``n − 1`` when every unit is its own cluster)."""
    note: str | None = None
    """Why ``se_clustered`` is missing, when it is."""


def cluster_error(
    values: Sequence[float], clusters: Sequence[Hashable | None] | None = None
) -> ClusteredError | None:
    """The :class:`ClusteredError` of the mean of ``values`` (``None`` when empty).

    Args:
        values: the units' values (record means, or paired differences).
        clusters: each unit's cluster key (``None`` entries: clusters of their own);
            ``None``: every unit its own cluster.

    """
    n = len(values)
    if n == 0:
        return None
    mean, squares, sizes, sums, unclustered = group_residuals(values, clusters)
    if n == 1:
        return ClusteredError(mean, 1, 1, unclustered, None, None, None, ONE_UNIT_NOTE)
    se = math.sqrt(squares / (n - 1) / n)
    found = cr2_from_totals(sizes, sums)
    if found is None:
        return ClusteredError(
            mean, n, len(sizes), unclustered, se, None, None, ONE_CLUSTER_NOTE.format(n=n)
        )
    return ClusteredError(mean, n, len(sizes), unclustered, se, found[0], found[1])
