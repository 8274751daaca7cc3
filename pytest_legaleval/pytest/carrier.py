"""How an item's result reaches the run recorder, with its test report.

In a single process the item's ``EvalResult`` itself is handed to the recorder plugin
(:func:`carry`); an xdist worker puts it on the report as one JSON string (a report's
attributes must be JSON-safe, and a string costs execnet nothing to walk), which the
controller reads back once (:func:`carried`) and then drops from the report. Every record
item's report is marked ``legaleval_item`` (a bool), so other hooks can tell it from an
ordinary test's without the payload.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_legaleval.pytest.state import RECORDER_KEY
from pytest_legaleval.records import EvalResult

__all__ = ["MARK", "PAYLOAD", "Carried", "carried", "carry"]

MARK = "legaleval_item"
"""The report attribute (``True``) of every record item's report that carries a result."""

PAYLOAD = "legaleval"
"""The report attribute an xdist worker carries an item's result in (a JSON string)."""


@dataclass(frozen=True, slots=True)
class Carried:
    """What one report says about its record item."""

    provenance: Mapping[str, Any]
    """``ItemSpec.provenance()``, or ``ItemSpec.rejection()`` for an invalid record."""
    result: EvalResult | None = None
    """The item's result; ``None`` for an invalid record."""


def carry(item: pytest.Item, report: pytest.TestReport, found: Carried) -> None:
    """Hand ``found`` to the recorder: directly in its own process, else on the report."""
    setattr(report, MARK, True)
    recorder = item.config.stash.get(RECORDER_KEY, None)
    if recorder is not None:
        recorder.pending[report.nodeid] = found
        return
    payload: dict[str, Any] = {"record": dict(found.provenance)}
    if found.result is not None:
        payload["result"] = found.result.to_dict()
    setattr(report, PAYLOAD, json.dumps(payload, ensure_ascii=False, separators=(",", ":")))


def carried(pending: dict[str, Carried], report: pytest.TestReport) -> Carried | None:
    """What ``report`` carries about its record item (handed over, or on the report)."""
    found = pending.pop(report.nodeid, None)
    if found is not None:
        return found
    text = getattr(report, PAYLOAD, None)
    if not isinstance(text, str):
        return None
    delattr(report, PAYLOAD)  # read once; pytest keeps the report until the session ends
    payload = json.loads(text)
    result = payload.get("result")
    return Carried(payload["record"], EvalResult.from_dict(result) if result else None)
