"""Repeated keys in JSON inputs: a record error for a row, a 400 for a whole document."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_legaleval.datasets.builder import BuildFailed, BuildPaths, build_dataset
from pytest_legaleval.errors import DatasetRejected
from pytest_legaleval.formats import load_dataset
from pytest_legaleval.formats.rag import read_manifest
from pytest_legaleval.formats.turing import read_turing_file
from pytest_legaleval.records import Record
from pytest_legaleval.validation import check_legal_eval_row
from pytest_legaleval.validation.checks import canonicalize
from pytest_legaleval.validation.duplicates import (
    DuplicateKeys,
    duplicate_key_issues,
    find_duplicate_keys,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
MCQ = (
    '{"schema_version": "legal_eval_v1", "id": "%s", "dataset": "d", "task_type": "mcq", '
    '"prompt": "Which?", "choices": [{"id": "A", "text": "a"}, {"id": "B", "text": "b"}], '
    '"correct_choice_ids": ["A"]%s}'
)


def _rows(path: Path, *rows: str) -> Path:
    path.write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_repeated_correct_choice_ids_is_a_record_error_naming_the_key(tmp_path: Path) -> None:
    data = _rows(
        tmp_path / "set.jsonl",
        MCQ % ("ok", ""),
        MCQ % ("twice", ', "correct_choice_ids": ["B"]'),
    )
    result = load_dataset([data])
    assert [r.id for r in result.records] == ["ok"]
    (rejected,) = result.rejected
    assert [e.to_dict() for e in rejected.errors] == [
        {
            "index": 1,
            "record_id": "twice",
            "code": "invalid_encoding",
            "message": 'record has the key "correct_choice_ids" more than once; JSON parsers '
            "disagree on which value counts, so give each key once (set.jsonl line 2)",
            "path": "records[1]",
            "severity": "error",
        }
    ]


def test_nested_repeats_are_located_and_reported_with_other_errors(tmp_path: Path) -> None:
    row = MCQ.replace('"text": "b"}', '"text": "b", "text": "c", "id": "B"}') % (
        "nested",
        ', "correct_choice_ids": "B", "metadata": {"x": 1, "y": 2, "x": 3, "y": 4}',
    )
    data = _rows(tmp_path / "set.jsonl", MCQ % ("ok", ""), row)
    (rejected,) = load_dataset([data]).rejected
    found = {(e.code, e.path): e.message for e in rejected.errors}
    assert found.keys() == {
        ("invalid_encoding", "records[1]"),
        ("invalid_encoding", "records[1].choices[1]"),
        ("invalid_encoding", "records[1].metadata"),
        # the kept (last) value is validated too
        ("invalid_field_type", "records[1].correct_choice_ids"),
    }
    assert (
        'keys "text", "id" more than once' in found[("invalid_encoding", "records[1].choices[1]")]
    )
    assert 'keys "x", "y" more than once' in found[("invalid_encoding", "records[1].metadata")]


@pytest.mark.parametrize(
    "text",
    [
        '{"a": "x:y", "b": {"c": ":"}}',
        '{"a": "\\u003a", "b": 1}',  # an escaped colon makes the counts differ: slow path
        '{"a" : 1 , "b" :\t[1, {"c": "d"}]}',
        '{"a\\u003ab": 1}',
        "[]",
        '"just a string: with a colon"',
    ],
)
def test_text_without_repeats_has_no_issue(text: str) -> None:
    value = json.loads(text)
    assert duplicate_key_issues(text, canonicalize(value).colons) == []
    assert duplicate_key_issues(text.encode(), canonicalize(value).colons) == []


def test_an_escaped_colon_cannot_hide_a_repeat() -> None:
    # The escape hides one colon from the raw count and the repeat adds one: equal counts.
    text = '{"p": "\\u003a", "x": 1, "x": 2}'
    assert text.count(":") == canonicalize(json.loads(text)).colons
    (issue,) = duplicate_key_issues(text, canonicalize(json.loads(text)).colons)
    assert issue.parts == () and '"x"' in issue.text


def test_find_duplicate_keys_walks_lists_and_objects_in_order() -> None:
    text = '{"a": [{"k": 1, "k": 2}, {"m": {"n": 1, "n": 2}}], "a": [], "z": {"q": 1, "q": 1}}'
    assert find_duplicate_keys(text) == [
        DuplicateKeys((), ("a",)),
        DuplicateKeys(("z",), ("q",)),
    ]
    # the first "a" was dropped by the parse, so its inner repeats are not reachable: the
    # object is rejected for the outer repeat anyway
    assert find_duplicate_keys('{"a": {"b": 1, "b": 2}}') == [DuplicateKeys(("a",), ("b",))]
    assert find_duplicate_keys("not json") == []


def test_check_legal_eval_row_looks_only_when_given_the_raw_text() -> None:
    text = MCQ % ("r", ', "id": "r2"')
    row = json.loads(text)
    assert check_legal_eval_row(row, 0)[0] == []
    (error,) = check_legal_eval_row(row, 0, raw=text)[0]
    assert error.code == "invalid_encoding" and '"id"' in error.message


def test_a_contract_document_with_a_repeated_key_is_a_400(tmp_path: Path) -> None:
    document = (EXAMPLES / "contract_reference.json").read_text(encoding="utf-8")
    broken = document.replace('"record_id":', '"record_id": "shadowed", "record_id":', 1)
    path = tmp_path / "doc.json"
    path.write_text(broken, encoding="utf-8")
    with pytest.raises(DatasetRejected) as info:
        load_dataset([path])
    error = info.value
    assert (error.status, error.code) == (400, "invalid_request")
    assert 'key "record_id" repeated in records[0]' in error.message and "doc.json" in error.message
    assert error.details == {
        "path": "records[0]",
        "keys": ["record_id"],
        "objects_with_repeated_keys": 1,
    }
    envelope = error.envelope("req")
    assert envelope["error"]["code"] == "invalid_request"


def test_a_top_level_repeat_in_a_document_names_the_top_level(tmp_path: Path) -> None:
    document = json.loads((EXAMPLES / "contract_reference.json").read_text(encoding="utf-8"))
    text = json.dumps(document)[:-1] + ', "dataset_id": "other"}'
    path = tmp_path / "doc.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetRejected, match='key "dataset_id" repeated in the top-level'):
        load_dataset([path])


def test_turing_files_and_rag_manifests_are_documents_too(tmp_path: Path) -> None:
    source = next((EXAMPLES / "turing" / "automated_evaluations").glob("*.json"))
    text = source.read_text(encoding="utf-8").replace('"verdict":', '"verdict": "x", "verdict":', 1)
    broken = tmp_path / source.name
    broken.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetRejected, match=r'key "verdict" repeated in decisions\[0\]'):
        read_turing_file(broken, "automated_evaluation")
    manifest = tmp_path / "manifest.json"
    manifest.write_text(
        (EXAMPLES / "rag" / "manifest.json")
        .read_text()
        .replace('"version"', '"version": "v9", "version"', 1)
    )
    with pytest.raises(DatasetRejected, match=r'key "version" repeated in the top-level'):
        read_manifest(manifest)


def test_rag_rows_with_a_repeated_key_are_record_errors(tmp_path: Path) -> None:
    folder = tmp_path / "rag"
    folder.mkdir()
    lines = (EXAMPLES / "rag" / "qa_pairs.jsonl").read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].replace('"question":', '"question": "shadowed", "question":', 1)
    _rows(folder / "qa_pairs.jsonl", *lines)
    result = load_dataset([folder / "qa_pairs.jsonl"])
    assert len([e for e in result.entries if isinstance(e, Record)]) == len(lines) - 1
    (rejected,) = result.rejected
    (error,) = rejected.errors
    assert (error.code, error.path) == ("invalid_encoding", "records[1]")
    assert '"question"' in error.message


def test_the_builder_refuses_an_offline_row_with_a_repeated_key(tmp_path: Path) -> None:
    offline = tmp_path / "offline.jsonl"
    lines = (EXAMPLES / "rag" / "offline_dataset.jsonl").read_text(encoding="utf-8").splitlines()
    lines[0] = lines[0].replace('"task_type": "qa"', '"task_type": "qa", "task_type": "summaries"')
    assert lines[0].count('"task_type"') == 2
    _rows(offline, *lines)
    out = tmp_path / "out"
    with pytest.raises(BuildFailed) as info:
        build_dataset(
            BuildPaths(offline, out / "qa.jsonl", out / "s.jsonl", out / "m.json", tmp_path)
        )
    assert info.value.problems == [
        'offline.jsonl line 1: record has the key "task_type" more than once; JSON parsers '
        "disagree on which value counts, so give each key once"
    ]
    shutil.rmtree(out, ignore_errors=True)
