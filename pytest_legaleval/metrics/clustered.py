"""Clustered standard errors of a mean over records, and the cluster a record belongs to.

The formula is Miller (2024), "Adding Error Bars to Evals", eq. 4.

Legal benchmarks come in clusters — LEXam questions share an exam, LegalBench rows a task —
and records of one cluster succeed or fail together more than records of different ones.
An interval that treats them as independent is too narrow. Over record means ``x_i``
(``n`` records, each the mean over its epochs of ``passed``)::

    mean         = x̄
    se           = √(s² / n)                                  s² with ddof 1
    se_clustered = √(s² / n + (1/n²) Σ_c Σ_{i≠j ∈ c} (x_i − x̄)(x_j − x̄))   eq. 4
    ci95         = [x̄ − 1.959964·se_clustered, x̄ + 1.959964·se_clustered]

no small-sample factor. Computed as ``(s² + Σ_c R_c²) / n²`` with ``R_c = Σ_{i∈c}(x_i − x̄)``,
which is the same number: the cross terms are ``Σ_c R_c² − Σ_i (x_i − x̄)²`` and
``Σ_i (x_i − x̄)² = (n − 1) s²``. That form is a sum of squares, so the value under the root
is never negative, in exact arithmetic or in floating point; its least value is ``s²/n²``
(one cluster holding every record). statsmodels' cluster-robust error without correction is
the ddof-0 form, ``√(Σ_c R_c²) / n``: eq. 4 is larger by exactly ``s²/n²`` under the root.

Edge cases (each tested):

- no records: no uncertainty (``None``).
- one record: ``s²`` is undefined (ddof 1), so ``se``, ``se_clustered`` and ``ci95`` are
  ``None``; ``mean`` is the record's value.
- no clustering (``cluster_by`` not given) or every record a cluster of its own: the cross
  terms vanish and ``se_clustered == se``; ``clusters`` is then ``n``.
- one cluster: the formula gives ``s / n`` — reported as given, but it says nothing (one
  cluster has no between-cluster variation to measure); ``clusters == 1`` tells the reader.
- zero variance (all passed or all failed): ``se = se_clustered = 0`` and ``ci95`` has zero
  width: the records show no spread (the Wilson interval is the statement to read there).
- a record without the cluster field (or with ``null`` there): a cluster of its own —
  independent of every other record, as the naive error assumes — and counted in
  ``unclustered`` so a mostly unclustered run is visible. Refusing such records would make
  mixed datasets (LEXam with ``metadata.exam``, LegalBench without it) unusable.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_legaleval.errors import InvalidValue

__all__ = [
    "CI95_Z",
    "Uncertainty",
    "cluster_key",
    "cluster_value",
    "clustered_se",
    "clustered_uncertainty",
    "slim_cluster_field",
]

CI95_Z = 1.959964
"""The normal quantile the issue's ``ci95`` uses (0.975 quantile, six decimals)."""

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


def _centred_sums(
    values: Sequence[float], clusters: Sequence[Hashable | None] | None
) -> tuple[float, float, float, int, int]:
    """``(x̄, Σ r_i², Σ_c R_c², clusters, unclustered)`` with ``r_i = x_i − x̄``."""
    n = len(values)
    mean = math.fsum(values) / n
    residuals = [x - mean for x in values]
    squares = math.fsum(r * r for r in residuals)
    if clusters is None:
        return mean, squares, squares, n, 0
    if len(clusters) != n:
        raise InvalidValue(f"{len(clusters)} cluster labels for {n} values")
    totals: dict[Hashable, list[float]] = {}
    unclustered = 0
    for index, (r, label) in enumerate(zip(residuals, clusters, strict=True)):
        if label is None:
            unclustered += 1
            label = ("\x00unclustered", index)  # a cluster of its own
        totals.setdefault(label, []).append(r)
    cluster_squares = math.fsum(math.fsum(rs) ** 2 for rs in totals.values())
    return mean, squares, cluster_squares, len(totals), unclustered


def clustered_se(
    values: Sequence[float], clusters: Sequence[Hashable | None] | None
) -> tuple[float, float] | None:
    """``(se, se_clustered)`` of the mean of ``values``; ``None`` for fewer than 2 values.

    ``clusters[i]`` is the cluster of ``values[i]`` (``None``: a cluster of its own);
    ``clusters=None`` means no clustering (``se_clustered == se``).
    """
    n = len(values)
    if n < 2:
        return None
    _, squares, cluster_squares, _, _ = _centred_sums(values, clusters)
    variance = squares / (n - 1)
    return math.sqrt(variance / n), math.sqrt(variance + cluster_squares) / n


@dataclass(frozen=True, slots=True)
class Uncertainty:
    """The ``uncertainty`` block of ``metrics_summary.json``."""

    cluster_by: str | None
    """The dotted field the records were clustered by; ``None``: not clustered."""
    clusters: int
    """Distinct clusters (records without the field count one each; ``n`` unclustered)."""
    mean: float
    se: float | None
    se_clustered: float | None
    ci95: tuple[float, float] | None
    """``x̄ ∓ 1.959964·se_clustered`` (that is ``se`` when not clustered)."""
    n: int
    """Records (the ``x_i``)."""
    unclustered: int = 0
    """Records without the cluster field (each a cluster of its own)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the six fields the issue names, then ``n`` and ``unclustered``."""
        return {
            "cluster_by": self.cluster_by,
            "clusters": self.clusters,
            "mean": self.mean,
            "se": self.se,
            "se_clustered": self.se_clustered,
            "ci95": list(self.ci95) if self.ci95 is not None else None,
            "n": self.n,
            "unclustered": self.unclustered,
        }

    def describe(self) -> str:
        """One line for the terminal and the report, naming the interval shown."""
        if self.ci95 is None:
            return f"mean {self.mean:.4f} over {self.n} record(s): no interval (one record)"
        low, high = self.ci95
        if self.cluster_by is None:
            return (
                f"mean {self.mean:.4f}, 95% CI [{low:.4f}, {high:.4f}] (naive se "
                f"{self.se:.4f}, records independent, n={self.n})"
            )
        ratio = (
            f", {self.se_clustered / self.se:.2f}× the naive se {self.se:.4f}"
            if self.se and self.se_clustered is not None
            else f", naive se {self.se:.4f}"
        )
        return (
            f"mean {self.mean:.4f}, 95% CI [{low:.4f}, {high:.4f}] (clustered by "
            f"{self.cluster_by}: {self.clusters} clusters, se {self.se_clustered:.4f}{ratio}, "
            f"n={self.n})"
        )


def clustered_uncertainty(
    values: Sequence[float],
    clusters: Sequence[Hashable | None] | None = None,
    *,
    cluster_by: str | None = None,
    z: float = CI95_Z,
) -> Uncertainty | None:
    """The ``uncertainty`` block of record means ``values`` (see the module docstring).

    Args:
        values: the record means ``x_i``.
        clusters: each record's cluster key (``None`` entries: clusters of their own);
            ``None`` when not clustered.
        cluster_by: the field the keys came from (recorded in the block).
        z: the normal quantile of the interval.

    Returns:
        The block, or ``None`` when there are no values.

    """
    n = len(values)
    if n == 0:
        return None
    mean, squares, cluster_squares, count, unclustered = _centred_sums(values, clusters)
    if clusters is None:
        count, unclustered = n, 0
    if n == 1:
        return Uncertainty(cluster_by, count, mean, None, None, None, n, unclustered)
    variance = squares / (n - 1)
    se = math.sqrt(variance / n)
    se_clustered = math.sqrt(variance + cluster_squares) / n if clusters is not None else se
    half = z * se_clustered
    return Uncertainty(
        cluster_by, count, mean, se, se_clustered, (mean - half, mean + half), n, unclustered
    )
