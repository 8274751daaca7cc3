"""An XLSX file as a zip package: checked before any part is read, parsed without a DTD.

Before a single part is decompressed, :func:`open_package` checks what the zip declares:
how many parts it has (its end record, read before the central directory is loaded), and
for every part its uncompressed size, its compression ratio and their sum, against
:class:`~pytest_legaleval.importers.limits.ReadLimits`. A zip bomb is refused unread.
Python's :mod:`zipfile` then never inflates a part past its declared size (a part that
would is a CRC error), so the declared sizes bound what is read.

Every part is parsed by :func:`parse_part`, with expat, in chunks: a document type
declaration (the vehicle of billion-laughs and external entities, which no spreadsheet
needs) is refused when it starts, and malformed XML is a
:class:`~pytest_legaleval.errors.ConfigError` naming the part, never a parser traceback.
"""

from __future__ import annotations

import posixpath
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.parsers import expat

from pytest_legaleval.errors import ConfigError, LegalEvalError
from pytest_legaleval.importers.limits import ReadLimits, shown_size

__all__ = [
    "MAX_PARTS",
    "Package",
    "SheetRef",
    "local_name",
    "open_package",
    "parse_part",
    "read_package",
]

MAX_PARTS = 10_000
"""Parts an XLSX may have (real workbooks have tens); more is refused before loading."""
_CHUNK = 64 * 1024
_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"
_RELS_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError,
                NotImplementedError)  # fmt: skip


def local_name(name: str) -> str:
    """``row`` for expat's namespaced ``http://…/main}row`` (transitional or strict)."""
    return name.rpartition("}")[2]


class _Refused(LegalEvalError):
    """Raised from inside expat when a part declares a DTD."""


def _refuse_dtd(*_: object) -> None:
    raise _Refused


def _refuse_external(
    context: str, base: str | None, system_id: str | None, public_id: str | None
) -> int:
    raise _Refused


def parse_part(
    book: zipfile.ZipFile,
    member: str,
    path: Path,
    start: Callable[[str, dict[str, str]], None],
    end: Callable[[str], None],
    text: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Parse one part with expat, yielding after each chunk (so callers can stream rows).

    Raises:
        ConfigError: a DTD, malformed XML, or a part that cannot be inflated.

    """
    parser = expat.ParserCreate(namespace_separator="}")
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = _refuse_dtd
    parser.EntityDeclHandler = _refuse_dtd
    parser.ExternalEntityRefHandler = _refuse_external
    parser.buffer_text = True
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    if text is not None:
        parser.CharacterDataHandler = text
    try:
        with book.open(member) as stream:
            while chunk := stream.read(_CHUNK):
                parser.Parse(chunk, False)
                yield
        parser.Parse(b"", True)
        yield
    except _Refused:
        raise ConfigError(
            f"{path}: {member} declares a DTD (entities); a spreadsheet never needs one "
            "and it is refused (entity expansion, external entities)"
        ) from None
    except expat.ExpatError as exc:
        raise ConfigError(f"{path}: {member} is not well-formed XML ({exc})") from None
    except _READ_ERRORS as exc:
        raise ConfigError(f"{path} is not a readable XLSX file: {member}: {exc}") from None


def _parts_declared(path: Path) -> int:
    """The number of parts the zip's end record declares, read before anything else."""
    with path.open("rb") as handle:
        size = handle.seek(0, 2)
        handle.seek(max(0, size - (22 + 65535)))
        tail = handle.read()
        at = tail.rfind(_EOCD)
        if at < 0 or len(tail) - at < 22:
            raise ConfigError(f"{path} is not a readable XLSX file: not a zip file")
        (entries,) = struct.unpack_from("<H", tail, at + 10)
        locator = at - 20
        if entries != 0xFFFF or locator < 0 or tail[locator : locator + 4] != _EOCD64_LOCATOR:
            return int(entries)
        (offset,) = struct.unpack_from("<Q", tail, locator + 8)
        handle.seek(offset)
        record = handle.read(56)
    if len(record) < 40 or record[:4] != b"PK\x06\x06":
        raise ConfigError(f"{path} is not a readable XLSX file: a damaged zip64 end record")
    (entries64,) = struct.unpack_from("<Q", record, 32)
    return int(entries64)


def _check_parts(book: zipfile.ZipFile, path: Path, limits: ReadLimits) -> None:
    total = 0
    # Every part, not just those named .xml: a relationship may name any part as a sheet.
    for info in book.infolist():
        size = info.file_size
        total += size
        ratio = size / max(info.compress_size, 1)
        if size > limits.ratio_floor and ratio > limits.compression_ratio:
            raise ConfigError(
                f"{path}: part {info.filename} inflates {shown_size(info.compress_size)} to "
                f"{shown_size(size)} ({ratio:,.0f}:1), over the XLSX compression-ratio limit "
                f"of {limits.compression_ratio}:1 (a zip bomb?); nothing was read"
            )
        if total > limits.file:
            raise ConfigError(
                f"{path}: its parts declare more than {shown_size(limits.file)} "
                "uncompressed, over the file limit; nothing was read"
            )


def open_package(path: Path, limits: ReadLimits) -> zipfile.ZipFile:
    """The zip of an XLSX file, its declared sizes checked (nothing inflated yet).

    Raises:
        ConfigError: not a zip, too many parts, a part over the compression-ratio limit,
            or parts over the file limit in all (each message names the limit).

    """
    parts = _parts_declared(path)
    if parts > MAX_PARTS:
        raise ConfigError(
            f"{path}: the zip declares {parts:,} parts, over the XLSX limit of "
            f"{MAX_PARTS:,}; nothing was read"
        )
    try:
        book = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ConfigError(f"{path} is not a readable XLSX file: {exc}") from None
    try:
        _check_parts(book, path, limits)
    except ConfigError:
        book.close()
        raise
    return book


@dataclass(frozen=True)
class SheetRef:
    """One sheet the workbook lists."""

    name: str
    member: str | None
    """The sheet's part, or ``None`` when it is not a worksheet (a chart sheet)."""


@dataclass(frozen=True)
class Package:
    """What the workbook part says: its sheets, its shared strings and styles, its epoch."""

    sheets: tuple[SheetRef, ...]
    shared_strings: str | None
    styles: str | None
    date1904: bool


def _relations(book: zipfile.ZipFile, path: Path, member: str) -> dict[str, tuple[str, str]]:
    """``Id`` → ``(type, part name)`` of the relationships part ``member`` (internal ones)."""
    base = posixpath.dirname(posixpath.dirname(member))  # xl/_rels/x.rels → xl
    found: dict[str, tuple[str, str]] = {}

    def start(name: str, attrs: dict[str, str]) -> None:
        if local_name(name) != "Relationship" or attrs.get("TargetMode") == "External":
            return
        target = attrs.get("Target", "")
        part = target.lstrip("/") if target.startswith("/") else posixpath.join(base, target)
        found[attrs.get("Id", "")] = (attrs.get("Type", ""), posixpath.normpath(part))

    if member in book.NameToInfo:
        for _ in parse_part(book, member, path, start, lambda name: None):
            pass
    return found


def read_package(book: zipfile.ZipFile, path: Path) -> Package:
    """The workbook's sheets and parts, from ``_rels/.rels`` and the workbook part.

    Raises:
        ConfigError: no workbook part, or a part that is not well-formed.

    """
    office = [p for t, p in _relations(book, path, "_rels/.rels").values() if
              t.endswith("/officeDocument")]  # fmt: skip
    workbook = office[0] if office else "xl/workbook.xml"
    if workbook not in book.NameToInfo:
        raise ConfigError(f"{path} is not a readable XLSX file: no workbook part")
    folder, name = posixpath.split(workbook)
    relations = _relations(book, path, posixpath.join(folder, "_rels", f"{name}.rels"))
    listed: list[tuple[str, str]] = []
    flags: dict[str, Any] = {"date1904": False}

    def start(tag: str, attrs: dict[str, str]) -> None:
        local = local_name(tag)
        if local == "sheet":
            listed.append((attrs.get("name", ""), attrs.get(f"{_RELS_NS}}}id", "")))
        elif local == "workbookPr":
            flags["date1904"] = attrs.get("date1904", "").lower() in ("1", "true")

    for _ in parse_part(book, workbook, path, start, lambda tag: None):
        pass
    sheets = []
    for sheet_name, rel in listed:
        kind, part = relations.get(rel, ("", ""))
        worksheet = kind.endswith("/worksheet") and part in book.NameToInfo
        sheets.append(SheetRef(sheet_name, part if worksheet else None))

    def part_of(suffix: str) -> str | None:
        found = [p for t, p in relations.values() if t.endswith(suffix) and p in book.NameToInfo]
        return found[0] if found else None

    return Package(
        tuple(sheets), part_of("/sharedStrings"), part_of("/styles"), bool(flags["date1904"])
    )
