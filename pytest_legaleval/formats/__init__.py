"""Dataset formats: detection, reading and validation into canonical ``Record`` objects.

One module per format (:mod:`.legal_eval_v1`, :mod:`.contract_v1`), listed in
:mod:`.registry`; nothing downstream knows which format a record came from.
A ``SOURCE:PATH`` argument (a benchmark's upstream files) is
resolved to its imported file by ``importers.cache`` before it reaches this package.
"""

from __future__ import annotations

from pytest_legaleval.formats.base import DatasetInfo, Entry, LoadResult, RejectedRecord
from pytest_legaleval.formats.detect import detect_format
from pytest_legaleval.formats.loader import DatasetStream, dataset_files, load_dataset
from pytest_legaleval.formats.registry import FORMATS

__all__ = [
    "FORMATS",
    "DatasetInfo",
    "DatasetStream",
    "Entry",
    "LoadResult",
    "RejectedRecord",
    "dataset_files",
    "detect_format",
    "load_dataset",
]
