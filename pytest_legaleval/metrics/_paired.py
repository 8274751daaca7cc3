"""Paired difference of two runs over record means, with clustered errors and a cluster bootstrap.

With epochs (K > 1) or clusters, a comparison pairs the two runs' record means ``x_i`` (each
the mean over an item's verdict epochs of ``passed``; or of ``score``) by item, and studies
``d_i = x_i(current) − x_i(baseline)``:

- ``delta`` = mean of ``d_i``; ``se`` = √(s²_d / n); ``se_clustered`` the CR2 error over the
  ``d_i`` with its Bell–McCaffrey degrees of freedom ``df`` (:mod:`._cr2`), clusters taken
  from the items' records (every pair its own cluster when not clustered: ``df = n − 1``);
- the t interval ``delta ∓ t_{df}·se_clustered`` at the comparison's level and the
  two-sided ``p_value`` of ``delta / se_clustered`` from the same t; this is the interval a
  regression gate decides on;
- a cluster bootstrap (whole clusters resampled with replacement, seeded, percentile
  interval of ``Σ d / Σ count``) as the non-parametric check beside it.

Pairing within items removes the between-record variance that both runs share (a hard
question is hard for both), which is why a paired interval is narrower than the difference
of two unpaired ones. Standard library only.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from pytest_legaleval.errors import InvalidValue
from pytest_legaleval.metrics._clustered import cluster_key, cluster_value
from pytest_legaleval.metrics._cr2 import cluster_error
from pytest_legaleval.metrics._epochs import EpochItem
from pytest_legaleval.metrics._stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    DRAW_BUDGET,
    MIN_RESAMPLES,
    quantile,
)
from pytest_legaleval.metrics._tdist import t_quantile, t_two_sided_p

__all__ = [
    "RECORD_CLUSTER",
    "PairedDifference",
    "cluster_bootstrap",
    "item_differences",
    "normal_quantile",
    "paired_difference",
]


RECORD_CLUSTER = "record"
"""The ``cluster_by`` of items clustered by their record (several models, no field)."""


def normal_quantile(level: float) -> float:
    """The two-sided normal quantile of a confidence ``level`` (0.95 → 1.95996…)."""
    if not 0.0 < level < 1.0:
        raise InvalidValue(f"level must be in (0, 1), got {level!r}")
    return NormalDist().inv_cdf(1.0 - (1.0 - level) / 2.0)


def _cluster_totals(
    diffs: Sequence[float], clusters: Sequence[Hashable | None] | None
) -> list[tuple[float, int]]:
    """``(Σ d, count)`` per cluster, in order of first appearance; ``None``: its own."""
    if clusters is None:
        return [(d, 1) for d in diffs]
    totals: dict[Hashable, list[float]] = {}
    for index, (d, label) in enumerate(zip(diffs, clusters, strict=True)):
        key = ("\x00own", index) if label is None else label
        totals.setdefault(key, []).append(d)
    return [(math.fsum(ds), len(ds)) for ds in totals.values()]


def cluster_bootstrap(
    diffs: Sequence[float],
    clusters: Sequence[Hashable | None] | None,
    *,
    level: float = 0.95,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> tuple[float, float, int] | None:
    """Percentile interval of the mean difference, resampling whole clusters.

    Each resample draws as many clusters as there are, with replacement, and takes
    ``Σ d / Σ count`` over them (items of a cluster stay together, so the resamples vary as
    much as clusters do). At most ``stats.DRAW_BUDGET`` cluster draws in all (never fewer
    than ``stats.MIN_RESAMPLES`` resamples). The same pairs in the same order and the same
    seed give the same interval.

    Returns:
        ``(low, high, resamples used)``, or ``None`` without pairs.

    """
    if not diffs:
        return None
    totals = _cluster_totals(diffs, clusters)
    g = len(totals)
    resamples = max(MIN_RESAMPLES, min(resamples, DRAW_BUDGET // g))
    rng = random.Random(seed)
    means = []
    for _ in range(resamples):
        drawn = rng.choices(totals, k=g)
        means.append(math.fsum(t for t, _ in drawn) / sum(c for _, c in drawn))
    means.sort()
    alpha = (1.0 - level) / 2.0
    low, high = quantile(means, alpha), quantile(means, 1.0 - alpha)
    assert low is not None and high is not None
    return low, high, resamples


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """Current − baseline over paired record means, with its intervals."""

    measure: str
    """``pass_fraction`` (record means of ``passed``) or ``score``."""
    n: int
    """Paired items."""
    cluster_by: str | None
    clusters: int
    baseline_mean: float
    current_mean: float
    delta: float
    se: float | None
    se_clustered: float | None
    """CR2 (``se`` when not clustered); ``None`` with fewer than two pairs or one cluster."""
    level: float
    ci: tuple[float, float] | None
    """``delta ∓ t_df·se_clustered``: the interval a regression gate decides on."""
    bootstrap: tuple[float, float] | None
    """The cluster bootstrap's percentile interval (the non-parametric check)."""
    bootstrap_resamples: int
    seed: int
    df: float | None = None
    """The Bell–McCaffrey degrees of freedom of the t (``n − 1`` when not clustered)."""
    p_value: float | None = None
    """Two-sided p-value of ``delta`` from the same t (``None`` without an error)."""
    note: str | None = None
    """Why there is no interval, when there is none."""

    @property
    def method(self) -> str:
        """The name of the gate's interval, as printed."""
        if self.cluster_by is None:
            return "paired t interval over record means (records independent)"
        return f"paired t interval, CR2 se clustered by {self.cluster_by}, Bell-McCaffrey df"

    def regressed(self, max_regression: float | None) -> bool:
        """A drop beyond ``max_regression`` (None: 0) whose whole interval is below 0."""
        limit = max_regression or 0.0
        return self.ci is not None and -self.delta > limit and self.ci[1] < 0

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "measure": self.measure,
            "n": self.n,
            "cluster_by": self.cluster_by,
            "clusters": self.clusters,
            "baseline_mean": self.baseline_mean,
            "current_mean": self.current_mean,
            "delta": self.delta,
            "se": self.se,
            "se_clustered": self.se_clustered,
            "level": self.level,
            "ci": list(self.ci) if self.ci is not None else None,
            "df": self.df,
            "p_value": self.p_value,
            "method": self.method,
            "note": self.note,
            "bootstrap": {
                "ci": list(self.bootstrap) if self.bootstrap is not None else None,
                "method": "cluster_bootstrap_percentile",
                "resamples": self.bootstrap_resamples,
                "seed": self.seed,
            },
        }

    def describe(self) -> str:
        """One line: the difference, the gate's interval and the bootstrap's."""
        name = "pass rate over epochs" if self.measure == "pass_fraction" else "mean score"
        text = (
            f"{name}: {self.baseline_mean:.4f} → {self.current_mean:.4f} "
            f"({self.delta:+.4f}) over {self.n} paired items"
        )
        if self.ci is None:
            return text + f" (no interval: {self.note or 'too few pairs'})"
        p = f"{self.p_value:.4f}" if self.p_value is not None else "–"
        text += (
            f", {self.level:.0%} CI [{self.ci[0]:+.4f}, {self.ci[1]:+.4f}] ({self.method}; "
            f"se {self.se_clustered:.4f}, df {self.df:.1f}, p {p}"
        )
        if self.cluster_by is not None:
            text += f", {self.clusters} clusters, naive se {self.se:.4f}"
        text += ")"
        if self.bootstrap is not None:
            text += f"; cluster bootstrap [{self.bootstrap[0]:+.4f}, {self.bootstrap[1]:+.4f}]"
        return text


def paired_difference(
    pairs: Sequence[tuple[float, float]],
    clusters: Sequence[Hashable | None] | None = None,
    *,
    cluster_by: str | None = None,
    measure: str = "pass_fraction",
    level: float = 0.95,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> PairedDifference | None:
    """The paired difference of ``(baseline, current)`` record means.

    Args:
        pairs: one ``(baseline x_i, current x_i)`` per paired item.
        clusters: each pair's cluster key (``None`` entries: clusters of their own);
            ``None`` when not clustered.
        cluster_by: the field the keys came from.
        measure: what the means are of (``pass_fraction`` or ``score``).
        level: confidence level of both intervals (``1 − --regression-alpha``).
        seed: the bootstrap's seed.
        resamples: the bootstrap's resamples (capped by the draw budget).

    Returns:
        The difference, or ``None`` without pairs.

    """
    n = len(pairs)
    if n == 0:
        return None
    if not 0.0 < level < 1.0:
        raise InvalidValue(f"level must be in (0, 1), got {level!r}")
    diffs = [now - before for before, now in pairs]
    error = cluster_error(diffs, clusters)
    assert error is not None
    se, se_clustered, df = error.se, error.se_clustered, error.df
    delta = math.fsum(diffs) / n
    ci = p_value = None
    if se_clustered is not None and df is not None:
        half = t_quantile(1.0 - (1.0 - level) / 2.0, df) * se_clustered
        ci = (delta - half, delta + half)
        if se_clustered > 0:
            p_value = t_two_sided_p(delta / se_clustered, df)
        else:  # no spread at all: every pair differs by delta
            p_value = 1.0 if delta == 0 else 0.0
    boot = cluster_bootstrap(diffs, clusters, level=level, seed=seed, resamples=resamples)
    count = len(_cluster_totals(diffs, clusters))
    return PairedDifference(
        measure=measure,
        n=n,
        cluster_by=cluster_by,
        clusters=count,
        baseline_mean=math.fsum(b for b, _ in pairs) / n,
        current_mean=math.fsum(c for _, c in pairs) / n,
        delta=delta,
        se=se,
        se_clustered=se_clustered,
        level=level,
        ci=ci,
        bootstrap=(boot[0], boot[1]) if boot is not None else None,
        bootstrap_resamples=boot[2] if boot is not None else 0,
        seed=seed,
        df=df,
        p_value=p_value,
        note=error.note,
    )


def _cluster(item: EpochItem, other: EpochItem, cluster_by: str) -> str | None:
    """The item's cluster: from the current run's lines, else the baseline's."""
    for source in (item, other):
        for line in source.lines.values():
            key = cluster_key(cluster_value(line, cluster_by))
            if key is not None:
                return key
    return None


def item_differences(
    pairs: Sequence[tuple[EpochItem, EpochItem]],
    cluster_by: str | None = None,
    *,
    level: float = 0.95,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[PairedDifference | None, PairedDifference | None]:
    """Paired differences of items' pass fractions and of their mean scores.

    ``pairs`` are ``(baseline item, current item)`` with a verdict epoch in both runs
    (``n > 0``). An item's cluster is the value at ``cluster_by`` in the current run's
    lines, else in the baseline's; none: a cluster of its own. Without ``cluster_by``, when
    the pairs hold several models' items, the items of one record are one cluster (two
    models' answers to one question are not independent), named ``record``.
    """
    clusters: list[str | None] | None = None
    if cluster_by:
        clusters = [_cluster(now, before, cluster_by) for before, now in pairs]
    elif len({now.key[2] for _, now in pairs}) > 1:
        cluster_by = RECORD_CLUSTER
        clusters = [cluster_key([now.key[0], now.key[1]]) for _, now in pairs]
    fractions = [(before.c / before.n, now.c / now.n) for before, now in pairs]
    passes = paired_difference(fractions, clusters, cluster_by=cluster_by, level=level, seed=seed)
    scored = [
        (i, (before.score, now.score))
        for i, (before, now) in enumerate(pairs)
        if before.score is not None and now.score is not None
    ]
    scores = paired_difference(
        [(float(b), float(c)) for _, (b, c) in scored],
        [clusters[i] for i, _ in scored] if clusters is not None else None,
        cluster_by=cluster_by,
        measure="score",
        level=level,
        seed=seed,
    )
    return passes, scores
