"""A small judged run directory for the review tests, written as the recorder writes one.

Three models answer 12 rubric records (two criteria each) and 6 reference records, under
two policies; a judge graded every answer with a reason text and a verdict per criterion.
Every judge text carries ``JUDGE-SAYS`` and a number, so a test can grep for it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RUN_ID = "run_01REVIEWTEST0000000000000"
MODELS = ("alpha-model", "beta-model", "gamma-model")
JUDGE_MARK = "JUDGE-SAYS"


def _record(index: int) -> dict[str, Any]:
    rubric = index < 12
    payload: dict[str, Any] = {
        "id": f"rec-{index:02d}",
        "dataset": "review-set",
        "task_type": "rubric_qa" if rubric else "reference_qa",
        "prompt": f"Question {index}: may the tenant sublet?",
        "context": "Lease clause 7." if index % 3 == 0 else "",
        "messages": [{"role": "user", "content": "Earlier turn."}] if index == 1 else [],
        "attachments": [],
        "rubric": [
            {
                "id": f"c{index}-a",
                "title": f"Names the statute {index}",
                "description": "The main law.",
                "weight": 2.0,
            },
            {"id": f"c{index}-b", "title": "Gives the deadline", "description": "", "weight": 1.0},
        ]
        if rubric
        else [],
        "reference_answers": [] if rubric else [f"Yes, with consent ({index})."],
        "required_criteria": [],
        "metadata": {"policy_id": "rubric_v1" if rubric else "reference_v1"},
    }
    return payload


def _line(payload: dict[str, Any], model: str, number: int) -> dict[str, Any]:
    passed = number % 3 != 0
    score = 0.8 if passed else 0.3
    line: dict[str, Any] = {
        "run_id": RUN_ID,
        "item_id": f"test_suite.py::test_record[review-set/{payload['id']}-{model}]",
        "record_id": payload["id"],
        "dataset": "review-set",
        "task_type": payload["task_type"],
        "model": model,
        "outcome": "passed" if passed else "failed",
        "passed": passed,
        "score": score,
        "reason": "passed" if passed else "below_threshold",
        "explanation": f"{JUDGE_MARK} {number}: the answer {'meets' if passed else 'misses'} it",
        "model_response": f"Answer number {number}: yes, with the landlord's consent.",
        "grader": "judge:rubric" if payload["rubric"] else "judge:reference",
        "policy_id": payload["metadata"]["policy_id"],
        "details": {"threshold": 0.7},
        "epoch": 0,
        "judge": {"kind": "rubric", "verdicts": [
            {"model": "judge-model", "rationale": f"{JUDGE_MARK} rationale {number}"}]},
    }  # fmt: skip
    if payload["rubric"]:
        line["details"]["criteria"] = [
            {"id": c["id"], "met": (number + i) % 2 == 0, "weight": c["weight"],
             "rationale": f"{JUDGE_MARK} criterion {number}-{i}"}
            for i, c in enumerate(payload["rubric"])
        ]  # fmt: skip
    return line


def write_run(root: Path) -> Path:
    """Write the run directory ``root/runs/<RUN_ID>`` and return it."""
    run = root / "runs" / RUN_ID
    run.mkdir(parents=True)
    payloads = [_record(i) for i in range(18)]
    (run / "run_manifest.json").write_text(
        json.dumps({"run_id": RUN_ID, "models": list(MODELS), "configuration": {}}),
        encoding="utf-8",
    )
    (run / "input_dataset.json").write_text(
        json.dumps(
            {
                "run_id": RUN_ID,
                "mode": "inline",
                "datasets": [],
                "records": [
                    {"index": i, "record_id": p["id"], "dataset_id": "review-set", "payload": p}
                    for i, p in enumerate(payloads)
                ],
            }
        ),
        encoding="utf-8",
    )
    lines = [
        _line(p, model, number)
        for number, (p, model) in enumerate((p, m) for p in payloads for m in MODELS)
    ]
    (run / "predictions.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8"
    )
    return run


def predictions(run: Path) -> list[dict[str, Any]]:
    """The run's prediction lines."""
    return [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()]
