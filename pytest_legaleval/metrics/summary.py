"""Streaming aggregation of item results into ``metrics_summary.json``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SummaryAccumulator", "wilson_interval"]

_Z95 = 1.959963984540054

FAILURE_REASONS = frozenset(
    {
        "invalid_record",
        "missing_response",
        "timeout",
        "judge_error",
        "latency_exceeded",
        "cancelled",
    }
)


def wilson_interval(successes: int, n: int, z: float = _Z95) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion; ``None`` when ``n == 0``.

    Unlike the normal approximation it never collapses to a zero-width interval at 0 % or
    100 %.
    """
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class SummaryAccumulator:
    """Counts that grow one result at a time (nothing is kept per record)."""

    total_records: int = 0
    valid_records: int = 0
    invalid_items: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def add(self, outcome: str, reason: str) -> None:
        """Count one item's outcome (``passed``/``failed``/``skipped``/``error``)."""
        if outcome == "passed":
            self.passed += 1
        elif outcome == "failed" and reason not in FAILURE_REASONS:
            self.failed += 1
        elif outcome == "skipped":
            self.skipped += 1
        else:
            self.errors += 1
        self.reasons[reason] = self.reasons.get(reason, 0) + 1

    def add_invalid(self) -> None:
        """Count a selected item whose record failed validation."""
        self.invalid_items += 1
        self.reasons["invalid_record"] = self.reasons.get("invalid_record", 0) + 1

    @property
    def evaluated(self) -> int:
        """Items that got a pass/fail verdict."""
        return self.passed + self.failed

    @property
    def failed_records(self) -> int:
        """Items that failed permanently (invalid, no response, engine or judge errors)."""
        return self.errors + self.invalid_items

    def to_dict(self) -> dict[str, Any]:
        """The summary's JSON body."""
        rate = self.passed / self.evaluated if self.evaluated else None
        interval = wilson_interval(self.passed, self.evaluated)
        return {
            "total_records": self.total_records,
            "valid_records": self.valid_records,
            "evaluated_records": self.evaluated,
            "failed_records": self.failed_records,
            "skipped_records": self.skipped,
            "pass_count": self.passed,
            "fail_count": self.failed,
            "pass_rate": rate,
            "pass_rate_ci95": list(interval) if interval else None,
            "pass_rate_ci_method": "wilson",
            "outcomes_by_reason": dict(sorted(self.reasons.items())),
        }
