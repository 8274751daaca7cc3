"""``prbench``, ``apex``, ``lar_echr``, ``include`` and ``lbr`` in their published layouts."""

from __future__ import annotations

import builtins
import csv
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers import ImportOptions, get_importer, run_import
from pytest_legaleval.importers.readers import read_table
from pytest_legaleval.importers.tables import read_rows

from ..extras import import_or_skip, needs_import

DATA = Path(__file__).resolve().parents[1] / "data" / "importers"
LBR = DATA / "lbr"


def run(
    source: str, path: Path, tmp_path: Path, protocol: str | None = None
) -> list[dict[str, Any]]:
    out = tmp_path / f"{source}.jsonl"
    summary = run_import(source, [path], out, force=True, options=ImportOptions(protocol=protocol))
    assert summary.failed == 0, summary.failures
    return [json.loads(line) for line in out.read_text(encoding="utf-8").split("\n")[:-1]]


@needs_import
def test_prbench_keeps_every_turn_reference_and_weight(tmp_path: Path) -> None:
    upstream = list(read_table(DATA / "prbench" / "test-00000-of-00001.parquet"))
    records = run("prbench", DATA / "prbench", tmp_path, "lbr")
    assert len(records) == len(upstream) == 2
    for row, record in zip(upstream, records, strict=True):
        assert record["id"] == f"prbench:{row['task']}"
        prompts = [row[f"prompt_{i}"] for i in range(10) if row[f"prompt_{i}"]]
        responses = [row[f"response_{i}"] for i in range(9) if row[f"response_{i}"]]
        users = [m["content"] for m in record["messages"] if m["role"] == "user"]
        assistants = [m["content"] for m in record["messages"] if m["role"] == "assistant"]
        assert users == [p.strip() for p in prompts] and len(users) == row["turns"]
        assert assistants == [r.strip() for r in responses]
        assert record["prompt"] == users[-1]
        assert [c["id"] for c in record["rubric"]] == [c["id"] for c in row["rubric"]]
        for criterion, source in zip(record["rubric"], row["rubric"], strict=True):
            notes = source["annotations"]
            key = notes["weight_class"].replace(" ", "_") + "_weight"
            assert criterion["weight"] == notes[key]  # PRBench's rule: the class's weight
        assert record["metadata"]["policy_id"] == "prbench_v1"
    # A criterion with two weights: PRBench reads the class's (a penalty), LBR the first.
    penalty = next(c for c in records[0]["rubric"] if c["id"].startswith("64736b28"))
    assert penalty["weight"] == -8.0
    # PRBench's own protocol (the default): the turns as evals.py sends them, unstripped;
    # from Parquet, pandas hands the reference lists over as arrays, so none are prepended.
    official = run("prbench", DATA / "prbench", tmp_path)
    for row, record in zip(upstream, official, strict=True):
        prompts = [row[f"prompt_{i}"] for i in range(10) if row[f"prompt_{i}"]]
        users = [m["content"] for m in record["messages"] if m["role"] == "user"]
        assert users == prompts and record["metadata"]["policy_id"] == "prbench_official"
        assert record["metadata"]["splits"] == [row["canary"].split(":")[2]]


def test_prbench_reference_texts_go_before_their_turn(tmp_path: Path) -> None:
    row: dict[str, Any] = {f"prompt_{i}": None for i in range(10)}
    row.update(task="t1", prompt_0="First?", response_0="Answer.", prompt_1="Second?",
               reference_texts_1=["Doc A", " ", "Doc B"],
               rubric=[{"id": "c", "title": "T", "annotations": {
                   "weight_class": "important", "important_weight": 1}}])  # fmt: skip
    (tmp_path / "p.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    lbr = ImportOptions(protocol="lbr")
    (result,) = get_importer("prbench").rows([tmp_path / "p.jsonl"], lbr)
    assert result.record is not None
    assert result.record["messages"][-1]["content"] == (
        "Reference Text 0:\nDoc A\n\nReference Text 1:\nDoc B\n\nSecond?"
    )
    (result,) = get_importer("prbench").rows([tmp_path / "p.jsonl"], ImportOptions())
    assert result.record is not None  # process_reference_texts keeps every list item
    assert result.record["messages"][-1]["content"] == (
        "Reference Text 0:\nDoc A\n\nReference Text 1:\n \n\nReference Text 2:\nDoc B\n\nSecond?"
    )
    row.update(prompt_0=None, prompt_1=None)
    (tmp_path / "p.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    (result,) = get_importer("prbench").rows([tmp_path / "p.jsonl"], ImportOptions())
    assert result.error == "no user turn: prompt_0 … prompt_9 are all empty"


def test_apex_keeps_criteria_ids_and_the_attachment(tmp_path: Path) -> None:
    (row,) = read_table(LBR / "curated" / "apexv1_legal_europe.jsonl")
    (record,) = run("apex", LBR / "curated" / "apexv1_legal_europe.jsonl", tmp_path)
    rubric = json.loads(row["Rubric JSON"])
    assert record["id"] == f"apexv1:{row['Task ID']}" and record["task_type"] == "rubric_qa"
    assert [c["id"] for c in record["rubric"]] == list(rubric)
    assert [c["title"] for c in record["rubric"]] == [v["description"] for v in rubric.values()]
    assert record["attachments"] == [{"path": row["File Attachments"], "kind": "pdf"}]
    assert record["metadata"]["policy_id"] == "apex_official"
    assert record["metadata"]["rubric_json"] == row["Rubric JSON"].strip()
    (lbr,) = run("apex", LBR / "curated" / "apexv1_legal_europe.jsonl", tmp_path, "lbr")
    assert lbr["metadata"]["policy_id"] == "apexv1_extended_v1"
    assert lbr["prompt"] == row["Prompt"].strip()


LAR_COLUMNS = ["case_id", "case_no", "complete_facts", "facts", "context", "a", "b", "c", "d",
               "label"]  # fmt: skip


def test_lar_echr_csv_layout(tmp_path: Path) -> None:
    # Invented text in the dataset card's columns (the data is CC-BY-NC-SA: none copied).
    rows = [
        ["001-1_5", "1/01", "['5. First.', '6. Second.']", "Facts one.", "Prior argument.",
         "Arg A", "Arg B", "Arg C", "Arg D", "C"],
        ["001-2_9", "2/02", "[]", "Facts two.", "Prior.", "A2", "B2", "", "D2", "d"],
        ["001-3_1", "3/03", "[]", "Facts three.", "Prior.", "A3", "B3", "C3", "D3", "E"],
    ]  # fmt: skip
    with (tmp_path / "test.csv").open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows([LAR_COLUMNS, *rows])
    found = list(get_importer("lar_echr").rows([tmp_path / "test.csv"], ImportOptions()))
    one, two = [r.record for r in found[:2]]
    assert one is not None and two is not None
    assert one["id"] == "lar_echr:001-1_5" and one["correct_choice_ids"] == ["C"]
    assert one["context"] == "Facts:\nFacts one.\n\nArguments:\nPrior argument."
    assert one["metadata"]["complete_facts"] == ["5. First.", "6. Second."]
    assert one["metadata"]["split"] == "test"
    assert [c["id"] for c in two["choices"]] == ["A", "B", "D"] and two["correct_choice_ids"] == [
        "D"
    ]
    assert found[2].error == "label 'E' is none of the given options"


def test_include_parquet_and_option_columns(tmp_path: Path) -> None:
    # Invented questions in the two readable layouts (INCLUDE's licence was not readable).
    pa = import_or_skip("pyarrow")
    pq = import_or_skip("pyarrow.parquet")
    folder = tmp_path / "Finnish"
    folder.mkdir()
    table = pa.Table.from_pylist([
        {"language": "Finnish", "country": "Finland", "domain": "Law", "subject": "Law",
         "regional_feature": "region explicit", "level": "exam", "question": "K1?",
         "choices": ["a", "b", "c", "d"], "answer": 3},
        {"language": "Finnish", "country": "Finland", "domain": "Law", "subject": "Law",
         "regional_feature": "region explicit", "level": "exam", "question": "K1?",
         "choices": ["a", "b", "c", "d"], "answer": 3},
    ])  # fmt: skip
    pq.write_table(table, folder / "test-00000-of-00001.parquet")
    option_rows = [
        {"language": "Finnish", "question": "K2?", "option_a": "x", "option_b": "",
         "option_c": "z", "option_d": "w", "answer": 2.0},
        {"language": "Finnish", "question": "K3?", "option_a": "x", "option_b": "",
         "option_c": "z", "option_d": "w", "answer": 1},
    ]  # fmt: skip
    (folder / "law.jsonl").write_text("".join(json.dumps(r) + "\n" for r in option_rows))
    out = tmp_path / "include.jsonl"
    summary = run_import("include", [tmp_path], out)
    assert (summary.written, summary.failed) == (2, 1)
    assert summary.skipped == {"exact repeat of an earlier record": 1}
    assert summary.failures[0].reason == "answer index 1 points to an empty option"
    options, listed = [json.loads(line) for line in out.read_text().split("\n")[:-1]]
    assert options["correct_choice_ids"] == ["C"] and options["metadata"]["split"] == "law"
    assert [c["id"] for c in options["choices"]] == ["A", "C", "D"]
    assert listed["correct_choice_ids"] == ["D"] and listed["metadata"]["split"] == "test"
    assert listed["id"].startswith("include:") and listed["dataset"] == "include"


def test_lbr_rebuilds_its_merged_set_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "merged.jsonl"
    summary = run_import("lbr", [LBR / "curated"], out)
    assert (summary.written, summary.failed, summary.skipped_total) == (53, 0, 0)
    assert out.read_bytes() == (LBR / "merged_legal_eval_v1.expected.jsonl").read_bytes()


def test_lbr_keeps_lbr_weights_where_prbench_differs(tmp_path: Path) -> None:
    lbr = run("lbr", LBR / "curated" / "prbench_legal_hard_europe.jsonl", tmp_path)
    native = run("prbench", LBR / "curated" / "prbench_legal_hard_europe.jsonl", tmp_path, "lbr")
    assert [r["id"] for r in lbr] == [r["id"] for r in native]
    assert lbr[0]["messages"] == native[0]["messages"]
    lbr_weight = {c["id"]: c.get("weight") for c in lbr[0]["rubric"]}
    assert lbr_weight["64736b28-433e-4cbd-94b6-3c1e34014b88"] == 8.0


def test_lbr_refuses_files_it_does_not_know(tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text("{}\n")
    with pytest.raises(ConfigError, match="not one of LBR's curated files"):
        get_importer("lbr").files([other])


def test_missing_reader_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_readers(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith(("openpyxl", "pyarrow")):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_readers)
    with pytest.raises(ConfigError, match=r"pytest-legaleval\[import\]"):
        list(read_table(DATA / "prbench" / "test-00000-of-00001.parquet"))
    # XLSX needs no extra: the reader is the standard library's zipfile and expat.
    assert len(list(read_table(DATA / "lexam" / "MCQs_test.xlsx"))) == 4
    assert len(list(read_rows(DATA / "lexam" / "MCQs_test.xlsx"))) == 4


def test_one_reader_typed_for_importers_and_as_text_for_mappings(tmp_path: Path) -> None:
    """``legaleval convert`` reads through the importers' reader: same rows, cells as text,
    the sheet and the JSON key it names."""
    openpyxl = import_or_skip("openpyxl")
    workbook = openpyxl.Workbook()
    workbook.active.title = "first"
    workbook.active.append(["question", "gold"])
    workbook.active.append(["first sheet", 1])
    second = workbook.create_sheet("second")
    second.append(["question", "gold", "year"])
    second.append(["Which court?", 2, 2022.0])
    second.append([None, None, None])  # blank: skipped by both
    workbook.save(tmp_path / "book.xlsx")
    book = tmp_path / "book.xlsx"
    assert list(read_table(book, sheet="second")) == [
        {"question": "Which court?", "gold": 2, "year": 2022}
    ]
    assert list(read_rows(book, sheet="second")) == [
        {"question": "Which court?", "gold": "2", "year": "2022"}
    ]
    assert list(read_rows(book)) == [{"question": "first sheet", "gold": "1"}]
    with pytest.raises(ConfigError, match="no sheet 'third'; sheets: first, second"):
        list(read_rows(book, sheet="third"))
    nested = tmp_path / "nested.json"
    nested.write_text('{"items": [{"gold": 2}], "data": [{"gold": 3}]}')
    assert list(read_rows(nested, records_key="items")) == [{"gold": 2}]  # JSON keeps types
    assert list(read_table(nested)) == [{"gold": 3}]  # a Hugging Face export's "data"
    with pytest.raises(ConfigError, match="at key 'rows'"):
        list(read_rows(nested, records_key="rows"))
