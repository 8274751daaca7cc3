from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ..strict_json import strict_jsonl

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
DATA = REPO / "tests" / "data"

SUITE = """
def test_record(record, evaluation):
    evaluation.check()
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Path:
    """A pytester directory holding the default suite."""
    pytester.makepyfile(test_suite=SUITE)
    return pytester.path


@pytest.fixture(autouse=True)
def _quiet_asyncio(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def copy_in(pytester: pytest.Pytester, *paths: Path) -> list[Path]:
    out = []
    for path in paths:
        target = pytester.path / path.name
        shutil.copyfile(path, target)
        out.append(target)
    return out


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The lines of an artifact, parsed strictly: a NaN or Infinity token fails the test."""
    return strict_jsonl(path)


def run_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []


def run_eval(
    pytester: pytest.Pytester, data: Path, responses: Path, *extra: str
) -> pytest.RunResult:
    """Run the suite in-process on ``data`` with pre-computed ``responses`` into ``runs/``."""
    return pytester.runpytest(
        "--dataset", str(data), "--responses", str(responses), "--run-dir", "runs", *extra
    )


def mcq_row(record_id: str, correct: str = "B", dataset: str = "t", **extra: Any) -> dict:
    row = {
        "schema_version": "legal_eval_v1",
        "id": record_id,
        "dataset": dataset,
        "task_type": "mcq",
        "prompt": f"Question {record_id}?",
        "choices": [{"id": c, "text": f"option {c}"} for c in "ABCD"],
        "correct_choice_ids": [correct],
    }
    row.update(extra)
    return row
