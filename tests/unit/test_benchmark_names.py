"""A benchmark is named in code only by its protocol, its importer and the testing tools.

The rest of the package — metrics, tally, console, gates, report, pipeline, formats —
reaches a benchmark through the protocol registry, so adding one is one module plus one
registration. This scans the string constants of every module (docstrings and comments
are prose and may give examples) for the name of a registered benchmark.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest_legaleval
from pytest_legaleval.grading import benchmark_protocols
from pytest_legaleval.importers.protocols import PROTOCOLS

PACKAGE = Path(pytest_legaleval.__file__).parent
ALLOWED = ("importers/", "testing/", "grading/official/", "protocols/")
"""Where a benchmark may be named: its importer, the testing tools, its protocol."""


def _benchmarks() -> set[str]:
    names = {protocol.benchmark for protocol in benchmark_protocols()}
    names |= {source for source, choices in PROTOCOLS.items() if len(choices.names) > 1}
    return names


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for statement in body:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                found.add(id(statement.value))
    return found


def _named(pattern: re.Pattern[str], root: Path = PACKAGE) -> list[str]:
    offenders = []
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if "__pycache__" in path.parts or name.startswith(ALLOWED):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        prose = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in prose
                and pattern.search(node.value)
            ):
                offenders.append(f"{name}:{node.lineno}: {node.value[:60]!r}")
    return offenders


def test_the_built_in_benchmarks_are_known() -> None:
    assert {"legalbench", "lexam", "prbench", "apex"} <= _benchmarks()


def test_no_string_outside_a_benchmark_s_modules_names_it() -> None:
    pattern = re.compile("|".join(sorted(_benchmarks())), re.IGNORECASE)
    assert _named(pattern) == []


def test_the_scan_finds_a_benchmark_named_where_it_should_not_be(tmp_path: Path) -> None:
    pattern = re.compile("|".join(sorted(_benchmarks())), re.IGNORECASE)
    (tmp_path / "metrics").mkdir()
    (tmp_path / "importers").mkdir()
    (tmp_path / "metrics" / "x.py").write_text('"""Prose may say LEXam."""\nWHICH = "lexam"\n')
    (tmp_path / "importers" / "y.py").write_text('SOURCE = "lexam"\n')
    assert _named(pattern, tmp_path) == ["metrics/x.py:2: 'lexam'"]
