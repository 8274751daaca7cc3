"""How an item's result reaches the run recorder, with its test report.

In a single process the item's ``EvalResult`` itself is handed to the recorder plugin
(:func:`carry`); an xdist worker puts it on the report as one JSON string (a report's
attributes must be JSON-safe, and a string costs execnet nothing to walk), which the
controller reads back once (:func:`carried`) and then drops from the report. Every record
item's report is marked ``legaleval_item`` (a bool), so other hooks can tell it from an
ordinary test's without the payload. :func:`encode` / :func:`decode` are the one format:
the Ctrl-C spool of an interrupted worker (``interrupt``) writes its lines with them too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_legaleval.pytest.state import RECORDER_KEY
from pytest_legaleval.records import EvalResult, Provenance

__all__ = ["MARK", "PAYLOAD", "Carried", "carried", "carry", "decode", "encode"]

MARK = "legaleval_item"
"""The report attribute (``True``) of every record item's report that carries a result."""

PAYLOAD = "legaleval"
"""The report attribute an xdist worker carries an item's result in (a JSON string)."""


@dataclass(frozen=True, slots=True)
class Carried:
    """What one report says about its record item."""

    provenance: Provenance | Mapping[str, Any]
    """``ItemSpec.provenance()``, or ``ItemSpec.rejection()`` for an invalid record."""
    result: EvalResult | None = None
    """The item's result; ``None`` for an invalid record."""


def carry(item: pytest.Item, report: pytest.TestReport, found: Carried) -> None:
    """Hand ``found`` to the recorder: directly in its own process, else on the report."""
    setattr(report, MARK, True)
    recorder = item.config.stash.get(RECORDER_KEY, None)
    if recorder is not None:
        recorder.hold(report.nodeid, found)
        return
    setattr(report, PAYLOAD, json.dumps(encode(found), ensure_ascii=False, separators=(",", ":")))


def encode(found: Carried) -> dict[str, Any]:
    """``found`` as JSON-ready data: the one format of an xdist report and the Ctrl-C spool.

    ``{"record": provenance (or an invalid record's rejection), "result": the result}``.
    """
    record = found.provenance
    payload: dict[str, Any] = {
        "record": record.to_dict() if isinstance(record, Provenance) else dict(record)
    }
    if found.result is not None:
        payload["result"] = found.result.to_dict()
    return payload


def decode(payload: Mapping[str, Any]) -> Carried:
    """:func:`encode`'s data read back.

    Raises:
        KeyError, TypeError, ValueError: ``payload`` is not :func:`encode`'s (a cut line).

    """
    record = payload["record"]
    result = payload.get("result")
    # An invalid record's rejection names its errors; a result's record is its provenance.
    provenance = dict(record) if "errors" in record else Provenance.from_dict(record)
    return Carried(provenance, EvalResult.from_dict(result) if result else None)


def carried(pending: dict[str, Carried], report: pytest.TestReport) -> Carried | None:
    """What ``report`` carries about its record item (handed over, or on the report)."""
    found = pending.pop(report.nodeid, None)
    if found is not None:
        return found
    text = getattr(report, PAYLOAD, None)
    if not isinstance(text, str):
        return None
    delattr(report, PAYLOAD)  # read once; pytest keeps the report until the session ends
    return decode(json.loads(text))
