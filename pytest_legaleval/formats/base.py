"""Types every format shares: what a load returns and what a format module provides."""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pytest_legaleval.errors import DatasetRejected, InvalidValue
from pytest_legaleval.records import Record, SourceRef
from pytest_legaleval.validation import AllRecordsRejected, RecordError
from pytest_legaleval.validation.duplicates import reject_duplicate_keys

__all__ = [
    "JSON_DECODER",
    "JSON_WHITESPACE",
    "UTF8_BOM",
    "DatasetFormat",
    "DatasetInfo",
    "Entry",
    "EntryTally",
    "FileLoad",
    "FileScan",
    "LoadContext",
    "LoadResult",
    "RejectedRecord",
    "decode_document",
    "display_name",
    "drain",
    "read_file",
]

UTF8_BOM = b"\xef\xbb\xbf"
JSON_WHITESPACE = b" \t\r\n"
"""The bytes JSON counts as whitespace (``bytes.strip()`` would also take \\v and \\f)."""


def _reject_constant(name: str) -> object:
    raise InvalidValue(f"{name} is not a JSON value")


JSON_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
"""Strict JSON: Python's ``NaN``/``Infinity`` extensions are errors. One shared instance,
because ``json.loads`` with an argument builds a new decoder per call."""


def decode_document(text: str, *, where: str) -> object:
    """Parse one whole JSON document strictly (as :data:`JSON_DECODER`) and refuse repeated keys.

    A document is parsed once, so the repeats are noticed during that parse (a hook that
    compares each object's size with its number of members) rather than by counting
    colons, which would need a second serialization of the whole document.

    Raises:
        ValueError: not JSON (``json.JSONDecodeError``) or a ``NaN``/``Infinity``.
        RecursionError: nested too deeply to parse.
        DatasetRejected: some object repeats a key (HTTP 400, naming it).

    """
    repeated = False

    def pairs_hook(pairs: list[tuple[str, object]]) -> dict[str, object]:
        nonlocal repeated
        obj = dict(pairs)
        if len(obj) != len(pairs):
            repeated = True
        return obj

    value = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=pairs_hook).decode(
        text
    )
    if repeated:
        reject_duplicate_keys(text, where=where)
    return value


def display_name(path: Path) -> str:
    r"""Return the file name for messages, undecodable bytes shown as ``\xNN`` escapes.

    Messages end up in JSON artifacts, which cannot hold the lone surrogates Python uses
    for file-name bytes that are not UTF-8.
    """
    try:
        raw = path.name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = path.name.encode("utf-8", "backslashreplace")
    return raw.decode("utf-8", "backslashreplace")


@dataclass(frozen=True, slots=True)
class RejectedRecord:
    """A record that failed validation; it becomes an ERROR test item."""

    source: SourceRef
    """Where the record was read."""
    record_id: str | None
    """Its id, when it has a usable one."""
    dataset: str | None
    """Its dataset name, when known."""
    errors: tuple[RecordError, ...]
    """Every problem found, in the contract's ``record_errors`` shape."""


@dataclass(frozen=True, slots=True)
class DatasetInfo:
    """One loaded dataset file."""

    path: str
    """The file."""
    format: str
    """The format that read it (``legal_eval_v1``, ``contract_v1``)."""
    dataset_id: str
    """The contract's ``dataset_id``; for JSONL the valid rows' ``dataset`` names, sorted
    and joined with ``+`` (a file without valid rows is rejected, so there is always one)."""
    dataset_version: str | None
    """The contract's ``dataset_version``; for JSONL the rows' common
    ``metadata.dataset_version``, if they share exactly one."""
    schema_version: str
    """``1.0`` or ``legal_eval_v1``."""
    total_records: int
    """Records (non-blank rows) in the file."""
    accepted_records: int
    """Records that passed validation."""
    sha256: str
    """SHA-256 of the file's bytes."""
    placeholder_records: int = 0
    """``{}`` placeholders read as missing entries (Turing list files); not in the totals."""
    skipped_records: int = 0
    """Valid entries deliberately not turned into records (a Turing benchmark's failed and
    ill-posed questions). Files that are not datasets (Turing answers, critiques, debates,
    evaluations) count their valid entries in ``accepted_records`` but yield no records."""


Entry = Record | RejectedRecord


@dataclass
class LoadResult:
    """Everything :func:`~pytest_legaleval.formats.load_dataset` read, in file order."""

    datasets: list[DatasetInfo] = field(default_factory=list)
    """One entry per file, in load order."""
    entries: list[Entry] = field(default_factory=list)
    """Valid and rejected records, files in the given order, records in file order."""

    @property
    def records(self) -> list[Record]:
        """The valid records."""
        return [entry for entry in self.entries if isinstance(entry, Record)]

    @property
    def rejected(self) -> list[RejectedRecord]:
        """The records that failed validation."""
        return [entry for entry in self.entries if isinstance(entry, RejectedRecord)]

    @property
    def errors(self) -> list[RecordError]:
        """Every record error, flattened in entry order."""
        return [error for entry in self.rejected for error in entry.errors]


FileScan = Generator[Entry, None, DatasetInfo]
"""A format's scan of one file: its entries one at a time, then (returned) the file's
``DatasetInfo``. A dataset-level failure is raised when it is known, at the latest once the
last entry has been yielded, so a caller that needs the verdict before using the entries
drains the scan first."""


@dataclass(frozen=True, slots=True)
class FileLoad:
    """One file read into memory: its info and every entry."""

    info: DatasetInfo
    entries: list[Entry]


def drain(scan: FileScan, sink: Callable[[Entry], object]) -> DatasetInfo:
    """Feed every entry of ``scan`` to ``sink`` and return the file's info."""
    while True:
        try:
            entry = next(scan)
        except StopIteration as stop:
            info: DatasetInfo = stop.value
            return info
        sink(entry)


def read_file(fmt: DatasetFormat, path: Path, context: LoadContext | None = None) -> FileLoad:
    """Read one file into memory with format ``fmt``.

    Raises:
        DatasetRejected: a dataset-level failure of this file.

    """
    entries: list[Entry] = []
    info = drain(fmt.scan(path, context or LoadContext()), entries.append)
    return FileLoad(info, entries)


class EntryTally:
    """Counts a file's entries as they stream by, for the file's dataset-level verdict.

    Rejected records' errors are kept only while no record has been accepted: they are
    needed only for the all-records-rejected error, and a streamed file is not held.
    """

    __slots__ = ("_errors", "accepted", "total")

    def __init__(self) -> None:
        self.total = 0
        self.accepted = 0
        self._errors: list[RecordError] | None = []

    def add(self, entry: Entry) -> Entry:
        """Count ``entry`` and return it."""
        self.total += 1
        if isinstance(entry, Record):
            self.accepted += 1
            self._errors = None
        elif self._errors is not None:
            self._errors.extend(entry.errors)
        return entry

    def verdict(self, name: str) -> None:
        """Reject a file without rows, or whose every row failed validation.

        Raises:
            DatasetRejected: no rows (400).
            AllRecordsRejected: every row invalid (400, with their record errors).

        """
        if not self.total:
            raise DatasetRejected(
                f"records must have at least 1 item: the file has no rows ({name})"
            )
        if not self.accepted:
            raise AllRecordsRejected(
                dataset=name, record_errors=tuple(self._errors or ()), rejected_records=self.total
            )


@dataclass
class LoadContext:
    """State shared by the files of one :func:`load_dataset` call."""

    _seen: dict[str, int] = field(default_factory=dict)
    """Row id -> where it first appeared, packed as ``place << 32 | number``."""
    _places: list[tuple[str, str]] = field(default_factory=list)
    """``(prefix, suffix)`` of a place (``("a.jsonl line ", "")``), by number."""

    def first_seen(self, row_id: str, prefix: str, number: int, suffix: str = "") -> str | None:
        """Note that ``row_id`` is at ``f"{prefix}{number}{suffix}"``.

        Row ids are unique across the files of a load, so a repeat in any later row or
        file is a ``duplicate_record_id``. Returns where the id first appeared when it is
        a repeat, else ``None``. A place is kept as a number, not as text: a 50,000-row
        load keeps one small int per row instead of one string.
        """
        packed = self._seen.get(row_id)
        if packed is not None:
            first_prefix, first_suffix = self._places[packed >> 32]
            return f"{first_prefix}{packed & 0xFFFFFFFF}{first_suffix}"
        if not self._places or self._places[-1] != (prefix, suffix):
            self._places.append((prefix, suffix))
        self._seen[row_id] = (len(self._places) - 1) << 32 | number
        return None


class DatasetFormat(Protocol):
    """What a format module provides; adding a format is adding one such module."""

    NAME: str
    """The ``--dataset-format`` name."""
    SUFFIXES: tuple[str, ...]
    """File suffixes that suggest the format when the content cannot tell."""

    def sniff(self, first_line: object, head: str) -> bool:
        """Say whether a file looks like this format.

        Args:
            first_line: the first non-blank line parsed as JSON, or ``None`` when it does
                not parse (a pretty-printed document, a truncated head).
            head: the start of the file, decoded leniently, BOM and leading blanks removed.

        """

    def scan(self, path: Path, context: LoadContext) -> FileScan:
        """Read and validate one file, yielding its entries in file order (see ``FileScan``).

        Raises:
            DatasetRejected: a dataset-level failure of this file.

        """
