"""The run's own interval: the ``uncertainty`` block, and the cluster a record belongs to.

Legal benchmarks come in clusters — LEXam questions share an exam, LegalBench rows a task —
and records of one cluster succeed or fail together more than records of different ones.
An interval that treats them as independent is too narrow; with a dozen clusters of very
different sizes, so is the plain cluster-robust one (Miller 2024 eq. 4, used here up to
round 3). Over units ``x_i`` (record means: each the mean over its verdict epochs of
``passed``) the block is::

    mean         = x̄
    se           = √(s² / n)                      s² with ddof 1 (units independent)
    se_clustered = CR2 (Bell & McCaffrey 2002), :mod:`._cr2`
    df           = Bell–McCaffrey degrees of freedom (Imbens & Kolesár 2016)
    ci95         = x̄ ∓ t_{0.975, df} · se_clustered, clipped to [0, 1]

Without ``--cluster-by`` every unit is its own cluster, so ``se_clustered = se`` and
``df = n − 1``: the classic t interval. The interval of a rate lies in [0, 1]: where the
t interval reaches past a bound, ``ci95`` is clipped, ``clipped`` is true and the unclipped
bounds stay in ``ci95_raw``.

Edge cases (each tested):

- no units: no uncertainty (``None``).
- one unit: ``se``, ``se_clustered``, ``df`` and ``ci95`` are ``None``, and ``note`` says why.
- one cluster, or a cluster holding every unit: no between-cluster variation can be
  measured, so ``se_clustered``, ``df`` and ``ci95`` are ``None`` and ``note`` says so
  (eq. 4 gave ``s/n`` there, √n times narrower than the naive error).
- zero variance (all passed or all failed): ``se = se_clustered = 0`` and ``ci95`` has zero
  width: the units show no spread (the Wilson interval is the statement to read there).
- a record without the cluster field (or with ``null`` there): a cluster of its own —
  independent of every other record, as the naive error assumes — and counted in
  ``unclustered`` so a mostly unclustered run is visible.
- several models in one run: the run's units are items (record × model), and two models'
  answers to one question are not independent: without ``--cluster-by`` the items are
  clustered by record (``cluster_by`` reads ``record``), with it by the field.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_legaleval.metrics._cr2 import cluster_error
from pytest_legaleval.metrics._tdist import t_quantile

__all__ = [
    "METHOD",
    "RATE_BOUNDS",
    "Uncertainty",
    "clip_interval",
    "cluster_key",
    "cluster_value",
    "clustered_se",
    "clustered_uncertainty",
    "slim_cluster_field",
]

METHOD = "t interval, CR2 standard error, Bell-McCaffrey df"
"""The ``method`` of every ``uncertainty`` block with an interval."""
RATE_BOUNDS = (0.0, 1.0)

_MISSING = object()


def cluster_value(row: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` of a record or prediction line, or ``None``.

    ``metadata.exam`` reads ``row["metadata"]["exam"]``; ``dataset`` and ``task_type`` read
    top-level fields. At every level a key that contains dots itself is found too
    (``metadata["exam.id"]``). Missing keys and non-mapping levels give ``None``.
    """
    node: Any = row
    rest = path
    while rest:
        if not isinstance(node, Mapping):
            return None
        if rest in node:
            return node[rest]
        head, dot, tail = rest.partition(".")
        if not dot:
            return None
        node = node.get(head, _MISSING)
        if node is _MISSING:
            return None
        rest = tail
    return node


def slim_cluster_field(row: Mapping[str, Any], path: str) -> dict[str, Any]:
    """Only the field at ``path``, nested as in ``row``, so :func:`cluster_value` finds it.

    Readers that keep a few fields of each line (``baseline.pair_fields``) keep this too.
    """
    value = cluster_value(row, path)
    if value is None:
        return {}
    head, dot, tail = path.partition(".")
    if not dot or path in row:
        return {path: value}
    inner = row.get(head)
    return {head: slim_cluster_field(inner, tail) if isinstance(inner, Mapping) else {}}


def cluster_key(value: Any) -> str | None:
    """A hashable key of a cluster value (``None`` for a missing value).

    Typed JSON text, so ``1`` and ``"1"`` are different clusters and lists or objects work.
    """
    if value is None:
        return None
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def clustered_se(
    values: Sequence[float], clusters: Sequence[Hashable | None] | None
) -> tuple[float, float | None] | None:
    """``(se, se_clustered)`` of the mean of ``values``; ``None`` for fewer than 2 values.

    ``se_clustered`` is CR2 (:mod:`._cr2`), ``None`` when every value is in one cluster.
    ``clusters[i]`` is the cluster of ``values[i]`` (``None``: a cluster of its own);
    ``clusters=None`` means no clustering (``se_clustered == se``).
    """
    found = cluster_error(values, clusters)
    if found is None or found.se is None:
        return None
    return found.se, found.se_clustered


def clip_interval(
    low: float, high: float, bounds: tuple[float, float] = RATE_BOUNDS
) -> tuple[tuple[float, float], bool]:
    """``((low, high) clipped to bounds, whether anything was clipped)``."""
    clipped = (max(bounds[0], min(bounds[1], low)), max(bounds[0], min(bounds[1], high)))
    return clipped, clipped != (low, high)


@dataclass(frozen=True, slots=True)
class Uncertainty:
    """The ``uncertainty`` block of ``metrics_summary.json``."""

    cluster_by: str | None
    """The dotted field the units were clustered by; ``record`` when several models' items
    were clustered by their record; ``None``: every unit its own cluster."""
    clusters: int
    """Distinct clusters (units without the field count one each; ``n`` unclustered)."""
    mean: float
    se: float | None
    """The naive standard error ``s/√n`` (units independent)."""
    se_clustered: float | None
    """The CR2 standard error (``se`` when every unit is its own cluster)."""
    ci95: tuple[float, float] | None
    """``x̄ ∓ t_{0.975, df}·se_clustered``, clipped to [0, 1]."""
    n: int
    """Units: records (items when several models share the block)."""
    unclustered: int = 0
    """Units without the cluster field (each a cluster of its own)."""
    df: float | None = None
    """The Bell–McCaffrey degrees of freedom of the t interval."""
    ci95_raw: tuple[float, float] | None = None
    """The unclipped t interval."""
    note: str | None = None
    """Why there is no interval, when there is none."""
    unit: str = "record"
    """What a unit is: ``record`` (a record's mean over epochs) or ``item`` (record × model)."""

    @property
    def clipped(self) -> bool:
        """``ci95`` differs from ``ci95_raw``: the t interval reached past 0 or 1."""
        return self.ci95 is not None and self.ci95 != self.ci95_raw

    @property
    def method(self) -> str | None:
        """The interval's method, as written in the block (``None`` without an interval)."""
        return METHOD if self.ci95 is not None else None

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the issue's fields, then ``n``, ``unclustered`` and the t's details."""
        return {
            "cluster_by": self.cluster_by,
            "clusters": self.clusters,
            "mean": self.mean,
            "se": self.se,
            "se_clustered": self.se_clustered,
            "ci95": list(self.ci95) if self.ci95 is not None else None,
            "n": self.n,
            "unclustered": self.unclustered,
            "unit": self.unit,
            "df": self.df,
            "method": self.method,
            "clipped": self.clipped,
            "ci95_raw": list(self.ci95_raw) if self.ci95_raw is not None else None,
            "note": self.note,
        }

    def describe(self) -> str:
        """One line for the terminal and the report, naming the interval shown."""
        units = f"{self.n} {self.unit}{'s' if self.n != 1 else ''}"
        if self.ci95 is None or self.se_clustered is None or self.df is None:
            return f"mean {self.mean:.4f} over {units}: no interval ({self.note})"
        low, high = self.ci95
        clipped = ", clipped to [0, 1]" if self.clipped else ""
        if self.cluster_by is None:
            return (
                f"mean {self.mean:.4f}, 95% CI [{low:.4f}, {high:.4f}] (t interval, {self.unit}s "
                f"independent: se {self.se_clustered:.4f}, df {self.df:.1f}, n={self.n}{clipped})"
            )
        ratio = (
            f", {self.se_clustered / self.se:.2f}× the naive se {self.se:.4f}"
            if self.se
            else f", naive se {self.se:.4f}"
        )
        return (
            f"mean {self.mean:.4f}, 95% CI [{low:.4f}, {high:.4f}] (CR2 t interval clustered "
            f"by {self.cluster_by}: {self.clusters} clusters, se {self.se_clustered:.4f}{ratio}, "
            f"df {self.df:.1f}, {units}{clipped})"
        )


def clustered_uncertainty(
    values: Sequence[float],
    clusters: Sequence[Hashable | None] | None = None,
    *,
    cluster_by: str | None = None,
    level: float = 0.95,
    unit: str = "record",
) -> Uncertainty | None:
    """The ``uncertainty`` block of units ``values`` (see the module docstring).

    Args:
        values: the units' means ``x_i`` (rates in [0, 1]).
        clusters: each unit's cluster key (``None`` entries: clusters of their own);
            ``None`` when not clustered.
        cluster_by: the field the keys came from (recorded in the block).
        level: the interval's confidence level.
        unit: what a unit is (``record`` or ``item``).

    Returns:
        The block, or ``None`` when there are no values.

    """
    found = cluster_error(values, clusters)
    if found is None:
        return None
    if found.se_clustered is None or found.df is None:
        return Uncertainty(
            cluster_by,
            found.clusters,
            found.mean,
            found.se,
            None,
            None,
            found.n,
            unclustered=found.unclustered,
            unit=unit,
            note=found.note,
        )
    half = t_quantile(1.0 - (1.0 - level) / 2.0, found.df) * found.se_clustered
    raw = (found.mean - half, found.mean + half)
    ci, _ = clip_interval(*raw)
    return Uncertainty(
        cluster_by,
        found.clusters,
        found.mean,
        found.se,
        found.se_clustered,
        ci,
        found.n,
        unclustered=found.unclustered,
        df=found.df,
        ci95_raw=raw,
        unit=unit,
    )
