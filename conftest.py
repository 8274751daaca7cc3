"""The project's root conftest: how a project that uses pytest-legaleval wires its suites.

- Run directories (``legaleval-runs/``) and the response cache and imports
  (``.legaleval/``) are outputs, never tests: pytest does not look into them.
- ``suites/`` holds evaluation suites: tests that need a dataset. They are collected for an
  evaluation (a dataset given with ``--dataset``, the ini file or ``legaleval.yaml``) or
  when named on the command line (``pytest suites/ …``), so that ``pytest .`` runs the
  project's own tests and does not error on a record test without a dataset.

pytest loads this file in every run inside the repository, each ``pytest suites/ …``
evaluation and each of its xdist workers included: it imports nothing the plugin has not
already imported (``tests/conftest.py`` holds what the test suite needs, such as hypothesis
profiles, whose import would cost every evaluation process ~80 ms).
The plugin itself is loaded through its ``pytest11`` entry point, never from here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_legaleval.pytest.collection import is_evaluation

collect_ignore = ["legaleval-runs", ".legaleval"]

_SUITES = Path(__file__).parent / "suites"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Skip ``suites/`` when pytest walks the tree for anything but an evaluation.

    A path named on the command line is collected whatever this hook says.
    """
    if collection_path == _SUITES and not is_evaluation(config):
        return True
    return None
