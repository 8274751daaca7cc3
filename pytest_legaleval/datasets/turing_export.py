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

:func:`write_human_evaluations` writes the other direction's file: human labels (``legaleval
review``'s, or any ``--human-labels`` JSONL) as the pipeline's human evaluations,
``evaluations/<rater>.json``, one ``critique`` decision per labelled item (``id``
``record_id@model``, ``answer_model``, ``verdict`` ``correct``/``incorrect``, ``comment``
the note). The human schema has no place for a criterion: labels on criteria stay in the
JSONL. Each file is read back with our own reader and must give the same labels.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics.artifacts import PREDICTIONS
from pytest_legaleval.metrics.runfiles import iter_jsonl

__all__ = [
    "automated_evaluation_from_predictions",
    "automated_evaluation_from_run",
    "write_human_evaluations",
]


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


def _comments(path: Path) -> dict[tuple[str, int], str]:
    """The ``comment`` of each JSONL label row, by (file name, row index) as the reader counts."""
    from pytest_legaleval.formats.base import display_name

    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    out: dict[tuple[str, int], str] = {}
    for file in files:
        for index, row in enumerate(iter_jsonl(file)):
            if isinstance(row.get("comment"), str):
                out[(display_name(file), index)] = row["comment"]
    return out


def _file_name(rater: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in rater).strip(".")
    return f"{safe or 'rater'}.json"


def write_human_evaluations(labels_path: Path, out_dir: Path) -> dict[Path, int]:
    """Write ``out_dir/evaluations/<rater>.json`` per rater from a labels file or folder.

    Returns the files written and their decision counts.

    Raises:
        ConfigError: the labels cannot be read, hold rejected rows or no item label, or a
            written file does not read back as the same labels.

    """
    from pytest_legaleval.metrics.human_labels import read_human_labels

    read = read_human_labels(labels_path)
    if read.errors:
        first = read.errors[0]
        raise ConfigError(
            f"{labels_path}: {len(read.errors)} label rows cannot be read (first: "
            f"{first.message}); fix them before exporting"
        )
    comments = _comments(labels_path)
    by_rater: dict[str, list[dict[str, Any]]] = defaultdict(list)
    expected: dict[str, list[tuple[str, str | None, bool | None]]] = defaultdict(list)
    for label in read.labels:
        if label.criterion_id is not None:
            continue
        if label.passed is None or label.model is None:
            continue  # a score alone, or no model: the human schema has no place for it
        rater = label.rater or "unnamed"
        decision: dict[str, Any] = {
            "id": f"{label.record_id}@{label.model}",
            "type": "critique",
            "mode": "expert_review",
            "answer_model": label.model,
            "verdict": "correct" if label.passed else "incorrect",
        }
        comment = comments.get((label.file, label.index))
        if comment:
            decision["comment"] = comment
        by_rater[rater].append(decision)
        expected[rater].append((label.record_id, label.model, label.passed))
    if not by_rater:
        raise ConfigError(f"{labels_path}: no pass/fail label on an item to export")
    folder = out_dir / "evaluations"
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[Path, int] = {}
    for rater, decisions in sorted(by_rater.items()):
        path = folder / _file_name(rater)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(
            json.dumps({"decisions": decisions}, indent=2, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        os.replace(tmp, path)
        back = read_human_labels(path)
        got = [(lb.record_id, lb.model, lb.passed) for lb in back.labels]
        if back.errors or got != expected[rater]:
            raise ConfigError(f"{path}: the export does not read back as the same labels")
        written[path] = len(decisions)
    return written
