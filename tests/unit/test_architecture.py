"""The package's structure holds: only the pytest layer knows pytest, nothing knows _pytest.

DESIGN §11: ``plugin.py``, ``pytest/`` and ``testing/`` may import pytest; every other
module is pytest-free, so the pipeline, the service and the command line run without it;
no module imports pytest's private ``_pytest``. The top level keeps only ``plugin.py``,
``records.py``, ``errors.py`` and package faces.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_legaleval

PACKAGE = Path(pytest_legaleval.__file__).parent
PYTEST_ALLOWED = ("plugin.py", "pytest/", "testing/")
PURE = (
    "records", "errors", "formats", "importers", "validation", "engine", "grading",
    "pipeline", "run", "metrics", "report", "service", "cli", "datasets",
)  # fmt: skip


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def _modules() -> list[tuple[str, Path]]:
    return [
        (path.relative_to(PACKAGE).as_posix(), path)
        for path in sorted(PACKAGE.rglob("*.py"))
        if "__pycache__" not in path.parts
    ]


def test_no_module_imports_private_pytest() -> None:
    offenders = [name for name, path in _modules() if "_pytest" in _imports(path)]
    assert offenders == []


def test_only_the_pytest_layer_imports_pytest() -> None:
    offenders = [
        name
        for name, path in _modules()
        if "pytest" in _imports(path) and not name.startswith(PYTEST_ALLOWED)
    ]
    assert offenders == []


def test_the_top_level_holds_only_the_entry_point_the_values_and_the_errors() -> None:
    modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert modules == ["__init__.py", "errors.py", "plugin.py", "records.py"]


def test_importing_the_pure_packages_loads_no_pytest() -> None:
    code = (
        "import sys\n"
        + "".join(f"import pytest_legaleval.{name}\n" for name in PURE)
        + "import pytest_legaleval.pipeline.driver, pytest_legaleval.run.recorder\n"
        + "import pytest_legaleval.grading.registry, pytest_legaleval.pipeline.plan\n"
        + "print(sorted(m for m in sys.modules if m in ('pytest', '_pytest')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_the_package_face_exports_the_public_names_lazily_and_without_pytest() -> None:
    code = (
        "import sys, pytest_legaleval as p\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('pytest_legaleval'))\n"
        "names = {n: getattr(p, n) for n in p.__all__ if n != 'Evaluation'}\n"
        "print(loaded)\n"
        "print(sorted(n for n, v in names.items() if v is None))\n"
        "print(names['Grader'].__module__, names['run_evaluation'].__module__)\n"
        "print('pytest' in sys.modules, '_pytest' in sys.modules)\n"
        "print(p.Evaluation.__module__, 'pytest' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    # Importing the package loads only the values and the errors ...
    assert out[0] == "['pytest_legaleval', 'pytest_legaleval.errors', 'pytest_legaleval.records']"
    # ... every public name resolves, the heavy ones from their own modules ...
    assert out[1] == "[]"
    assert out[2] == "pytest_legaleval.grading.base pytest_legaleval.pipeline.driver"
    # ... and none of it needs pytest ...
    assert out[3] == "False False"
    # ... but the evaluation fixture's type, a value of a pytest session, named last.
    assert out[4] == "pytest_legaleval.pytest.fixtures True"


def test_an_unknown_name_on_the_package_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Evaluator'"):
        _ = pytest_legaleval.Evaluator  # type: ignore[attr-defined]
