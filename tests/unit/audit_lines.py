"""Prediction lines for the judge-audit tests, shaped as ``predictions.jsonl`` writes them."""

from __future__ import annotations

from typing import Any


def line(
    record_id: str,
    model: str = "m1",
    *,
    passed: bool | None = True,
    score: float | None = None,
    grader: str = "judge:reference",
    reason: str | None = None,
    policy: str = "p1",
    threshold: float = 0.7,
    criteria: list[dict[str, Any]] | None = None,
    verdicts: list[dict[str, Any]] | None = None,
    epoch: int | None = None,
) -> dict[str, Any]:
    """One line; ``passed=None`` makes a judge error (no verdict)."""
    if score is None and passed is not None:
        score = 0.9 if passed else 0.2
    out: dict[str, Any] = {
        "record_id": record_id,
        "model": model,
        "item_id": f"test_suite.py::test_record[{record_id}-{model}]",
        "task_type": "mcq" if grader == "mcq" else "reference_qa",
        "outcome": "error" if passed is None else ("passed" if passed else "failed"),
        "passed": passed,
        "score": score if passed is not None else None,
        "reason": reason or ("judge_error" if passed is None else "correct"),
        "explanation": f"judge score {score} vs {threshold}",
        "grader": grader,
        "policy_id": policy,
        "details": {"threshold": threshold, **({"criteria": criteria} if criteria else {})},
        "judge": {"kind": "reference", "verdicts": verdicts} if verdicts is not None else None,
    }
    if epoch is not None:
        out["epoch"] = epoch
    return out
