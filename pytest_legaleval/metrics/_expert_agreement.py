"""How far the experts agree with each other: the ceiling a judge's κ is read against.

On the items that two or more raters labelled (``legaleval review --double F`` shares a
fraction of the sample), per item and per criterion:

* two raters: **Cohen's κ** of their pass verdicts (Cohen, 1960; scikit-learn's
  ``cohen_kappa_score``) and their raw agreement, with the percentile bootstrap intervals
  of :func:`~._rater_agreement.kappa_agreement_intervals`;
* three or more: **Fleiss' κ** (Fleiss, 1971) on the items every rater labelled:
  P̄ = mean over items of (Σ_j n_ij² − n) / (n(n − 1)), P_e = Σ_j p_j², κ = (P̄ − P_e)/(1 − P_e)
  (statsmodels' ``fleiss_kappa``);
* always: **Krippendorff's α**, nominal, on every item with two or more labels (missing
  labels allowed; Krippendorff 2011, the coincidence matrix): α = 1 − (n − 1)·o_01 /
  (n_0·n_1) for pass/fail (the ``krippendorff`` package's ``alpha``);
* beside them, **the judge's** Cohen κ with each rater on the same shared items, and their
  mean (``judge_kappa``), so "judge 0.58 vs experts 0.71 on 40 shared items" compares like
  with like.

Intervals of Fleiss' κ and α: units resampled with replacement (seeded; at most
``DRAW_BUDGET`` units drawn). Undefined figures are ``None`` with a note.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_legaleval.metrics._audit_items import CRITERION_THRESHOLD, RunItems
from pytest_legaleval.metrics._human_labels import HumanLabel, LabelFile
from pytest_legaleval.metrics._rater_agreement import (
    DRAW_BUDGET,
    confusion_of,
    kappa_agreement_intervals,
)
from pytest_legaleval.metrics._stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, quantile

__all__ = [
    "NO_SHARED",
    "expert_agreement",
    "fleiss_kappa",
    "krippendorff_alpha_nominal",
    "rater_votes",
]

NO_SHARED = "no item has labels of two raters (legaleval review --double F shares items)"
Unit = Mapping[str, bool]
"""One item's (or criterion's) pass votes by rater."""


def rater_votes(
    labels: LabelFile, items: RunItems
) -> tuple[dict[tuple[str, str], dict[str, bool]], dict[tuple[str, str, str], dict[str, bool]]]:
    """Each named rater's pass vote per item and per criterion, on judge-graded items.

    A label's model may be left out when one model answered its record; a score alone votes
    pass from the item's threshold (a criterion's: 0.5), as the audit combines raters. The
    first label of a rater on a unit counts (the audit reports the others).
    """
    by_item: dict[tuple[str, str], dict[str, bool]] = defaultdict(dict)
    by_criterion: dict[tuple[str, str, str], dict[str, bool]] = defaultdict(dict)
    for label in labels.labels:
        key = _key(label, items)
        if label.rater is None or key is None or key not in items.verdicts:
            continue
        threshold = CRITERION_THRESHOLD if label.criterion_id else items.facts[key].threshold
        vote = label.passed
        if vote is None and label.score is not None and threshold is not None:
            vote = label.score >= threshold
        if vote is None:
            continue
        if label.criterion_id is None:
            by_item[key].setdefault(label.rater, vote)
        else:
            by_criterion[(*key, label.criterion_id)].setdefault(label.rater, vote)
    return dict(by_item), dict(by_criterion)


def _key(label: HumanLabel, items: RunItems) -> tuple[str, str] | None:
    models = items.models_by_record.get(label.record_id)
    if not models:
        return None
    if label.model is None:
        return (label.record_id, next(iter(models))) if len(models) == 1 else None
    return (label.record_id, label.model) if label.model in models else None


def fleiss_kappa(units: Sequence[Sequence[bool]]) -> float | None:
    """Fleiss' κ of pass/fail votes, every unit rated by the same number n ≥ 2 of raters.

    ``None`` without units, with unequal counts, or when P_e = 1 (one verdict throughout).
    """
    if not units:
        return None
    n = len(units[0])
    if n < 2 or any(len(unit) != n for unit in units):
        return None
    passes = [sum(unit) for unit in units]
    agreement = math.fsum((p * p + (n - p) ** 2 - n) / (n * (n - 1)) for p in passes)
    mean = agreement / len(units)
    share = sum(passes) / (n * len(units))
    chance = share * share + (1 - share) ** 2
    if chance >= 1.0 - 1e-15:
        return None
    return (mean - chance) / (1 - chance)


def krippendorff_alpha_nominal(units: Sequence[Sequence[bool]]) -> float | None:
    """Krippendorff's α (nominal) of pass/fail votes; units may have different rater counts.

    Units with fewer than two votes are not pairable and left out. ``None`` when no unit is
    pairable or every pairable vote is the same.
    """
    pairable = [unit for unit in units if len(unit) >= 2]
    if not pairable:
        return None
    ones = sum(sum(unit) for unit in pairable)
    total = sum(len(unit) for unit in pairable)
    zeros = total - ones
    if zeros == 0 or ones == 0:
        return None
    disagree = math.fsum(sum(u) * (len(u) - sum(u)) / (len(u) - 1) for u in pairable)
    return 1.0 - (total - 1) * disagree / (zeros * ones)


def _interval(
    units: Sequence[Sequence[bool]],
    statistic: Callable[[Sequence[Sequence[bool]]], float | None],
    seed: int,
    resamples: int,
) -> list[float] | None:
    if not units:
        return None
    rng = random.Random(seed)
    resamples = max(100, min(resamples, DRAW_BUDGET // len(units)))
    found = []
    for _ in range(resamples):
        value = statistic(rng.choices(units, k=len(units)))
        if value is not None:
            found.append(value)
    if not found:
        return None
    found.sort()
    low, high = quantile(found, 0.025), quantile(found, 0.975)
    assert low is not None and high is not None
    return [low, high]


def _block(
    units: Mapping[Any, Unit],
    judge: Mapping[Any, bool],
    seed: int,
    resamples: int,
) -> dict[str, Any] | None:
    shared = {key: votes for key, votes in units.items() if len(votes) >= 2}
    if not shared:
        return None
    raters = sorted({name for votes in shared.values() for name in votes})
    out: dict[str, Any] = {"raters": raters, "shared_items": len(shared), "notes": {}}
    if len(raters) == 2:
        first, second = raters
        confusion = confusion_of([(v[first], v[second]) for v in shared.values()])
        agreement_ci, kappa_ci = kappa_agreement_intervals(
            confusion, seed=seed, resamples=resamples
        )
        out.update(
            method="cohen_kappa",
            kappa=confusion.kappa,
            kappa_ci95=list(kappa_ci) if kappa_ci and confusion.kappa is not None else None,
            agreement=confusion.agreement,
            agreement_ci95=list(agreement_ci) if agreement_ci else None,
        )
    else:
        full = [[v[name] for name in raters] for v in shared.values() if len(v) == len(raters)]
        kappa = fleiss_kappa(full)
        out.update(
            method="fleiss_kappa",
            kappa=kappa,
            kappa_ci95=_interval(full, fleiss_kappa, seed, resamples)
            if kappa is not None
            else None,
            fleiss_items=len(full),
            agreement=None,
            agreement_ci95=None,
        )
    votes = [list(v.values()) for v in shared.values()]
    alpha = krippendorff_alpha_nominal(votes)
    out["krippendorff_alpha"] = alpha
    out["krippendorff_alpha_ci95"] = (
        _interval(votes, krippendorff_alpha_nominal, seed, resamples) if alpha is not None else None
    )
    if out["kappa"] is None:
        out["notes"]["kappa"] = "undefined: the raters gave one and the same verdict throughout"
    by_rater: dict[str, Any] = {}
    for name in raters:
        pairs = [(judge[k], v[name]) for k, v in shared.items() if name in v and k in judge]
        by_rater[name] = {"n": len(pairs), "kappa": confusion_of(pairs).kappa}
    defined = [b["kappa"] for b in by_rater.values() if b["kappa"] is not None]
    out["judge_kappa"] = math.fsum(defined) / len(defined) if defined else None
    out["judge_kappa_by_rater"] = by_rater
    return out


def expert_agreement(
    labels: LabelFile,
    items: RunItems,
    *,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> dict[str, Any]:
    """``judge_audit.expert_agreement``: the item block, the criteria pooled and per criterion.

    Returns ``{"items": block | None, "criteria": block | None, "by_criterion": {id: block},
    "notes": {...}}``; a block has ``raters``, ``shared_items``, ``method``, ``kappa`` (and
    ``kappa_ci95``), ``agreement``, ``krippendorff_alpha`` (and its interval),
    ``judge_kappa`` and ``judge_kappa_by_rater``.
    """
    by_item, by_criterion = rater_votes(labels, items)
    judge = {key: verdict.passed for key, verdict in items.verdicts.items()}
    judge_criteria = {
        (*key, cid): v.passed
        for key, verdict in items.verdicts.items()
        for cid, v in verdict.criteria.items()
    }
    out: dict[str, Any] = {
        "items": _block(by_item, judge, seed, resamples),
        "criteria": _block(by_criterion, judge_criteria, seed, resamples),
        "by_criterion": {},
        "notes": {},
    }
    grouped: dict[str, dict[Any, Unit]] = defaultdict(dict)
    for key, votes in by_criterion.items():
        grouped[key[2]][key] = votes
    for cid, units in sorted(grouped.items()):
        block = _block(units, judge_criteria, seed, resamples)
        if block is not None:
            out["by_criterion"][cid] = block
    if out["items"] is None:
        out["notes"]["items"] = NO_SHARED
    return out
