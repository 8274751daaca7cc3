"""The importers by name; each module is imported only when its source is asked for."""

from __future__ import annotations

import importlib

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers.base import Importer

__all__ = ["IMPORTER_NAMES", "get_importer"]

_MODULES: dict[str, str] = {
    "lexam": "lexam",
    "legalbench": "legalbench",
    "prbench": "prbench",
    "apex": "apex",
    "lar_echr": "lar_echr",
    "include": "include",
    "lbr": "lbr",
}
IMPORTER_NAMES: tuple[str, ...] = tuple(_MODULES)
"""Every ``SOURCE`` of ``legaleval import`` and of ``--dataset SOURCE:PATH``."""


def get_importer(name: str) -> Importer:
    """The importer called ``name``.

    Raises:
        ConfigError: no importer has that name.

    """
    if name not in _MODULES:
        raise ConfigError(
            f"unknown import source {name!r}; choose one of: {', '.join(IMPORTER_NAMES)}"
        )
    module = importlib.import_module(f"pytest_legaleval.importers.{_MODULES[name]}")
    importer = module.IMPORTER
    assert isinstance(importer, Importer)
    return importer
