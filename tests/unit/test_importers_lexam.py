"""``lexam``: real rows of LEXam's spreadsheets, in their upstream layout."""

from __future__ import annotations

import ast
import json
import unicodedata
import zipfile
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.importers import ImportOptions, get_importer, run_import
from pytest_legaleval.importers.base import choice_id

from ..extras import import_or_skip

openpyxl = import_or_skip("openpyxl")  # every test reads LEXam's spreadsheets

TESTS = Path(__file__).resolve().parents[1]
LEXAM = TESTS / "data" / "importers" / "lexam"
REFERENCE = TESTS / "data" / "real" / "lexam_sample.jsonl"


def sheet(name: str) -> list[dict[str, Any]]:
    """The upstream rows, read straight from the spreadsheet (not through the importer)."""
    workbook = openpyxl.load_workbook(LEXAM / name, read_only=True)
    rows = workbook.worksheets[0].iter_rows(values_only=True)
    header = next(rows)
    found = [dict(zip(header, row, strict=True)) for row in rows]
    workbook.close()
    return found


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    out = tmp_path_factory.mktemp("lexam") / "lexam.jsonl"
    # As LBR runs LEXam; the official protocol's records: test_official_lexam.py.
    summary = run_import("lexam", [LEXAM], out, options=ImportOptions(protocol="lbr"))
    assert summary.failed == 0 and summary.written == 25
    return {
        json.loads(line)["id"]: json.loads(line)
        for line in out.read_text(encoding="utf-8").split("\n")[:-1]
    }


def test_mcq_rows_equal_the_upstream_rows(records: dict[str, dict[str, Any]]) -> None:
    for row in sheet("MCQs_test.xlsx"):
        record = records[f"lexam:mcq:{row['id']}"]
        options = ast.literal_eval(row["choices"])
        assert record["prompt"] == row["question"]
        assert [c["text"] for c in record["choices"]] == options
        assert record["correct_choice_ids"] == [choice_id(row["gold"])]
        meta = record["metadata"]
        assert (meta["language"], meta["area"], meta["year"]) == (
            row["language"],
            row["area"],
            row["year"],
        )
        assert meta["policy_id"] == "lexam_mcq_v1" and meta["split"] == "test"


def test_perturbation_rows_give_one_record_per_option_count(
    records: dict[str, dict[str, Any]],
) -> None:
    rows = sheet("MCQs_test_perturbation.xlsx")
    assert len(rows) == 4
    for row in rows:
        for k in (4, 8, 16, 32):
            record = records[f"lexam:mcq{k}:{row['id']}"]
            options = ast.literal_eval(row[f"{k}_choices"])
            assert [c["text"] for c in record["choices"]] == options and len(options) == k
            assert record["correct_choice_ids"] == [choice_id(row[f"{k}_choices_gold"])]
            assert record["metadata"]["n_choices"] == k
    ids = [c["id"] for c in records[f"lexam:mcq32:{rows[0]['id']}"]["choices"]]
    assert ids[:2] == ["A", "B"] and ids[25:28] == ["Z", "CHOICE_26", "CHOICE_27"]
    assert ids[-1] == "CHOICE_31"


def test_open_questions_keep_the_reference_answer(records: dict[str, dict[str, Any]]) -> None:
    for name, split in (("open_questions_dev.xlsx", "dev"), ("open_questions_test.xlsx", "test")):
        for row in sheet(name):
            record = records[f"lexam:oq:{row['id']}"]
            assert record["task_type"] == "reference_qa"
            assert record["prompt"] == unicodedata.normalize("NFC", row["question"])
            assert record["reference_answers"] == [unicodedata.normalize("NFC", row["answer"])]
            assert record["metadata"]["split"] == split
            assert record["metadata"]["policy_id"] == "lexam_oq_v1"


def test_excel_escapes_are_decoded_once(records: dict[str, dict[str, Any]]) -> None:
    # The upstream sheet stores "_x005F_x0003_": an escaped underscore, i.e. the literal
    # text "_x0003_" (what Excel shows), not a control character.
    with zipfile.ZipFile(LEXAM / "open_questions_dev.xlsx") as workbook:
        assert b"Auszug_x005F_x0003_ in" in workbook.read("xl/sharedStrings.xml")
    prompt = records["lexam:oq:182826c9-c6ba-4de4-860b-3b87f88c4435"]["prompt"]
    assert "Auszug_x0003_ in _x0003_" in prompt and "\x03" not in prompt


def test_decomposed_text_is_imported_in_nfc(records: dict[str, dict[str, Any]]) -> None:
    decomposed = [
        row for row in sheet("open_questions_test.xlsx")
        if not unicodedata.is_normalized("NFC", row["question"] + row["answer"])
    ]  # fmt: skip
    assert decomposed, "the sample keeps one upstream row in decomposed form"
    record = records[f"lexam:oq:{decomposed[0]['id']}"]
    assert unicodedata.is_normalized("NFC", record["prompt"] + record["reference_answers"][0])


def test_rows_match_the_projects_reference_rows(records: dict[str, dict[str, Any]]) -> None:
    fields = ("prompt", "choices", "correct_choice_ids", "reference_answers")
    reference = [json.loads(line) for line in REFERENCE.read_text(encoding="utf-8").splitlines()]
    for row in reference:
        assert {f: records[row["id"]].get(f) for f in fields} == {f: row.get(f) for f in fields}


def test_bad_rows_fail_with_reasons(tmp_path: Path) -> None:
    workbook = openpyxl.Workbook()
    sheet_ = workbook.active
    sheet_.append(["question", "choices", "gold", "language", "id"])
    sheet_.append(["Q1?", "['a', 'b']", 2, "de", "u1"])
    sheet_.append(["Q2?", "not a list", 0, "de", "u2"])
    sheet_.append(["Q3?", "['only one']", 0, "de", "u3"])
    sheet_.append(["", "['a', 'b']", 0, "de", "u4"])
    sheet_.append(["Q5?", "['a', 'b']", 1, "en", "u5"])
    workbook.save(tmp_path / "MCQs_test.xlsx")
    importer = get_importer("lexam")
    rows = list(importer.rows([tmp_path / "MCQs_test.xlsx"], ImportOptions()))
    assert [r.error for r in rows[:4]] == [
        "gold 2 is out of range for 2 options",
        "choices is not a list literal: 'not a list'",
        "choices has 1 option(s); an mcq needs 2 or more",
        "question is empty",
    ]
    assert rows[4].record is not None and rows[4].record["correct_choice_ids"] == ["B"]


def test_a_file_of_another_layout_is_reported_row_by_row(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text('{"foo": 1}\n', encoding="utf-8")
    (row,) = get_importer("lexam").rows([tmp_path / "x.jsonl"], ImportOptions())
    assert row.error == "not a LEXam layout: columns foo"


def test_choice_ids_past_z_load_and_grade(tmp_path: Path) -> None:
    from pytest_legaleval.formats import load_dataset
    from pytest_legaleval.grading.mcq import grade_mcq

    out = tmp_path / "p.jsonl"
    run_import("lexam", [LEXAM / "MCQs_test_perturbation.xlsx"], out)
    loaded = load_dataset([out])
    assert not loaded.errors
    wide = [e for e in loaded.entries if e.id.startswith("lexam:mcq32:")]
    assert len(wide) == 4
    record = wide[0]
    wrong = "CHOICE_31" if record.correct_choice_ids != ("CHOICE_31",) else "CHOICE_30"
    for reply in ('{"answer": ["CHOICE_27"]}', "Answer: CHOICE_27", "**choice_27**"):
        grade = grade_mcq(record, reply)
        assert grade.chosen == ("CHOICE_27",), reply
    assert grade_mcq(record, f"Answer: {wrong}").chosen == (wrong,)
    gold = record.correct_choice_ids[0]
    assert grade_mcq(record, f'{{"answer": ["{gold}"]}}').passed
