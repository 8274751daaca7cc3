"""The package's structure holds: the layers of DESIGN §11, and only the pytest layer knows pytest.

DESIGN §11: ``plugin.py``, ``pytest/`` and ``testing/`` may import pytest; every other
module is pytest-free, so the pipeline, the service and the command line run without it;
no module imports pytest's private ``_pytest``. The layers are import contracts in
``pyproject.toml`` (``[tool.importlinter]``), checked here with import-linter as CI's
``lint-imports`` checks them. The top level keeps only ``plugin.py``, ``records.py``,
``errors.py``, ``_version.py`` and package faces.
"""

from __future__ import annotations

import ast
import logging
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import pytest_legaleval

from .. import extras

PACKAGE = Path(pytest_legaleval.__file__).parent
PYPROJECT = PACKAGE.parent / "pyproject.toml"
needs_import_linter = pytest.mark.skipif(
    not extras.installed("importlinter") and not extras.require_extras(),
    reason="needs import-linter (the [dev] extra): pip install 'pytest-legaleval[dev]'",
)
PYTEST_ALLOWED = ("plugin.py", "pytest/", "testing/")
PURE = (
    "records", "errors", "util", "protocols", "formats", "importers", "validation", "engine",
    "grading", "pipeline", "run", "metrics", "report", "service", "cli", "datasets",
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
    assert modules == ["__init__.py", "_version.py", "errors.py", "plugin.py", "records.py"]


def test_importing_the_pure_packages_loads_no_pytest() -> None:
    code = (
        "import sys\n"
        + "".join(f"import pytest_legaleval.{name}\n" for name in PURE)
        + "import pytest_legaleval.pipeline.driver, pytest_legaleval.run.recorder\n"
        + "import pytest_legaleval.grading._registry, pytest_legaleval.pipeline.plan\n"
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
    assert out[0] == (
        "['pytest_legaleval', 'pytest_legaleval._version', 'pytest_legaleval.errors', "
        "'pytest_legaleval.records']"
    )
    # ... every public name resolves, the heavy ones from their own modules ...
    assert out[1] == "[]"
    assert out[2] == "pytest_legaleval.grading._base pytest_legaleval.pipeline.driver"
    # ... and none of it needs pytest ...
    assert out[3] == "False False"
    # ... but the evaluation fixture's type, a value of a pytest session, named last.
    assert out[4] == "pytest_legaleval.pytest.fixtures True"


def test_an_unknown_name_on_the_package_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Evaluator'"):
        _ = pytest_legaleval.Evaluator  # type: ignore[attr-defined]


def _lint_imports(config: Path, root: Path) -> int:
    """import-linter's exit status for ``config`` (the package found under ``root``).

    Its CLI configures logging with ``dictConfig``, which disables every logger that
    already exists; they are enabled again afterwards, or a later test in this process
    would find the package's log records gone.
    """
    from importlinter.cli import lint_imports

    loggers = [
        logger
        for logger in logging.Logger.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ]
    disabled = {logger: logger.disabled for logger in loggers}
    sys.path.insert(0, str(root))
    try:
        return lint_imports(config_filename=str(config), no_cache=True, no_logo=True)
    finally:
        sys.path.remove(str(root))
        for logger, was in disabled.items():
            logger.disabled = was


@needs_import_linter
@pytest.mark.skipif(not PYPROJECT.exists(), reason="an installed wheel has no pyproject.toml")
def test_the_import_contracts_of_design_11_hold(capsys: pytest.CaptureFixture[str]) -> None:
    status = _lint_imports(PYPROJECT, PACKAGE.parent)
    out = capsys.readouterr().out
    assert status == 0, out
    assert "3 kept, 0 broken" in out


@needs_import_linter
def test_the_layers_contract_catches_an_arrow_pointing_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Our own contracts, on a package of the same layout whose metrics import run (the
    # cycle metrics/_compare.py had) through a lazy import inside a function.
    text = PYPROJECT.read_text(encoding="utf-8")
    start = text.index("\n[tool.importlinter]\n")
    end = text.index("\n[tool.", start + 1)
    config = text[start:end].replace("pytest_legaleval", "fakepkg")
    (layers,) = [c["layers"] for c in tomllib.loads(config)["tool"]["importlinter"]["contracts"]
                 if c["type"] == "layers"]  # fmt: skip
    package = tmp_path / "fakepkg"
    for line in layers:
        for name in re.split(r"[|:]", line):
            (package / name.strip()).mkdir(parents=True)
            (package / name.strip() / "__init__.py").write_text("", encoding="utf-8")
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "metrics" / "compare.py").write_text(
        "def render():\n    from fakepkg.run import console\n", encoding="utf-8"
    )
    (package / "run" / "console.py").write_text("", encoding="utf-8")
    (tmp_path / "setup.cfg").write_text("", encoding="utf-8")
    (tmp_path / ".importlinter.toml").write_text(config, encoding="utf-8")
    status = _lint_imports(tmp_path / ".importlinter.toml", tmp_path)
    out = capsys.readouterr().out
    assert status == 1
    assert "fakepkg.metrics is not allowed to import fakepkg.run" in out
    assert "fakepkg.metrics.compare -> fakepkg.run.console" in out


def test_no_library_function_has_a_name_pytest_collects() -> None:
    # A test module that imports such a function runs it as a test; only the default
    # suite's test_record is meant to be collected.
    offenders = []
    for name, path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                "test"
            ):
                offenders.append(f"{name}:{node.name}")
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                offenders.append(f"{name}:{node.name}")
    assert offenders == ["pytest/default_suite.py:test_record"]


FACES = ("pytest_legaleval", "pytest_legaleval.grading", "pytest_legaleval.metrics",
         "pytest_legaleval.testing")  # fmt: skip


def _readme_api() -> dict[str, set[str]]:
    text = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    found: dict[str, set[str]] = {}
    for entry in re.split(r"\n- ", "\n" + section)[1:]:
        face, _, names = entry.partition(":")
        found[face.strip("` \n")] = set(re.findall(r"`([A-Za-z_]+)`", names.split(" — ")[0]))
    return found


@pytest.mark.skipif(not (PACKAGE.parent / "README.md").exists(), reason="an installed wheel")
def test_the_faces_export_exactly_the_readmes_api() -> None:
    import importlib

    listed = _readme_api()
    assert set(listed) == set(FACES)
    for face in FACES:
        module = importlib.import_module(face)
        assert set(module.__all__) == listed[face], face
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{face}.{name}"
