from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import DatasetRejected
from pytest_legaleval.formats import dataset_files, detect_format, load_dataset
from pytest_legaleval.formats.rag import number_contexts
from pytest_legaleval.records import Record

REPO = Path(__file__).resolve().parents[2]
RAG = REPO / "examples" / "rag"


def qa_row(task_id: str = "t1", **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "task_id": task_id,
        "task_type": "qa",
        "question": "What is the deadline?",
        "reference_answer": "72 hours [1].",
        "rag_prompt": "Answer from the context.",
        "contexts": ["[1] Within 72 hours.", "Without undue delay."],
        "sources": ["a.txt#page=1", "a.txt#page=2"],
        "retrieved": [{"chunk_index": 3}],
        "citations": [{"marker": "[1]"}],
        "answer_citations": [{"marker": "[1]"}],
        "metadata": {"document": "a.txt", "policy_id": "someone-elses"},
    }
    row.update(extra)
    return row


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_number_contexts_replaces_any_marker_by_position() -> None:
    assert number_contexts(["[3] a", "b", " [0]  c"]) == ["[1] a", "[2] b", "[3] c"]


def test_qa_rows_become_reference_records_with_numbered_context(tmp_path: Path) -> None:
    path = write(tmp_path / "qa_pairs.jsonl", [qa_row()])
    assert detect_format(path) == "rag_qa"
    loaded = load_dataset([path])
    (record,) = loaded.records
    assert record.task_type == "reference_qa"
    assert record.prompt == "What is the deadline?"
    assert record.reference_answers == ("72 hours [1].",)
    assert record.context == "[1] Within 72 hours.\n\n[2] Without undue delay."
    assert record.policy_id == "rag_qa_v1"
    rag = record.metadata["rag"]
    assert rag["task_id"] == "t1" and rag["answer_citations"] == [{"marker": "[1]"}]
    assert rag["contexts"] == ["[1] Within 72 hours.", "[2] Without undue delay."]
    assert record.metadata["document"] == "a.txt"
    assert record.dataset_version is None


def test_summaries_get_the_summary_policy(tmp_path: Path) -> None:
    row = qa_row(task_type="summaries", instruction="Summarise.", reference_summary="S.")
    del row["question"], row["reference_answer"], row["answer_citations"]
    path = write(tmp_path / "summaries.jsonl", [row])
    assert detect_format(path) == "rag_summaries"
    (record,) = load_dataset([path]).records
    assert (record.prompt, record.reference_answers) == ("Summarise.", ("S.",))
    assert record.policy_id == "rag_summary_v1"
    assert record.metadata["rag"]["instruction"] == "Summarise."


def test_invalid_rows_are_record_errors_in_the_contract_shape(tmp_path: Path) -> None:
    rows = [
        qa_row("ok"),
        qa_row("empty", reference_answer=""),
        qa_row("unaligned", sources=["only-one"]),
        qa_row("ok"),
    ]
    loaded = load_dataset([write(tmp_path / "qa_pairs.jsonl", rows)])
    assert [r.id for r in loaded.records] == ["ok"]
    errors = [(e.index, e.record_id, e.code, e.path) for e in loaded.errors]
    assert errors == [
        (1, "empty", "value_out_of_range", "records[1].reference_answer"),
        (2, "unaligned", "value_out_of_range", "records[2].sources"),
        (3, "ok", "duplicate_record_id", "records[3].task_id"),
    ]


def test_manifest_version_becomes_the_dataset_version(tmp_path: Path) -> None:
    for name in ("qa_pairs.jsonl", "summaries.jsonl", "manifest.json"):
        shutil.copy(RAG / name, tmp_path / name)
    loaded = load_dataset([tmp_path])
    assert {d.format for d in loaded.datasets} == {"rag_qa", "rag_summaries"}
    assert {d.dataset_version for d in loaded.datasets} == {"v1"}
    assert all(isinstance(e, Record) and e.dataset_version == "v1" for e in loaded.entries)


def test_a_count_that_differs_from_the_manifest_rejects_the_split(tmp_path: Path) -> None:
    for name in ("qa_pairs.jsonl", "manifest.json"):
        shutil.copy(RAG / name, tmp_path / name)
    lines = (tmp_path / "qa_pairs.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "qa_pairs.jsonl").write_text("".join(lines[:-1]))
    with pytest.raises(DatasetRejected, match=r"has 2 rows but manifest.json says 3"):
        load_dataset([tmp_path / "qa_pairs.jsonl"])


def test_an_invalid_manifest_is_a_dataset_error(tmp_path: Path) -> None:
    write(tmp_path / "qa_pairs.jsonl", [qa_row()])
    (tmp_path / "manifest.json").write_text(json.dumps({"version": "one"}))
    with pytest.raises(DatasetRejected, match=r"manifest manifest\.json is invalid"):
        load_dataset([tmp_path / "qa_pairs.jsonl"])


def test_a_directory_skips_the_manifest_and_the_offline_dataset() -> None:
    names = [p.name for p in dataset_files([RAG])]
    assert names == ["qa_pairs.jsonl", "summaries.jsonl"]


def test_manifest_files_resolve_from_the_manifest_never_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_legaleval.formats.rag import manifest_file
    from pytest_legaleval.util.paths import PathRefused

    folder = tmp_path / "project" / "evaluation" / "datasets"
    folder.mkdir(parents=True)
    (folder / "qa_pairs.jsonl").write_text("{}\n")
    manifest = folder / "manifest.json"
    monkeypatch.chdir(tmp_path)
    split = (folder / "qa_pairs.jsonl").resolve()
    assert manifest_file(manifest, "qa_pairs.jsonl") == split
    # relative to the project root, as the builder writes it
    assert manifest_file(manifest, "evaluation/datasets/qa_pairs.jsonl") == split
    # a copied folder: the recorded path is stale, the file name still finds it
    assert manifest_file(manifest, "examples/rag/qa_pairs.jsonl") == split
    assert manifest_file(manifest, str(split)) == split
    # missing: where the manifest's folder says it should be
    assert manifest_file(manifest, "out/none.jsonl") == (folder / "out" / "none.jsonl").resolve()
    (tmp_path / "project" / "other.jsonl").write_text("{}\n")
    with pytest.raises(PathRefused, match=r"'\.\.' leads outside the manifest's folder"):
        manifest_file(manifest, "../../other.jsonl")
    assert (
        manifest_file(manifest, "../../other.jsonl", [tmp_path / "project"])
        == (tmp_path / "project" / "other.jsonl").resolve()
    )
