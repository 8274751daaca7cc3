"""``--dataset`` arguments as files: a benchmark's upstream files imported on demand.

``SOURCE:PATH`` (``lexam:data/MCQs_test.xlsx``) names a benchmark in its upstream layout;
the importers turn it into a ``legal_eval_v1`` file (``importers.cache``), and only then
does the loader (``formats``, a layer below the importers) read it. Every caller that
loads ``--dataset`` arguments (the plan, the estimate, ``legaleval validate`` and ``plan``)
goes through :func:`dataset_paths`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

__all__ = ["dataset_paths"]


def dataset_paths(
    given: Iterable[str | Path], protocol: str | None = None
) -> list[str | Path]:
    """``--dataset`` with each ``SOURCE:PATH`` resolved to its imported file (``--protocol``).

    The importers load only when an argument names one; the files themselves are read by
    ``formats``, which never imports (DESIGN §11: formats sits below the importers).

    Raises:
        ConfigError: an import that fails.

    """
    paths = list(given)
    if not any(isinstance(p, str) and ":" in p for p in paths):
        return paths
    from pytest_legaleval.importers.cache import resolve_arguments

    return resolve_arguments(paths, protocol)
