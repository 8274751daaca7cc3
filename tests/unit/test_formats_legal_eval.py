from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError, DatasetRejected
from pytest_legaleval.formats import (
    FORMATS,
    DatasetInfo,
    LoadResult,
    RejectedRecord,
    load_dataset,
)
from pytest_legaleval.formats.detect import detect_format
from pytest_legaleval.records import Attachment, Choice, Criterion, Message, Record, SourceRef
from pytest_legaleval.validation import AllRecordsRejected, record_sha256

DATA = Path(__file__).parent.parent / "data"
MALFORMED = DATA / "malformed"
REAL = DATA / "real"

# data/README.md: line 2 of each file must be rejected for this reason (code, path).
MALFORMED_EXPECTED: dict[str, list[tuple[str, str]]] = {
    "mcq_correct_choice_not_in_choices.jsonl": [
        ("invalid_enum_value", "records[1].correct_choice_ids[0]")
    ],
    "mcq_empty_correct_choice_ids.jsonl": [("value_out_of_range", "records[1].correct_choice_ids")],
    "mcq_single_choice.jsonl": [("value_out_of_range", "records[1].choices")],
    "mcq_with_reference_answers.jsonl": [("unsupported_field", "records[1].reference_answers")],
    "rubric_qa_with_choices.jsonl": [
        ("unsupported_field", "records[1].choices"),
        ("unsupported_field", "records[1].correct_choice_ids"),
    ],
    "rubric_qa_empty_rubric.jsonl": [("value_out_of_range", "records[1].rubric")],
    "reference_qa_with_rubric.jsonl": [("unsupported_field", "records[1].rubric")],
    "reference_qa_no_answers.jsonl": [("value_out_of_range", "records[1].reference_answers")],
    "unknown_task_type.jsonl": [("invalid_enum_value", "records[1].task_type")],
    "wrong_schema_version.jsonl": [("invalid_enum_value", "records[1].schema_version")],
    "missing_prompt.jsonl": [("missing_required_field", "records[1].prompt")],
    "bad_message_role.jsonl": [("invalid_enum_value", "records[1].messages[0].role")],
    "null_byte_in_prompt_escaped.jsonl": [("invalid_encoding", "records[1].prompt")],
    "invalid_utf8.jsonl": [("invalid_encoding", "records[1]")],
    "duplicate_id.jsonl": [("duplicate_record_id", "records[1].id")],
}


def test_every_malformed_sample_is_covered() -> None:
    assert {p.name for p in MALFORMED.glob("*.jsonl")} == set(MALFORMED_EXPECTED)


@pytest.mark.parametrize("name", sorted(MALFORMED_EXPECTED))
def test_malformed_line_2_is_rejected_and_line_1_loads(name: str) -> None:
    result = load_dataset([MALFORMED / name])
    ok, bad = result.entries
    assert isinstance(ok, Record) and ok.id.endswith(":ok")
    assert ok.source == SourceRef(str(MALFORMED / name), 0, 1, "legal_eval_v1")
    assert isinstance(bad, RejectedRecord)
    assert [(e.code, e.path) for e in bad.errors] == MALFORMED_EXPECTED[name]
    assert all(e.message.endswith(f"({name} line 2)") and e.index == 1 for e in bad.errors)
    assert bad.source.line == 2
    assert result.errors == list(bad.errors)
    (info,) = result.datasets
    assert (info.total_records, info.accepted_records) == (2, 1)


def test_malformed_ids_are_kept_on_rejected_records() -> None:
    bad = load_dataset([MALFORMED / "unknown_task_type.jsonl"]).rejected[0]
    assert bad.record_id == "malformed:unknown_task_type:bad"
    assert bad.dataset == "legalbench"
    assert bad.errors[0].record_id == bad.record_id
    invalid = load_dataset([MALFORMED / "invalid_utf8.jsonl"]).rejected[0]
    assert (invalid.record_id, invalid.dataset) == (None, None)
    assert "not valid UTF-8" in invalid.errors[0].message


def test_real_samples_load_without_errors() -> None:
    result = load_dataset([REAL])
    assert result.errors == []
    assert [info.dataset_id for info in result.datasets] == ["ace", "legalbench", "lexam"]
    assert len(result.records) == sum(info.total_records for info in result.datasets) == 21
    by_type = {r.task_type for r in result.records}
    assert by_type == {"mcq", "reference_qa", "rubric_qa"}
    sixteen = [r for r in result.records if len(r.choices) == 16]
    assert len(sixteen) == 2
    assert all(r.policy_id in {"lexam", "legalbench", "ace"} for r in result.records)
    assert any(r.context for r in result.records)


def write(path: Path, *rows: Any, raw: bytes | None = None) -> Path:
    if raw is None:
        raw = b"".join(json.dumps(row, ensure_ascii=False).encode() + b"\n" for row in rows)
    path.write_bytes(raw)
    return path


MCQ = {
    "schema_version": "legal_eval_v1",
    "id": "m1",
    "dataset": "demo",
    "task_type": "mcq",
    "prompt": "Pick one.",
    "choices": [{"id": "A", "text": "a"}, {"id": "B", "text": "b"}],
    "correct_choice_ids": ["A"],
    "metadata": {"policy_id": "demo", "dataset_version": "2026-01"},
}
RUBRIC = {
    "schema_version": "legal_eval_v1",
    "id": "r1",
    "dataset": "other",
    "task_type": "rubric_qa",
    "prompt": "Advise.",
    "context": "Facts.",
    "messages": [{"role": "system", "content": "Be brief."}],
    "attachments": [{"path": "a.pdf", "kind": "pdf"}],
    "rubric": [{"id": "c1", "title": "t1"}, {"id": "c2", "title": "t2", "weight": -2}],
    "reference_answers": ["Model answer."],
}


def test_rows_become_records(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", MCQ, RUBRIC)
    mcq, rubric = load_dataset([path]).records
    assert mcq.choices == (Choice("A", "a"), Choice("B", "b"))
    assert mcq.correct_choice_ids == ("A",)
    assert (mcq.dataset_version, mcq.schema_version, mcq.policy_id) == (
        "2026-01",
        "legal_eval_v1",
        "demo",
    )
    assert mcq.sha256 == record_sha256(MCQ)
    assert rubric.rubric == (Criterion("c1", "t1", None, 1.0), Criterion("c2", "t2", None, -2.0))
    assert rubric.messages == (Message("system", "Be brief."),)
    assert rubric.attachments == (Attachment("a.pdf", "pdf", None),)
    assert (rubric.context, rubric.reference_answers) == ("Facts.", ("Model answer.",))
    assert rubric.dataset_version is None
    assert rubric.source == SourceRef(str(path), 1, 2, "legal_eval_v1")


def test_dataset_info(tmp_path: Path) -> None:
    path = write(tmp_path / "mixed.jsonl", MCQ, RUBRIC)
    (info,) = load_dataset([path]).datasets
    assert info == DatasetInfo(
        path=str(path),
        format="legal_eval_v1",
        dataset_id="demo+other",
        dataset_version=None,
        schema_version="legal_eval_v1",
        total_records=2,
        accepted_records=2,
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
    )
    (single,) = load_dataset([write(tmp_path / "one.jsonl", MCQ)]).datasets
    assert (single.dataset_id, single.dataset_version) == ("demo", "2026-01")


def test_bom_crlf_and_blank_lines(tmp_path: Path) -> None:
    row = json.dumps(MCQ).encode()
    other = json.dumps(dict(MCQ, id="m2")).encode()
    path = write(
        tmp_path / "d.jsonl", raw=b"\xef\xbb\xbf" + row + b"\r\n\r\n   \r\n" + other + b"\r\n"
    )
    first, second = load_dataset([path]).records
    assert (first.source.index, first.source.line) == (0, 1)
    assert (second.source.index, second.source.line) == (1, 4)


def test_bom_after_line_1_is_an_encoding_error(tmp_path: Path) -> None:
    raw = json.dumps(MCQ).encode() + b"\n\xef\xbb\xbf" + json.dumps(dict(MCQ, id="m2")).encode()
    bad = load_dataset([write(tmp_path / "d.jsonl", raw=raw)]).rejected[0]
    assert [(e.code, e.path) for e in bad.errors] == [("invalid_encoding", "records[1]")]


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        (b'{"id": "x",', "not valid JSON (Expecting property name"),
        (b'{"id": NaN}', "NaN is not a JSON value"),
        (b"[" * 100_000, "not valid JSON"),
        (b'{"a": "\x01"}', "Invalid control character"),
        (b"\xc3\x28", "not valid UTF-8"),
    ],
)
def test_unparseable_rows_are_invalid_encoding(tmp_path: Path, line: bytes, fragment: str) -> None:
    raw = json.dumps(MCQ).encode() + b"\n" + line + b"\n"
    result = load_dataset([write(tmp_path / "d.jsonl", raw=raw)], "legal_eval_v1")
    (error,) = result.errors
    assert (error.code, error.path, error.index) == ("invalid_encoding", "records[1]", 1)
    assert fragment in error.message and error.message.endswith("(d.jsonl line 2)")


def test_escaped_surrogate_and_null_in_json_text(tmp_path: Path) -> None:
    raw = (
        json.dumps(MCQ).encode()
        + b"\n"
        + json.dumps(dict(MCQ, id="m2", prompt="a\ud800b")).encode()  # written as \ud800
        + b"\n"
        + json.dumps(dict(MCQ, id="m3", prompt="a\x00b")).encode()  # written as \u0000
        + b"\n"
    )
    assert b"\\ud800" in raw and b"\\u0000" in raw
    result = load_dataset([write(tmp_path / "d.jsonl", raw=raw)])
    assert [(e.code, e.path) for e in result.errors] == [
        ("invalid_encoding", "records[1].prompt"),
        ("invalid_encoding", "records[2].prompt"),
    ]


def test_empty_file_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(DatasetRejected, match="no rows"):
        load_dataset([write(tmp_path / "empty.jsonl", raw=b"\n  \n")])


def test_all_rows_rejected_is_400_with_counts(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.jsonl", dict(MCQ, prompt=""), dict(MCQ, id="m2", task_type="x"))
    with pytest.raises(AllRecordsRejected) as caught:
        load_dataset([path])
    exc = caught.value
    assert exc.message == "All records failed validation"
    assert exc.details == {"rejected_records": 2, "accepted_records": 0, "dataset": "bad.jsonl"}
    assert [e.code for e in exc.record_errors] == ["value_out_of_range", "invalid_enum_value"]


def test_ids_are_unique_across_files(tmp_path: Path) -> None:
    first = write(tmp_path / "a.jsonl", MCQ)
    second = write(tmp_path / "b.jsonl", dict(MCQ, id="other"), MCQ)
    result = load_dataset([first, second])
    (error,) = result.errors
    assert (error.code, error.path) == ("duplicate_record_id", "records[1].id")
    assert error.message == 'id "m1" duplicates the row at a.jsonl line 1 (b.jsonl line 2)'


def test_same_file_twice_loads_once(tmp_path: Path) -> None:
    path = write(tmp_path / "a.jsonl", MCQ)
    result = load_dataset([tmp_path, path])
    assert len(result.records) == 1 and len(result.datasets) == 1


def test_directory_loads_dataset_files_sorted(tmp_path: Path) -> None:
    write(tmp_path / "b.jsonl", dict(MCQ, id="b"))
    write(tmp_path / "a.jsonl", dict(MCQ, id="a"))
    write(tmp_path / ".hidden.jsonl", dict(MCQ, id="h"))
    (tmp_path / "notes.txt").write_text("not a dataset")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub" / "c.jsonl", dict(MCQ, id="c"))
    shutil.copy(DATA / "contract" / "qa_eval_set.json", tmp_path / "c.json")
    result = load_dataset([tmp_path])
    assert [Path(info.path).name for info in result.datasets] == ["a.jsonl", "b.jsonl", "c.json"]
    assert [info.format for info in result.datasets] == [
        "legal_eval_v1",
        "legal_eval_v1",
        "contract_v1",
    ]
    assert [e.source.index for e in result.entries] == [0, 0, 0, 1, 2]
    assert isinstance(result, LoadResult) and len(result.rejected) == 1


@pytest.mark.parametrize(
    ("paths", "fmt", "match"),
    [
        ([], "auto", "--dataset"),
        (["does/not/exist.jsonl"], "auto", "no such file"),
        ([MALFORMED / "missing_prompt.jsonl"], "csv", "--dataset-format"),
    ],
)
def test_config_errors(paths: list[Path], fmt: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load_dataset(paths, fmt)


def test_directory_without_datasets_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no \*\.jsonl or \*\.json"):
        load_dataset([tmp_path])


def test_formats_registry() -> None:
    assert FORMATS[:4] == ("legal_eval_v1", "contract_v1", "rag_qa", "rag_summaries")
    assert FORMATS[-1] == "legal_eval_v1_upload"  # the service's reading; never detected
    assert {name for name in FORMATS[4:-1]} == {
        f"turing_{kind}"
        for kind in ("benchmark", "answers", "critiques", "debates", "automated_evaluation",
                     "human_evaluation", "judging_task", "metadata")
    }  # fmt: skip


def test_uploaded_rows_keep_the_contracts_per_record_limits(tmp_path: Path) -> None:
    """The service's reading (legal_eval_v1_upload) rejects what the contract rejects in a
    record; a pytest run (legal_eval_v1) reads the same rows whole."""
    base = {"schema_version": "legal_eval_v1", "dataset": "d", "task_type": "reference_qa",
            "reference_answers": ["R."]}  # fmt: skip
    rows = [
        {**base, "id": "ok", "prompt": "Q?", "metadata": {"a": {"b": {"c": {"d": {"e": 1}}}}}},
        {**base, "id": "big", "prompt": "x" * (256 * 1024)},
        {**base, "id": "deep", "prompt": "Q?",
         "metadata": {"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}}},  # 6 levels, metadata is 1
        {**base, "id": "fat", "prompt": "Q?", "metadata": {"k": "y" * (8 * 1024)}},
    ]
    path = tmp_path / "upload.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    uploaded = load_dataset([path], "legal_eval_v1_upload")
    codes = {r.record_id: [e.code for e in r.errors] for r in uploaded.rejected}
    assert codes == {
        "big": ["record_too_large"],
        "deep": ["value_out_of_range"],
        "fat": ["value_out_of_range"],
    }, codes
    assert [r.id for r in uploaded.records] == ["ok"]
    assert uploaded.datasets[0].format == "legal_eval_v1"
    plain = load_dataset([path], "legal_eval_v1")
    assert [r.id for r in plain.records] == ["ok", "big", "deep", "fat"]
    assert detect_format(path) == "legal_eval_v1"  # never detected as the upload variant
