"""The ``build-dataset`` / ``check-dataset`` configuration file (``configs/default.yaml``).

Paths in the file resolve relative to the project root: the ``project_root`` key when
given (relative to the config file), else the nearest directory at or above the config
file that holds ``pyproject.toml`` or ``.git``, else the current directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.util.safe_yaml import load_yaml

__all__ = ["DEFAULTS", "DatasetConfig", "find_project_root", "load_dataset_config"]

DEFAULTS: dict[str, str] = {
    "offline_dataset": "evaluation/datasets/offline_dataset.jsonl",
    "qa_output": "evaluation/datasets/qa_pairs.jsonl",
    "summary_output": "evaluation/datasets/summaries.jsonl",
    "manifest_output": "evaluation/datasets/manifest.json",
    "version": "v1",
}
"""The spec's default locations, used for keys the config leaves out."""
_ROOT_MARKERS = ("pyproject.toml", ".git")
_PATH_KEYS = ("offline_dataset", "qa_output", "summary_output", "manifest_output")


def find_project_root(start: Path) -> Path:
    """The nearest directory at or above ``start`` with ``pyproject.toml`` or ``.git``.

    Falls back to the current directory when there is none.
    """
    here = start.resolve()
    for candidate in (here, *here.parents):
        if any((candidate / marker).exists() for marker in _ROOT_MARKERS):
            return candidate
    return Path.cwd()


@dataclass(frozen=True, slots=True)
class DatasetConfig:
    """Resolved settings of the dataset builder and checker."""

    root: Path
    offline_dataset: Path
    qa_output: Path
    summary_output: Path
    manifest_output: Path
    version: str
    baseline_manifest: Path | None


def _section(data: object, path: Path) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config {path}: expected a mapping at the top level")
    section = data.get("dataset", {})
    if not isinstance(section, dict):
        raise ConfigError(f"config {path}: 'dataset' must be a mapping")
    unknown = sorted(set(section) - {*DEFAULTS, "baseline_manifest"})
    if unknown:
        raise ConfigError(f"config {path}: unknown key(s) under 'dataset': {', '.join(unknown)}")
    return section


def load_dataset_config(path: Path | None) -> DatasetConfig:
    """Read the config file (or use the defaults under the current project root).

    Raises:
        ConfigError: the file is missing, not YAML, or has unknown or mistyped keys.

    """
    if path is None:
        data: object = None
        root = find_project_root(Path.cwd())
    else:
        if not path.is_file():
            raise ConfigError(f"--config {path}: no such file")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config {path} cannot be read: {exc}") from None
        data = load_yaml(text, source=f"config {path}")
        declared = data.get("project_root") if isinstance(data, dict) else None
        if declared is not None and not isinstance(declared, str):
            raise ConfigError(f"config {path}: project_root must be a string")
        root = (path.parent / declared).resolve() if declared else find_project_root(path.parent)
    section = _section(data, path or Path("<defaults>"))
    values = {**DEFAULTS, **section}
    for key, value in values.items():
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"config: dataset.{key} must be a string, got {value!r}")
    baseline = values.get("baseline_manifest")
    return DatasetConfig(
        root=root,
        offline_dataset=root / values["offline_dataset"],
        qa_output=root / values["qa_output"],
        summary_output=root / values["summary_output"],
        manifest_output=root / values["manifest_output"],
        version=values["version"],
        baseline_manifest=root / baseline if baseline else None,
    )
