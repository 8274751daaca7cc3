"""The streaming XLSX reader: the values openpyxl gives, from every row the sheet holds.

openpyxl (in its full, non-read-only mode, which sizes a sheet from its cells) is the
independent reference: the reader must give the same rows and values on workbooks
openpyxl writes and on LEXam's real spreadsheets. ``write_xlsx`` builds packages part by
part, for what openpyxl never writes (and the adversarial tests' hostile files).
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import IO, Any

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers.readers import read_table
from pytest_legaleval.importers.xlsx import column_letters, unescape

from ..extras import import_or_skip

DATA = Path(__file__).resolve().parents[1] / "data" / "importers"
MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PACKAGE = "http://schemas.openxmlformats.org/package/2006/relationships"
_TYPES = "application/vnd.openxmlformats-officedocument.spreadsheetml"

Part = str | bytes | Callable[[IO[bytes]], None]


def write_xlsx(path: Path, sheet: Part, strings: Part | None = None, **parts: Part) -> Path:
    """A workbook with one sheet, its shared strings and any other parts, as given.

    A part is text, bytes, or a function writing it in pieces (a large part without
    holding it). ``parts`` may replace the workbook (``workbook``), its relationships
    (``rels``) or add styles (``styles``).
    """
    overrides = (
        f'<Override PartName="/xl/workbook.xml" ContentType="{_TYPES}.sheet.main+xml"/>'
        f'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="{_TYPES}.worksheet+xml"/>'
    )
    relations = f'<Relationship Id="rId1" Type="{REL}/worksheet" Target="worksheets/sheet1.xml"/>'
    if strings is not None:
        overrides += (
            f'<Override PartName="/xl/sharedStrings.xml" ContentType="{_TYPES}.sharedStrings+xml"/>'
        )
        relations += (
            f'<Relationship Id="rId2" Type="{REL}/sharedStrings" Target="sharedStrings.xml"/>'
        )
    if "styles" in parts:
        overrides += f'<Override PartName="/xl/styles.xml" ContentType="{_TYPES}.styles+xml"/>'
        relations += f'<Relationship Id="rId3" Type="{REL}/styles" Target="styles.xml"/>'
    members: dict[str, Part | None] = {
        "[Content_Types].xml": (
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
            'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
            f"{overrides}</Types>"
        ),
        "_rels/.rels": (
            f'<Relationships xmlns="{PACKAGE}"><Relationship Id="rId1" '
            f'Type="{REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>'
        ),
        "xl/workbook.xml": parts.get(
            "workbook",
            f'<workbook xmlns="{MAIN}" xmlns:r="{REL}"><sheets>'
            '<sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>',
        ),
        "xl/_rels/workbook.xml.rels": parts.get(
            "rels", f'<Relationships xmlns="{PACKAGE}">{relations}</Relationships>'
        ),
        "xl/worksheets/sheet1.xml": sheet,
        "xl/sharedStrings.xml": strings,
        "xl/styles.xml": parts.get("styles"),
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as book:
        for name, part in members.items():
            if part is None:
                continue
            if callable(part):
                with book.open(name, "w") as handle:
                    part(handle)
            else:
                book.writestr(name, part)
    return path


def cell(reference: str, value: object) -> str:
    """One ``<c>``: a number, or an inline string."""
    if isinstance(value, int | float):
        return f'<c r="{reference}"><v>{value}</v></c>'
    return f'<c r="{reference}" t="inlineStr"><is><t>{value}</t></is></c>'


def sheet_xml(rows: list[list[object]], dimension: str | None = None) -> str:
    """A sheet of ``rows`` (row 1 first), declaring ``dimension`` if given."""
    body = "".join(
        f'<row r="{r}">'
        + "".join(cell(f"{column_letters(c)}{r}", v) for c, v in enumerate(row) if v is not None)
        + "</row>"
        for r, row in enumerate(rows, start=1)
    )
    declared = f'<dimension ref="{dimension}"/>' if dimension else ""
    return f'<worksheet xmlns="{MAIN}">{declared}<sheetData>{body}</sheetData></worksheet>'


def openpyxl_rows(path: Path) -> list[dict[str, Any]]:
    """The rows as openpyxl's full reader gives them (header row first, blank rows left out)."""
    openpyxl = import_or_skip("openpyxl")
    workbook = openpyxl.load_workbook(path, data_only=True)
    rows = [r for r in workbook.worksheets[0].iter_rows(values_only=True)
            if any(v not in (None, "") for v in r)]  # fmt: skip
    header = [str(v) if v is not None else "" for v in rows[0]]
    return [{n: v for n, v in zip(header, row, strict=False) if n} for row in rows[1:]]


@pytest.mark.parametrize("name", sorted(p.name for p in (DATA / "lexam").glob("*.xlsx")))
def test_lexam_sheets_read_as_openpyxl_reads_them(name: str) -> None:
    assert list(read_table(DATA / "lexam" / name)) == openpyxl_rows(DATA / "lexam" / name)


def test_every_cell_type_reads_as_openpyxl_reads_it(tmp_path: Path) -> None:
    openpyxl = import_or_skip("openpyxl")
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(["text", "int", "float", "bool", "date", "stamp", "clock", "span", "custom"])
    sheet.append(["Auszug", 7, 2.5, True, date(2024, 2, 29), datetime(1999, 12, 31, 23, 59, 1),
                  time(12, 30), timedelta(hours=30, minutes=5), 45000])  # fmt: skip
    sheet.append(["  spaced  ", -3, 1e-20, False, date(1900, 1, 1), datetime(2000, 1, 1),
                  time(0, 0, 1), timedelta(seconds=1), 1.5])  # fmt: skip
    sheet.append(["=1+1", None, None, None, None, None, None, None, None])  # a formula, no value
    sheet["I2"].number_format = "yyyy-mm-dd"
    sheet["I3"].number_format = '0.0 "days"'  # quoted letters are not a date
    sheet["H2"].number_format = sheet["H3"].number_format = "[h]:mm:ss"
    workbook.save(tmp_path / "types.xlsx")
    mine = list(read_table(tmp_path / "types.xlsx"))
    assert mine == openpyxl_rows(tmp_path / "types.xlsx")
    assert mine[0]["custom"] == datetime(2023, 3, 15) and mine[1]["custom"] == 1.5
    assert mine[0]["span"] == timedelta(hours=30, minutes=5)
    assert len(mine) == 2  # a formula without a cached value is blank, as in openpyxl


def test_the_1904_date_system(tmp_path: Path) -> None:
    openpyxl = import_or_skip("openpyxl")
    workbook = openpyxl.Workbook()
    workbook.epoch = openpyxl.utils.datetime.CALENDAR_MAC_1904
    workbook.active.append(["when"])
    workbook.active.append([datetime(2010, 5, 6, 7, 8, 9)])
    workbook.save(tmp_path / "mac.xlsx")
    assert list(read_table(tmp_path / "mac.xlsx")) == [{"when": datetime(2010, 5, 6, 7, 8, 9)}]
    assert openpyxl_rows(tmp_path / "mac.xlsx") == [{"when": datetime(2010, 5, 6, 7, 8, 9)}]


def test_escapes_are_decoded_once_and_never_into_surrogates() -> None:
    assert unescape("a_x000D_b") == "a\rb"
    assert unescape("Auszug_x005F_x0003_ in") == "Auszug_x0003_ in"  # escaped underscore
    assert unescape("_x005f__x0041_") == "_A"
    assert unescape("_xD800_ _x0041") == "_xD800_ _x0041"  # a lone surrogate stays text
    assert column_letters(0) == "A" and column_letters(25) == "Z" and column_letters(26) == "AA"
    assert column_letters(16_383) == "XFD"


def test_shared_rich_and_inline_strings(tmp_path: Path) -> None:
    strings = (
        f'<sst xmlns="{MAIN}"><si><t>id</t></si><si><r><t>Bold </t></r><r><rPr><b/></rPr>'
        "<t>text</t></r><rPh><t>PHONETIC</t></rPh></si><si><t>tab_x0009_here</t></si></sst>"
    )
    sheet = (
        f'<worksheet xmlns="{MAIN}"><sheetData>'
        '<row r="3"><c r="A3" t="s"><v>0</v></c><c r="B3" t="inlineStr"><is><t>note</t></is></c>'
        "</row>"  # rows 1 and 2 are absent: the first non-blank row is the header
        '<row r="4"><c r="A4" t="s"><v>1</v></c><c r="B4" t="inlineStr"><is><r><t>in</t></r>'
        "<r><t>line</t></r></is></c></row>"
        '<row r="5"><c r="A5" t="s"><v>2</v></c><c r="B5" t="str"><v>formula text</v></c></row>'
        '<row r="6"><c r="A6" t="e"><v>#N/A</v></c><c r="B6" t="b"><v>0</v></c></row>'
        "<row><c><v>10</v></c><c><v>1.5E3</v></c></row>"  # neither row nor cells numbered
        "</sheetData></worksheet>"
    )
    book = write_xlsx(tmp_path / "strings.xlsx", sheet, strings)
    assert list(read_table(book)) == [
        {"id": "Bold text", "note": "inline"},
        {"id": "tab\there", "note": "formula text"},
        {"id": "#N/A", "note": False},
        {"id": 10, "note": 1500.0},
    ]


def test_a_bad_cell_fails_its_row_not_the_file(tmp_path: Path) -> None:
    sheet = sheet_xml([["id", "n"], ["a", 1]]).replace(
        "</sheetData>",
        '<row r="3"><c r="A3" t="s"><v>99</v></c></row>'  # no shared string 99
        '<row r="4"><c r="A4"><v>twelve</v></c></row>'  # not a number
        '<row r="5"><c r="ZZZZ5"><v>1</v></c></row>'  # past column XFD
        '<row r="6"><c r="A6" t="inlineStr"><is><t>b</t></is></c><c r="B6"><v>2</v></c></row>'
        "</sheetData>",
    )
    rows = list(read_table(write_xlsx(tmp_path / "bad.xlsx", sheet)))
    assert rows[0] == {"id": "a", "n": 1} and rows[-1] == {"id": "b", "n": 2}
    reasons = [getattr(row, "reason", None) for row in rows[1:-1]]
    assert reasons == [
        "sheet row 3: cell A3 (s) holds '99', which is not a value of its type",
        "sheet row 4: cell A4 (n) holds 'twelve', which is not a value of its type",
        "sheet row 5: cell reference 'ZZZZ5' is not a cell of a sheet",
    ]


def test_sheets_by_name_and_a_missing_one(tmp_path: Path) -> None:
    workbook = (
        f'<workbook xmlns="{MAIN}" xmlns:r="{REL}"><sheets><sheet name="Chart" sheetId="2" '
        'r:id="rId9"/><sheet name="Data" sheetId="1" r:id="rId1"/></sheets></workbook>'
    )
    book = write_xlsx(tmp_path / "named.xlsx", sheet_xml([["q"], ["x"]]), workbook=workbook)
    assert list(read_table(book)) == [{"q": "x"}]  # the first *worksheet*
    assert list(read_table(book, sheet="Data")) == [{"q": "x"}]
    with pytest.raises(ConfigError, match="no sheet 'Other'; sheets: Chart, Data"):
        list(read_table(book, sheet="Other"))
    with pytest.raises(ConfigError, match="sheet 'Chart' is not a worksheet"):
        list(read_table(book, sheet="Chart"))


def test_cells_past_the_header_are_not_kept_but_not_lost_either(tmp_path: Path) -> None:
    rows: list[list[object]] = [["q", "a"], ["x", "y", "stray"], [None, None, "only stray"]]
    book = write_xlsx(tmp_path / "wide.xlsx", sheet_xml(rows))
    # As before: unnamed columns are not part of a row; a row with only such cells is
    # still a row (it fails in the importer), not a blank one.
    assert list(read_table(book)) == [{"q": "x", "a": "y"}, {"q": None, "a": None}]
