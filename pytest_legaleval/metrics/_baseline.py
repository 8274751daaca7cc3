"""Paired comparison of a run with a baseline run on the same (record, model) items.

Two runs of one benchmark differ by noise as much as by quality. Pairing each item with
itself removes the between-record variance. With one answer per item and no clusters,
McNemar's exact test looks only at the items that flipped, and a paired bootstrap gives an
interval for the mean-score difference. With epochs (K > 1 in either run) or ``cluster_by``,
the runs' lines are first matched on (record_id, model, epoch) and reduced to one verdict
per item (:mod:`._epochs`), and the gate decides on the paired difference of record means
with clustered standard errors (:mod:`._paired`); McNemar is still reported on the reduced
verdicts. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._epochs import (
    DEFAULT_REDUCER,
    EpochItem,
    epoch_verdict,
    group_items,
)
from pytest_legaleval.metrics._epochs import item_key as _epoch_item_key
from pytest_legaleval.metrics._lines import SLIM_KEYS, slim_line
from pytest_legaleval.metrics._paired import PairedDifference, item_differences
from pytest_legaleval.metrics._stats import BOOTSTRAP_SEED, bootstrap_mean_interval
from pytest_legaleval.records import PredictionLine

__all__ = [
    "PAIR_FIELDS",
    "Comparison",
    "PairedItem",
    "binomial_cdf",
    "check_same_scoring",
    "compare_runs",
    "item_key",
    "mcnemar_exact",
    "pair_by_model",
    "pair_fields",
    "rubric_scorings",
]

ItemKey = tuple[str, str, str]


def item_key(row: PredictionLine) -> ItemKey:
    """``(dataset, record_id, model)``: what identifies an item across runs (and epochs)."""
    return _epoch_item_key(row)


def _log_binomial_pmf(k: int, n: int) -> float:
    """Log P(X = k) for X ~ Binomial(n, 1/2), through lgamma (no overflow at large n)."""
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2)


def binomial_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2).

    Exact integers (``math.comb``) up to n = 1000; beyond, a log-space sum whose terms are
    added largest first, which keeps full double precision.
    """
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if n <= 1000:
        tail: int = sum(math.comb(n, i) for i in range(k + 1))
        return tail / (1 << n)
    logs = [_log_binomial_pmf(i, n) for i in range(k + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * math.fsum(math.exp(v - top) for v in logs))


def mcnemar_exact(regressions: int, improvements: int) -> float:
    """Two-sided exact McNemar p-value on the discordant pairs.

    Under "no change" each flip is a fair coin between the two directions, so the smaller
    count is Binomial(b + c, 1/2); the two-sided p-value doubles its tail (capped at 1).
    No flips at all gives 1.
    """
    n = regressions + improvements
    if n == 0:
        return 1.0
    return min(1.0, 2.0 * binomial_cdf(min(regressions, improvements), n))


PAIR_FIELDS = SLIM_KEYS
"""The prediction fields that pairing, the scoring check and ``regressions.jsonl`` use."""


def pair_fields(row: PredictionLine, cluster_by: str | None = None) -> PredictionLine:
    """The part of a prediction line that the comparison needs (keeps memory small).

    Besides :data:`PAIR_FIELDS` (those the line has): ``details.threshold`` (the ``mean``
    epoch reducer's threshold) and, with ``cluster_by``, the field at that dotted path,
    nested as in the line (:func:`~._epochs.slim_line`).
    """
    return slim_line(row, PAIR_FIELDS, cluster_by)


_verdict = epoch_verdict


def _binary_scores(item: EpochItem) -> bool:
    """Every numeric score among the item's epoch lines is 0 or 1."""
    return all(
        line.get("score") in (0, 1)
        for line in item.lines.values()
        if isinstance(line.get("score"), int | float)
    )


_EPOCH_STATE: Final[
    tuple[Literal["epochs", "epoch_verdicts", "epoch_passes", "pass_fraction"], ...]
] = ("epochs", "epoch_verdicts", "epoch_passes", "pass_fraction")


def _state(row: PredictionLine) -> dict[str, Any]:
    state: dict[str, Any] = {
        "outcome": row.get("outcome"),
        "passed": row.get("passed"),
        "score": row.get("score"),
        "reason": row.get("reason"),
        "explanation": row.get("explanation"),
    }
    # reduced items only (an ItemLine: the keys of metrics._epochs.Reduction)
    state.update({key: row.get(key) for key in _EPOCH_STATE if key in row})
    return state


@dataclass(frozen=True, slots=True)
class PairedItem:
    """One item that changed between the runs (or exists in one of them only)."""

    key: ItemKey
    change: str
    """``pass_to_fail``, ``fail_to_pass``, ``pass_to_error``, ``fewer_passes`` (epochs: the
    share of passing epochs fell, the reduced verdict did not change), ``only_in_baseline`` or
    ``only_in_current``."""
    baseline: PredictionLine | None
    current: PredictionLine | None

    def to_dict(self) -> dict[str, Any]:
        """The ``regressions.jsonl`` line."""
        dataset, record_id, model = self.key
        return {
            "record_id": record_id,
            "dataset": dataset,
            "model": model,
            "change": self.change,
            "baseline": _state(self.baseline) if self.baseline is not None else None,
            "current": _state(self.current) if self.current is not None else None,
        }


@dataclass(slots=True)
class Comparison:
    """Result of comparing ``current`` with ``baseline`` on their shared items."""

    paired: int = 0
    """Items with a verdict in both runs."""
    both_passed: int = 0
    both_failed: int = 0
    regressions: int = 0
    """pass → fail."""
    improvements: int = 0
    """fail → pass."""
    unverdicted: int = 0
    """Shared items without a verdict in at least one run (errors, skips)."""
    baseline_pass_rate: float | None = None
    current_pass_rate: float | None = None
    p_value: float = 1.0
    score_pairs: int = 0
    mean_score_delta: float | None = None
    mean_score_delta_ci: tuple[float, float] | None = None
    binary_scores: bool = True
    """Every paired score is 0 or 1 (MCQ): the scores say no more than pass/fail."""
    changes: list[PairedItem] = field(default_factory=list)
    only_in_baseline: int = 0
    only_in_current: int = 0
    baseline_epochs: int = 1
    """The most epoch lines of one item in the baseline run."""
    current_epochs: int = 1
    reducer: str = DEFAULT_REDUCER
    """The epoch reducer behind the verdicts (and flips) above."""
    cluster_by: str | None = None
    several_models: bool = False
    """The paired items hold several models' answers (each record is then a cluster)."""
    by_model: bool = True
    """Items paired by (record, model, epoch); ``False``: by (record, epoch), one model each."""
    pass_difference: PairedDifference | None = None
    """Epochs or clusters: the paired difference of record pass fractions (the gate's)."""
    score_difference: PairedDifference | None = None
    """Epochs or clusters: the paired difference of record-level mean scores."""

    @property
    def method(self) -> str:
        """``mcnemar`` (K = 1, no clusters, one model) or ``clustered`` (the gate's basis).

        Several models' answers to one record are not independent, so a comparison of
        several models' items is clustered by record even without ``cluster_by``.
        """
        clustered = (
            self.cluster_by is not None
            or self.several_models
            or max(self.baseline_epochs, self.current_epochs) > 1
        )
        return "clustered" if clustered else "mcnemar"

    @property
    def pairing(self) -> str:
        """How items were paired, as printed."""
        return "(record, model, epoch)" if self.by_model else "(record, epoch): one model each"

    def pairing_line(self) -> str:
        """How many items were paired, and by which rule."""
        return (
            f"paired {self.paired} items by {self.pairing} ({self.unverdicted} more without a "
            f"verdict in one run; only in baseline {self.only_in_baseline}, only in this run "
            f"{self.only_in_current})"
        )

    @property
    def pass_rate_delta(self) -> float | None:
        """Current − baseline pass rate on the paired items."""
        if self.current_pass_rate is None or self.baseline_pass_rate is None:
            return None
        return self.current_pass_rate - self.baseline_pass_rate

    def regressed(self, max_regression: float | None, alpha: float) -> bool:
        """The regression gate: a drop beyond ``max_regression`` that is significant.

        ``mcnemar`` method — pass rate: drop > ``max_regression`` and McNemar's p <
        ``alpha``; mean score, when the scores are graded (not all 0 or 1): drop >
        ``max_regression`` and the (1 − alpha) paired bootstrap interval lies below 0.
        ``clustered`` method — the same two rules on the paired differences of record means
        (pass fraction over epochs; mean score), each deciding on its (1 − alpha) interval
        with clustered standard errors (the level was fixed by :func:`compare_runs`).
        ``max_regression`` None means 0 (any significant drop).
        """
        if self.method == "clustered":
            if self.pass_difference is not None and self.pass_difference.regressed(max_regression):
                return True
            return (
                not self.binary_scores
                and self.score_difference is not None
                and self.score_difference.regressed(max_regression)
            )
        limit = max_regression or 0.0
        delta = self.pass_rate_delta
        if delta is not None and -delta > limit and self.p_value < alpha:
            return True
        if self.binary_scores:
            return False  # 0/1 scores: the bootstrap would re-test the flips, more crudely
        ci = self.mean_score_delta_ci
        score_delta = self.mean_score_delta
        return score_delta is not None and ci is not None and -score_delta > limit and ci[1] < 0

    def regressed_items(self) -> list[PairedItem]:
        """Items that got worse or vanished (the ``regressions.jsonl`` lines)."""
        worse = ("pass_to_fail", "pass_to_error", "fewer_passes")
        return [c for c in self.changes if c.change in worse] + [
            c for c in self.changes if c.change == "only_in_baseline"
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary (without the per-item list)."""
        return {
            "paired": self.paired,
            "both_passed": self.both_passed,
            "both_failed": self.both_failed,
            "regressions": self.regressions,
            "improvements": self.improvements,
            "unverdicted": self.unverdicted,
            "baseline_pass_rate": self.baseline_pass_rate,
            "current_pass_rate": self.current_pass_rate,
            "pass_rate_delta": self.pass_rate_delta,
            "mcnemar_p_value": self.p_value,
            "score_pairs": self.score_pairs,
            "binary_scores": self.binary_scores,
            "mean_score_delta": self.mean_score_delta,
            "mean_score_delta_ci": (
                list(self.mean_score_delta_ci) if self.mean_score_delta_ci else None
            ),
            "only_in_baseline": self.only_in_baseline,
            "only_in_current": self.only_in_current,
            "method": self.method,
            "pairing": self.pairing,
            "epochs": {"baseline": self.baseline_epochs, "current": self.current_epochs},
            "epoch_reducer": self.reducer,
            "cluster_by": self.cluster_by,
            "pass_difference": (
                self.pass_difference.to_dict() if self.pass_difference is not None else None
            ),
            "score_difference": (
                self.score_difference.to_dict() if self.score_difference is not None else None
            ),
        }

    def gate_lines(self) -> list[str]:
        """What the terminal prints about the comparison's statistics and the gate's basis."""
        if self.method == "mcnemar":
            return [
                self.pairing_line(),
                f"McNemar exact p={self.p_value:.4g} on {self.paired} paired items "
                "(one answer per item, records independent)",
            ]
        lines = [
            self.pairing_line(),
            f"epochs: baseline {self.baseline_epochs}, this run {self.current_epochs} "
            f"(reducer {self.reducer}); McNemar on reduced verdicts p={self.p_value:.4g} "
            "(not the gate's basis)",
        ]
        for difference in (self.pass_difference, self.score_difference):
            if difference is not None:
                lines.append(difference.describe())
        basis = self.pass_difference.method if self.pass_difference else "no paired items"
        lines.append(f"the regression gate decides on: {basis}")
        return lines


def pair_by_model(models_a: Iterable[str], models_b: Iterable[str], *, strict: bool = True) -> bool:
    """The one pairing rule of ``--baseline``, ``legaleval compare`` and ``report A B``.

    ``True``: pair by (record, model, epoch) — the runs share a model (or one is empty).
    ``False``: pair by (record, epoch) — each run has one model, and they differ (the
    common "model A against model B" comparison).

    Raises:
        ConfigError: the runs share no model and one of them has several (with ``strict``;
            without it they are paired by model, so nothing pairs and both sides list their
            items as only in one run).

    """
    a, b = set(models_a), set(models_b)
    if a & b or not (a and b):
        return True
    if len(a) > 1 or len(b) > 1:
        if not strict:
            return True
        raise ConfigError(
            "the two runs share no model, and one has several: compare runs of the same "
            f"models, or of one model each (A: {', '.join(sorted(a))}; B: "
            f"{', '.join(sorted(b))})"
        )
    return False


def rubric_scorings(rows: Iterable[PredictionLine]) -> frozenset[str]:
    """The rules a run's judged rubric items were scored under.

    Lines written before scoring was recorded were scored ``clipped`` (the only rule then).
    """
    return frozenset(
        str(row.get("scoring") or "clipped") for row in rows if row.get("grader") == "judge:rubric"
    )


def check_same_scoring(
    baseline: Iterable[PredictionLine],
    current: Iterable[PredictionLine],
    *,
    override: str = "--allow-scoring-mismatch",
) -> None:
    """Refuse to pair runs whose rubric items were scored under different rules.

    Raises:
        ConfigError: the two runs scored rubrics differently; the message names both rules
            and ``override``, the option that pairs them anyway.

    """
    before, now = rubric_scorings(baseline), rubric_scorings(current)
    if before and now and before != now:
        raise ConfigError(
            f"the runs scored rubric items differently (baseline: {', '.join(sorted(before))}; "
            f"this run: {', '.join(sorted(now))}): their scores and pass rates are not "
            f"comparable; re-score one of them with --judgments, or pass {override} to "
            "pair them anyway"
        )


def compare_runs(
    baseline: Iterable[PredictionLine],
    current: Iterable[PredictionLine],
    *,
    level: float = 0.95,
    seed: int = BOOTSTRAP_SEED,
    cluster_by: str | None = None,
    reducer: str = DEFAULT_REDUCER,
) -> Comparison:
    """Pair the prediction rows of two runs by (dataset, record_id, model) and compare.

    Lines are matched on (dataset, record_id, model, epoch) and each item reduced to one
    verdict with ``reducer`` (a K = 1 line is its own verdict), so flips, McNemar and
    ``regressions.jsonl`` speak of items. With more than one epoch in either run, or with
    ``cluster_by``, the paired differences of record means with clustered errors are
    computed too and decide the gate (:meth:`Comparison.regressed`).

    Raises:
        ConfigError: an unknown reducer, or a line with a bad ``epoch``.

    """
    base_items = group_items(baseline, reducer)
    cur_items = group_items(current, reducer)
    models_b = {key[2] for key in cur_items}
    by_model = pair_by_model({key[2] for key in base_items}, models_b, strict=False)
    if not by_model:  # one model each: the baseline's items stand under the current model
        (model,) = models_b
        base_items = {(k[0], k[1], model): item for k, item in base_items.items()}
    out = Comparison(
        baseline_epochs=max((len(i.lines) for i in base_items.values()), default=1),
        current_epochs=max((len(i.lines) for i in cur_items.values()), default=1),
        reducer=reducer,
        cluster_by=cluster_by or None,
        by_model=by_model,
    )
    base = {key: item.line() for key, item in base_items.items()}
    cur = {key: item.line() for key, item in cur_items.items()}
    diffs: list[float] = []
    judged: list[tuple[EpochItem, EpochItem]] = []
    for key, now in cur.items():
        before = base.get(key)
        if before is None:
            out.only_in_current += 1
            out.changes.append(PairedItem(key, "only_in_current", None, now))
            continue
        was, isnow = _verdict(before), _verdict(now)
        if was is None or isnow is None:
            out.unverdicted += 1
            if was and now.get("outcome") not in ("skipped",):
                out.changes.append(PairedItem(key, "pass_to_error", before, now))
            continue
        out.paired += 1
        judged.append((base_items[key], cur_items[key]))
        if was and isnow:
            out.both_passed += 1
        elif was:
            out.regressions += 1
            out.changes.append(PairedItem(key, "pass_to_fail", before, now))
        elif isnow:
            out.improvements += 1
            out.changes.append(PairedItem(key, "fail_to_pass", before, now))
        else:
            out.both_failed += 1
        if (
            was == isnow
            and base_items[key].c * cur_items[key].n > cur_items[key].c * base_items[key].n
        ):
            out.changes.append(PairedItem(key, "fewer_passes", before, now))
        s_before, s_now = before.get("score"), now.get("score")
        if isinstance(s_before, int | float) and isinstance(s_now, int | float):
            diffs.append(float(s_now) - float(s_before))
            # each answer's score, not the mean over epochs (3 of 5 MCQ epochs is 0.6)
            if out.binary_scores and not (
                _binary_scores(base_items[key]) and _binary_scores(cur_items[key])
            ):
                out.binary_scores = False
    for key, before in base.items():
        if key not in cur:
            out.only_in_baseline += 1
            out.changes.append(PairedItem(key, "only_in_baseline", before, None))
    out.several_models = len({now.key[2] for _, now in judged}) > 1
    if out.paired:
        out.baseline_pass_rate = (out.both_passed + out.regressions) / out.paired
        out.current_pass_rate = (out.both_passed + out.improvements) / out.paired
    out.p_value = mcnemar_exact(out.regressions, out.improvements)
    out.score_pairs = len(diffs)
    if diffs:
        out.mean_score_delta = math.fsum(diffs) / len(diffs)
        boot = bootstrap_mean_interval(diffs, confidence=level, seed=seed)
        out.mean_score_delta_ci = (boot.low, boot.high) if boot else None
    if out.method == "clustered":
        out.pass_difference, out.score_difference = item_differences(
            judged, out.cluster_by, level=level, seed=seed
        )
    return out
