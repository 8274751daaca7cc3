"""A run-directory file is named once: by its row of the artifact table.

``metrics/artifacts.py`` spells each artifact's file name once (a constant per built-in
row); every other module of the package names a run-directory file through those constants
or the table. This scans every string constant of the package (docstrings aside: they
document) and fails on

* any constant that *is* an artifact's name or a path ending in one (``"predictions.jsonl"``,
  ``f"{root}/metrics_summary.json"``) — anywhere in the package;
* any constant that *mentions* one (a message, a help text, a page's hint) in the modules
  that can import the table: every layer from ``metrics`` up (the layers of
  ``[tool.importlinter]``). The layers below it cannot import the table, so their prose is
  left alone there.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest_legaleval
from pytest_legaleval.metrics.artifacts import ARTIFACT_TABLE, CHECKSUMS, artifacts

PACKAGE = Path(pytest_legaleval.__file__).parent
TABLE_MODULE = "metrics/artifacts.py"
NAMES = (*(row.name for row in artifacts()), CHECKSUMS)


def _below_metrics() -> tuple[str, ...]:
    """The packages and modules of the layers under ``metrics`` (they cannot import it)."""
    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c.get("type") == "layers"]
    at = next(i for i, layer in enumerate(layers) if layer.strip() == "metrics")
    return tuple(name.strip() for layer in layers[at + 1 :] for name in layer.split("|"))


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes: a string expression statement documents."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)  # a lambda's body is one expression
        for statement in body if isinstance(body, list) else ():
            if (
                isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            ):
                found.add(id(statement.value))
    return found


def _mentions(names: Iterable[str]) -> re.Pattern[str]:
    # A name as a word of its own: "judgments.jsonl" does not mention "s.jsonl".
    return re.compile(r"(?<![\w.-])(?:" + "|".join(map(re.escape, names)) + r")(?![\w-])")


def offences(source: str, *, prose: bool, names: Iterable[str] = NAMES) -> Iterator[str]:
    """The string constants of ``source`` that spell a run-directory file's name.

    With ``prose`` a mention inside a longer text counts too; without, only a constant that
    is the name or a path ending in it.
    """
    names = tuple(names)
    mention = _mentions(names)
    tree = ast.parse(source)
    documents = _docstrings(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        if id(node) in documents:
            continue
        value = node.value
        tail = value.replace("\\", "/").rsplit("/", 1)[-1]
        if tail in names or (prose and mention.search(value)):
            yield f"{node.lineno}: {value[:80]!r}"


def _modules() -> Iterator[tuple[str, str]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" not in path.parts:
            yield path.relative_to(PACKAGE).as_posix(), path.read_text(encoding="utf-8")


def test_no_module_but_the_table_spells_a_run_directory_file_name() -> None:
    below = _below_metrics()
    assert "grading" in below and "run" not in below  # the contract read as DESIGN §11 has it
    found = []
    for name, source in _modules():
        if name == TABLE_MODULE:
            continue
        prose = name.split("/")[0].removesuffix(".py") not in below
        found += [f"{name}:{hit}" for hit in offences(source, prose=prose)]
    assert found == [], (
        "name run-directory files through pytest_legaleval.metrics.artifacts "
        "(its constants or artifacts()), not as literals:\n" + "\n".join(found)
    )


def test_the_table_spells_every_built_in_name_once() -> None:
    source = (PACKAGE / TABLE_MODULE).read_text(encoding="utf-8")
    tree = ast.parse(source)
    documents = _docstrings(tree)
    spelt = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and id(node) not in documents
    ]
    for row in ARTIFACT_TABLE:
        assert spelt.count(row.name) == 1, row.name


def test_the_scan_finds_a_literal_a_path_and_prose_but_not_a_docstring() -> None:
    source = '''
"""Reads predictions.jsonl."""
def f(root):
    """Writes metrics_summary.json."""
    a = root / "predictions.jsonl"
    b = f"{root}/metrics_by_slice.json"
    c = f"{n} more in failures.jsonl"
    d = "LBR's judgments.jsonl and a run's SHA256SUMS-like name"
    e = "SHA256SUMS"
'''
    strict = sorted(hit.split(":")[0] for hit in offences(source, prose=False))
    assert strict == ["5", "6", "9"]
    loose = sorted(hit.split(":")[0] for hit in offences(source, prose=True))
    assert loose == ["5", "6", "7", "9"]
    # a registered artifact's name is caught as soon as it is in the table
    toy = 'x = "pass_counts.jsonl"\n'
    assert list(offences(toy, prose=False)) == []
    assert len(list(offences(toy, prose=False, names=(*NAMES, "pass_counts.jsonl")))) == 1
