"""Power planner: the smallest difference a paired comparison of two runs can detect.

Before paying for a run, ``legaleval plan`` (and ``--estimate-only``) answers "can 200
records detect a 3-point regression?": from the records planned, their clusters, the
epochs planned and — when given — a baseline run, the minimum detectable difference (MDE)
at α = 0.05 two-sided and 80 % power, and how it moves with more records or more epochs.

The model. Two systems A (baseline) and B (candidate) answer the same ``n`` records, each
``K`` times (both runs with K epochs). Record ``i`` has a true pass probability ``θ_i`` per
system; its record mean over K epochs is ``x_i = θ_i + noise`` and the comparison studies
``d_i = x_i(B) − x_i(A)`` (:mod:`._paired`). Per single answer, the pass/fail variance
``p(1 − p)`` splits into

- ``σ²_b = Var(θ)``, between records (some questions are hard), and
- ``σ²_w = E[θ(1 − θ)]``, within a record (the same question answered again), which
  shrinks as ``σ²_w / K`` in a record mean.

The two systems' ``θ`` correlate across records with ``ρ`` (a hard question is hard for
both), so pairing removes a share ``ρ`` of the between-record variance, and records of one
cluster share part of the rest with intracluster correlation ``ICC``, which inflates it by
the design effect ``DE = 1 + (m̄ − 1)·ICC``, ``m̄ = Σ_c m_c² / n`` (exactly what Miller's eq. 4
measures for exchangeable clusters of sizes ``m_c``). Within-record noise is independent
across records and systems and does not cluster. Hence::

    Var(d̄) = [2 σ²_b (1 − ρ) · DE + 2 σ²_w / K] / n
    MDE    = (t_{1−α/2, df} + t_{power, df}) · √Var(d̄)

with ``df`` the Bell–McCaffrey degrees of freedom of the design's clusters (:mod:`._cr2`:
``n − 1`` for independent records, about ``G − 1`` for ``G`` clusters of like sizes) — the
degrees of freedom the comparison's own t interval will have, so a dozen uneven clusters
plan for the wide interval they will get. The other tail's share of the power is ignored
(below 1e-5 for the normal, about 1e-4 at 11 degrees of freedom).

Where the figures come from:

- ``p``: the baseline run's mean record pass fraction; without a baseline 0.5 (the
  largest variance, so the planner is then conservative in ``p``).
- ``σ²_w``: from a baseline run with K ≥ 2 epochs, the mean over records of the unbiased
  ``c(n − c) / (n(n − 1))``; otherwise assumed: ``DEFAULT_WITHIN_SHARE`` of ``p(1 − p)``.
- ``σ²_b``: the baseline's sample variance of record means less ``σ²_w · mean(1/n_i)``
  (floored at 0); without a baseline ``p(1 − p) − σ²_w``.
- ``ICC``: from the baseline run, ``(cross-products within clusters / pairs) / σ²_b``
  (clipped to [0, 1]); without a baseline or without two records in any cluster,
  ``DEFAULT_ICC``. The difference between two systems is assumed to cluster as much as
  the baseline's own record means do.
- ``ρ``: cannot be measured from one run: ``DEFAULT_CORRELATION`` unless given.

"More records" in the table means more clusters of the sizes the dataset has (``DE``
unchanged, ``df`` grown with the clusters; never fewer than two clusters); more epochs
shrink only the within-record term. Every assumed figure is named
as such in the output. Checked against a seeded Monte Carlo of the paired clustered test
(power ≈ 0.80 at the MDE) and against the exact variance by enumeration.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

from pytest_legaleval.errors import ConfigError, InvalidValue
from pytest_legaleval.metrics._clustered import cluster_key, cluster_value
from pytest_legaleval.metrics._cr2 import bell_mccaffrey_df
from pytest_legaleval.metrics._epochs import group_items
from pytest_legaleval.metrics._tdist import t_cdf, t_quantile
from pytest_legaleval.records import PredictionLine

__all__ = [
    "ALPHA",
    "ALPHA_RANGE",
    "DEFAULT_CORRELATION",
    "DEFAULT_ICC",
    "DEFAULT_P",
    "DEFAULT_WITHIN_SHARE",
    "MAX_RECORDS",
    "POWER",
    "POWER_RANGE",
    "TARGET_RANGE",
    "Plan",
    "VarianceModel",
    "cluster_sizes",
    "default_model",
    "design_df",
    "design_effect",
    "difference_se",
    "estimate_model",
    "minimum_detectable_difference",
    "plan",
    "power_at",
    "record_fields",
    "records_for",
]

ALPHA = 0.05
POWER = 0.80
ALPHA_RANGE: tuple[float, float] = (1e-6, 0.5)
"""Accepted significance levels: below, the z quantiles lose meaning; above, no test."""
POWER_RANGE: tuple[float, float] = (0.5, 0.999999)
"""Accepted powers: below one half a "detectable" difference would be a negative one."""
TARGET_RANGE: tuple[float, float] = (1e-4, 1.0)
"""Accepted target differences (a hundredth of a point up to the whole scale)."""
MAX_RECORDS = 10**12
"""More records than any dataset has: a target that needs them is no plan."""
DEFAULT_P = 0.5
DEFAULT_CORRELATION = 0.5
"""ρ between two systems' per-record pass probabilities when nothing measures it."""
DEFAULT_WITHIN_SHARE = 0.25
"""Share of one answer's variance that is epoch-to-epoch noise, when no baseline with
two or more epochs measures it."""
DEFAULT_ICC = 0.1
"""Intracluster correlation when no baseline measures it."""
EPOCH_COLUMNS = (1, 2, 5, 10)
RECORD_FACTORS = (0.5, 1.0, 2.0, 4.0)


def _z(q: float) -> float:
    return NormalDist().inv_cdf(q)


def _q(q: float, df: float | None) -> float:
    """The ``q`` quantile of the t at ``df`` (the normal when ``df`` is ``None``)."""
    return _z(q) if df is None else t_quantile(q, df)


def design_df(sizes: Sequence[int], records: int | None = None) -> float | None:
    """The Bell–McCaffrey degrees of freedom of a comparison over clusters of ``sizes``.

    With ``records``, of that many records in clusters of the same sizes (the sizes taken
    in turn, never fewer than two clusters). ``None`` with fewer than two clusters.
    """
    sizes = [m for m in sizes if m > 0]
    if not sizes:
        return None
    if records is not None and records != sum(sizes):
        count = max(2, round(len(sizes) * records / sum(sizes)))
        sizes = [sizes[i % len(sizes)] for i in range(count)]
    return bell_mccaffrey_df(sizes)


@dataclass(frozen=True, slots=True)
class VarianceModel:
    """The variance components of one answer's pass/fail, and where each came from."""

    p: float
    between: float
    """σ²_b: variance across records of the true pass probability."""
    within: float
    """σ²_w: mean over records of θ(1 − θ), one answer's epoch-to-epoch variance."""
    correlation: float
    """ρ: correlation of the two systems' per-record pass probabilities."""
    icc: float
    """Intracluster correlation of the between-record part."""
    sources: Mapping[str, str] = field(default_factory=dict)
    """``{figure: "baseline" | "assumed" | "given"}`` for p, within, between, icc, correlation."""

    @property
    def between_difference(self) -> float:
        """Var of the difference of the two systems' true pass probabilities: 2σ²_b(1 − ρ)."""
        return 2.0 * self.between * (1.0 - self.correlation)

    @property
    def within_sum(self) -> float:
        """Both systems' within-record variance per answer: 2σ²_w."""
        return 2.0 * self.within

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "p": self.p,
            "between_record_variance": self.between,
            "within_record_variance": self.within,
            "correlation": self.correlation,
            "icc": self.icc,
            "sources": dict(self.sources),
        }


def record_fields(record: Any) -> dict[str, Any]:
    """The fields of a ``Record`` that a cluster path can name, as a dict for :func:`plan`."""
    return {
        "id": record.id,
        "dataset": record.dataset,
        "dataset_version": record.dataset_version,
        "task_type": record.task_type,
        "tags": list(record.tags),
        "metadata": dict(record.metadata),
    }


def cluster_sizes(records: Iterable[Mapping[str, Any]], cluster_by: str | None) -> list[int]:
    """Sizes of the clusters of ``records`` (a record without the field: a cluster of one)."""
    if not cluster_by:
        return [1 for _ in records]
    sizes: dict[str, int] = {}
    singles = 0
    for record in records:
        key = cluster_key(cluster_value(record, cluster_by))
        if key is None:
            singles += 1
        else:
            sizes[key] = sizes.get(key, 0) + 1
    return [*sizes.values(), *([1] * singles)]


def design_effect(sizes: Sequence[int], icc: float) -> float:
    """``1 + (Σ m_c² / n − 1)·ICC``: the inflation of a clustered mean's variance."""
    n = sum(sizes)
    if n == 0:
        return 1.0
    return 1.0 + (sum(m * m for m in sizes) / n - 1.0) * icc


def difference_se(
    n: int, epochs: int, between_difference: float, within_sum: float, deff: float = 1.0
) -> float:
    """Standard error of the mean paired difference: √([Var_b·DE + Var_w / K] / n)."""
    if n < 1 or epochs < 1:
        raise InvalidValue(f"need n >= 1 and epochs >= 1, got n={n}, epochs={epochs}")
    return math.sqrt((between_difference * deff + within_sum / epochs) / n)


def minimum_detectable_difference(
    se: float, alpha: float = ALPHA, power: float = POWER, df: float | None = None
) -> float:
    """``(t_{1−α/2, df} + t_{power, df}) · se`` (normal quantiles when ``df`` is ``None``)."""
    return (_q(1.0 - alpha / 2.0, df) + _q(power, df)) * se


def power_at(delta: float, se: float, alpha: float = ALPHA, df: float | None = None) -> float:
    """Power of the two-sided t-test at a true difference ``delta`` (both tails).

    The statistic is taken as a t at ``df`` shifted by ``delta / se`` — the approximation
    the MDE inverts, so the power at the MDE is ``power`` (the normal when ``df`` is None).
    """
    if se <= 0.0:
        return 1.0 if delta != 0 else alpha
    crit = _q(1.0 - alpha / 2.0, df)
    if df is None:
        unit = NormalDist()
        return unit.cdf(delta / se - crit) + unit.cdf(-delta / se - crit)
    return t_cdf(delta / se - crit, df) + t_cdf(-delta / se - crit, df)


def records_for(
    target: float,
    model: VarianceModel,
    epochs: int,
    deff: float = 1.0,
    alpha: float = ALPHA,
    power: float = POWER,
    sizes: Sequence[int] | None = None,
) -> int:
    """The fewest records whose MDE is at most ``target`` (clusters of the same sizes).

    With ``sizes`` (the design's clusters) the MDE uses the t at :func:`design_df` of each
    candidate count, so the answer is found by search from the normal one upward;
    without, the normal approximation's closed form.
    """
    if not TARGET_RANGE[0] <= target <= TARGET_RANGE[1]:
        raise InvalidValue(
            f"target difference must be in [{TARGET_RANGE[0]:g}, {TARGET_RANGE[1]:g}], "
            f"got {target!r}"
        )
    variance = model.between_difference * deff + model.within_sum / epochs
    need = ((_z(1.0 - alpha / 2.0) + _z(power)) / target) ** 2 * variance
    if not math.isfinite(need) or need > MAX_RECORDS:
        raise InvalidValue(f"detecting {target!r} needs more than {MAX_RECORDS:.0e} records")
    low = max(1, math.ceil(need - 1e-9))
    if sizes is None:
        return low

    def enough(n: int) -> bool:
        df = design_df(sizes, n)
        if df is None:
            return False
        return minimum_detectable_difference(math.sqrt(variance / n), alpha, power, df) <= target

    if enough(low):
        return low
    high = low * 2
    while not enough(high):
        if high > MAX_RECORDS:
            raise InvalidValue(f"detecting {target!r} needs more than {MAX_RECORDS:.0e} records")
        low, high = high, high * 2
    while high - low > 1:  # enough(high) and not enough(low)
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high


def default_model(
    p: float = DEFAULT_P, correlation: float | None = None, icc: float | None = None
) -> VarianceModel:
    """The model without a baseline: ``p`` split by :data:`DEFAULT_WITHIN_SHARE`."""
    total = p * (1.0 - p)
    return VarianceModel(
        p=p,
        between=(1.0 - DEFAULT_WITHIN_SHARE) * total,
        within=DEFAULT_WITHIN_SHARE * total,
        correlation=DEFAULT_CORRELATION if correlation is None else correlation,
        icc=DEFAULT_ICC if icc is None else icc,
        sources={
            "p": "assumed",
            "within": "assumed",
            "between": "assumed",
            "icc": "assumed" if icc is None else "given",
            "correlation": "assumed" if correlation is None else "given",
        },
    )


def estimate_model(
    rows: Iterable[PredictionLine],
    cluster_by: str | None = None,
    correlation: float | None = None,
) -> VarianceModel:
    """The variance model measured on a baseline run's prediction lines (module docstring).

    Items (record × model) with a verdict epoch are the records; errors are left out as
    everywhere (:mod:`._epochs`). A baseline with fewer than two such items, or whose record
    means do not vary (all passed or all failed), measures nothing: the default model at
    its ``p`` (clamped to [0.05, 0.95]) is returned, marked so.
    """
    items = [item for item in group_items(rows).values() if item.n]
    if len(items) < 2:
        return default_model(correlation=correlation)
    x = [item.c / item.n for item in items]
    n = len(x)
    p = math.fsum(x) / n
    residuals = [v - p for v in x]
    variance = math.fsum(r * r for r in residuals) / (n - 1)
    if variance <= 0.0:
        model = default_model(min(0.95, max(0.05, p)), correlation)
        sources = {**model.sources, "p": "baseline (no variance: clamped to [0.05, 0.95])"}
        return VarianceModel(
            model.p, model.between, model.within, model.correlation, model.icc, sources
        )
    repeated = [item for item in items if item.n >= 2]
    if repeated:
        within = math.fsum(i.c * (i.n - i.c) / (i.n * (i.n - 1)) for i in repeated) / len(repeated)
        within_source = "baseline"
    else:
        within = DEFAULT_WITHIN_SHARE * p * (1.0 - p)
        within_source = "assumed"
    between = max(0.0, variance - within * math.fsum(1.0 / i.n for i in items) / n)
    icc, icc_source = DEFAULT_ICC, "assumed"
    if cluster_by:
        totals: dict[str, list[float]] = {}
        for item, r in zip(items, residuals, strict=True):
            label = next(
                (
                    k
                    for line in item.lines.values()
                    if (k := cluster_key(cluster_value(line, cluster_by)))
                ),
                None,
            )
            if label is not None:
                totals.setdefault(label, []).append(r)
        pairs = sum(len(rs) * (len(rs) - 1) for rs in totals.values())
        if pairs and between > 0.0:
            cross = math.fsum(
                math.fsum(rs) ** 2 - math.fsum(v * v for v in rs) for rs in totals.values()
            )
            icc, icc_source = min(1.0, max(0.0, cross / pairs / between)), "baseline"
    return VarianceModel(
        p=p,
        between=between,
        within=within,
        correlation=DEFAULT_CORRELATION if correlation is None else correlation,
        icc=icc,
        sources={
            "p": "baseline",
            "within": within_source,
            "between": "baseline",
            "icc": icc_source if cluster_by else "not clustered",
            "correlation": "assumed" if correlation is None else "given",
        },
    )


@dataclass(frozen=True, slots=True)
class Plan:
    """What the planner prints: the MDE of the plan and its table."""

    records: int
    cluster_by: str | None
    clusters: int
    epochs: int
    model: VarianceModel
    design_effect: float
    se: float
    mde: float
    alpha: float
    power: float
    table: tuple[tuple[int, tuple[float, ...]], ...]
    """``(records, MDE at each of epoch_columns)`` rows."""
    epoch_columns: tuple[int, ...]
    baseline: str | None = None
    """The baseline run's id, when one was measured."""
    target: float | None = None
    records_for_target: int | None = None
    df: float | None = None
    """The Bell–McCaffrey degrees of freedom of the planned comparison's t."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``legaleval plan --format json``)."""
        return {
            "records": self.records,
            "cluster_by": self.cluster_by,
            "clusters": self.clusters,
            "epochs": self.epochs,
            "alpha": self.alpha,
            "power": self.power,
            "design_effect": self.design_effect,
            "se": self.se,
            "df": self.df,
            "mde": self.mde,
            "baseline": self.baseline,
            "model": self.model.to_dict(),
            "table": {
                "epochs": list(self.epoch_columns),
                "rows": [{"records": n, "mde": list(row)} for n, row in self.table],
            },
            "target": self.target,
            "records_for_target": self.records_for_target,
        }

    def render(self) -> str:
        """The planner's text, as ``legaleval plan`` prints it."""
        m, s = self.model, self.model.sources
        epochs = f"{self.epochs} epoch{'s' if self.epochs != 1 else ''}"
        clusters = (
            f"{self.clusters} clusters by {self.cluster_by} (design effect "
            f"{self.design_effect:.2f})"
            if self.cluster_by
            else "records independent (no --cluster-by)"
        )
        measured = f" (baseline {self.baseline})" if self.baseline else ""
        lines = [
            f"plan: {self.records} records, {clusters}, {epochs} per record,",
            "  compared pairwise with a second run of the same plan",
            f"variance model{measured}:",
            f"  pass rate p                  {m.p:<8.3f}{s.get('p')}",
            f"  between-record variance      {m.between:<8.4f}{s.get('between')}",
            f"  within-record variance       {m.within:<8.4f}{s.get('within')}",
            f"  paired correlation           {m.correlation:<8.2f}{s.get('correlation')}",
            f"  intracluster correlation     {m.icc:<8.2f}{s.get('icc')}",
            f"minimum detectable difference (alpha {self.alpha:g} two-sided, power "
            f"{self.power:.0%}, t at {self.df:.1f} df): {self.mde * 100:.1f} points of pass "
            f"rate (se {self.se:.4f})",
        ]
        if self.target is not None and self.records_for_target is not None:
            lines.append(
                f"records needed for {self.target * 100:.1f} points at {epochs}: "
                f"{self.records_for_target}"
            )
        header = "records " + "".join(f"{f'K={k}':>9}" for k in self.epoch_columns)
        lines += ["", "minimum detectable difference (points) by records and epochs:", header]
        for n, row in self.table:
            lines.append(f"{n:>7} " + "".join(f"{v * 100:>9.1f}" for v in row))
        return "\n".join(lines) + "\n"


def plan(
    records: Sequence[Mapping[str, Any]],
    *,
    epochs: int = 1,
    cluster_by: str | None = None,
    baseline_rows: Iterable[PredictionLine] | None = None,
    baseline_id: str | None = None,
    correlation: float | None = None,
    alpha: float = ALPHA,
    power: float = POWER,
    target: float | None = None,
) -> Plan:
    """Plan a paired comparison of ``records`` at ``epochs`` answers per record.

    ``records`` are dicts with the fields the cluster path reads (``dataset``,
    ``task_type``, ``metadata``…); ``baseline_rows`` a baseline run's prediction lines.

    Raises:
        ValueError: no records, ``epochs < 1``, ``alpha``/``power``/``correlation`` out of
            range, or ``target`` outside :data:`TARGET_RANGE`; every record in one
            cluster (a ``ConfigError``).

    """
    if not records:
        raise InvalidValue("no records to plan for")
    if epochs < 1:
        raise InvalidValue(f"epochs must be >= 1, got {epochs}")
    if not ALPHA_RANGE[0] <= alpha <= ALPHA_RANGE[1]:
        raise InvalidValue(
            f"alpha must be in [{ALPHA_RANGE[0]:g}, {ALPHA_RANGE[1]:g}], got {alpha!r}"
        )
    if not POWER_RANGE[0] <= power <= POWER_RANGE[1]:
        raise InvalidValue(
            f"power must be in [{POWER_RANGE[0]:g}, {POWER_RANGE[1]:g}], got {power!r}"
        )
    if correlation is not None and not -1.0 <= correlation <= 1.0:
        raise InvalidValue(f"correlation must be in [-1, 1], got {correlation!r}")
    sizes = cluster_sizes(records, cluster_by)
    if target is not None and not TARGET_RANGE[0] <= target <= TARGET_RANGE[1]:
        raise InvalidValue(
            f"target difference must be in [{TARGET_RANGE[0]:g}, {TARGET_RANGE[1]:g}], "
            f"got {target!r}"
        )
    df = design_df(sizes)
    if df is None and cluster_by:
        raise ConfigError(
            f"all {len(records)} records are in one cluster of {cluster_by}: a comparison "
            "clustered by it has no interval, so it can detect nothing; cluster by a finer "
            "field (or leave out --cluster-by)"
        )
    if df is None:
        raise ConfigError("one record: a paired comparison needs at least two")
    if baseline_rows is not None:
        model = estimate_model(baseline_rows, cluster_by, correlation)
    else:
        model = default_model(correlation=correlation)
    deff = design_effect(sizes, model.icc) if cluster_by else 1.0
    n = len(records)
    se = difference_se(n, epochs, model.between_difference, model.within_sum, deff)
    columns = tuple(sorted({*EPOCH_COLUMNS, epochs}))
    table = []
    for factor in RECORD_FACTORS:
        size = max(2, round(n * factor))
        row_df = design_df(sizes, size)
        row = tuple(
            minimum_detectable_difference(
                difference_se(size, k, model.between_difference, model.within_sum, deff),
                alpha,
                power,
                row_df,
            )
            for k in columns
        )
        table.append((size, row))
    return Plan(
        records=n,
        cluster_by=cluster_by,
        clusters=len(sizes),
        epochs=epochs,
        model=model,
        design_effect=deff,
        se=se,
        mde=minimum_detectable_difference(se, alpha, power, df),
        alpha=alpha,
        power=power,
        table=tuple(table),
        epoch_columns=columns,
        baseline=baseline_id,
        target=target,
        records_for_target=(
            records_for(target, model, epochs, deff, alpha, power, sizes)
            if target is not None
            else None
        ),
        df=df,
    )
