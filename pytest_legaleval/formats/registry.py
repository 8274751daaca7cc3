"""The format registry: adding a format is adding one module (or format object) here."""

from __future__ import annotations

from pytest_legaleval.formats import contract_v1, legal_eval_v1, legal_eval_v1_upload
from pytest_legaleval.formats.base import DatasetFormat
from pytest_legaleval.formats.rag import RAG_QA, RAG_SUMMARIES
from pytest_legaleval.formats.turing import TURING_FORMATS

__all__ = ["FORMATS", "REGISTRY"]

# Order matters only for reading: detection requires exactly one format to claim a file.
_MODULES: tuple[DatasetFormat, ...] = (
    legal_eval_v1,
    contract_v1,
    RAG_QA,
    RAG_SUMMARIES,
    *TURING_FORMATS,
    legal_eval_v1_upload,  # never detected: the service names it for uploaded rows
)

REGISTRY: dict[str, DatasetFormat] = {module.NAME: module for module in _MODULES}
"""``--dataset-format`` name -> format module."""

FORMATS: tuple[str, ...] = tuple(REGISTRY)
"""Every format name ``--dataset-format`` accepts besides ``auto``."""
