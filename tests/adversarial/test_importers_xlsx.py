"""Attack: spreadsheets that hide rows, inflate, or expand entities (issue 31).

- A sheet whose ``<dimension>`` under-declares its size imported 1 of 5 rows ("1 written,
  0 failed"): openpyxl's read-only mode trusts the declared size. Now every ``<row>`` is
  read, counted here against the sheet's real extent.
- A 1 MB XLSX holding one 1 GB cell peaked at 3.9 GB and wrote a 1 GB record. Now the
  zip's declared sizes are checked before anything is inflated, and a cell is never held
  past its limit. The memory tests allocate no more than a few MiB: they measure the peak
  with tracemalloc on files whose declared (or real) size is far larger.
- ``legaleval import`` died with an ``ElementTree.ParseError`` traceback on a blocked
  billion-laughs XLSX. Now any DTD or malformed XML is a usage error (exit 2, one line).

Every file is built here, on the fly.
"""

from __future__ import annotations

import base64
import os
import struct
import subprocess
import sys
import tracemalloc
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_legaleval.cli import main
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers import run_import
from pytest_legaleval.importers.limits import DEFAULT_LIMITS, MiB, ReadLimits, UnreadRow
from pytest_legaleval.importers.readers import read_table
from pytest_legaleval.importers.xlsx_package import MAX_PARTS

from ..unit.test_importers_xlsx import MAIN, cell, sheet_xml, write_xlsx

HEADER = ["question", "choices", "gold", "id"]


def mcq_rows(count: int) -> list[list[object]]:
    """LEXam's MCQ layout: ``count`` questions after the header."""
    return [HEADER] + [[f"Question {i}?", "['yes', 'no']", 1, f"q{i}"] for i in range(count)]


def real_rows(book: Path) -> int:
    """The sheet's real extent: its ``<row>`` elements, counted by another parser."""
    with zipfile.ZipFile(book) as archive:
        tree = ET.fromstring(archive.read("xl/worksheets/sheet1.xml"))
    return len(list(tree.iter(f"{{{MAIN}}}row")))


def peak_while(read: Callable[[], Any]) -> tuple[Any, int]:
    """What ``read()`` returns (or raises) and the Python memory peak while it ran."""
    tracemalloc.start()
    try:
        try:
            result: Any = read()
        except ConfigError as exc:
            result = exc
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_an_under_declared_sheet_imports_every_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The sheet declares A1:D2 (a header and one question) and holds five questions.
    book = write_xlsx(tmp_path / "MCQs_test.xlsx", sheet_xml(mcq_rows(5), dimension="A1:D2"))
    code = main(["import", "lexam", str(book), "--out", str(tmp_path / "out.jsonl")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "MCQs_test.xlsx: 5 written, 0 failed, 0 skipped" in out
    written = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(written) == real_rows(book) - 1 == 5  # every row but the header


def test_an_over_declared_sheet_invents_no_rows(tmp_path: Path) -> None:
    book = write_xlsx(tmp_path / "big.xlsx", sheet_xml(mcq_rows(2), dimension="A1:XFD1048576"))
    assert len(list(read_table(book))) == real_rows(book) - 1 == 2


def _unnumbered(value: object) -> str:
    """A cell without a reference: it takes the next column."""
    if value is None:
        return "<c/>"
    if isinstance(value, int):
        return f"<c><v>{value}</v></c>"
    return f'<c t="inlineStr"><is><t>{value}</t></is></c>'


@st.composite
def sheets(draw: st.DrawFn) -> tuple[str, list[list[object]]]:
    """A sheet XML with rows numbered or not, gaps, blank rows, and any declared size."""
    width = draw(st.integers(1, 4))
    values = st.one_of(st.none(), st.integers(-5, 5), st.sampled_from(["", "x", "a b", "ü"]))
    rows = draw(st.lists(st.lists(values, min_size=width, max_size=width), max_size=12))
    numbered = draw(st.booleans())
    body = ""
    for r, row in enumerate(rows, start=1):
        if numbered:
            cells = "".join(cell(f"{'ABCD'[c]}{r}", v) for c, v in enumerate(row) if v is not None)
            body += f'<row r="{r}">{cells}</row>'
        else:
            body += "<row>" + "".join(map(_unnumbered, row)) + "</row>"
    declared = draw(st.sampled_from(["", '<dimension ref="A1"/>', '<dimension ref="A1:B2"/>',
                                     '<dimension ref="A1:Z999"/>']))  # fmt: skip
    xml = f'<worksheet xmlns="{MAIN}">{declared}<sheetData>{body}</sheetData></worksheet>'
    return xml, rows


@settings(settings.get_profile("adversarial"), max_examples=60)
@given(drawn=sheets())
def test_rows_read_equal_the_sheets_real_rows(
    tmp_path_factory: pytest.TempPathFactory, drawn: tuple[str, list[list[object]]]
) -> None:
    xml, rows = drawn
    book = write_xlsx(tmp_path_factory.mktemp("sheet") / "s.xlsx", xml)
    # Expected from the rows written, whatever the sheet declares: the first non-blank row
    # names the columns, and every later non-blank row is one row.
    content = [row for row in rows if any(v not in (None, "") for v in row)]
    expected: list[dict[str, object]] = []
    if content:
        names = [str(v) if v is not None else "" for v in content[0]]
        expected = [{n: row[i] for i, n in enumerate(names) if n} for row in content[1:]]
    assert list(read_table(book)) == expected
    assert real_rows(book) == len(rows)


def _bomb(megabytes: int) -> Callable[[IO[bytes]], None]:
    def write(handle: IO[bytes]) -> None:
        handle.write(f'<sst xmlns="{MAIN}"><si><t>'.encode())
        chunk = b"a" * MiB
        for _ in range(megabytes):
            handle.write(chunk)
        handle.write(b"</t></si></sst>")

    return write


BOMB_SHEET = sheet_xml([["question", "answer", "id"]]).replace(
    "</sheetData>",
    '<row r="2"><c r="A2" t="s"><v>0</v></c>' + cell("B2", "x") + cell("C2", "b1") + "</row>"
    "</sheetData>",
)


def test_a_zip_bomb_cell_is_refused_before_anything_is_inflated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One 16 MiB cell of "a" (the attack had 1 GB): 16 KiB on disk, a 1,000:1 ratio.
    book = write_xlsx(tmp_path / "open_questions_test.xlsx", BOMB_SHEET, _bomb(16))
    assert book.stat().st_size < MiB
    refused, peak = peak_while(lambda: list(read_table(book)))
    assert isinstance(refused, ConfigError)
    assert "over the XLSX compression-ratio limit of 100:1" in str(refused)
    assert "nothing was read" in str(refused)
    assert peak < MiB  # the 16 MiB part was never inflated
    code = main(["import", "lexam", str(book), "--out", str(tmp_path / "out.jsonl")])
    assert code == 2 and not (tmp_path / "out.jsonl").exists()
    assert "compression-ratio limit" in capsys.readouterr().err


def test_a_bomb_under_another_name_is_checked_too(tmp_path: Path) -> None:
    # The workbook's relationship names a part without the .xml suffix as its sheet.
    rels = (
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Target="worksheets/sheet1.bin" Type="http://schemas.'
        'openxmlformats.org/officeDocument/2006/relationships/worksheet"/></Relationships>'
    )
    book = write_xlsx(tmp_path / "renamed.xlsx", _bomb(16), rels=rels)
    _rename(book, "xl/worksheets/sheet1.xml", "xl/worksheets/sheet1.bin")
    with zipfile.ZipFile(book) as archive:
        assert archive.getinfo("xl/worksheets/sheet1.bin").file_size > 16 * MiB
    with pytest.raises(ConfigError, match=r"part xl/worksheets/sheet1\.bin inflates"):
        list(read_table(book))


def _rename(book: Path, old: str, new: str) -> None:
    """Rename a part in place (same length), in both of the zip's headers."""
    assert len(old) == len(new)
    book.write_bytes(book.read_bytes().replace(old.encode(), new.encode()))


def _patch_sizes(book: Path, member: str, size: int) -> None:
    """Rewrite ``member``'s declared uncompressed size in both of the zip's headers."""
    data = bytearray(book.read_bytes())
    name = member.encode()
    for signature, field in ((b"PK\x01\x02", 24), (b"PK\x03\x04", 22)):
        at = -1
        while (at := data.find(signature, at + 1)) >= 0:
            length_at = 28 if signature == b"PK\x01\x02" else 26
            name_at = 46 if signature == b"PK\x01\x02" else 30
            (length,) = struct.unpack_from("<H", data, at + length_at)
            if data[at + name_at : at + name_at + length] == name:
                struct.pack_into("<I", data, at + field, size)
    book.write_bytes(bytes(data))


def test_declared_sizes_are_checked_with_the_parts_unread(tmp_path: Path) -> None:
    # The sheet's headers declare 3.9 GB; its data is garbage that could not be inflated.
    # The refusal names the limit, so nothing was read (reading would fail otherwise).
    book = write_xlsx(tmp_path / "declared.xlsx", os.urandom(256 * 1024))
    _patch_sizes(book, "xl/worksheets/sheet1.xml", 3_900_000_000)
    with pytest.raises(ConfigError, match="over the XLSX compression-ratio limit"):
        list(read_table(book))
    # Over the file limit at an honest-looking ratio: refused for the file limit.
    with pytest.raises(ConfigError, match="over the file limit; nothing was read"):
        list(read_table(book, limits=ReadLimits(compression_ratio=10**9)))


def test_a_part_that_inflates_past_its_declared_size_is_never_inflated_past_it(
    tmp_path: Path,
) -> None:
    # The headers declare 64 KiB; the deflate stream holds 16 MiB of a shared string.
    book = write_xlsx(tmp_path / "liar.xlsx", BOMB_SHEET, _bomb(16))
    _patch_sizes(book, "xl/sharedStrings.xml", 64 * 1024)
    refused, peak = peak_while(lambda: list(read_table(book)))
    assert isinstance(refused, ConfigError)
    assert "not a readable XLSX file" in str(refused) and "Bad CRC-32" in str(refused)
    assert peak < 2 * MiB


def _random_text(size: int) -> str:
    return base64.b64encode(os.urandom(size * 3 // 4)).decode()[:size]


def test_a_cell_over_the_cell_limit_fails_its_row_and_is_held_only_up_to_it(tmp_path: Path) -> None:
    # 9 MiB of incompressible text in one cell: a plausible ratio, over the 8 MiB cell limit.
    big = _random_text(DEFAULT_LIMITS.cell + MiB)
    rows = mcq_rows(3)
    rows[2][0] = big
    book = write_xlsx(tmp_path / "MCQs_test.xlsx", sheet_xml(rows))
    del rows, big
    found, peak = peak_while(lambda: list(read_table(book)))
    assert [isinstance(row, UnreadRow) for row in found] == [False, True, False]
    assert found[1].reason == (
        "sheet row 3: cell A3 holds 9.0 MiB of text, over the cell limit of 8.0 MiB"
    )
    assert peak < DEFAULT_LIMITS.cell + MiB  # kept up to the limit, then only counted
    # With a 64 KiB cell limit the same file never costs more than a fraction of the cell.
    found, peak = peak_while(lambda: list(read_table(book, limits=ReadLimits(cell=64 * 1024))))
    assert [isinstance(row, UnreadRow) for row in found] == [False, True, False]
    assert peak < MiB
    summary = run_import("lexam", [book], tmp_path / "out.jsonl")
    assert (summary.written, summary.failed) == (2, 1)
    assert summary.failures[0].where == "MCQs_test.xlsx row 2"
    assert "over the cell limit of 8.0 MiB" in summary.failures[0].reason


def test_a_row_over_the_row_limit_fails_alone(tmp_path: Path) -> None:
    rows = mcq_rows(2)
    rows[1][0] = rows[1][1] = "x" * 600  # 1,200 characters in the first question's row
    book = write_xlsx(tmp_path / "rows.xlsx", sheet_xml(rows))
    found = list(read_table(book, limits=ReadLimits(row=1000)))
    assert isinstance(found[0], UnreadRow) and "over the row limit" in found[0].reason
    assert found[1]["id"] == "q1"


def test_one_shared_string_repeated_past_the_file_limit_stops_the_import(tmp_path: Path) -> None:
    # 1 MiB of text named by 20 cells: 1 MiB on disk, 20 MiB once every row holds it.
    strings = f'<sst xmlns="{MAIN}"><si><t>{_random_text(MiB)}</t></si></sst>'
    body = "".join(f'<row r="{r}"><c r="A{r}" t="s"><v>0</v></c></row>' for r in range(2, 22))
    sheet = sheet_xml([["question"]]).replace("</sheetData>", body + "</sheetData>")
    book = write_xlsx(tmp_path / "repeat.xlsx", sheet, strings)
    assert len(list(read_table(book))) == 20
    with pytest.raises(ConfigError, match=r"over the file limit \(shared strings repeated"):
        list(read_table(book, limits=ReadLimits(file=8 * MiB)))


def test_deep_nesting_costs_linear_time(tmp_path: Path) -> None:
    # 100,000 nested elements inside a cell and inside a shared string: a parser that
    # searched its open elements at each one would make some 10**10 steps here.
    depth = 100_000
    nested = "<x>" * depth + "</x>" * depth
    sheet = sheet_xml([["question", "note"]]).replace(
        "</sheetData>",
        f'<row r="2"><c r="A2" t="s"><v>0</v></c><c r="B2" t="inlineStr"><is><t>n</t>{nested}'
        "</is></c></row></sheetData>",
    )
    strings = f'<sst xmlns="{MAIN}"><si><t>deep</t>{nested}</si></sst>'
    book = write_xlsx(tmp_path / "deep.xlsx", sheet, strings)
    assert list(read_table(book)) == [{"question": "deep", "note": "n"}]


LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(
        f'<!ENTITY lol{i} "' + f"&lol{i - 1 if i > 1 else ''};" * 10 + '">' for i in range(1, 10)
    )
    + "]>"
)


def _laughing(root: str) -> str:
    """``root`` (an XML document) behind a billion-laughs DTD, its text the last entity."""
    return LAUGHS + root.replace("LAUGH", "&lol9;")


@pytest.mark.parametrize(
    "part",
    ["sheet", "strings", "workbook", "rels", "styles"],
)
def test_a_billion_laughs_in_any_part_is_a_usage_error(
    tmp_path: Path, part: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sheet = sheet_xml([["question"], ["x"]])
    strings = f'<sst xmlns="{MAIN}"><si><t>LAUGH</t></si></sst>'
    styles = f'<styleSheet xmlns="{MAIN}"><numFmts><numFmt numFmtId="164" formatCode="LAUGH"/>'
    parts: dict[str, Any] = {"styles": styles + "</numFmts></styleSheet>"}
    if part == "sheet":
        sheet = _laughing(sheet.replace(">x<", ">LAUGH<"))
    elif part == "strings":
        strings = _laughing(strings)
    elif part == "styles":
        parts["styles"] = _laughing(parts["styles"])
    elif part == "workbook":
        parts["workbook"] = _laughing(
            f'<workbook xmlns="{MAIN}" xmlns:r="http://schemas.openxmlformats.org/'
            'officeDocument/2006/relationships"><sheets><sheet name="LAUGH" sheetId="1" '
            'r:id="rId1"/></sheets></workbook>'
        )
    else:
        parts["rels"] = _laughing(
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
            'relationships"><Relationship Id="rId1" Target="LAUGH" Type="x"/></Relationships>'
        )
    book = write_xlsx(tmp_path / "laughs.xlsx", sheet, strings, **parts)
    code = main(["import", "lexam", str(book), "--out", str(tmp_path / "out.jsonl")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("legaleval import: error: ") and err.count("\n") == 1
    assert "declares a DTD (entities)" in err and "Traceback" not in err


def test_the_cli_reports_dtds_and_malformed_xml_in_one_line_without_a_traceback(
    tmp_path: Path,
) -> None:
    laughs = write_xlsx(tmp_path / "laughs.xlsx", _laughing(sheet_xml([["q"], ["LAUGH"]])))
    external = write_xlsx(
        tmp_path / "external.xlsx",
        '<?xml version="1.0"?><!DOCTYPE w [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        + sheet_xml([["q"], ["&x;"]]),
    )
    truncated = write_xlsx(tmp_path / "truncated.xlsx", sheet_xml(mcq_rows(3))[:-40])
    command = "import sys; from pytest_legaleval.cli import main; sys.exit(main(sys.argv[1:]))"
    for book, expected in ((laughs, "declares a DTD"), (external, "declares a DTD"),
                           (truncated, "is not well-formed XML")):  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-c", command, "import", "lexam", str(book), "--out",
             str(tmp_path / "out.jsonl")],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1
        assert expected in done.stderr and "xl/worksheets/sheet1.xml" in done.stderr
        assert not (tmp_path / "out.jsonl").exists()  # nothing half-written


def test_a_malformed_sheet_after_good_rows_leaves_no_output(tmp_path: Path) -> None:
    xml = sheet_xml(mcq_rows(400))
    book = write_xlsx(tmp_path / "MCQs_test.xlsx", xml.replace("</sheetData>", "<row><c>"))
    with pytest.raises(ConfigError, match="is not well-formed XML"):
        run_import("lexam", [book], tmp_path / "out.jsonl")
    assert list(tmp_path.glob("*.jsonl")) == [] and list(tmp_path.glob(".*tmp*")) == []


def test_a_zip_declaring_too_many_parts_is_refused_before_its_directory_is_loaded(
    tmp_path: Path,
) -> None:
    book = write_xlsx(tmp_path / "parts.xlsx", sheet_xml([["q"], ["x"]]))
    data = bytearray(book.read_bytes())
    end = data.rfind(b"PK\x05\x06")
    struct.pack_into("<HH", data, end + 8, MAX_PARTS + 1, MAX_PARTS + 1)  # entries
    book.write_bytes(bytes(data))
    with pytest.raises(ConfigError, match=f"declares {MAX_PARTS + 1:,} parts, over the XLSX"):
        list(read_table(book))
