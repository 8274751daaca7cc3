"""A run plan does not change its inputs: the caller's grader registry stays as it was.

``RunPlan.build`` works on a copy of the registry (``--judgments`` adds its replay grader to
that copy) and keeps a frozen copy, so nothing registered after the build reaches the plan
and nothing the plan registers reaches the caller.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_legaleval.errors import InvalidState
from pytest_legaleval.grading._graders import McqGrader
from pytest_legaleval.grading._registry import default_registry
from pytest_legaleval.pipeline.plan import RunPlan
from pytest_legaleval.pipeline.settings import Settings
from pytest_legaleval.records import Record, SourceRef

JUDGMENTS = {"record_id": "r1", "model": "m", "passed": True, "score": 1.0, "reason": "ok"}


def _record(task_type: str) -> Record:
    return Record(id="r1", dataset="d", task_type=task_type, prompt="Q?",  # type: ignore[arg-type]
                  reference_answers=("A",), source=SourceRef("d.jsonl", 0, 1))  # fmt: skip


def test_build_copies_the_registry_and_freezes_its_own(tmp_path: Path) -> None:
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text(json.dumps(JUDGMENTS) + "\n", encoding="utf-8")
    registry = default_registry()
    before = type(registry.for_record(_record("reference_qa")))
    plan = RunPlan.build(Settings(dataset=("unused.jsonl",), judgments=str(judgments)),
                         graders=registry)  # fmt: skip
    # the plan grades reference answers by replay; the caller's registry is unchanged
    assert type(plan.grading.graders.for_record(_record("reference_qa"))).__name__ == "ReplayGrader"
    assert type(registry.for_record(_record("reference_qa"))) is before
    with pytest.raises(InvalidState, match="register before build"):
        plan.grading.graders.register(McqGrader(), task_type="mcq")
    registry.register(McqGrader(), task_type="reference_qa")  # the caller's stays open ...
    assert type(plan.grading.graders.for_record(_record("reference_qa"))).__name__ == (
        "ReplayGrader"
    )  # ... and its later changes do not reach the plan
