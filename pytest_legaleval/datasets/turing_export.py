"""Export our judge's verdicts as a Turing automated-evaluation file.

Each judged prediction (a ``predictions.jsonl`` row with a ``judge`` summary) becomes one
decision per judge model: ``type`` ``critique`` (the judge acts as a critic deciding
whether the answer is correct), ``mode`` the judge kind (``reference``, ``rubric``,
``criteria``), ``verdict`` ``correct`` / ``incorrect`` from the item's pass rule, and the
judge's rationale as ``reasoning``. A judge error is a decision with ``status: failed``
and the raw reply, so ``legaleval agreement`` leaves it out instead of counting it wrong.
Programmatically graded rows (MCQ) have no judge and are not exported.
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
                "answer": row.get("response") or "",
                "verdict": "correct" if row.get("passed") else "incorrect",
                "reasoning": str(verdict.get("rationale") or ""),
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
