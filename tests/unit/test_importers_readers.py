"""Size limits of the text readers (CSV, TSV, JSON, JSONL) and how a refused row travels.

A cell or row over its limit is one failed row, named, never a lost one and never a crash;
a file over a file-level limit is a usage error before it is read.
"""

from __future__ import annotations

import csv
import json
import tracemalloc
from pathlib import Path

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers import ImportOptions, get_importer, run_import
from pytest_legaleval.importers.convert import ConversionFailed, convert
from pytest_legaleval.importers.limits import DEFAULT_LIMITS, MiB, ReadLimits, UnreadRow
from pytest_legaleval.importers.readers import read_table

LBR = Path(__file__).resolve().parents[1] / "data" / "importers" / "lbr" / "curated"
README = Path(__file__).resolve().parents[2] / "README.md"


def reasons(rows: list[dict[str, object]]) -> list[str | None]:
    return [row.reason if isinstance(row, UnreadRow) else None for row in rows]


def test_a_jsonl_line_over_the_row_limit_is_skipped_a_piece_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        handle.write('{"id": 1}\n')
        handle.write('{"id": 2, "text": "' + "x" * (10 * MiB) + '"}\n')  # 10 MiB, no newline
        handle.write('{"id": 3}\n')
    tracemalloc.start()
    try:
        rows = list(read_table(path, limits=ReadLimits(row=64 * 1024)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert reasons(rows) == [None, "line 2 is longer than the row limit of 64.0 KiB", None]
    assert rows[2] == {"id": 3}
    assert peak < MiB  # the 10 MiB line was never held


def test_a_jsonl_field_over_the_cell_limit_fails_its_row(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    rows = [{"id": 1, "text": "short"}, {"id": 2, "text": "y" * 500, "list": [1]}, {"id": 3}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    found = list(read_table(path, limits=ReadLimits(cell=100)))
    assert reasons(found) == [
        None, "line 2: field 'text' holds 500 B, over the cell limit of 100 B", None
    ]  # fmt: skip


def test_a_json_document_over_its_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "rows.json"
    path.write_text("[" + "not JSON at all " * 100, encoding="utf-8")  # parsing would fail
    with pytest.raises(ConfigError, match=r"over the JSON-document limit of 1\.0 KiB; nothing was"):
        list(read_table(path, limits=ReadLimits(json_document=1024)))
    assert DEFAULT_LIMITS.json_document == 128 * MiB


def test_json_items_over_a_limit_fail_alone(tmp_path: Path) -> None:
    path = tmp_path / "rows.json"
    items = [{"id": 1}, {"id": 2, "text": "z" * 300}, {"id": 3, "a": "q" * 90, "b": "q" * 90}]
    path.write_text(json.dumps(items), encoding="utf-8")
    found = list(read_table(path, limits=ReadLimits(cell=100, row=150)))
    assert reasons(found) == [
        None,
        "item 1: field 'text' holds 300 B, over the cell limit of 100 B",
        "item 2: it holds 207 B, over the row limit of 150 B",
    ]


def test_a_csv_field_over_the_cell_limit_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("id,text\n1,ok\n2," + "w" * 300 + "\n3,ok\n", encoding="utf-8")
    before = csv.field_size_limit()
    with pytest.raises(ConfigError, match=r"line 3: field larger than field limit \(100\)"):
        list(read_table(path, limits=ReadLimits(cell=100)))
    assert csv.field_size_limit() == before  # the module-wide setting is put back
    assert len(list(read_table(path))) == 3


def test_csv_lines_and_records_over_the_row_limit(tmp_path: Path) -> None:
    path = tmp_path / "rows.tsv"
    path.write_text("id\ttext\n1\t" + "v" * 300 + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="line 2 is longer than the row limit of 200 B"):
        list(read_table(path, limits=ReadLimits(row=200)))
    # A quoted record over several short lines: the record fails, the next one is read.
    record = '"' + "\n".join(["u" * 90] * 4) + '"'
    path.write_text(f"id\ttext\n1\t{record}\n2\tok\n", encoding="utf-8")
    found = list(read_table(path, limits=ReadLimits(row=200)))
    assert reasons(found) == [
        "the record ending on line 5 holds 368 B, over the row limit of 200 B", None
    ]  # fmt: skip
    assert found[1] == {"id": "2", "text": "ok"}


def test_any_file_over_the_file_limit_is_refused_before_reading(tmp_path: Path) -> None:
    for name in ("a.csv", "a.tsv", "a.jsonl", "a.json", "a.xlsx"):
        (tmp_path / name).write_bytes(b"\xff" * 2048)  # unreadable as any format
        with pytest.raises(ConfigError, match=r"over the file limit of 1\.0 KiB; nothing was read"):
            list(read_table(tmp_path / name, limits=ReadLimits(file=1024)))


def test_text_that_is_not_utf8_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_bytes(b"id,text\n1,caf\xe9\n")
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        list(read_table(path))


def test_a_refused_row_fails_in_every_importer_with_the_limit_named(tmp_path: Path) -> None:
    big = "t" * (DEFAULT_LIMITS.cell + 1)
    apex = tmp_path / "apex.jsonl"
    apex.write_text(
        json.dumps({"Task ID": 1, "Prompt": big, "Rubric JSON": "{}"})
        + "\n"
        + json.dumps(
            {"Task ID": 2, "Prompt": "Fine?", "Rubric JSON": '{"c": {"description": "d"}}'}
        )
        + "\n",
        encoding="utf-8",
    )
    first, second = get_importer("apex").rows([apex], ImportOptions())
    assert first.error == "line 1: field 'Prompt' holds 8.0 MiB, over the cell limit of 8.0 MiB"
    assert second.record is not None
    lexam = tmp_path / "lexam.jsonl"
    lexam.write_text(json.dumps({"id": "x", "question": big, "choices": "['a', 'b']",
                                 "gold": 0}) + "\n", encoding="utf-8")  # fmt: skip
    summary = run_import("lexam", [lexam], tmp_path / "out.jsonl")
    assert summary.failed == 1 and "over the cell limit" in summary.failures[0].reason
    mapping = tmp_path / "m.yaml"
    mapping.write_text(
        "dataset: demo\ntask_type: {value: reference_qa}\nid: {field: id}\nprompt: question\n"
        "references: {fields: [answer]}\n",
        encoding="utf-8",
    )
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "a", "question": big, "answer": "b"}) + "\n")
    with pytest.raises(ConversionFailed, match=r"over the cell limit of 8\.0 MiB"):
        convert(mapping, [rows], tmp_path / "converted.jsonl")


def test_lbr_counts_a_line_over_the_row_limit_as_failed(tmp_path: Path) -> None:
    curated = tmp_path / "apexv1_legal_europe.jsonl"
    good = (LBR / "apexv1_legal_europe.jsonl").read_text(encoding="utf-8")
    with curated.open("w", encoding="utf-8") as handle:
        handle.write(good)
        handle.write('{"Task ID": 9, "Prompt": "' + "p" * (DEFAULT_LIMITS.row + 1) + '"}\n')
    summary = run_import("lbr", [curated], tmp_path / "out.jsonl")
    assert (summary.written, summary.failed) == (1, 1)
    assert summary.failures[0].reason == "line is longer than the row limit of 32.0 MiB"


def test_the_readme_names_the_limits_the_readers_apply() -> None:
    from pytest_legaleval.importers.parquet import MAX_FOOTER_BYTES
    from pytest_legaleval.importers.xlsx_package import MAX_PARTS

    table = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        # The limits table's rows: limit | default | applies to | over it.
        if len(cells) == 4 and (cells[3] == "usage error" or "the row fails" in cells[3]):
            table[cells[0]] = cells[1]
    limits = DEFAULT_LIMITS
    assert table == {
        "cell": f"{limits.cell // MiB} MiB",
        "row": f"{limits.row // MiB} MiB",
        "file": f"{limits.file // (1024 * MiB)} GiB",
        "JSON document": f"{limits.json_document // MiB} MiB",
        "shared strings": f"{limits.shared_strings // MiB} MiB",
        "compression ratio": f"{limits.compression_ratio}:1",
        "XLSX parts": f"{MAX_PARTS:,}",
        "row group": f"{limits.row_group // MiB} MiB",
        "Parquet footer": f"{MAX_FOOTER_BYTES // MiB} MiB",
    }
    assert "an XLSX part over 1 MiB" in README.read_text(encoding="utf-8")
    assert limits.ratio_floor == MiB
