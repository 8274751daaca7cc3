"""Tests that need an optional extra skip without it, saying what to install.

The README's test command runs with ``[dev]`` (which brings ``[import]``, ``[serve]``,
``[async]`` and ``[stats]``) and without ``[local]`` (llama.cpp and a GGUF model) or
Chromium (the report's browser test); a developer may have less. ``.ci/run`` installs
``[local]`` and Chromium afterwards and runs the tests that need them with
``LEGALEVAL_REQUIRE_EXTRAS=1``, where a missing extra fails instead of skipping.
``test_extras.py`` runs the tests without any extra.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from typing import Any

import pytest

__all__ = [
    "IMPORT_REASON",
    "STATS_REASON",
    "import_or_skip",
    "installed",
    "needs_chromium",
    "needs_import",
    "needs_stats",
    "require_extras",
]

IMPORT_REASON = "needs the [import] extra (pyarrow): pip install 'pytest-legaleval[import]'"


def installed(*modules: str) -> bool:
    """Whether every module can be imported (a module set to ``None`` in sys.modules cannot)."""
    return all(importlib.util.find_spec(module) is not None for module in modules)


def require_extras() -> bool:
    """CI's second phase: a test that needs an extra must run, not skip."""
    return os.environ.get("LEGALEVAL_REQUIRE_EXTRAS") == "1"


def _unless(available: bool, reason: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not available and not require_extras(), reason=reason)


needs_import = _unless(installed("pyarrow"), IMPORT_REASON)
"""For a test that reads Parquet files (XLSX needs no extra)."""

STATS_REASON = (
    "needs the [stats] extra (ppi-python, scikit-learn, krippendorff): "
    "pip install 'pytest-legaleval[stats]'"
)

needs_stats = _unless(installed("ppi_py", "sklearn", "krippendorff"), STATS_REASON)
"""For a test that compares the judge audit's figures with the reference libraries."""

needs_chromium = _unless(
    shutil.which("chromium") is not None,
    "needs Debian's chromium (apt-get install chromium), as .ci/run installs it",
)
"""For a test that renders the report in a headless browser."""


def import_or_skip(module: str, reason: str = IMPORT_REASON) -> Any:
    """``pytest.importorskip`` for a module of an extra (imported for sure in CI's phase 2)."""
    if require_extras():
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=reason)
