"""Importers: public legal benchmarks, in their upstream layouts, as ``legal_eval_v1``.

What it is for
    ``legaleval import SOURCE PATH... --out FILE.jsonl`` and ``--dataset SOURCE:PATH``: the
    files a benchmark publishes (LEXam's spreadsheets, LegalBench's task folders, the
    Parquet/JSONL rows of PRBench, APEX, LAR-ECHR and INCLUDE, LBR's curated files) become
    validated records with stable ids, without a hand-written mapping. The generic
    mapping converter of ``legaleval convert --map`` lives here too.

How it is built
    One small module per source (:mod:`.lexam`, :mod:`.legalbench`, :mod:`.prbench`,
    :mod:`.apex`, :mod:`.lar_echr`, :mod:`.include`, :mod:`.lbr`), each an
    :class:`~.base.Importer` that yields one :class:`~.base.SourceRow` per upstream row:
    the record, or why there is none. Each module's docstring cites where its layout was
    read. One shared writer (:func:`~.writer.write_records`) validates every record with
    :func:`pytest_legaleval.validation.check_legal_eval_row` (the check ``--dataset``
    applies), counts each row as written, failed or skipped with its reason, and streams
    the output through a temporary file. :mod:`.readers` reads every format within the
    size limits of :mod:`.limits`: XLSX with the standard library (:mod:`.xlsx`, streamed,
    no DTD), Parquet with pyarrow from the ``[import]`` extra (:mod:`.parquet`); a row over
    a limit comes as an :class:`~.limits.UnreadRow` and fails. :mod:`.cache` turns
    ``SOURCE:PATH`` into a JSONL file under ``.legaleval/imports/`` keyed by the content
    hash of the inputs, and remembers the source folder its attachments resolve from.

Main names
    :func:`run_import`, :func:`write_records`, :func:`get_importer`, :data:`IMPORTER_NAMES`,
    :func:`resolve_import`, :class:`ImportOptions`, :class:`ImportSummary`; the converter's
    :func:`convert` and :func:`load_mapping`.

What it must never import
    ``pytest`` or ``_pytest`` (a pure package, usable without a test session), the pytest
    layer (:mod:`pytest_legaleval.pytest`, ``plugin``), :mod:`pytest_legaleval.pipeline`, the
    engine, grading, run, metrics or report packages, :mod:`pytest_legaleval.cli`, and
    :mod:`pytest_legaleval.formats` (the loader imports *this* package, lazily, for
    ``SOURCE:PATH``). It may import ``errors`` and ``validation``. Nothing here opens a
    network connection: every input is a local file.
"""

from __future__ import annotations

from pytest_legaleval.importers.base import Importer, ImportOptions, SourceRow, choice_id
from pytest_legaleval.importers.cache import IMPORT_CACHE_DIR, resolve_import, split_import_arg
from pytest_legaleval.importers.command import run_import
from pytest_legaleval.importers.convert import ConversionFailed, ConversionResult, convert
from pytest_legaleval.importers.mapping import ConversionMapping, load_mapping
from pytest_legaleval.importers.registry import IMPORTER_NAMES, get_importer
from pytest_legaleval.importers.writer import Failure, ImportSummary, write_records

__all__ = [
    "IMPORTER_NAMES",
    "IMPORT_CACHE_DIR",
    "ConversionFailed",
    "ConversionMapping",
    "ConversionResult",
    "Failure",
    "ImportOptions",
    "ImportSummary",
    "Importer",
    "SourceRow",
    "choice_id",
    "convert",
    "get_importer",
    "load_mapping",
    "resolve_import",
    "run_import",
    "split_import_arg",
    "write_records",
]
