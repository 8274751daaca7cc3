"""XLSX rows, streamed: every ``<row>`` the sheet holds, whatever its ``<dimension>`` says.

A reader that trusts a sheet's declared size (openpyxl's read-only mode does) loses the
rows past it without a word: a sheet declaring ``A1:B1`` over five rows imported one. Here
the sheet's XML is parsed as it is inflated, and each ``<row>`` element is a row, so the
rows read are the sheet's real extent; nothing else is consulted.

Sizes are bounded before and while reading (:mod:`.limits`): the package is checked by
:func:`~.xlsx_package.open_package` before anything is inflated; the shared strings are
held in memory, so their part must fit the shared-strings limit; a cell's text is kept
only up to the cell limit and a row's up to the row limit: a row over either is yielded
as an :class:`~.limits.UnreadRow` naming the limit, and the next rows are read as usual.

Values keep their types, as openpyxl's ``data_only`` mode gives them: shared and inline
strings and formula results as text, numbers as ``int`` (no ``.`` or exponent) or
``float``, booleans as ``bool``, error cells as their text (``#N/A``), a number in a date
format as a ``datetime`` (``time``, ``timedelta`` for time-only and elapsed formats), in
the workbook's 1900 or 1904 system. Text is the text Excel shows: ``_xHHHH_`` escapes are
decoded once, left to right, as ECMA-376 (ST_Xstring) says, so a stored
``_x005F_x0003_`` is the seven characters ``_x0003_`` (surrogate code points stay
escaped). The first non-blank row is the header.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers.limits import ReadLimits, UnreadRow, shown_size
from pytest_legaleval.importers.xlsx_package import (
    local_name,
    open_package,
    parse_part,
    read_package,
)

__all__ = ["column_letters", "read_xlsx", "unescape"]

MAX_COLUMNS = 16_384
"""Excel's widest sheet (column ``XFD``); a reference past it is not a cell."""
_ESCAPE = re.compile(r"_x([0-9A-Fa-f]{4})_")
_REFERENCE = re.compile(r"([A-Za-z]{1,3})(\d*)")
_BUILTIN_DATES = frozenset({14, 15, 16, 17, 18, 19, 20, 21, 22, 45, 46, 47})
_BUILTIN_CODES = {45: "mm:ss", 46: "[h]:mm:ss", 47: "mmss.0"}
_LITERALS = re.compile(r'"[^"]*"|\\.|_.|\*.|\[(?!h+\]|m+\]|s+\])[^\]]*\]', re.IGNORECASE)
_DATE_LETTERS = re.compile(r"[dmyhs]", re.IGNORECASE)
_ELAPSED = re.compile(r"\[(h+|m+|s+)\]", re.IGNORECASE)
_EPOCH_1900 = datetime(1899, 12, 30)
_EPOCH_1904 = datetime(1904, 1, 1)


def unescape(text: str) -> str:
    """Decode the ``_xHHHH_`` escapes of OOXML text once (``_x005F_`` is ``_``)."""
    if "_x" not in text:
        return text

    def character(match: re.Match[str]) -> str:
        code = int(match.group(1), 16)
        return match.group(0) if 0xD800 <= code <= 0xDFFF else chr(code)

    return _ESCAPE.sub(character, text)


def column_letters(index: int) -> str:
    """``"A"`` for 0, ``"AA"`` for 26."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


class _Text:
    """Character data kept up to a limit; past it only counted."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.length = 0

    def add(self, data: str) -> None:
        self.length += len(data)
        if self.length <= self.limit:
            self.parts.append(data)
        elif self.parts:
            self.parts = []  # over the limit: drop what was kept, keep counting

    @property
    def over(self) -> bool:
        return self.length > self.limit

    def value(self) -> str:
        return "".join(self.parts)


def _shared_strings(
    book: zipfile.ZipFile, member: str, path: Path, limits: ReadLimits
) -> list[str | int]:
    """Every shared string in order; one over the cell limit is kept as its length only."""
    declared = book.getinfo(member).file_size
    if declared > limits.shared_strings:
        raise ConfigError(
            f"{path}: its shared strings ({member}) are {shown_size(declared)} uncompressed, "
            f"over the shared-strings limit of {shown_size(limits.shared_strings)}; "
            "nothing was read"
        )
    strings: list[str | int] = []
    text = _Text(limits.cell)
    # Counters, not a stack to search: nesting depth must not make parsing quadratic.
    state = {"t": 0, "rPh": 0}

    def start(name: str, attrs: dict[str, str]) -> None:
        nonlocal text
        local = local_name(name)
        if local == "si":
            text = _Text(limits.cell)
        elif local in state:
            state[local] += 1

    def end(name: str) -> None:
        local = local_name(name)
        if local == "si":
            strings.append(text.length if text.over else unescape(text.value()))
        elif local in state:
            state[local] -= 1

    def data(chunk: str) -> None:
        # The text runs of a string, not its phonetic guide (rPh) or formatting.
        if state["t"] > 0 and state["rPh"] == 0:
            text.add(chunk)

    for _ in parse_part(book, member, path, start, end, data):
        pass
    return strings


def _is_date_code(code: str) -> bool:
    first = _LITERALS.sub("", code.split(";")[0])
    return _DATE_LETTERS.search(first) is not None


def _date_styles(book: zipfile.ZipFile, member: str, path: Path) -> dict[int, bool]:
    """Cell style index → whether its number format is elapsed time, for date formats."""
    custom: dict[int, str] = {}
    formats: list[int] = []
    stack: list[str] = []

    def start(name: str, attrs: dict[str, str]) -> None:
        local = local_name(name)
        if local == "numFmt" and attrs.get("numFmtId", "").isdigit():
            custom[int(attrs["numFmtId"])] = attrs.get("formatCode", "")[:1000]
        elif local == "xf" and stack and stack[-1] == "cellXfs":
            number = attrs.get("numFmtId", "0")
            formats.append(int(number) if number.isdigit() else 0)
        stack.append(local)

    def end(name: str) -> None:
        stack.pop()

    for _ in parse_part(book, member, path, start, end):
        pass
    dates: dict[int, bool] = {}
    for style, number in enumerate(formats):
        # A workbook's own format replaces the built-in one of the same number.
        code = custom.get(number)
        if code is None and number in _BUILTIN_DATES:
            code = _BUILTIN_CODES.get(number, "d")
        if code is not None and _is_date_code(code):
            dates[style] = _ELAPSED.search(code.split(";")[0]) is not None
    return dates


def _from_serial(value: float, date1904: bool, elapsed: bool) -> Any:
    """An Excel serial date as Python's date/time value (the number itself if out of range)."""
    try:
        if elapsed:
            return timedelta(milliseconds=round(value * 86_400_000))
        day, fraction = divmod(value, 1)
        clock = timedelta(milliseconds=round(fraction * 86_400_000))
        if 0 <= value < 1 and clock.days == 0:
            return (datetime.min + clock).time()
        if not date1904 and 0 < value < 60:
            day += 1  # Excel's 1900 system counts a 29 February 1900 that never was
        return (_EPOCH_1904 if date1904 else _EPOCH_1900) + timedelta(days=day) + clock
    except (OverflowError, ValueError):
        return value


class _Sheet:
    """expat handlers that turn a sheet's XML into rows, kept in :attr:`ready` until taken."""

    def __init__(
        self,
        strings: list[str | int],
        dates: dict[int, bool],
        date1904: bool,
        limits: ReadLimits,
    ) -> None:
        self.strings = strings
        self.dates = dates
        self.date1904 = date1904
        self.limits = limits
        self.width = MAX_COLUMNS  # the header's, once it is known: cells past it are not kept
        self.ready: list[tuple[int, dict[int, Any] | str, bool]] = []
        self.expanded = 0  # the text of every row kept so far, shared strings counted each time
        self._row = 0
        self._cells: dict[int, Any] = {}
        self._size = 0
        self._problem: str | None = None
        self._beyond = False
        self._column = -1
        self._kind = "n"
        self._style = 0
        self._text: _Text | None = None
        self._capture = False
        # How deep inside <c>, <is> and <rPh> the parser is: counters, not a stack to
        # search, so that deep nesting cannot make parsing quadratic.
        self._open = {"c": 0, "is": 0, "rPh": 0}

    def start(self, name: str, attrs: dict[str, str]) -> None:
        local = local_name(name)
        if local in self._open:
            self._open[local] += 1
        if local == "row":
            number = attrs.get("r", "")
            self._row = int(number) if number.isdigit() else self._row + 1
            self._cells, self._size, self._problem = {}, 0, None
            self._beyond, self._column = False, -1
        elif local == "c":
            self._start_cell(attrs)
        else:
            self._capture = self._in_cell_text(local)
            if self._capture and self._text is None:
                self._text = _Text(self.limits.cell)

    def _in_cell_text(self, local: str) -> bool:
        # A cell's value: <v>, or an inline string's text runs (not its phonetic guide).
        if not self._open["c"] or self._open["rPh"]:
            return False
        if self._kind == "inlineStr":
            return local == "t" and self._open["is"] > 0
        return local == "v"

    def _start_cell(self, attrs: dict[str, str]) -> None:
        reference = attrs.get("r", "")
        if reference:
            match = _REFERENCE.fullmatch(reference)
            column = -1
            if match:
                for letter in match.group(1).upper():
                    column = (column + 1) * 26 + ord(letter) - 65
                column = column if column >= 0 else -1
            self._column = column
        else:
            self._column += 1
        self._kind = attrs.get("t", "n")
        style = attrs.get("s", "0")
        self._style = int(style) if style.isdigit() else 0
        self._text = None
        if not 0 <= self._column < MAX_COLUMNS:
            self._fail(f"cell reference {reference[:20]!r} is not a cell of a sheet")

    def text(self, data: str) -> None:
        if self._capture and self._text is not None:
            self._text.add(data)

    def end(self, name: str) -> None:
        local = local_name(name)
        if local in self._open:
            self._open[local] -= 1
        self._capture = False
        if local == "c":
            self._end_cell()
        elif local == "row":
            row = self._problem if self._problem is not None else self._cells
            self.ready.append((self._row, row, self._beyond))
            if self._problem is None:
                self.expanded += self._size

    def _fail(self, reason: str) -> None:
        if self._problem is None:
            self._problem = reason
        self._cells = {}

    def _end_cell(self) -> None:
        found, self._text = self._text, None
        if self._problem is not None or not 0 <= self._column < MAX_COLUMNS:
            return
        where = f"cell {column_letters(self._column)}{self._row}"
        if found is not None and found.over:
            self._fail(
                f"{where} holds {shown_size(found.length)} of text, over the cell limit "
                f"of {shown_size(self.limits.cell)}"
            )
            return
        value, size = self._value(found.value() if found is not None else None, where)
        if value is None:
            return
        if self._column >= self.width:
            self._beyond = self._beyond or value != ""
            return
        self._size += size
        if self._size > self.limits.row:
            self._fail(f"the row holds more than {shown_size(self.limits.row)} of text, "
                       "over the row limit")  # fmt: skip
            return
        self._cells[self._column] = value

    def _value(self, raw: str | None, where: str) -> tuple[Any, int]:
        kind = self._kind
        if kind == "inlineStr" and raw is not None:
            return unescape(raw), len(raw)
        if not raw:
            return None, 0
        try:
            if kind == "s":
                shared = self.strings[int(raw)]
                if isinstance(shared, int):
                    self._fail(f"{where} holds {shown_size(shared)} of text, over the cell "
                               f"limit of {shown_size(self.limits.cell)}")  # fmt: skip
                    return None, 0
                return shared, len(shared)
            if kind == "str":
                return unescape(raw), len(raw)
            if kind == "b":
                return bool(int(raw)), 1
            if kind == "e":
                return raw, len(raw)
            if kind == "d":
                return datetime.fromisoformat(raw), len(raw)
            number: int | float = float(raw) if any(c in raw for c in ".eE") else int(raw)
        except (ValueError, IndexError):
            self._fail(f"{where} ({kind}) holds {raw[:40]!r}, which is not a value of its type")
            return None, 0
        elapsed = self.dates.get(self._style)
        if elapsed is not None:
            return _from_serial(float(number), self.date1904, elapsed), len(raw)
        return number, len(raw)

    def take(self) -> list[tuple[int, dict[int, Any] | str, bool]]:
        ready, self.ready = self.ready, []
        return ready


def _blank(cells: dict[int, Any]) -> bool:
    return all(value is None or value == "" for value in cells.values())


def read_xlsx(path: Path, sheet: str | None, limits: ReadLimits) -> Iterator[dict[str, Any]]:
    """Yield the rows of one sheet (default: the first worksheet) as header → value dicts.

    Blank rows are skipped; a row over a size limit is an :class:`UnreadRow`.

    Raises:
        ConfigError: an unreadable package, a sheet that does not exist, a part over a
            limit, a DTD or malformed XML (the message names the part or the limit).

    """
    book = open_package(path, limits)
    with book:
        package = read_package(book, path)
        names = [s.name for s in package.sheets]
        if sheet is not None:
            chosen = [s for s in package.sheets if s.name == sheet]
            if not chosen:
                raise ConfigError(f"{path}: no sheet {sheet!r}; sheets: {', '.join(names)}")
        else:
            chosen = [s for s in package.sheets if s.member is not None]
            if not chosen:
                raise ConfigError(f"{path}: the workbook has no worksheet")
        member = chosen[0].member
        if member is None:
            raise ConfigError(f"{path}: sheet {chosen[0].name!r} is not a worksheet")
        strings = (
            _shared_strings(book, package.shared_strings, path, limits)
            if package.shared_strings
            else []
        )
        dates = _date_styles(book, package.styles, path) if package.styles else {}
        parser = _Sheet(strings, dates, package.date1904, limits)
        header: list[str] | None = None
        for _ in parse_part(book, member, path, parser.start, parser.end, parser.text):
            if parser.expanded > limits.file:
                # One shared string named by many cells: small on disk, huge once read.
                raise ConfigError(
                    f"{path}: its rows hold more than {shown_size(limits.file)} of text, over "
                    "the file limit (shared strings repeated past it); import stopped"
                )
            for number, row, beyond in parser.take():
                if header is None:
                    if isinstance(row, str):
                        raise ConfigError(f"{path}: the header row (sheet row {number}): {row}")
                    if _blank(row):
                        continue
                    width = max(row) + 1
                    header = [str(row[i]) if row.get(i) is not None else "" for i in range(width)]
                    parser.width = width
                elif isinstance(row, str):
                    yield UnreadRow(f"sheet row {number}: {row}")
                elif beyond or not _blank(row):
                    yield {name: row.get(i) for i, name in enumerate(header) if name}
