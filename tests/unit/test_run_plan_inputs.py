"""A run plan does not change its inputs: the caller's grader registry stays as it was.

``RunPlan.build`` works on a copy of the registry (``--judgments`` adds its replay grader to
that copy) and keeps a frozen copy, so nothing registered after the build reaches the plan
and nothing the plan registers reaches the caller.
"""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from pytest_legaleval.errors import DatasetRejected, InvalidState
from pytest_legaleval.grading._graders import McqGrader
from pytest_legaleval.grading._registry import GraderRegistry, default_registry
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


EXAMPLES = Path(__file__).parents[2] / "examples"


def _registry_state(registry: GraderRegistry) -> tuple[object, ...]:
    # What the registry holds: its three tables (grader objects compare by identity).
    return dict(registry._by_task), dict(registry._by_policy), dict(registry._by_pair)


def test_build_and_loading_change_none_of_the_inputs(tmp_path: Path) -> None:
    dataset = tmp_path / "legal_mcq.jsonl"
    responses = tmp_path / "legal_mcq.responses.jsonl"
    shutil.copy(EXAMPLES / "legal_mcq.jsonl", dataset)
    shutil.copy(EXAMPLES / "legal_mcq.responses.jsonl", responses)
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text(json.dumps(JUDGMENTS) + "\n", encoding="utf-8")
    files = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (dataset, responses, judgments)}
    settings = Settings(dataset=(str(dataset),), responses=str(responses), judgments=str(judgments))
    public = copy.deepcopy(settings.public_dict())
    registry = default_registry()
    before = _registry_state(registry)

    plan = RunPlan.build(settings, graders=registry)
    assert len(plan.items) == 20 and plan.dataset.loaded is not None  # loaded and selected

    assert _registry_state(registry) == before
    assert plan.grading.graders is not registry
    assert plan.settings is settings and settings.public_dict() == public
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in files} == files


def _plan(tmp_path: Path) -> RunPlan:
    dataset = tmp_path / "legal_mcq.jsonl"
    shutil.copy(EXAMPLES / "legal_mcq.jsonl", dataset)
    responses = tmp_path / "legal_mcq.responses.jsonl"
    shutil.copy(EXAMPLES / "legal_mcq.responses.jsonl", responses)
    return RunPlan.build(Settings(dataset=(str(dataset),), responses=str(responses)))


def test_the_plan_and_its_dataset_plan_refuse_every_change(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    items = plan.items
    ids = [item.item_id for item in items]
    with pytest.raises(FrozenInstanceError):
        plan.dataset = plan.dataset  # type: ignore[misc]
    for name in ("settings", "models", "grading", "warn_policies", "_memo", "anything"):
        with pytest.raises(FrozenInstanceError):
            setattr(plan.dataset, name, None)
    with pytest.raises(FrozenInstanceError):
        delattr(plan.dataset, "_memo")
    with pytest.raises(FrozenInstanceError):
        items[0].model = "other"  # type: ignore[misc]
    assert isinstance(items, tuple) and isinstance(plan.dataset.selected, tuple)
    with pytest.raises(TypeError):
        plan.dataset.selected[0] = plan.dataset.selected[1]  # type: ignore[index]

    # What the plan hands out is a copy: emptying it leaves the plan's answers as they were.
    plan.dataset.load().entries.clear()
    loaded = plan.dataset.loaded
    assert loaded is not None and len(loaded.entries) == 20
    loaded.entries.clear()
    loaded.datasets.clear()
    assert len(plan.dataset.load().entries) == 20 and len(plan.dataset.load().datasets) == 1
    assert plan.items is items and [item.item_id for item in plan.items] == ids
    source = plan.dataset.source()
    assert source.selected_records == 20 and len(list(source.entries)) == 20

    # The pre-computed answers the plan holds are read-only views too.
    table = plan.responses
    assert table is not None
    key = next(iter(table.responses))
    with pytest.raises(TypeError):
        table.responses[key] = "changed"  # type: ignore[index]
    with pytest.raises(TypeError):
        table.recorded[key] = None  # type: ignore[index]
    assert table.get(*key) != "changed"


def test_a_rejected_dataset_stays_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"  # every row invalid: the whole dataset is rejected
    bad.write_text('{"schema_version": "legal_eval_v1", "id": "r1"}\n', encoding="utf-8")
    plan = RunPlan.build(Settings(dataset=(str(bad),)))
    with pytest.raises(DatasetRejected) as first:
        plan.dataset.load()
    with pytest.raises(DatasetRejected) as second:
        plan.dataset.load()
    assert second.value is first.value and plan.dataset.rejected is first.value
    assert plan.dataset.loaded is None
