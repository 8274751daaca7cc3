from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import DatasetRejected
from pytest_legaleval.formats import RejectedRecord, load_dataset
from pytest_legaleval.records import Record, SourceRef
from pytest_legaleval.validation import AllRecordsRejected, contract, record_sha256

SAMPLE = Path(__file__).parent.parent / "data" / "contract" / "qa_eval_set.json"


def test_the_sample_document_loads(tmp_path: Path) -> None:
    result = load_dataset([SAMPLE])
    reference, criteria, bad = result.entries
    assert isinstance(reference, Record) and isinstance(criteria, Record)
    assert isinstance(bad, RejectedRecord)
    assert (bad.record_id, bad.dataset) == ("q_0003", "qa_eval_set_2026_01")
    assert [(e.code, e.path, e.message) for e in bad.errors] == [
        (
            "invalid_field_type",
            "records[2].input.prompt",
            "input.prompt must be a string, got integer (qa_eval_set.json)",
        )
    ]
    (info,) = result.datasets
    assert (info.format, info.dataset_id, info.dataset_version, info.schema_version) == (
        "contract_v1",
        "qa_eval_set_2026_01",
        "2026-01-15",
        "1.0",
    )
    assert (info.total_records, info.accepted_records) == (3, 2)
    assert info.sha256 == hashlib.sha256(SAMPLE.read_bytes()).hexdigest()


def test_records_map_to_reference_or_criteria() -> None:
    doc = json.loads(SAMPLE.read_text())
    reference, criteria = load_dataset([SAMPLE]).records
    assert reference.task_type == "reference_qa"
    assert reference.reference_answers == (doc["records"][0]["reference"]["answer"],)
    assert reference.required_criteria == ("accuracy", "clarity")
    assert reference.expected == {
        "max_latency_ms": 2000,
        "required_criteria": ["accuracy", "clarity"],
    }
    assert reference.tags == ("ml", "definitions")
    assert reference.metadata == {}  # the document's metadata stays out of the record
    assert (reference.id, reference.dataset, reference.dataset_version) == (
        "q_0001",
        "qa_eval_set_2026_01",
        "2026-01-15",
    )
    assert reference.schema_version == "1.0"
    assert reference.source == SourceRef(str(SAMPLE), 0, None, "contract_v1")
    assert reference.sha256 == record_sha256(doc["records"][0])
    assert criteria.task_type == "criteria"
    assert criteria.required_criteria == ("factuality", "reasoning")
    assert criteria.context == "Marbury v. Madison, 5 U.S. 137 (1803)."
    assert criteria.metadata == {"difficulty": "easy"}


def write_doc(path: Path, doc: Any, *, prefix: bytes = b"", newline: str = "\n") -> Path:
    text = json.dumps(doc, indent=2, ensure_ascii=False).replace("\n", newline)
    path.write_bytes(prefix + text.encode("utf-8"))
    return path


DOC: dict[str, Any] = {
    "dataset_id": "demo",
    "dataset_version": "1",
    "schema_version": "1.0",
    "records": [
        {"record_id": "a", "input": {"prompt": "Explain."}},
        {"record_id": "b", "input": {"prompt": "Why?"}, "reference": {"answer": ""}},
    ],
}


def test_absent_or_empty_answer_means_criteria_overall(tmp_path: Path) -> None:
    first, second = load_dataset([write_doc(tmp_path / "d.json", DOC)]).records
    for rec in (first, second):
        assert (rec.task_type, rec.required_criteria, rec.reference_answers) == (
            "criteria",
            ("overall",),
            (),
        )


def test_bom_and_crlf_are_accepted(tmp_path: Path) -> None:
    path = write_doc(tmp_path / "d.json", DOC, prefix=b"\xef\xbb\xbf", newline="\r\n")
    assert len(load_dataset([path]).records) == 2


def rejected(path: Path) -> DatasetRejected:
    with pytest.raises(DatasetRejected) as caught:
        load_dataset([path], "contract_v1")
    return caught.value


def test_non_utf8_payload_is_400(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_bytes(json.dumps(DOC).encode().replace(b"Why?", b"Why\xff?"))
    exc = rejected(path)
    assert (exc.status, exc.code) == (400, "invalid_request")
    assert exc.message.startswith("payload is not valid UTF-8") and "(d.json)" in exc.message


def test_utf16_payload_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_bytes(json.dumps(DOC).encode("utf-16"))
    assert "not valid UTF-8" in rejected(path).message


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text('{\n  "dataset_id": "demo",\n  "records": [,]\n}\n')
    exc = rejected(path)
    assert exc.message == (
        "payload is not valid JSON: Expecting value at line 3 column 15 (d.json)"
    )
    assert exc.details == {"line": 3, "column": 15}


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_json_number_literals_are_invalid_json(tmp_path: Path, literal: str) -> None:
    path = tmp_path / "d.json"
    path.write_text(json.dumps(DOC).replace('"Explain."', literal))
    assert f"{literal} is not a JSON value" in rejected(path).message


def test_payload_over_100_mb_is_413_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.truncate(contract.MAX_PAYLOAD_BYTES + 1)  # sparse: no 100 MB written
    exc = rejected(path)
    assert (exc.status, exc.code) == (413, "payload_too_large")
    assert exc.details == {
        "payload_bytes": contract.MAX_PAYLOAD_BYTES + 1,
        "max_payload_bytes": contract.MAX_PAYLOAD_BYTES,
    }


def test_payload_limit_boundary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_doc(tmp_path / "d.json", DOC)
    size = path.stat().st_size
    monkeypatch.setattr(contract, "MAX_PAYLOAD_BYTES", size)
    assert len(load_dataset([path]).records) == 2
    monkeypatch.setattr(contract, "MAX_PAYLOAD_BYTES", size - 1)
    assert rejected(path).status == 413


@pytest.mark.parametrize(
    ("doc", "fragment"),
    [
        ([DOC], "must be an object, got array"),
        ({**DOC, "schema_version": "1.1"}, "schema_version is not supported"),
        ({**DOC, "records": []}, "records must have at least 1 item, got 0"),
        ({k: v for k, v in DOC.items() if k != "dataset_id"}, "dataset_id is required"),
    ],
)
def test_dataset_level_failures_are_400(tmp_path: Path, doc: Any, fragment: str) -> None:
    exc = rejected(write_doc(tmp_path / "d.json", doc))
    assert (exc.status, fragment in exc.message) == (400, True)
    assert exc.message.endswith("(d.json)")


def test_too_many_records_is_400(tmp_path: Path) -> None:
    doc = copy.deepcopy(DOC)
    doc["records"] = [{"record_id": f"r{i}", "input": {"prompt": "p"}} for i in range(50_001)]
    path = tmp_path / "d.json"
    path.write_text(json.dumps(doc))
    assert "at most 50000 items, got 50001" in rejected(path).message


def test_all_records_invalid_is_400(tmp_path: Path) -> None:
    doc = copy.deepcopy(DOC)
    doc["records"] = [{"record_id": "a"}, {"input": {"prompt": "p"}}]
    with pytest.raises(AllRecordsRejected) as caught:
        load_dataset([write_doc(tmp_path / "d.json", doc)])
    assert caught.value.details == {
        "rejected_records": 2,
        "accepted_records": 0,
        "dataset": "d.json",
    }
    assert caught.value.message == "All records failed validation"


def test_escaped_surrogate_null_and_nfc_in_json_text(tmp_path: Path) -> None:
    doc = copy.deepcopy(DOC)
    doc["records"] += [
        {"record_id": "s", "input": {"prompt": "x\ud800"}},
        {"record_id": "n", "input": {"prompt": "x\x00"}},
        {"record_id": "f", "input": {"prompt": "Cafe\u0301"}},
        {"record_id": "k", "input": {"prompt": "p"}, "metadata": {"\udc80": 1}},
    ]
    path = tmp_path / "d.json"
    path.write_text(json.dumps(doc))  # ensure_ascii: every one of them is a \u escape
    result = load_dataset([path])
    assert [(e.code, e.path) for e in result.errors] == [
        ("invalid_encoding", "records[2].input.prompt"),
        ("invalid_encoding", "records[3].input.prompt"),
        ("invalid_encoding", "records[4].input.prompt"),
        ("invalid_encoding", 'records[5].metadata["\\udc80"]'),
    ]
    for error in result.errors:
        json.dumps(error.to_dict(), ensure_ascii=False).encode("utf-8")


def test_duplicate_record_ids_within_a_document(tmp_path: Path) -> None:
    doc = copy.deepcopy(DOC)
    doc["records"].append({"record_id": "a", "input": {"prompt": "again"}})
    result = load_dataset([write_doc(tmp_path / "d.json", doc)])
    assert [(e.code, e.path) for e in result.errors] == [
        ("duplicate_record_id", "records[2].record_id")
    ]


def test_two_documents_may_share_record_ids(tmp_path: Path) -> None:
    first = write_doc(tmp_path / "one.json", DOC)
    second = write_doc(tmp_path / "two.json", {**DOC, "dataset_id": "other"})
    result = load_dataset([first, second])
    assert result.errors == [] and len(result.records) == 4
