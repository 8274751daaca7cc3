"""Where the pytest layer keeps the run's plan: one ``RunPlan`` in ``config.stash``."""

from __future__ import annotations

import re

import pytest

from pytest_legaleval.pipeline.plan import RunPlan

__all__ = ["STATE_KEY", "marker_name"]

STATE_KEY = pytest.StashKey[RunPlan]()
"""The session's :class:`~pytest_legaleval.pipeline.plan.RunPlan` (absent when inactive)."""

_MARKER_CHARS = re.compile(r"[^0-9A-Za-z_]+")


def marker_name(prefix: str, value: str) -> str:
    """A valid marker name for a tag (``tag_contract_law``)."""
    cleaned = _MARKER_CHARS.sub("_", value).strip("_").lower()
    return f"{prefix}{cleaned or 'x'}"
