"""The judge's verdicts of a run, one per item, and the human labels matched to them.

An item is a (record id, model) pair of ``predictions.jsonl``. It is **judge-graded** when a
line's ``grader`` starts with ``judge`` (MCQ items, graded by a program, are not), and it
**has a verdict** when such a line has a boolean ``passed`` and is not an error (a
``judge_error``, a missing response, an engine error have none). Only judge-graded items
with a verdict enter the audit, labelled or not.

With epochs (lines with an ``epoch`` field), an item's lines are reduced to one verdict by
a swappable reducer (:data:`Reducer`); :func:`epoch_reducer` is the run's own
(``--epoch-reducer``, by ``metrics._epochs``).

Several raters of one item combine as follows: the human pass is the majority of the
raters' pass votes, and a tie is no pass label (the item is left out of the labelled set
and counted in ``ties``); the human score is the mean of the raters' scores. A rater who
gave only a score votes pass when the score reaches the item's threshold (for a criterion:
0.5, the judge's own cut for "met").
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._epochs import DEFAULT_REDUCER, REDUCERS, reduce_verdict
from pytest_legaleval.metrics._human_labels import HumanLabel, LabelFile
from pytest_legaleval.records import PredictionLine
from pytest_legaleval.validation import RecordError
from pytest_legaleval.validation.checks import show

__all__ = [
    "CRITERION_THRESHOLD",
    "NO_VERDICT_REASONS",
    "HumanVerdict",
    "ItemFacts",
    "ItemKey",
    "ItemVerdict",
    "MatchedLabels",
    "Reducer",
    "RunItems",
    "Verdict",
    "collect_items",
    "criterion_verdict",
    "epoch_reducer",
    "epoch_verdict",
    "is_judge_graded",
    "match_labels",
]

ItemKey = tuple[str, str]
"""``(record_id, model)``."""
CRITERION_THRESHOLD = 0.5
"""A criterion is met when its grade reaches 0.5 (the judge panel's own cut)."""
NO_VERDICT_REASONS = frozenset({"judge_error", "missing_response", "needs_judge", "cancelled"})


@dataclass(frozen=True, slots=True)
class Verdict:
    """A pass/fail verdict with its score (``None`` when the grader gave none)."""

    passed: bool
    score: float | None


@dataclass(frozen=True, slots=True)
class ItemVerdict:
    """The judge's verdict on one item (after reducing its epochs)."""

    record_id: str
    model: str
    policy_id: str | None
    passed: bool
    score: float | None
    threshold: float | None
    criteria: Mapping[str, Verdict]
    """Per criterion id: the judges' verdict (met or not) and grade."""
    reason: str
    """The judge's reason for the item (its rationale, else the grader's explanation)."""
    criterion_reasons: Mapping[str, str]
    item_id: str | None = None
    epochs: int = 1


@dataclass(slots=True)
class ItemFacts:
    """What the run says about an item, verdict or not (to match labels against)."""

    judge_graded: bool = False
    has_verdict: bool = False
    threshold: float | None = None
    criteria: set[str] = field(default_factory=set)


Reducer = Callable[[Sequence[ItemVerdict]], ItemVerdict | None]
"""Reduces an item's per-epoch verdicts (each with a verdict, in epoch order) to one."""


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def is_judge_graded(line: PredictionLine) -> bool:
    """Whether an LLM judge graded the line (``grader`` ``judge:…``; old lines: a judge)."""
    grader = line.get("grader")
    if isinstance(grader, str):
        return grader.startswith("judge")
    return isinstance(line.get("judge"), Mapping)


def criterion_verdict(entry: Mapping[str, Any], threshold: float | None) -> Verdict | None:
    """The verdict of one criterion entry (``met``, ``grade`` or a rated ``score``).

    ``met`` as a boolean is the verdict; a number (the judges' mean grade) is met from
    0.5; a rated criterion's normalized ``score`` is met from the item's threshold. A
    criterion whose verdict failed (``met: null``) has none.
    """
    met, grade, score = entry.get("met"), _number(entry.get("grade")), _number(entry.get("score"))
    if isinstance(met, bool):
        return Verdict(met, grade if grade is not None else float(met))
    value = _number(met)
    if value is not None:
        return Verdict(value >= CRITERION_THRESHOLD, value)
    if met is None and "met" in entry:
        return None  # the criterion's verdict failed
    if grade is not None:
        return Verdict(grade >= CRITERION_THRESHOLD, grade)
    if score is not None:  # a rated criterion: its normalized rating against the item's cut
        return Verdict(score >= (CRITERION_THRESHOLD if threshold is None else threshold), score)
    return None


def _criteria_entries(line: PredictionLine) -> list[list[Mapping[str, Any]]]:
    """The line's criterion entries: the grader's combined list, else each judge's."""
    details = line.get("details")
    combined = details.get("criteria") if isinstance(details, Mapping) else None
    if isinstance(combined, list) and combined:
        return [[e for e in combined if isinstance(e, Mapping)]]
    judge = line.get("judge")
    verdicts = judge.get("verdicts") if isinstance(judge, Mapping) else None
    out = []
    for verdict in verdicts if isinstance(verdicts, list) else []:
        entries = verdict.get("criteria") if isinstance(verdict, Mapping) else None
        if isinstance(entries, list):
            out.append([e for e in entries if isinstance(e, Mapping)])
    return out


def _criteria(
    line: PredictionLine, threshold: float | None
) -> tuple[dict[str, Verdict], dict[str, str], set[str]]:
    """Criterion verdicts (several judges: the mean grade against 0.5), reasons, all ids."""
    grades: dict[str, list[Verdict]] = defaultdict(list)
    reasons: dict[str, str] = {}
    ids: set[str] = set()
    for entries in _criteria_entries(line):
        for entry in entries:
            cid = entry.get("id")
            if not isinstance(cid, str):
                continue
            ids.add(cid)
            verdict = criterion_verdict(entry, threshold)
            if verdict is not None:
                grades[cid].append(verdict)
            reason = entry.get("rationale", entry.get("reason"))
            if isinstance(reason, str) and reason.strip() and cid not in reasons:
                reasons[cid] = reason.strip()
    verdicts: dict[str, Verdict] = {}
    for cid, found in grades.items():
        if len(found) == 1:
            verdicts[cid] = found[0]
        else:
            scores = [v.score for v in found if v.score is not None]
            mean = math.fsum(scores) / len(scores) if len(scores) == len(found) else None
            votes = sum(v.passed for v in found)
            passed = mean >= CRITERION_THRESHOLD if mean is not None else votes * 2 > len(found)
            verdicts[cid] = Verdict(passed, mean)
    return verdicts, reasons, ids


def _reason(line: PredictionLine) -> str:
    judge = line.get("judge")
    verdicts = judge.get("verdicts") if isinstance(judge, Mapping) else None
    parts = []
    for verdict in verdicts if isinstance(verdicts, list) else []:
        if isinstance(verdict, Mapping) and str(verdict.get("rationale") or "").strip():
            text = str(verdict["rationale"]).strip()
            parts.append(f"{verdict.get('model')}: {text}" if len(verdicts or ()) > 1 else text)
    if parts:
        return "\n".join(parts)
    explanation = line.get("explanation")
    return explanation if isinstance(explanation, str) else ""


def _threshold(line: PredictionLine) -> float | None:
    details = line.get("details")
    return _number(details.get("threshold")) if isinstance(details, Mapping) else None


def epoch_verdict(line: PredictionLine) -> ItemVerdict | None:
    """The judge's verdict of one line; ``None`` when it has none or no judge graded it."""
    if not is_judge_graded(line):
        return None
    passed = line.get("passed")
    if not isinstance(passed, bool) or line.get("outcome") == "error":
        return None
    if line.get("reason") in NO_VERDICT_REASONS:
        return None
    threshold = _threshold(line)
    criteria, reasons, _ = _criteria(line, threshold)
    policy = line.get("policy_id")
    item_id = line.get("item_id")
    return ItemVerdict(
        record_id=str(line["record_id"]),
        model=str(line.get("model") or ""),
        policy_id=policy if isinstance(policy, str) else None,
        passed=passed,
        score=_number(line.get("score")),
        threshold=threshold,
        criteria=criteria,
        reason=_reason(line),
        criterion_reasons=reasons,
        item_id=item_id if isinstance(item_id, str) else None,
    )


def epoch_reducer(name: str = DEFAULT_REDUCER) -> Reducer:
    """The audit's reducer of an item's epoch verdicts: the run's ``--epoch-reducer``.

    The item's verdict is ``metrics._epochs.reduce_verdict`` of its epochs' (``mean``
    against the item's threshold, or 0.5 where it has none), as the run reduced it; its
    score is the mean of the epochs' scores (a verdict without one counts 1 or 0); each
    criterion likewise (its threshold: 0.5, the judge's cut for "met"). With one epoch the
    verdict is that epoch's, unchanged.
    """
    if name not in REDUCERS:
        raise ConfigError(f"unknown epoch reducer {name!r}; choose one of {', '.join(REDUCERS)}")

    def one(found: Sequence[Verdict], threshold: float | None) -> Verdict:
        scores = [v.score if v.score is not None else float(v.passed) for v in found]
        passed = reduce_verdict([v.passed for v in found], scores, name, threshold)
        return Verdict(bool(passed), math.fsum(scores) / len(scores))

    def reduce(verdicts: Sequence[ItemVerdict]) -> ItemVerdict | None:
        if not verdicts:
            return None
        if len(verdicts) == 1:
            return verdicts[0]
        first = verdicts[0]
        item = one([Verdict(v.passed, v.score) for v in verdicts], first.threshold)
        ids = set().union(*(v.criteria for v in verdicts))
        criteria = {
            cid: one([v.criteria[cid] for v in verdicts if cid in v.criteria], CRITERION_THRESHOLD)
            for cid in ids
        }
        return replace(
            first, passed=item.passed, score=item.score, criteria=criteria, epochs=len(verdicts)
        )

    return reduce


@dataclass(slots=True)
class RunItems:
    """The run's items: one judge verdict per item, and facts about every item."""

    verdicts: dict[ItemKey, ItemVerdict] = field(default_factory=dict)
    """Judge-graded items with a verdict, in the order first seen."""
    facts: dict[ItemKey, ItemFacts] = field(default_factory=dict)
    models_by_record: dict[str, set[str]] = field(default_factory=dict)


def collect_items(lines: Iterable[PredictionLine], reducer: Reducer | None = None) -> RunItems:
    """Group prediction lines by (record_id, model) and reduce each item's epochs."""
    epochs: dict[ItemKey, list[tuple[int, ItemVerdict]]] = defaultdict(list)
    out = RunItems()
    for line in lines:
        record_id, model = line.get("record_id"), line.get("model")
        if not isinstance(record_id, str):
            continue
        key = (record_id, str(model or ""))
        facts = out.facts.setdefault(key, ItemFacts())
        out.models_by_record.setdefault(record_id, set()).add(key[1])
        if not is_judge_graded(line):
            continue
        facts.judge_graded = True
        threshold = _threshold(line)
        facts.threshold = facts.threshold if threshold is None else threshold
        facts.criteria |= _criteria(line, threshold)[2]
        verdict = epoch_verdict(line)
        if verdict is not None:
            epoch = line.get("epoch")
            epochs[key].append((epoch if isinstance(epoch, int) else 0, verdict))
    for key, found in epochs.items():
        found.sort(key=lambda pair: pair[0])
        reduced = (reducer or epoch_reducer())([verdict for _, verdict in found])
        if reduced is not None:
            out.verdicts[key] = reduced
            out.facts[key].has_verdict = True
    return out


@dataclass(frozen=True, slots=True)
class HumanVerdict:
    """The raters' combined verdict on one item or criterion."""

    passed: bool | None
    """The majority's pass; ``None`` on a tie or when no rater gave a pass."""
    score: float | None
    """The mean of the raters' scores; ``None`` when none gave one."""
    raters: int
    pass_votes: int
    fail_votes: int

    @property
    def tie(self) -> bool:
        """The raters split evenly on pass."""
        return self.pass_votes == self.fail_votes > 0


@dataclass(slots=True)
class MatchedLabels:
    """Labels matched to a run's judge-graded items, raters combined."""

    items: dict[ItemKey, HumanVerdict] = field(default_factory=dict)
    criteria: dict[tuple[str, str, str], HumanVerdict] = field(default_factory=dict)
    """By (record_id, model, criterion_id)."""
    errors: list[RecordError] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    """``rows`` read; ``rejected`` (with a record error); ``skipped`` (Turing decisions on
    ill-posed questions); ``not_judge_graded`` (on MCQ items); ``without_verdict`` (on
    items whose judging failed); ``used`` (rows that entered the audit); ``ties`` (items
    whose raters split evenly); ``raters`` (distinct rater names, unnamed counting one)."""


def _error(label: HumanLabel, code: str, field_name: str | None, text: str) -> RecordError:
    path = f"{label.path}.{field_name}" if field_name else label.path
    return RecordError(label.index, label.record_id, code, f"{text} ({label.where})", path)


def _resolve(label: HumanLabel, run: RunItems) -> tuple[ItemKey | None, RecordError | None]:
    rid, model = label.record_id, label.model
    models = run.models_by_record.get(rid)
    if models is None and model is None and "@" in rid:
        head, _, tail = rid.rpartition("@")  # a Turing id of a several-model export
        if tail in run.models_by_record.get(head, ()):
            return (head, tail), None
    if models is None:
        text = f"record_id {show(rid)} names no record of this run"
        return None, _error(label, "invalid_enum_value", "record_id", text)
    if model is None:
        if len(models) == 1:
            return (rid, next(iter(models))), None
        listing = ", ".join(sorted(models)[:5])
        text = f"model is required: {len(models)} models answered this record ({listing})"
        return None, _error(label, "missing_required_field", "model", text)
    if model not in models:
        listing = ", ".join(sorted(models)[:5])
        text = f"model {show(model)} did not answer record {show(rid)} in this run ({listing})"
        return None, _error(label, "invalid_enum_value", "model", text)
    return (rid, model), None


def _combine(labels: Sequence[HumanLabel], threshold: float | None) -> HumanVerdict:
    votes: list[bool] = []
    scores: list[float] = []
    for label in labels:
        if label.score is not None:
            scores.append(label.score)
        if label.passed is not None:
            votes.append(label.passed)
        elif label.score is not None and threshold is not None:
            votes.append(label.score >= threshold)
    pass_votes = sum(votes)
    fail_votes = len(votes) - pass_votes
    passed = None if pass_votes == fail_votes else pass_votes > fail_votes
    score = math.fsum(scores) / len(scores) if scores else None
    return HumanVerdict(passed, score, len(labels), pass_votes, fail_votes)


def match_labels(labels: LabelFile, run: RunItems) -> MatchedLabels:
    """Match labels to the run's items; report unknown ids, duplicates and bad criteria.

    Labels on items no judge graded (MCQ) and on items without a verdict are accepted but
    counted apart (``not_judge_graded``, ``without_verdict``): they enter neither set.
    """
    out = MatchedLabels(errors=list(labels.errors))
    groups: dict[tuple[str, str, str | None], list[HumanLabel]] = defaultdict(list)
    seen: dict[tuple[str, str, str | None, str | None], HumanLabel] = {}
    counts = dict.fromkeys(("not_judge_graded", "without_verdict"), 0)
    rejected = labels.rejected
    used = 0
    for label in labels.labels:
        key, error = _resolve(label, run)
        if key is None:
            assert error is not None
            out.errors.append(error)
            rejected += 1
            continue
        identity = (*key, label.criterion_id, label.rater)
        first = seen.get(identity)
        if first is not None:
            who = f"rater {show(label.rater)}" if label.rater else "an unnamed rater"
            text = f"a second label by {who} on this item (the first, {first.where}, is kept)"
            out.errors.append(_error(label, "duplicate_record_id", None, text))
            rejected += 1
            continue
        seen[identity] = label
        facts = run.facts[key]
        if not facts.judge_graded:
            counts["not_judge_graded"] += 1
            continue
        if label.criterion_id is not None and label.criterion_id not in facts.criteria:
            text = f"criterion_id {show(label.criterion_id)} is not a criterion of this item"
            out.errors.append(_error(label, "invalid_enum_value", "criterion_id", text))
            rejected += 1
            continue
        judged = run.verdicts.get(key)
        if judged is None or (
            label.criterion_id is not None and label.criterion_id not in judged.criteria
        ):  # the item, or this criterion of it, has no judge verdict
            counts["without_verdict"] += 1
            continue
        groups[(*key, label.criterion_id)].append(label)
        used += 1
    ties = 0
    for (rid, model, cid), found in groups.items():
        facts = run.facts[(rid, model)]
        verdict = _combine(found, CRITERION_THRESHOLD if cid is not None else facts.threshold)
        ties += verdict.tie
        if cid is None:
            out.items[(rid, model)] = verdict
        else:
            out.criteria[(rid, model, cid)] = verdict
    out.counts = {
        "rows": labels.rows,
        "rejected": rejected,
        "skipped": labels.skipped,
        **counts,
        "used": used,
        "ties": ties,
        "raters": len({label.rater for label in labels.labels}),
    }
    return out
