"""Export our judge's verdicts as a Turing automated-evaluation file.

Each judged prediction (a ``predictions.jsonl`` row with a ``judge`` summary) becomes one
decision per judge model: ``type`` ``critique`` (the judge acts as a critic deciding
whether the answer is correct), ``mode`` the judge kind (``reference``, ``rubric``,
``criteria``), ``verdict`` ``correct`` / ``incorrect`` from the item's pass rule, the
model's answer (``model_response``, as ``predictions.jsonl`` stores it) as ``answer`` and
the judge's rationale as ``reasoning`` — for a rubric or criteria judge, which reasons per
criterion, one line per criterion with its verdict. A judge error is a decision with
``status: failed`` and the raw reply, so ``legaleval agreement`` leaves it out instead of
counting it wrong. Programmatically graded rows (MCQ) have no judge and are not exported.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics.runfiles import iter_jsonl

__all__ = ["automated_evaluation_from_predictions", "automated_evaluation_from_run"]

PREDICTIONS = "predictions.jsonl"


def _decision_id(row: Mapping[str, Any], repeated: bool) -> str:
    record_id = str(row["record_id"])
    return f"{record_id}@{row['model']}" if repeated else record_id


def _answer(row: Mapping[str, Any]) -> str:
    # predictions.jsonl stores the reply as model_response; an in-memory result as response.
    value = row.get("model_response", row.get("response"))
    return value if isinstance(value, str) else ""


def _criterion_line(criterion: Mapping[str, Any]) -> str:
    name = str(criterion.get("id", "?"))
    if "met" in criterion:
        verdict = "met" if criterion["met"] else "not met"
    elif "rating" in criterion:
        verdict = f"rating {criterion['rating']}"
    elif "verdict" in criterion:
        verdict = str(criterion["verdict"])
    else:
        verdict = "no verdict"
    rationale = str(criterion.get("rationale") or "").strip()
    return f"{name}: {verdict}" + (f" — {rationale}" if rationale else "")


def _reasoning(verdict: Mapping[str, Any]) -> str:
    """The judge's rationale; per-criterion judges give one line per criterion."""
    rationale = str(verdict.get("rationale") or "").strip()
    if rationale:
        return rationale
    criteria = verdict.get("criteria") or []
    return "\n".join(_criterion_line(c) for c in criteria if isinstance(c, Mapping))


def automated_evaluation_from_predictions(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Build ``{"decisions": [...]}`` from prediction rows (see the module docstring).

    A record answered by several models gets ids ``record_id@model``; otherwise the id is
    the record id, which is what a human evaluation of the same records would use.
    """
    judged = [row for row in rows if isinstance(row.get("judge"), Mapping)]
    per_record = Counter(str(row["record_id"]) for row in judged)
    decisions: list[dict[str, Any]] = []
    for row in judged:
        judge: Mapping[str, Any] = row["judge"]
        for verdict in judge.get("verdicts") or []:
            failed = verdict.get("error") is not None
            decision: dict[str, Any] = {
                "id": _decision_id(row, per_record[str(row["record_id"])] > 1),
                "type": "critique",
                "mode": str(judge.get("kind") or "reference"),
                "answer_model": str(row["model"]),
                "answer": _answer(row),
                "verdict": "correct" if row.get("passed") else "incorrect",
                "reasoning": _reasoning(verdict),
                "judge_model": str(verdict.get("model", "")),
                "status": "failed" if failed else "succeeded",
            }
            if failed:
                decision["verdict"] = "unknown"
                decision["raw_response"] = str(verdict.get("raw") or verdict.get("error"))
            if row.get("run_id"):
                decision["run_id"] = str(row["run_id"])
            decisions.append(decision)
    return {"decisions": decisions}


def automated_evaluation_from_run(run_dir: Path) -> dict[str, Any]:
    """Export a run directory's judged predictions.

    Raises:
        ConfigError: the directory has no ``predictions.jsonl``.

    """
    path = run_dir / PREDICTIONS
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a run directory: it has no {PREDICTIONS}")
    rows = (
        row
        for row in iter_jsonl(path)
        if isinstance(row, dict) and "record_id" in row and "model" in row
    )
    return automated_evaluation_from_predictions(rows)
