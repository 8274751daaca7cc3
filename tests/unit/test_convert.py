from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_legaleval.cli import main
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers.convert import ConversionFailed, convert

from ..extras import import_or_skip, needs_import

REPO = Path(__file__).resolve().parents[2]
MAPPINGS = REPO / "examples" / "mappings"
REAL = REPO / "tests" / "data" / "real"


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize(
    ("mapping", "pattern", "expected"),
    [
        pytest.param("lexam.yaml", "raw/lexam/*.xlsx", "lexam_sample.jsonl", marks=needs_import),
        ("legalbench.yaml", "raw/legalbench/*/*.tsv", "legalbench_sample.jsonl"),
    ],
)
def test_shipped_mappings_rebuild_the_real_rows_byte_for_byte(
    tmp_path: Path, mapping: str, pattern: str, expected: str
) -> None:
    out = tmp_path / "out.jsonl"
    convert(MAPPINGS / mapping, sorted(MAPPINGS.glob(pattern)), out)
    rebuilt = {json.loads(line)["id"]: line for line in lines(out)}
    wanted = lines(REAL / expected)
    assert [rebuilt.get(json.loads(line)["id"]) for line in wanted] == wanted


def write_mapping(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


MCQ_MAPPING = """
dataset: demo
task_type: {value: mcq}
id: {hash: [question, source], prefix: "demo:"}
prompt: question
choices: {fields: [a, b, c, d]}
correct: {field: answer, by: letter}
metadata:
  source: source
  row: {template: "{_file}#{_row}"}
"""


def test_ids_are_stable_hashes_of_the_named_fields(tmp_path: Path) -> None:
    mapping = write_mapping(tmp_path / "m.yaml", MCQ_MAPPING)
    csv_in = tmp_path / "in.csv"
    csv_in.write_text(
        "question,a,b,c,d,answer,source,noise\n"
        'Q1?,x,y,,,b,s1,1\n"Q2, with comma?",x,y,z,w,D,s2,2\n',
        encoding="utf-8",
    )
    first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    convert(mapping, [csv_in], first)
    csv_in.write_text(csv_in.read_text().replace(",1\n", ",changed\n"), encoding="utf-8")
    convert(mapping, [csv_in], second)
    assert first.read_bytes() == second.read_bytes()
    rows = [json.loads(line) for line in lines(first)]
    assert [r["id"][:5] for r in rows] == ["demo:", "demo:"] and rows[0]["id"] != rows[1]["id"]
    assert rows[0]["choices"] == [{"id": "A", "text": "x"}, {"id": "B", "text": "y"}]
    assert rows[1]["correct_choice_ids"] == ["D"] and rows[1]["prompt"] == "Q2, with comma?"
    assert rows[1]["metadata"] == {"source": "s2", "row": "in.csv#1"}
    # Another input order, another file: ids depend only on the named fields.
    tsv_in = tmp_path / "in.tsv"
    tsv_in.write_text("source\tquestion\ta\tb\tanswer\ns2\tQ2, with comma?\tx\ty\tA\n")
    third = tmp_path / "3.jsonl"
    convert(mapping, [tsv_in], third)
    assert json.loads(lines(third)[0])["id"] == rows[1]["id"]


def test_json_jsonl_and_xlsx_inputs(tmp_path: Path) -> None:
    mapping = write_mapping(
        tmp_path / "m.yaml",
        "dataset: d\nid: {template: 'd:{qid}'}\nprompt: q\n"
        "references: {field: refs, separator: '|'}\nrecords_key: items\n",
    )
    as_json = tmp_path / "a.json"
    as_json.write_text(json.dumps({"items": [{"qid": 1, "q": "Q?", "refs": "r1|r2"}]}))
    as_jsonl = tmp_path / "b.jsonl"
    as_jsonl.write_text(json.dumps({"qid": 2, "q": "Q2?", "refs": "r3"}) + "\n\n")
    book = import_or_skip("openpyxl").Workbook()
    book.active.append(["qid", "q", "refs"])
    book.active.append([3.0, "Q3?", "r4"])
    book.active.append([None, None, None])
    book.save(tmp_path / "c.xlsx")
    out = tmp_path / "out.jsonl"
    result = convert(mapping, [as_json, as_jsonl, tmp_path / "c.xlsx"], out)
    rows = [json.loads(line) for line in lines(out)]
    assert [(r["id"], r["reference_answers"]) for r in rows] == [
        ("d:1", ["r1", "r2"]),
        ("d:2", ["r3"]),
        ("d:3", ["r4"]),
    ]
    assert result.rows == 3 and all(r["task_type"] == "reference_qa" for r in rows)


def test_invalid_rows_fail_the_conversion_and_write_nothing(tmp_path: Path) -> None:
    mapping = write_mapping(tmp_path / "m.yaml", MCQ_MAPPING)
    csv_in = tmp_path / "in.csv"
    csv_in.write_text("question,a,b,c,d,answer,source\nQ?,x,y,,,E,s\n,x,y,,,A,t\nQ?,x,y,,,A,s\n")
    out = tmp_path / "out.jsonl"
    with pytest.raises(ConversionFailed) as info:
        convert(mapping, [csv_in], out)
    assert not out.exists() and list(tmp_path.glob(".out.jsonl*")) == []
    found = [(e.index, e.code, e.path) for e in info.value.errors]
    assert found == [
        (0, "invalid_enum_value", "records[0].correct_choice_ids[0]"),
        (1, "value_out_of_range", "records[1].prompt"),
        (2, "duplicate_record_id", "records[2].id"),
    ]


def test_mapping_mistakes_are_usage_errors(tmp_path: Path) -> None:
    bad = write_mapping(tmp_path / "m.yaml", "dataset: d\nprompt: q\n")
    with pytest.raises(ConfigError, match="'id' is required"):
        convert(bad, [tmp_path / "x.csv"], tmp_path / "o.jsonl")
    typo = write_mapping(tmp_path / "t.yaml", "dataset: d\nid: q\nprompt: q\nprompts: q\n")
    with pytest.raises(ConfigError, match="unknown key"):
        convert(typo, [tmp_path / "x.csv"], tmp_path / "o.jsonl")
    evil = write_mapping(
        tmp_path / "e.yaml", "dataset: d\nid: {template: '{q.__class__}'}\nprompt: q\n"
    )
    (tmp_path / "x.csv").write_text("q\nhello\n")
    with pytest.raises(ConversionFailed, match="attribute and index access is not allowed"):
        convert(evil, [tmp_path / "x.csv"], tmp_path / "o.jsonl")


@needs_import
def test_convert_command_refuses_to_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "lexam.jsonl"
    args = [
        "convert",
        "--map",
        str(MAPPINGS / "lexam.yaml"),
        *map(str, sorted((MAPPINGS / "raw" / "lexam").glob("*.xlsx"))),
        "--out",
        str(out),
    ]
    assert main(args) == 0
    assert "wrote 8 validated legal_eval_v1 row(s)" in capsys.readouterr().out
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith("already exists; pass --force to overwrite")
    assert main([*args, "--force"]) == 0
