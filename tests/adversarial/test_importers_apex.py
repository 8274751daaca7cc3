"""Attack and fix: ``--dataset apex:DIR`` with attached documents (issue 31).

The records of an import are a cached copy under ``.legaleval/imports/``; their attachment
paths are APEX's own, relative to the source folder. They were resolved from the cache's
folder, so every APEX task with an attachment was an invalid item. Now they resolve from
the source folder the user named, with the same confinement a dataset's own folder has:
nothing outside it (and ``--attachments-root``) is read, and data cannot name another
base folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.grading._attachments import missing_attachments, record_attachments
from pytest_legaleval.importers.cache import dataset_files, load_dataset, source_folder
from pytest_legaleval.records import Record
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

TESTS = Path(__file__).resolve().parents[1]
ROW = TESTS / "data" / "importers" / "lbr" / "curated" / "apexv1_legal_europe.jsonl"
CANARY = "canary-apex-outside-the-source-folder"


DOCUMENT = "documents/1382/convention.txt"
EXHIBIT = "EXHIBIT-TEXT: Convention on Conduct of Fishing Operations, Article 9(5)"


def apex_folder(root: Path, attachment: str = DOCUMENT) -> Path:
    """APEX's layout: rows under ``data/``, documents under ``documents/``, both in root.

    The task is APEX's real one (kept by LBR); its document is a text stand-in for the PDF
    (pypdf takes seconds on the real one; the path rules are the same).
    """
    row = json.loads(ROW.read_text(encoding="utf-8"))
    row["File Attachments"] = attachment
    (root / "data").mkdir(parents=True)
    (root / "data" / "apex.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    (root / DOCUMENT).parent.mkdir(parents=True)
    (root / DOCUMENT).write_text(EXHIBIT, encoding="utf-8")
    return root


def records(argument: str) -> list[Record]:
    loaded = load_dataset([argument])
    assert not loaded.errors
    return [entry for entry in loaded.entries if isinstance(entry, Record)]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_attachments_of_an_imported_dataset_resolve_from_the_source_folder(
    workdir: Path,
) -> None:
    apex_folder(workdir / "APEX")
    (record,) = records("apex:APEX")
    assert Path(record.source.path).parent.name == "imports"  # the cached copy
    assert missing_attachments(record) == []
    (text,) = record_attachments(record)
    assert text.text == EXHIBIT
    assert text.path == str((workdir / "APEX" / record.attachments[0].path).resolve())


def test_confinement_holds_for_an_imported_dataset(workdir: Path) -> None:
    (workdir / "secret.txt").write_text(CANARY)
    apex_folder(workdir / "APEX", attachment="../secret.txt")
    (record,) = records("apex:APEX")
    (error,) = missing_attachments(record)
    assert "'..' leads outside" in error.message
    (text,) = record_attachments(record)
    assert text.text == "" and CANARY not in json.dumps(text.warnings)
    # Allowing the parent folder explicitly is the user's choice, as for any dataset.
    assert missing_attachments(record, [workdir]) == []


def test_the_cached_copy_named_as_a_plain_path_claims_no_source_folder(workdir: Path) -> None:
    apex_folder(workdir / "APEX")
    (cached,) = dataset_files(["apex:APEX"])
    assert source_folder(cached) == (workdir / "APEX").resolve()
    copy = workdir / "elsewhere" / "apex.jsonl"
    copy.parent.mkdir()
    shutil.copyfile(cached, copy)
    assert source_folder(copy) is None  # data alone never names a base folder
    (record,) = records(str(copy))
    (error,) = missing_attachments(record)
    assert "attachment file not found" in error.message
    assert str(copy.parent / "documents") in error.message


def test_two_folders_with_the_same_rows_are_two_imports(workdir: Path) -> None:
    first = apex_folder(workdir / "A")
    second = apex_folder(workdir / "B")
    (a,) = dataset_files(["apex:A"])
    (b,) = dataset_files(["apex:B"])
    assert a != b
    assert source_folder(a) == first.resolve() and source_folder(b) == second.resolve()


SUITE = "def test_record(record, evaluation):\n    evaluation.check()\n"


def _grade(value: int) -> str:
    # The official APEX judge's reply (apex_official, the import's default protocol).
    return json.dumps({"result": value, "reason": "checked"})


def test_an_apex_task_with_its_document_runs_in_a_session(pytester: pytest.Pytester) -> None:
    apex_folder(pytester.path / "APEX")
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    with MockOpenAIServer(latency=0.0) as server:
        server.add_reply(r"Recognizes|Identifies|Notes that|Concludes", _grade(1))  # judge
        server.add_reply(r"Belgium and Spain", "Spain reserved Article 9(5); it prevails.")
        result = pytester.runpytest_subprocess(
            "--dataset", "apex:APEX", "--model", "openai/cand", "--judge-model", "openai/judge",
            "--base-url", server.base_url, "--run-dir", "runs", "--no-cache", "-p", "no:xdist",
            "-p", "no:cacheprovider", timeout=180,
        )  # fmt: skip
        requests: list[dict[str, Any]] = server.requests()
    assert result.parseoutcomes().get("passed") == 1, result.stdout.str()
    candidate = [r for r in requests if "Belgium and Spain" in json.dumps(r["messages"])]
    assert EXHIBIT in json.dumps(candidate[0]["messages"])
