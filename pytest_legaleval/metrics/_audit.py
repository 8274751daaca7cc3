"""The judge audit: how far the LLM judge is from the human labels, and the corrected rates.

Inputs are prediction lines (as in ``predictions.jsonl``) and a :class:`LabelFile`; the
output is JSON-safe. For a set of judge-graded items with a verdict (see
:mod:`._audit_items`), the **labelled** items are those with a human pass label; every other
one is **unlabelled**. A block gives:

* ``labelled`` / ``unlabelled`` — n and N;
* ``agreement`` — the share of labelled items where judge and humans agree on pass;
* ``cohen_kappa`` — Cohen's κ of judge pass vs human pass (scikit-learn's
  ``cohen_kappa_score(Y, Ŷ)``); ``None`` with a note when undefined;
* ``confusion`` — the four cells (judge × human);
* ``judge_pass_rate`` — the judge's pass rate over all n + N items (what the run reports);
* ``human_pass_rate`` — the labels' mean, with the classical interval of the labels alone;
* ``ppi_pass_rate`` — the PPI++ estimate of the human pass rate over all items, from the
  labels and the judge's verdicts (:mod:`._ppi`), ``{"estimate", "ci95", "lambda",
  "labelled", "unlabelled"}``;
* the same for scores where the labels carry one: ``score_labelled``,
  ``krippendorff_alpha`` (interval metric, judge score vs mean human score),
  ``judge_mean_score``, ``human_mean_score``, ``ppi_mean_score``;
* ``…_ci95`` beside agreement, κ and α: seeded percentile bootstrap intervals;
* ``notes`` — why a figure is ``None``.

Every ``ci95`` is a list ``[low, high]``; numbers are plain; nothing is NaN.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_legaleval.metrics._audit_items import (
    HumanVerdict,
    MatchedLabels,
    Reducer,
    RunItems,
    collect_items,
    match_labels,
)
from pytest_legaleval.metrics._human_labels import LabelFile
from pytest_legaleval.metrics._ppi import classical_mean, ppi_mean
from pytest_legaleval.metrics._rater_agreement import (
    ALPHA_UNDEFINED,
    KAPPA_UNDEFINED,
    alpha_interval,
    confusion_of,
    kappa_agreement_intervals,
    krippendorff_alpha_interval,
)
from pytest_legaleval.metrics._stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from pytest_legaleval.records import PredictionLine

__all__ = [
    "AUDIT_GATE_METRICS",
    "AuditSettings",
    "JudgeAudit",
    "audit_block",
    "audit_from_items",
    "judge_audit",
]

AUDIT_GATE_METRICS: tuple[dict[str, Any], ...] = (
    {
        "name": "judge_audit.cohen_kappa",
        "description": "Cohen's kappa of the judge's pass vs the human pass on labelled items",
        "paths": (("judge_audit", "cohen_kappa"),),
        "n_path": ("judge_audit", "labelled"),
        "interval_paths": (("judge_audit", "cohen_kappa_ci95"),),
    },
    {
        "name": "judge_audit.agreement",
        "description": "share of labelled items where the judge and the humans agree on pass",
        "paths": (("judge_audit", "agreement"),),
        "n_path": ("judge_audit", "labelled"),
        "interval_paths": (("judge_audit", "agreement_ci95"),),
        "rate": True,
    },
    {
        "name": "judge_audit.krippendorff_alpha",
        "description": "Krippendorff's alpha (interval) of judge vs human scores",
        "paths": (("judge_audit", "krippendorff_alpha"),),
        "n_path": ("judge_audit", "score_labelled"),
        "interval_paths": (("judge_audit", "krippendorff_alpha_ci95"),),
    },
    {
        "name": "judge_audit.ppi_pass_rate",
        "description": "PPI++ estimate of the human pass rate (labels + judge verdicts)",
        "paths": (("judge_audit", "ppi_pass_rate", "estimate"),),
        "n_path": ("judge_audit", "labelled"),
        "interval_paths": (("judge_audit", "ppi_pass_rate", "ci95"),),
        "rate": True,
    },
)
"""Gate metrics over ``judge_audit`` as ``metrics._gates.MetricSpec`` keyword arguments:
the lead adds ``MetricSpec(**spec)`` for each to ``gates.METRICS`` (and lets the gate
grammar's metric name hold a dot), so ``--gate "judge_audit.cohen_kappa>=0.6"`` works."""

NO_LABELS = "no judge-graded item with a verdict has a human label here"
NO_SCORE_LABELS = "no judge-graded item with a score has a human score here"


@dataclass(frozen=True, slots=True)
class AuditSettings:
    """Seed and size of the bootstrap, and the error level of every interval."""

    seed: int = BOOTSTRAP_SEED
    resamples: int = BOOTSTRAP_RESAMPLES
    alpha: float = 0.05


def _pair(interval: tuple[float, float] | None) -> list[float] | None:
    return [interval[0], interval[1]] if interval is not None else None


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _pass_figures(
    pairs: Sequence[tuple[bool, bool]], unlabelled: Sequence[bool], settings: AuditSettings
) -> dict[str, Any]:
    confusion = confusion_of(pairs)
    agreement_ci, kappa_ci = kappa_agreement_intervals(
        confusion, seed=settings.seed, resamples=settings.resamples
    )
    judge_all = [float(j) for j, _ in pairs] + [float(u) for u in unlabelled]
    human = [float(h) for _, h in pairs]
    out: dict[str, Any] = {
        "labelled": len(pairs),
        "unlabelled": len(unlabelled),
        "agreement": confusion.agreement,
        "agreement_ci95": _pair(agreement_ci),
        "cohen_kappa": confusion.kappa,
        "cohen_kappa_ci95": _pair(kappa_ci) if confusion.kappa is not None else None,
        "confusion": confusion.to_dict(),
        "judge_pass_rate": _mean(judge_all),
        "human_pass_rate": _mean(human),
        "human_pass_rate_ci95": None,
        "ppi_pass_rate": None,
    }
    if pairs:
        labels_only = classical_mean(human, alpha=settings.alpha)
        out["human_pass_rate_ci95"] = labels_only.rate_interval()  # a rate: in [0, 1]
        judged = [float(j) for j, _ in pairs]
        corrected = ppi_mean(human, judged, [float(u) for u in unlabelled], alpha=settings.alpha)
        out["ppi_pass_rate"] = corrected.to_dict(rate=True)
    return out


def _score_figures(
    pairs: Sequence[tuple[float, float]], unlabelled: Sequence[float], settings: AuditSettings
) -> dict[str, Any]:
    alpha = krippendorff_alpha_interval(pairs)
    human = [h for _, h in pairs]
    out: dict[str, Any] = {
        "score_labelled": len(pairs),
        "score_unlabelled": len(unlabelled),
        "krippendorff_alpha": alpha,
        "krippendorff_alpha_ci95": None,
        "judge_mean_score": _mean([j for j, _ in pairs] + list(unlabelled)),
        "human_mean_score": _mean(human),
        "human_mean_score_ci95": None,
        "ppi_mean_score": None,
    }
    if alpha is not None:
        out["krippendorff_alpha_ci95"] = _pair(
            alpha_interval(pairs, seed=settings.seed, resamples=settings.resamples)
        )
    if pairs:
        labels_only = classical_mean(human, alpha=settings.alpha)
        out["human_mean_score_ci95"] = [labels_only.low, labels_only.high]
        corrected = ppi_mean(human, [j for j, _ in pairs], list(unlabelled), alpha=settings.alpha)
        out["ppi_mean_score"] = corrected.to_dict()
    return out


def audit_block(
    pass_pairs: Sequence[tuple[bool, bool]],
    pass_unlabelled: Sequence[bool],
    score_pairs: Sequence[tuple[float, float]] = (),
    score_unlabelled: Sequence[float] = (),
    settings: AuditSettings | None = None,
) -> dict[str, Any]:
    """One audit block from (judge, human) pairs and the unlabelled judge verdicts.

    Args:
        pass_pairs: ``(judge passed, human passed)`` of the labelled items.
        pass_unlabelled: the judge's ``passed`` on every other item with a verdict.
        score_pairs: ``(judge score, human score)`` where both exist.
        score_unlabelled: the judge's score on every other item with a score.
        settings: bootstrap seed and resamples, and α.

    """
    settings = settings or AuditSettings()
    out = _pass_figures(pass_pairs, pass_unlabelled, settings)
    out.update(_score_figures(score_pairs, score_unlabelled, settings))
    notes = {}
    if not pass_pairs:
        notes["cohen_kappa"] = notes["ppi_pass_rate"] = NO_LABELS
    elif out["cohen_kappa"] is None:
        notes["cohen_kappa"] = KAPPA_UNDEFINED
    if not score_pairs:
        notes["krippendorff_alpha"] = notes["ppi_mean_score"] = NO_SCORE_LABELS
    elif out["krippendorff_alpha"] is None:
        notes["krippendorff_alpha"] = ALPHA_UNDEFINED
    out["notes"] = notes
    return out


def _block(
    units: Iterable[tuple[bool, float | None, HumanVerdict | None]], settings: AuditSettings
) -> dict[str, Any]:
    pass_pairs: list[tuple[bool, bool]] = []
    pass_unlabelled: list[bool] = []
    score_pairs: list[tuple[float, float]] = []
    score_unlabelled: list[float] = []
    for passed, score, human in units:
        if human is not None and human.passed is not None:
            pass_pairs.append((passed, human.passed))
        else:
            pass_unlabelled.append(passed)
        if score is None:
            continue
        if human is not None and human.score is not None:
            score_pairs.append((score, human.score))
        else:
            score_unlabelled.append(score)
    return audit_block(pass_pairs, pass_unlabelled, score_pairs, score_unlabelled, settings)


@dataclass(slots=True)
class JudgeAudit:
    """The whole audit of a run: pooled, per model, per policy, per criterion."""

    overall: dict[str, Any]
    """Every judge-graded item of the run (all models, policies and task types)."""
    by_model: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_policy: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_criterion: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Criteria that carry a label: that criterion over every item that has it."""
    criteria: dict[str, Any] | None = None
    """Every criterion verdict pooled; ``None`` when no label names a criterion."""
    labels: dict[str, int] = field(default_factory=dict)
    record_errors: list[dict[str, Any]] = field(default_factory=list)
    matched: MatchedLabels | None = None
    items: RunItems | None = None

    def summary_block(self) -> dict[str, Any]:
        """``metrics_summary.json``'s ``judge_audit``.

        The pooled block, the label counts and the criterion blocks; the per-model and
        per-policy blocks belong in the model and policy slices.
        """
        block = dict(self.overall)
        block["labels"] = dict(self.labels)
        if self.criteria is not None:
            block["criteria"] = self.criteria
            block["by_criterion"] = self.by_criterion
        return block

    def to_dict(self) -> dict[str, Any]:
        """Everything, JSON-safe (``legaleval audit --json``)."""
        return {
            "judge_audit": self.summary_block(),
            "by_model": self.by_model,
            "by_policy": self.by_policy,
            "record_errors": self.record_errors,
        }


def _units(
    items: RunItems, matched: MatchedLabels, *, model: str | None = None, policy: str | None = None
) -> list[tuple[bool, float | None, HumanVerdict | None]]:
    """Every item with a verdict (of one model, or one policy), with its human verdict."""
    return [
        (item.passed, item.score, matched.items.get(key))
        for key, item in sorted(items.verdicts.items())
        if (model is None or key[1] == model) and (policy is None or item.policy_id == policy)
    ]


def audit_from_items(
    items: RunItems,
    matched: MatchedLabels,
    settings: AuditSettings | None = None,
    *,
    labels: LabelFile | None = None,
    sample: Mapping[str, Any] | None = None,
    run_id: str | None = None,
) -> JudgeAudit:
    """The audit of already collected items and matched labels (see :func:`judge_audit`).

    With ``labels`` the pooled block gains ``expert_agreement`` (raters against each other,
    :mod:`._expert_agreement`); with ``sample`` (a ``legaleval review`` sample,
    :mod:`._labelled_population`) it states the labels' population as ``sample`` and gives
    no PPI estimate for a population the labels were not drawn from.
    """
    audit = _audit_from_items(items, matched, settings or AuditSettings())
    if labels is not None:
        from pytest_legaleval.metrics._expert_agreement import expert_agreement

        settings = settings or AuditSettings()
        audit.overall["expert_agreement"] = expert_agreement(
            labels, items, seed=settings.seed, resamples=settings.resamples
        )
    if sample is not None:
        from pytest_legaleval.metrics._labelled_population import population_check, refuse_ppi

        audit.overall["sample"], reason = population_check(sample, run_id, items, matched)
        if reason is not None:
            blocks = [audit.overall, *audit.by_model.values(), *audit.by_policy.values()]
            blocks += [*audit.by_criterion.values(), *([audit.criteria] if audit.criteria else [])]
            refuse_ppi(blocks, reason)
    return audit


def _audit_from_items(
    items: RunItems, matched: MatchedLabels, settings: AuditSettings
) -> JudgeAudit:
    overall = _block(_units(items, matched), settings)
    overall["bootstrap"] = {"seed": settings.seed, "resamples": settings.resamples}
    models = sorted({model for _, model in items.verdicts})
    policies = sorted({i.policy_id for i in items.verdicts.values() if i.policy_id is not None})
    audit = JudgeAudit(
        overall=overall,
        by_model={m: _block(_units(items, matched, model=m), settings) for m in models},
        by_policy={p: _block(_units(items, matched, policy=p), settings) for p in policies},
        labels=dict(matched.counts),
        record_errors=[error.to_dict() for error in matched.errors],
        matched=matched,
        items=items,
    )
    if matched.criteria:
        by_id: dict[str, list[tuple[bool, float | None, HumanVerdict | None]]] = defaultdict(list)
        pooled = []
        for (rid, model), item in sorted(items.verdicts.items()):
            for cid, verdict in sorted(item.criteria.items()):
                unit = (verdict.passed, verdict.score, matched.criteria.get((rid, model, cid)))
                by_id[cid].append(unit)
                pooled.append(unit)
        labelled_ids = sorted({cid for _, _, cid in matched.criteria})
        audit.by_criterion = {cid: _block(by_id[cid], settings) for cid in labelled_ids}
        audit.criteria = _block(pooled, settings)
    return audit


def judge_audit(
    lines: Iterable[PredictionLine],
    labels: LabelFile,
    *,
    reducer: Reducer | None = None,
    settings: AuditSettings | None = None,
) -> JudgeAudit:
    """Audit the judge of a run's prediction lines against human labels.

    Args:
        lines: ``predictions.jsonl`` lines, every item of the run, any order.
        labels: the labels (:func:`~pytest_legaleval.metrics._human_labels.read_human_labels`).
        reducer: one verdict per item from its epochs' verdicts (default: ``mean``, as
            ``audit_items.epoch_reducer``).
        settings: bootstrap seed and resamples, α.

    Returns:
        The audit; its ``record_errors`` list every label left out and why.

    """
    seen: dict[str, str] = {}

    def noting_the_run(rows: Iterable[PredictionLine]) -> Iterable[PredictionLine]:
        for row in rows:
            if not seen and isinstance(row.get("run_id"), str):
                seen["run_id"] = row["run_id"]
            yield row

    items = collect_items(noting_the_run(lines), reducer)
    matched = match_labels(labels, items)
    return audit_from_items(
        items, matched, settings, labels=labels, sample=labels.sample, run_id=seen.get("run_id")
    )
