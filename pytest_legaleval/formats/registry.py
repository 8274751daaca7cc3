"""The format registry: adding a format is adding one module here."""

from __future__ import annotations

from pytest_legaleval.formats import contract_v1, legal_eval_v1
from pytest_legaleval.formats.base import DatasetFormat

__all__ = ["FORMATS", "REGISTRY"]

# Order matters only for reading: detection requires exactly one format to claim a file.
_MODULES: tuple[DatasetFormat, ...] = (legal_eval_v1, contract_v1)

REGISTRY: dict[str, DatasetFormat] = {module.NAME: module for module in _MODULES}
"""``--dataset-format`` name -> format module."""

FORMATS: tuple[str, ...] = tuple(REGISTRY)
"""Every format name ``--dataset-format`` accepts besides ``auto``."""
