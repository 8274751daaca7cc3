"""Issue 41, LOW: ``--dataset DIR`` never follows a link out of the folder.

Before: a ``.jsonl`` symlink in the folder pointing elsewhere was loaded as one of its
datasets (attachments doing the same were refused). Now such a link is skipped, and a
warning names each one; a link to a file inside the folder still counts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_legaleval.errors import LegalEvalWarning
from pytest_legaleval.formats import load_dataset
from pytest_legaleval.formats.loader import dataset_files


def _row(record_id: str) -> str:
    return json.dumps(
        {
            "schema_version": "legal_eval_v1", "id": record_id, "dataset": "t",
            "task_type": "mcq", "prompt": "Which?",
            "choices": [{"id": "A", "text": "a"}, {"id": "B", "text": "b"}],
            "correct_choice_ids": ["B"],
        }
    ) + "\n"  # fmt: skip


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "good.jsonl").write_text(_row("inside-1"), encoding="utf-8")
    (data / "sub").mkdir()
    (data / "sub" / "kept.jsonl").write_text(_row("inside-2"), encoding="utf-8")
    (tmp_path / "private.jsonl").write_text(_row("outside-secret"), encoding="utf-8")
    (data / "escape.jsonl").symlink_to(tmp_path / "private.jsonl")
    (data / "absolute.json").symlink_to("/etc/hostname")
    (data / "dangling.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    (data / "alias.jsonl").symlink_to(data / "sub" / "kept.jsonl")
    return data


def test_links_out_of_the_folder_are_skipped_and_named(folder: Path) -> None:
    with pytest.warns(LegalEvalWarning) as caught:
        files = dataset_files([folder])
    assert [f.name for f in files] == ["alias.jsonl", "good.jsonl"]
    said = " ".join(str(w.message) for w in caught)
    for name in ("escape.jsonl", "absolute.json", "dangling.jsonl"):
        assert f"skipped {name}, a link that leads out of the folder" in said
    assert "alias.jsonl" not in said


def test_no_record_from_outside_the_folder_is_loaded(folder: Path) -> None:
    with pytest.warns(LegalEvalWarning):
        loaded = load_dataset([str(folder)], "auto")
    ids = {record.id for record in loaded.records}
    assert ids == {"inside-1", "inside-2"}
