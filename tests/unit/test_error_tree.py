"""One exception tree: every exception and warning class of the package is ours to catch.

``errors.py`` documents the tree; here every module of the package is imported and every
class it defines that is an exception (or a warning) is checked to derive from
``LegalEvalError`` (or ``LegalEvalWarning``). pytest's own outcomes (``pytest.fail`` and
friends, which ``pytest/outcomes.py`` subclasses) stay pytest's. A class defined inside a
function would escape the import walk, so the source is also scanned for those.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import pytest_legaleval
from pytest_legaleval.errors import LegalEvalError, LegalEvalWarning

PACKAGE = Path(pytest_legaleval.__file__).parent
PYTEST_OUTCOMES = (
    pytest.fail.Exception,
    pytest.skip.Exception,
    pytest.xfail.Exception,
    pytest.exit.Exception,
)
BUILTIN_EXCEPTIONS = {
    name
    for name, value in vars(builtins).items()
    if inspect.isclass(value) and issubclass(value, BaseException)
}


def _package_exceptions() -> tuple[list[type[BaseException]], list[str]]:
    """Every exception class defined in the package, and the modules that could not load."""
    found: list[type[BaseException]] = []
    unloaded: list[str] = []
    for info in pkgutil.walk_packages(pytest_legaleval.__path__, "pytest_legaleval."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ModuleNotFoundError as exc:  # an optional extra that is not installed
            if (exc.name or "").startswith("pytest_legaleval"):
                raise
            unloaded.append(info.name)
            continue
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                found.append(value)
    return found, unloaded


def test_every_exception_class_derives_from_legal_eval_error() -> None:
    classes, unloaded = _package_exceptions()
    assert unloaded == [], f"modules not imported (missing extras?): {unloaded}"
    names = {f"{c.__module__}.{c.__qualname__}" for c in classes}
    # The walk sees them all, private ones included (a sample that must be there).
    assert {
        "pytest_legaleval.engine.retry.ProviderError",
        "pytest_legaleval.importers.base.RowError",
        "pytest_legaleval.util.safe_yaml._TooLarge",
        "pytest_legaleval.cli.submit._Exit",
        "pytest_legaleval.pipeline.responses.ResponsesWarning",
        "pytest_legaleval.pytest.outcomes.RecordFailed",
    } <= names
    outside = [
        name
        for name, cls in sorted((f"{c.__module__}.{c.__qualname__}", c) for c in classes)
        if not issubclass(cls, PYTEST_OUTCOMES)
        and not issubclass(cls, LegalEvalWarning if issubclass(cls, Warning) else LegalEvalError)
    ]
    assert outside == []


def test_user_facing_errors_keep_their_builtin() -> None:
    """Callers that only know the builtin still catch them (hypothesis's habit)."""
    from pytest_legaleval.engine.local_server import LocalModelError
    from pytest_legaleval.errors import ConfigError, DatasetRejected, NonFiniteNumber
    from pytest_legaleval.importers.base import RowError
    from pytest_legaleval.service.storage import StorageError
    from pytest_legaleval.util.paths import PathRefused

    for cls, builtin in (
        (ConfigError, ValueError),
        (DatasetRejected, ValueError),
        (NonFiniteNumber, ValueError),
        (PathRefused, ValueError),
        (RowError, ValueError),
        (LocalModelError, RuntimeError),
        (StorageError, OSError),
    ):
        assert issubclass(cls, builtin), cls


def test_the_importers_have_one_row_error() -> None:
    from pytest_legaleval.importers import base, mapping

    assert mapping.RowError is base.RowError


def test_no_exception_class_hides_inside_a_function() -> None:
    nested: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.ClassDef):
                    bases = {b.id for b in inner.bases if isinstance(b, ast.Name)}
                    if bases & BUILTIN_EXCEPTIONS or any(
                        re.search(r"(Error|Exception|Warning)$", b) for b in bases
                    ):
                        nested.append(f"{path.relative_to(PACKAGE)}:{inner.lineno} {inner.name}")
    assert nested == []


def test_the_documented_tree_names_every_class() -> None:
    """The tree at the top of errors.py is the reference: it names every class."""
    from pytest_legaleval import errors

    doc = errors.__doc__ or ""
    classes, _ = _package_exceptions()
    missing = [
        f"{c.__module__}.{c.__qualname__}"
        for c in classes
        if not issubclass(c, PYTEST_OUTCOMES) and not re.search(rf"\b{c.__qualname__}\b", doc)
    ]
    assert missing == []


BARE_RAISE = re.compile(r"\braise ([A-Za-z_]+)\b")
ALLOWED_BARE = 10
"""Builtins the package still raises itself, each with its reason on the line: abstract
methods of a foreign protocol, unreachable asserts, a deferred Ctrl-C, the Mapping protocol's
KeyError, an os-like OSError, a timeout caught on the next line."""


def test_library_code_raises_our_errors_and_says_why_when_it_does_not() -> None:
    bare: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            found = BARE_RAISE.search(line.split("#")[0])
            if found and found.group(1) in BUILTIN_EXCEPTIONS:
                where = f"{path.relative_to(PACKAGE)}:{number}"
                assert "#" in line, f"{where}: a builtin raised without a reason: {line.strip()}"
                bare.append(where)
    assert len(bare) <= ALLOWED_BARE, bare


def test_the_general_errors_are_also_the_builtins_they_replace() -> None:
    from pytest_legaleval.errors import InvalidState, InvalidType, InvalidValue, UnknownName

    for cls, builtin in (
        (InvalidValue, ValueError),
        (InvalidType, TypeError),
        (UnknownName, KeyError),
        (InvalidState, RuntimeError),
    ):
        assert issubclass(cls, LegalEvalError) and issubclass(cls, builtin)
    from pytest_legaleval.metrics._paired import normal_quantile

    with pytest.raises(ValueError, match="level must be in") as caught:  # old excepts work
        normal_quantile(1.5)
    assert isinstance(caught.value, LegalEvalError)
