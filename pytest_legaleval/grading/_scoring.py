"""Rubric scoring rules: named, versioned, pure functions over per-criterion grades.

A rubric item is graded criterion by criterion: each criterion has a weight (negative
weights are penalties: the criterion describes a mistake) and a grade in [0, 1] (1 = the
criterion is met; a share when several judges disagree, or a fraction where a recorded
verdict has one). A policy names the rule that turns those grades into the item's score:

* ``minmax`` (version 1) — the Legal Benchmark Runner's rule (LBR at 61d8da0)::

      score = (Σ w·g − Σ min(0, w)) / (Σ max(0, w) − Σ min(0, w))

  0 when every penalty is incurred and no positive criterion is met, 1 when every
  positive criterion is met and no penalty. A rubric without a non-zero weight scores 0
  (LBR's value).
* ``clipped`` (version 1) — PRBench's published "clipped" score (HealthBench's rule)::

      score = clip((Σ w⁺·g − Σ |w⁻|·g) / Σ w⁺, 0, 1)

  Penalties count against the positive weight only. With no positive weight the score is
  ``1 − Σ|w⁻|·g / Σ|w⁻|``; with no non-zero weight, 0.

On all-positive weights the two agree (both are Σ w·g / Σ w); with penalties ``minmax`` is
never below ``clipped``.

When some criterion verdicts of an item failed, the policy's ``on_partial_judge_failure``
decides: ``error`` (the item is a judge error; the judged criteria are kept for the
record) or ``score_judged`` (the item is scored over the judged criteria only, and the
result says over which share of the rubric).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_legaleval.errors import InvalidValue

__all__ = [
    "PARTIAL_FAILURE_MODES",
    "SCORINGS",
    "RubricOutcome",
    "ScoringRule",
    "clipped_score",
    "minmax_score",
    "passes",
    "round_to_step",
    "rubric_score",
    "score_rubric",
    "scoring_rule",
]

PARTIAL_FAILURE_MODES: tuple[str, ...] = ("error", "score_judged")
"""What a policy does with a rubric item whose criterion verdicts partly failed."""

Grades = Sequence[tuple[float, float]]
"""``(weight, grade)`` pairs, in rubric order."""


def _check(grades: Grades) -> None:
    for weight, grade in grades:
        if isinstance(weight, bool) or not math.isfinite(weight):
            raise InvalidValue(f"a criterion weight must be a finite number, got {weight!r}")
        if isinstance(grade, bool) or not (math.isfinite(grade) and 0.0 <= grade <= 1.0):
            raise InvalidValue(f"a criterion grade must be a number in [0, 1], got {grade!r}")


def minmax_score(grades: Grades) -> float:
    """LBR's min–max normalized rubric score (see the module docstring).

    Sums run in rubric order, as LBR's do, so a score recomputed from LBR's grades is the
    same float LBR computed (a pass flag at the threshold's edge cannot flip).

    Raises:
        ValueError: a weight that is not finite or a grade outside [0, 1].

    """
    _check(grades)
    raw = sum(weight * grade for weight, grade in grades)
    low = sum(min(0.0, weight) for weight, _ in grades)
    high = sum(max(0.0, weight) for weight, _ in grades)
    if high <= low:
        return 0.0
    return max(0.0, min(1.0, (raw - low) / (high - low)))


def clipped_score(grades: Grades) -> float:
    """The clipped rubric score (the module docstring gives the rule and whose it is).

    Raises:
        ValueError: a weight that is not finite or a grade outside [0, 1].

    """
    _check(grades)
    positive = sum(w for w, _ in grades if w > 0)
    gained = sum(w * g for w, g in grades if w > 0)
    penalty = sum(-w * g for w, g in grades if w < 0)
    if positive > 0:
        return min(1.0, max(0.0, (gained - penalty) / positive))
    negative = sum(-w for w, _ in grades if w < 0)
    if negative > 0:
        return min(1.0, max(0.0, 1.0 - penalty / negative))
    return 0.0


def _minmax_span(grades: Grades) -> float:
    return sum(max(0.0, w) for w, _ in grades) - sum(min(0.0, w) for w, _ in grades)


def _clipped_span(grades: Grades) -> float:
    positive = sum(w for w, _ in grades if w > 0)
    return positive if positive > 0 else sum(-w for w, _ in grades if w < 0)


@dataclass(frozen=True, slots=True)
class ScoringRule:
    """One named, versioned rubric scoring rule."""

    name: str
    version: int
    formula: str
    """The rule in one line, for reports and prediction lines."""
    score: Callable[[Grades], float]
    span: Callable[[Grades], float]
    """The denominator of the rule for these grades (shown when scoring judged criteria)."""

    @property
    def label(self) -> str:
        """``name@version``, e.g. ``minmax@1``."""
        return f"{self.name}@{self.version}"


_RULES: dict[str, ScoringRule] = {
    "minmax": ScoringRule(
        "minmax",
        1,
        "(Σ w·g − Σ min(0,w)) / (Σ max(0,w) − Σ min(0,w))",
        minmax_score,
        _minmax_span,
    ),
    "clipped": ScoringRule(
        "clipped",
        1,
        "clip((Σ w⁺·g − Σ |w⁻|·g) / Σ w⁺, 0, 1)",
        clipped_score,
        _clipped_span,
    ),
}

SCORINGS: tuple[str, ...] = tuple(_RULES)
"""The names a policy's ``scoring`` may take."""


def scoring_rule(name: str) -> ScoringRule:
    """The rule called ``name``.

    Raises:
        ValueError: no rule has that name.

    """
    rule = _RULES.get(name)
    if rule is None:
        raise InvalidValue(f"unknown scoring {name!r}; known: {', '.join(SCORINGS)}")
    return rule


def rubric_score(grades: Grades, scoring: str) -> float:
    """The score of fully judged ``(weight, grade)`` pairs under the named rule."""
    return scoring_rule(scoring).score(grades)


@dataclass(frozen=True, slots=True)
class RubricOutcome:
    """A rubric item's score under a policy, or why it has none."""

    score: float | None
    """``None`` when the item is a judge error."""
    judged: int
    """Criteria with a usable verdict."""
    total: int
    """Criteria of the rubric."""
    span: float | None
    """The rule's denominator over the judged criteria (``None`` without a score)."""
    full_span: float
    """The rule's denominator over the whole rubric."""
    error: str | None = None
    """Why there is no score (``judge_error``), else ``None``."""

    @property
    def partial(self) -> bool:
        """Scored over part of the rubric (``score_judged`` with failed criteria)."""
        return self.score is not None and self.judged < self.total

    def details(self, scoring: str) -> dict[str, Any]:
        """The ``details.rubric`` of a prediction line (live or replayed alike)."""
        return {
            "scoring": scoring,
            "judged": self.judged,
            "total": self.total,
            "span": self.span,
            "full_span": self.full_span,
            "coverage": self.describe(),
        }

    def describe(self) -> str:
        """One line for explanations: the share of the rubric the score covers."""
        if self.error is not None:
            return self.error
        if not self.partial:
            return f"scored over all {self.total} criteria"
        return (
            f"scored over the {self.judged} judged of {self.total} criteria "
            f"(denominator {self.span:g} of {self.full_span:g})"
        )


def score_rubric(
    grades: Sequence[tuple[float, float | None]],
    scoring: str,
    on_partial_judge_failure: str = "error",
) -> RubricOutcome:
    """Score a rubric item whose criterion verdicts may have partly failed.

    Args:
        grades: ``(weight, grade)`` per criterion, in rubric order; ``grade`` is ``None``
            where that criterion's verdict failed (call failed, reply unusable).
        scoring: the policy's rule (``minmax`` or ``clipped``).
        on_partial_judge_failure: ``error`` (any failed criterion makes the item a judge
            error) or ``score_judged`` (score the judged criteria only).

    Returns:
        The outcome; a failed verdict never counts as an unmet criterion (never a 0).

    Raises:
        ValueError: an unknown rule or mode, a weight that is not finite, a grade outside
            [0, 1].

    """
    rule = scoring_rule(scoring)
    if on_partial_judge_failure not in PARTIAL_FAILURE_MODES:
        raise InvalidValue(
            f"unknown on_partial_judge_failure {on_partial_judge_failure!r}; "
            f"known: {', '.join(PARTIAL_FAILURE_MODES)}"
        )
    judged = [(w, g) for w, g in grades if g is not None]
    _check(judged)
    everything = [(w, 0.0) for w, _ in grades]
    _check(everything)
    full_span = rule.span(everything)
    failed = len(grades) - len(judged)
    if not grades:
        return RubricOutcome(None, 0, 0, None, 0.0, "the rubric has no criteria")
    if failed and (on_partial_judge_failure == "error" or not judged):
        return RubricOutcome(
            None,
            len(judged),
            len(grades),
            None,
            full_span,
            f"{failed} of {len(grades)} criterion verdicts failed",
        )
    return RubricOutcome(rule.score(judged), len(judged), len(grades), rule.span(judged), full_span)


def passes(score: float, threshold: float) -> bool:
    """The pass rule of every judged kind: ``score >= threshold``."""
    return score >= threshold


def round_to_step(score: float, step: float | None) -> float:
    """Round a reference score to the policy's step (LEXam: 0.1), within [0, 1]."""
    if step is None:
        return score
    steps = math.floor(score / step + 0.5 + 1e-9)
    return round(min(1.0, max(0.0, steps * step)), 10)
