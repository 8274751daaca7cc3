"""Where the pytest layer keeps a run's objects: typed keys of ``config.stash``.

As pytest's own ``junitxml`` keeps its reporter: every object a hook needs is found under
its :class:`pytest.StashKey`, never looked up by a plugin name.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from pytest_legaleval.pipeline.plan import RunPlan

if TYPE_CHECKING:
    from pytest_legaleval.pipeline.runner import ItemRunner
    from pytest_legaleval.pytest.gating import Gatekeeper
    from pytest_legaleval.pytest.recorder_plugin import RecorderPlugin

__all__ = [
    "BATCH_STATS_KEY",
    "GATES_KEY",
    "RECORDER_KEY",
    "RUNNER_KEY",
    "SCHEDULER_KEY",
    "STATE_KEY",
    "distributing",
    "marker_name",
]

STATE_KEY = pytest.StashKey[RunPlan]()
"""The session's :class:`~pytest_legaleval.pipeline.plan.RunPlan` (absent when inactive)."""
RUNNER_KEY: pytest.StashKey[ItemRunner] = pytest.StashKey()
"""This process's item runner (every process of an active run)."""
RECORDER_KEY: pytest.StashKey[RecorderPlugin] = pytest.StashKey()
"""The controller's (or single process's) recording plugin."""
GATES_KEY: pytest.StashKey[Gatekeeper] = pytest.StashKey()
"""The controller's gatekeeper, with ``--gate`` or ``--baseline``."""
BATCH_STATS_KEY: pytest.StashKey[dict[str, object]] = pytest.StashKey()
"""This process's ``--batch`` counters, taken when its engine stopped (for the terminal)."""

_MARKER_CHARS = re.compile(r"[^0-9A-Za-z_]+")


def marker_name(prefix: str, value: str) -> str:
    """A valid marker name for a tag (``tag_contract_law``)."""
    cleaned = _MARKER_CHARS.sub("_", value).strip("_").lower()
    return f"{prefix}{cleaned or 'x'}"


SCHEDULER_KEY = pytest.StashKey[object]()
"""Our xdist scheduler, stashed by the ``pytest_xdist_make_scheduler`` hook that makes it."""


def distributing(config: pytest.Config) -> bool:
    """Whether this process is the controller of an xdist run (it runs no test itself).

    Read from xdist's public options, as xdist decides to start workers: a distribution
    mode (``--dist``, set by ``-n N``), execution environments (``--tx``, set by ``-n N``),
    not ``--collect-only``, and not a worker (``config.workerinput``). ``-p no:xdist``
    leaves neither option.
    """
    if hasattr(config, "workerinput") or config.option.collectonly:
        return False
    return getattr(config.option, "dist", "no") != "no" and bool(getattr(config.option, "tx", None))
