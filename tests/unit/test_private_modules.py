"""The public surface has names: ``grading``, ``metrics`` and ``testing`` are curated faces.

Issue 42 (item 5): every direct child module of the three packages a user imports is private
by its name (``_gates.py``) except the few that tools load by their dotted path, listed here
with why; every name a face exports resolves; and no text of the package or its documents
still names a module path that no longer exists (a rename left half done).
"""

from __future__ import annotations

import importlib
import re
import types
from pathlib import Path

import pytest

import pytest_legaleval

PACKAGE = Path(pytest_legaleval.__file__).parent
PACKAGES = ("grading", "metrics", "testing")
FACES = ("pytest_legaleval", *(f"pytest_legaleval.{name}" for name in PACKAGES))
PUBLIC_MODULES = {
    "pytest_legaleval.testing.fixtures": (
        "a pytest plugin by its dotted name: plugin.py's `pytest_plugins` registers it under that "
        "name, which is what `-p pytest_legaleval.testing.fixtures` (load it alone, as "
        "tests/unit/test_mock_openai*.py show) and `-p no:...` use"
    ),
    "pytest_legaleval.testing.strategies": (
        "README 'Testing tools for your own code' tells users to import "
        "`pytest_legaleval.testing.strategies`; the testing face exports the module itself as "
        "`strategies`"
    ),
}
DOCUMENTS = ("README.md", "SECURITY.md", "pyproject.toml", ".ci/run")


def _children(package: str) -> list[str]:
    return sorted(p.stem for p in (PACKAGE / package).glob("*.py") if p.name != "__init__.py")


def test_every_module_behind_a_face_is_private_but_the_listed_ones() -> None:
    public = sorted(
        f"pytest_legaleval.{package}.{name}"
        for package in PACKAGES
        for name in _children(package)
        if not name.startswith("_")
    )
    assert public == sorted(PUBLIC_MODULES)
    assert all(_children(package) for package in PACKAGES)


def test_the_listed_public_modules_import_by_their_path() -> None:
    for name in PUBLIC_MODULES:
        assert importlib.import_module(name).__name__ == name


@pytest.mark.parametrize("face", FACES)
def test_every_public_face_name_resolves(face: str) -> None:
    module = importlib.import_module(face)
    assert module.__all__, face
    for name in module.__all__:
        assert not name.startswith("_") or name == "__version__", name
        value = getattr(module, name)
        assert value is not None, f"{face}.{name}"
        if isinstance(value, type | types.FunctionType):
            assert value.__module__.startswith("pytest_legaleval"), f"{face}.{name}"
        elif isinstance(value, types.ModuleType):
            assert value.__name__.startswith("pytest_legaleval"), f"{face}.{name}"


def _exists(package: str, name: str) -> bool:
    folder = PACKAGE / package
    if (folder / f"{name}.py").exists() or (folder / name / "__init__.py").exists():
        return True
    return name in importlib.import_module(f"pytest_legaleval.{package}").__all__


def _texts() -> list[tuple[str, str]]:
    root = PACKAGE.parent
    found = [(str(p.relative_to(root)), p.read_text(encoding="utf-8"))
             for p in PACKAGE.rglob("*.py")]  # fmt: skip
    found += [(name, (root / name).read_text(encoding="utf-8")) for name in DOCUMENTS
              if (root / name).exists()]  # fmt: skip
    return found


@pytest.mark.skipif(
    not (PACKAGE.parent / "README.md").exists(), reason="an installed wheel has no README"
)
def test_no_text_names_a_module_path_that_is_gone() -> None:
    names = "|".join(PACKAGES)
    dotted = re.compile(rf"\bpytest_legaleval\.({names})\.([A-Za-z_]\w*)")
    path = re.compile(rf"(?<![\w./-])(?:pytest_legaleval/)?({names})/([A-Za-z_]\w*)\.py\b")
    stale = sorted(
        f"{where}: {m.group(0)}"
        for where, text in _texts()
        for pattern in (dotted, path)
        for m in pattern.finditer(text)
        if not _exists(m.group(1), m.group(2))
    )
    assert stale == []
