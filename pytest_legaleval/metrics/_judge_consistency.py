"""Judge consistency without humans: re-judging flips, and how independent a panel is.

**Flip rate** (``--judge-epochs K``: each answer judged K times). For one criterion (or the
item's pass verdict, ``"(item)"``), over the answers judged at least twice:

* ``flip_rate`` — the share of answers whose K verdicts are not all the same ("the
  verdict changed on re-judging");
* ``pairwise_disagreement`` — the mean over answers of the share of the K(K−1)/2 pairs of
  judgings that disagree, 2k(K−k)/(K(K−1)) for k passes: an estimate of the chance that
  two judgings of one answer disagree, comparable across K (the flip rate grows with K).

Criteria whose ``flip_rate`` exceeds ``max_flip_rate`` are listed as ``unstable_criteria``.

**Panel** (several judge models; one verdict per judge per answer). Per pair of judges: the
answers both judged, their agreement, Cohen's κ and the φ correlation of their pass
verdicts. The effective number of independent judges is
``n_eff = n / (1 + (n − 1) · ρ̄)``, ρ̄ the mean pairwise φ (clipped at 0): the variance of a
mean of n votes with common variance and pairwise correlation ρ is σ²(1 + (n − 1)ρ)/n, which
equals that of n_eff independent votes — Kish's design effect (Kish, *Survey Sampling*,
1965) with the judges as the cluster. Nine judges with ρ̄ = 0.45 are 1.96 judges.

Inputs are plain verdict lists (:func:`flip_stats`, :func:`panel_stats`), or prediction
lines (:func:`consistency_from_lines`), whose ``judge.verdicts`` hold one verdict per
judge model and, with ``--judge-epochs K``, per ``judge_epoch`` (0…K−1; absent: 0).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_legaleval.metrics._audit_items import criterion_verdict, is_judge_graded
from pytest_legaleval.metrics._rater_agreement import confusion_of, phi
from pytest_legaleval.records import PredictionLine

__all__ = [
    "ITEM",
    "MAX_FLIP_RATE",
    "consistency_from_lines",
    "effective_judges",
    "flip_stats",
    "panel_stats",
]

ITEM = "(item)"
"""The key of the item's own pass verdict among the criteria."""
MAX_FLIP_RATE = 0.1
"""Default share of answers above which a criterion is listed as unstable."""


def _flips(verdicts: Sequence[bool]) -> tuple[bool, float]:
    k, total = sum(verdicts), len(verdicts)
    return 0 < k < total, 2.0 * k * (total - k) / (total * (total - 1))


def flip_stats(
    samples: Mapping[str, Sequence[Sequence[bool]]], *, max_flip_rate: float = MAX_FLIP_RATE
) -> dict[str, Any]:
    """Flip rates per criterion from each answer's K verdicts (see the module docstring).

    Args:
        samples: per criterion id, one sequence of verdicts per answer (answers with
            fewer than two verdicts are left out).
        max_flip_rate: criteria above this flip rate are listed as unstable.

    """
    criteria: dict[str, dict[str, Any]] = {}
    pooled_flips, pooled_pairs, pooled_answers = 0, 0.0, 0
    for cid in sorted(samples):
        answers = [list(v) for v in samples[cid] if len(v) >= 2]
        if not answers:
            continue
        found = [_flips(v) for v in answers]
        flipped = sum(f for f, _ in found)
        pairs = math.fsum(p for _, p in found)
        criteria[cid] = {
            "answers": len(answers),
            "judgings": sum(len(v) for v in answers),
            "flip_rate": flipped / len(answers),
            "pairwise_disagreement": pairs / len(answers),
            "pass_rate": sum(map(sum, answers)) / sum(len(v) for v in answers),
        }
        pooled_flips += flipped
        pooled_pairs += pairs
        pooled_answers += len(answers)
    return {
        "criteria": criteria,
        "answers": pooled_answers,
        "flip_rate": pooled_flips / pooled_answers if pooled_answers else None,
        "pairwise_disagreement": pooled_pairs / pooled_answers if pooled_answers else None,
        "max_flip_rate": max_flip_rate,
        "unstable_criteria": [c for c, s in criteria.items() if s["flip_rate"] > max_flip_rate],
    }


def effective_judges(judges: int, mean_correlation: float | None) -> float | None:
    """``n / (1 + (n − 1) · max(ρ̄, 0))``; ``None`` when ρ̄ is unknown."""
    if mean_correlation is None or judges < 1:
        return None
    return judges / (1.0 + (judges - 1) * max(0.0, mean_correlation))


def panel_stats(units: Sequence[Mapping[str, bool]]) -> dict[str, Any] | None:
    """Pairwise agreement of judges and the effective number of independent judges.

    Args:
        units: per answer (or criterion of an answer), each judge model's verdict.

    Returns:
        ``None`` with fewer than two judges; else ``judges``, ``pairs`` (per pair:
        ``judges``, ``units``, ``agreement``, ``cohen_kappa``, ``phi``),
        ``mean_agreement``, ``mean_correlation`` (ρ̄ over the pairs whose φ is defined)
        and ``effective_judges``.

    """
    judges = sorted({judge for unit in units for judge in unit})
    if len(judges) < 2:
        return None
    pairs = []
    for first, second in itertools.combinations(judges, 2):
        both = [(u[first], u[second]) for u in units if first in u and second in u]
        confusion = confusion_of(both)
        pairs.append(
            {
                "judges": [first, second],
                "units": len(both),
                "agreement": confusion.agreement,
                "cohen_kappa": confusion.kappa,
                "phi": phi([a for a, _ in both], [b for _, b in both]),
            }
        )
    agreements = [float(a) for p in pairs if isinstance(a := p["agreement"], float)]
    correlations = [float(r) for p in pairs if isinstance(r := p["phi"], float)]
    mean_correlation = math.fsum(correlations) / len(correlations) if correlations else None
    return {
        "judges": judges,
        "units": len(units),
        "pairs": pairs,
        "mean_agreement": math.fsum(agreements) / len(agreements) if agreements else None,
        "mean_correlation": mean_correlation,
        "effective_judges": effective_judges(len(judges), mean_correlation),
    }


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _judge_verdicts(verdict: Mapping[str, Any], threshold: float | None) -> dict[str, bool]:
    """One judge verdict's pass (``ITEM``, score against the threshold) and criteria."""
    out: dict[str, bool] = {}
    score = _number(verdict.get("score"))
    if verdict.get("error") is None and score is not None and threshold is not None:
        out[ITEM] = score >= threshold
    for entry in verdict.get("criteria") or ():
        if isinstance(entry, Mapping) and isinstance(entry.get("id"), str):
            found = criterion_verdict(entry, threshold)
            if found is not None:
                out[entry["id"]] = found.passed
    return out


def consistency_from_lines(
    lines: Iterable[PredictionLine], *, max_flip_rate: float = MAX_FLIP_RATE
) -> dict[str, Any]:
    """Flip rates and panel figures from prediction lines.

    Returns:
        ``{"judge_epochs": K, "flips": flip_stats(...) or None, "panel": {"items":
        panel_stats over item passes, "criteria": panel_stats over criterion verdicts} or
        None}``; ``flips`` is ``None`` when no answer was judged twice by one judge.

    """
    # (record, model, epoch, judge model) -> judge_epoch -> {criterion: verdict}
    judged: dict[tuple[str, str, int, str], dict[int, dict[str, bool]]] = defaultdict(dict)
    for line in lines:
        judge = line.get("judge")
        if not is_judge_graded(line) or not isinstance(judge, Mapping):
            continue
        details = line.get("details")
        threshold = _number(details.get("threshold")) if isinstance(details, Mapping) else None
        found_epoch = line.get("epoch")
        epoch = found_epoch if isinstance(found_epoch, int) else 0
        for verdict in judge.get("verdicts") or ():
            if not isinstance(verdict, Mapping):
                continue
            judge_epoch = verdict.get("judge_epoch")
            key = (
                str(line.get("record_id")),
                str(line.get("model")),
                epoch,
                str(verdict.get("model")),
            )
            judged[key][judge_epoch if isinstance(judge_epoch, int) else 0] = _judge_verdicts(
                verdict, threshold
            )
    samples: dict[str, list[list[bool]]] = defaultdict(list)
    item_units: dict[tuple[str, str, int], dict[str, bool]] = defaultdict(dict)
    criterion_units: dict[tuple[str, str, int, str], dict[str, bool]] = defaultdict(dict)
    for (record, model, epoch, judge_model), by_epoch in sorted(judged.items()):
        ordered = [by_epoch[k] for k in sorted(by_epoch)]
        for cid in sorted(set().union(*ordered)):
            samples[cid].append([v[cid] for v in ordered if cid in v])
        first = ordered[0]  # the panel compares judges on their first judging
        for cid, passed in first.items():
            if cid == ITEM:
                item_units[(record, model, epoch)][judge_model] = passed
            else:
                criterion_units[(record, model, epoch, cid)][judge_model] = passed
    flips = flip_stats(samples, max_flip_rate=max_flip_rate)
    items_panel = panel_stats(list(item_units.values()))
    criteria_panel = panel_stats(list(criterion_units.values()))
    panel = None
    if items_panel is not None or criteria_panel is not None:
        panel = {"items": items_panel, "criteria": criteria_panel}
    return {
        "judge_epochs": max((len(v) for v in judged.values()), default=0),
        "flips": flips if flips["answers"] else None,
        "panel": panel,
    }
