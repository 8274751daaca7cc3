"""A strict JSON reader for tests: what JavaScript's ``JSON.parse`` or jq would accept.

Python's ``json`` reads ``NaN``, ``Infinity`` and ``-Infinity`` (and ``1e999`` as ``inf``)
by default, so a test that reads an artifact with ``json.loads`` never notices that no
other parser could read it. :func:`strict_loads` refuses them; :func:`assert_strict_run_dir`
parses every file of a run directory with it. Deliberately independent of the package's
own ``util.strict_json`` (a test must not check the code with the code).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

NOT_JSON_FILES = frozenset({"SHA256SUMS"})
"""Run-directory files that are not JSON at all (checked by name, so a new one is seen)."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON token {name}")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text} overflows to infinity")
    return value


def strict_loads(text: str) -> Any:
    """``json.loads`` that raises on ``NaN``, ``Infinity``, ``-Infinity`` and ``1e999``."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)


def strict_jsonl(path: Path) -> list[Any]:
    """Every line of a JSONL file, parsed strictly (lines end at ``\\n`` only)."""
    text = path.read_text(encoding="utf-8")
    return [strict_loads(line) for line in text.split("\n") if line.strip()]


def assert_strict_run_dir(root: Path) -> list[str]:
    """Parse every file under ``root`` strictly; return the names checked.

    ``.json`` files are one document, ``.jsonl`` files one document per line; any other
    file must be listed in :data:`NOT_JSON_FILES`.

    Raises:
        AssertionError: a file is not standard JSON (naming the file and line), or has an
            unexpected kind.

    """
    checked = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        name = path.relative_to(root).as_posix()
        if path.name in NOT_JSON_FILES:
            continue
        assert path.suffix in (".json", ".jsonl"), f"{name}: not a JSON artifact"
        if path.suffix == ".json":
            try:
                strict_loads(path.read_text(encoding="utf-8"))
            except ValueError as exc:
                raise AssertionError(f"{name}: {exc}") from None
        else:
            lines = path.read_text(encoding="utf-8").split("\n")
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    strict_loads(line)
                except ValueError as exc:
                    raise AssertionError(f"{name} line {number}: {exc}") from None
        checked.append(name)
    assert checked, f"{root}: no file to check"
    return checked
