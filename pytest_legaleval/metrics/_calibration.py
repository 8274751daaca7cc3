"""The data of the report's calibration view: judge vs human, table by table, item by item.

:func:`calibration_view` returns a JSON-safe structure (the report renders it):

``tables``
    One confusion table of judge verdict (rows) by human verdict (columns) for every
    labelled item pooled (``policy_id`` and ``criterion_id`` ``None``), then per policy,
    then per (policy, criterion) for criterion labels. Each has ``level`` (``item`` or
    ``criterion``), ``policy_id``, ``criterion_id``, ``labelled``, ``agreement``,
    ``cohen_kappa`` (``None`` when undefined) and ``confusion`` (the four named cells).
``disagreements``
    The labelled items and criteria where judge and humans disagree, worst first (the
    largest score gap, then by id): ``record_id``, ``model``, ``item_id``, ``policy_id``,
    ``criterion_id``, ``judge_passed``, ``human_passed``, ``judge_score``,
    ``human_score``, ``raters``, ``pass_votes``, ``fail_votes`` and ``judge_reason`` (cut
    to ``REASON_LIMIT`` characters). At most ``limit`` are listed;
    ``disagreements_total`` counts them all.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pytest_legaleval.metrics._audit_items import HumanVerdict, ItemVerdict, MatchedLabels, RunItems
from pytest_legaleval.metrics._rater_agreement import confusion_of

__all__ = ["AXES", "REASON_LIMIT", "calibration_view"]

AXES = {"rows": "judge verdict", "columns": "human verdict"}
REASON_LIMIT = 2000

Pair = tuple[bool, bool]


def _table(
    level: str, policy: str | None, criterion: str | None, pairs: list[Pair]
) -> dict[str, Any]:
    confusion = confusion_of(pairs)
    return {
        "level": level,
        "policy_id": policy,
        "criterion_id": criterion,
        "labelled": confusion.n,
        "agreement": confusion.agreement,
        "cohen_kappa": confusion.kappa,
        "confusion": confusion.to_dict(),
    }


def _cut(text: str) -> str:
    return text if len(text) <= REASON_LIMIT else text[: REASON_LIMIT - 1] + "…"


def _row(
    item: ItemVerdict,
    criterion: str | None,
    passed: bool,
    score: float | None,
    human: HumanVerdict,
    reason: str,
) -> dict[str, Any]:
    return {
        "record_id": item.record_id,
        "model": item.model,
        "item_id": item.item_id,
        "policy_id": item.policy_id,
        "criterion_id": criterion,
        "judge_passed": passed,
        "human_passed": human.passed,
        "judge_score": score,
        "human_score": human.score,
        "raters": human.raters,
        "pass_votes": human.pass_votes,
        "fail_votes": human.fail_votes,
        "judge_reason": _cut(reason),
    }


def _gap(row: dict[str, Any]) -> float:
    judge, human = row["judge_score"], row["human_score"]
    if judge is None or human is None:
        return 1.0  # a pass/fail disagreement without scores: as far apart as it gets
    return float(abs(judge - human))


def calibration_view(
    items: RunItems, matched: MatchedLabels, *, limit: int = 200
) -> dict[str, Any]:
    """The calibration view's data (see the module docstring for the structure)."""
    pooled: list[Pair] = []
    by_policy: dict[str | None, list[Pair]] = defaultdict(list)
    by_criterion: dict[tuple[str | None, str], list[Pair]] = defaultdict(list)
    disagreements: list[dict[str, Any]] = []
    for key, item in sorted(items.verdicts.items()):
        human = matched.items.get(key)
        if human is not None and human.passed is not None:
            pooled.append((item.passed, human.passed))
            by_policy[item.policy_id].append((item.passed, human.passed))
            if item.passed != human.passed:
                disagreements.append(_row(item, None, item.passed, item.score, human, item.reason))
        for cid, verdict in sorted(item.criteria.items()):
            label = matched.criteria.get((*key, cid))
            if label is None or label.passed is None:
                continue
            by_criterion[(item.policy_id, cid)].append((verdict.passed, label.passed))
            if verdict.passed != label.passed:
                reason = item.criterion_reasons.get(cid, "")
                disagreements.append(_row(item, cid, verdict.passed, verdict.score, label, reason))
    tables = [_table("item", None, None, pooled)]
    tables += [
        _table("item", policy, None, pairs)
        for policy, pairs in sorted(by_policy.items(), key=lambda kv: str(kv[0]))
    ]
    tables += [
        _table("criterion", policy, cid, pairs)
        for (policy, cid), pairs in sorted(by_criterion.items(), key=lambda kv: str(kv[0]))
    ]
    disagreements.sort(
        key=lambda r: (-_gap(r), r["record_id"], r["model"], r["criterion_id"] or "")
    )
    return {
        "axes": dict(AXES),
        "tables": tables,
        "disagreements": disagreements[:limit],
        "disagreements_total": len(disagreements),
    }
