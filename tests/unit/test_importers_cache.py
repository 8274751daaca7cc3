"""``--dataset SOURCE:PATH``: imported on demand (``importers.cache``), cached by content hash."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers import split_import_arg
from pytest_legaleval.importers.cache import dataset_files, load_dataset

from ..extras import needs_import

DATA = Path(__file__).resolve().parents[1] / "data" / "importers"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(DATA / "lexam", tmp_path / "data")
    return tmp_path


@needs_import
def test_source_path_loads_the_imported_records(workdir: Path) -> None:
    loaded = load_dataset(["lexam:data/MCQs_test.xlsx", "lexam:data/open_questions_dev.xlsx"])
    assert not loaded.errors
    ids = [entry.id for entry in loaded.entries]
    assert len(ids) == 7 and ids[0].startswith("lexam:mcq:") and ids[-1].startswith("lexam:oq:")
    cached = sorted((workdir / ".legaleval" / "imports").iterdir())
    assert [p.name.split("-")[0] for p in cached] == ["lexam", "lexam"]


@needs_import
def test_the_import_is_cached_by_content(workdir: Path) -> None:
    (first,) = dataset_files(["lexam:data"])
    stamp = first.stat().st_mtime_ns
    first.write_text(first.read_text(encoding="utf-8"), encoding="utf-8")  # marks a reuse
    marked = first.stat().st_mtime_ns
    (again,) = dataset_files(["lexam:data"])
    assert again == first and again.stat().st_mtime_ns == marked >= stamp
    # The same bytes elsewhere: the same key. Other bytes: another import.
    shutil.copytree(workdir / "data", workdir / "copy")
    assert dataset_files(["lexam:copy"]) == [first]
    (workdir / "copy" / "open_questions_test.xlsx").unlink()
    (changed,) = dataset_files(["lexam:copy"])
    assert changed != first and changed.is_file()


def test_a_failing_import_is_a_usage_error(workdir: Path) -> None:
    bad = workdir / "bad.jsonl"
    bad.write_text('{"id": "u1", "question": "Q?", "choices": "[1]", "gold": 0}\n')
    with pytest.raises(ConfigError, match=r"1 of 1 row\(s\) failed to import .*bad.jsonl row 1"):
        dataset_files(["lexam:bad.jsonl"])
    assert not list((workdir / ".legaleval" / "imports").glob("*.jsonl"))


def test_plain_paths_are_left_alone(workdir: Path) -> None:
    odd = workdir / "lexam:odd.jsonl"  # a real file whose name looks like SOURCE:PATH
    odd.write_text("{}\n")
    assert split_import_arg("lexam:odd.jsonl") is None
    assert dataset_files(["lexam:odd.jsonl"]) == [Path("lexam:odd.jsonl")]
    assert split_import_arg("nosuch:data") is None
    with pytest.raises(ConfigError, match="no such file or directory"):
        dataset_files(["nosuch:data"])
    with pytest.raises(ConfigError, match="no such file or directory"):
        dataset_files(["lexam:missing.xlsx"])
