"""How much an importer reads: size limits checked before the bytes are read.

An upstream file is hostile until checked: a 1 MB XLSX can inflate to a 1 GB cell, an
11 KB Parquet file can expand into gigabytes of repeated strings, and a sheet's declared
size can hide rows. So each reader checks what a file *declares* (a zip member's
uncompressed size and compression ratio, a Parquet row group's sizes) before reading it,
and bounds what it *finds* (a cell, a row) as it reads, never holding more than a limit.

Two outcomes, as the README's limits table says:

- a file over a file-level limit is a usage error (:class:`~pytest_legaleval.errors.
  ConfigError`) raised before its data is read, naming the limit;
- a cell or row over its limit is one failed row (:class:`UnreadRow`), counted with the
  limit named; the rows around it are read as usual.

Text is measured in characters (what a parser holds), binary Parquet data in bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_LIMITS",
    "MiB",
    "ReadLimits",
    "UnreadRow",
    "shown_size",
]

MiB = 1024 * 1024


@dataclass(frozen=True)
class ReadLimits:
    """The size limits of one read (the defaults are the README's; tests pass smaller ones).

    Attributes:
        cell: one cell (a spreadsheet cell, a CSV field, a JSON field, a Parquet value).
        row: all the cells of one row (a JSONL line, a CSV record).
        file: the uncompressed data of one input file: the XLSX parts read, the Parquet
            column chunks as its metadata declares them, a CSV/TSV/JSON/JSONL file's bytes.
        json_document: a ``.json`` file, which is parsed whole.
        shared_strings: an XLSX's shared-strings part, which is held in memory.
        compression_ratio: an XLSX part's uncompressed size over its compressed size (parts
            of more than :attr:`ratio_floor` bytes; real spreadsheets stay under 10).
        ratio_floor: parts this small are never refused for their ratio.
        row_group: one Parquet row group, uncompressed, as its metadata declares it.
        batch: the rows of a Parquet batch turned into Python values at once.

    """

    cell: int = 8 * MiB
    row: int = 32 * MiB
    file: int = 1024 * MiB
    json_document: int = 128 * MiB
    shared_strings: int = 256 * MiB
    compression_ratio: int = 100
    ratio_floor: int = 1 * MiB
    row_group: int = 512 * MiB
    batch: int = 64 * MiB


DEFAULT_LIMITS = ReadLimits()
"""The limits every importer reads with (the README's table)."""


def shown_size(size: int) -> str:
    """``size`` bytes for a message: ``"512 B"``, ``"8.0 MiB"``, ``"1.5 GiB"``."""
    if size < 1024:
        return f"{size} B"
    if size < MiB:
        return f"{size / 1024:.1f} KiB"
    if size < 1024 * MiB:
        return f"{size / MiB:.1f} MiB"
    return f"{size / (1024 * MiB):.1f} GiB"


class UnreadRow(dict[str, Any]):
    """A row the reader refused to hold (a cell or the row over its limit), cells dropped.

    Readers yield it in the row's place so the row is counted as failed with
    :attr:`reason`, never skipped: ``SourceRow.built`` and the converter turn it into a
    failure. It is an empty ``dict`` so that code unaware of it still sees a row without
    cells (and fails it) rather than crashing.
    """

    def __init__(self, reason: str) -> None:
        """Keep the reason (which names the limit)."""
        super().__init__()
        self.reason = reason

    def __repr__(self) -> str:
        """``UnreadRow('…')``."""
        return f"UnreadRow({self.reason!r})"
