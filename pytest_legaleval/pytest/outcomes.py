"""How an item's result becomes a pytest outcome, and the text pytest shows for it.

Every item is one of the count vocabulary's categories (``metrics/items.py``), and pytest
reports each with its own word:

- ``passed`` → PASSED;
- ``failed`` (graded wrong, or a reply with no extractable answer: the model's fault) →
  FAILED, raised in the test's call (:class:`RecordFailed`);
- ``skipped`` (``needs_judge``) → SKIPPED;
- ``error`` (no verdict because of the engine or the judge: ``judge_error``,
  ``generation_error:<code>``, ``timeout``, ``cancelled``, ``missing_response``,
  ``latency_exceeded``, ``evaluation_error``) and ``invalid`` → ERROR.

pytest calls an item an ERROR only when it fails outside its test function (its setup or
teardown), and JUnit XML writes ``<error>`` only then: an exception raised in the call is a
FAILED test and a ``<failure>``, whatever its type. So an item without a verdict raises
:class:`NoVerdict` from the ``evaluation`` fixture, in the item's setup: its test never
runs (it has nothing to assert on), pytest counts it under ``errors`` and JUnit writes
``<error>``, as for an invalid record. pytest's ``errors`` are therefore the legaleval
table's ``errors`` plus ``invalid``.

The reports of these items carry the reason as text, without a traceback
(:func:`fast_report`); under ``--tb=line`` the text is an :class:`ItemReason`, which pytest
prints as one line: the node id and the reason.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from pytest_legaleval.metrics.items import item_category
from pytest_legaleval.records import EvalResult

__all__ = [
    "InvalidItem",
    "ItemReason",
    "NoVerdict",
    "RecordFailed",
    "fast_report",
    "has_no_verdict",
    "line_mode_repr",
]

_Fail: Any = pytest.fail.Exception  # pytest's own "fail without a traceback" exception


class RecordFailed(_Fail):  # type: ignore[misc]
    """A record that failed its grader (a FAILED item): the grader's reasons, no traceback."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg, pytrace=False)


class NoVerdict(_Fail):  # type: ignore[misc]
    """An item without a verdict (an ERROR item), raised during its setup: the reason."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg, pytrace=False)


class InvalidItem(_Fail):  # type: ignore[misc]
    """An item whose record cannot be asked (an ERROR item): its ``record_errors``."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg, pytrace=False)


_OWN = (RecordFailed, NoVerdict, InvalidItem)


def has_no_verdict(result: EvalResult) -> bool:
    """Whether ``result`` has no verdict (an ERROR in pytest).

    Its outcome is ``error``, or the count vocabulary files it under ``error`` (the
    metrics' own classification, so the terminal's counts, JUnit's and the metrics table's
    cannot disagree).
    """
    if result.outcome == "error":
        return True
    return item_category({"reason": result.reason, "outcome": result.outcome}) == "error"


# -- the reason as pytest prints it -----------------------------------------------------------

LINE_LIMIT = 400
"""Characters of a reason on its ``--tb=line`` line (the whole text is in the run directory)."""

_SPACE = re.compile(r"\s+")


def _one_line(text: str) -> str:
    line = _SPACE.sub(" ", text).strip()
    return line if len(line) <= LINE_LIMIT else line[: LINE_LIMIT - 1] + "…"


class _CrashLine:
    """``reprcrash`` of an :class:`ItemReason`: what ``--tb=line`` and the short summary read."""

    __slots__ = ("message", "nodeid")

    def __init__(self, nodeid: str, message: str) -> None:
        self.nodeid = nodeid
        self.message = message
        """The reason (pytest's short test summary shows it after the node id)."""

    def __str__(self) -> str:
        return f"{self.nodeid} - {_one_line(self.message)}"


class ItemReason:
    """A record item's reason as its report's ``longrepr`` under ``--tb=line``.

    pytest's line style prints, per failed test, the report (``toterminal``) and then its
    crash line (``str(longrepr.reprcrash)``; a plain string longrepr would be printed whole
    and then again cut at 50 characters). A failure's report prints nothing here and its
    crash line is ``<node id> - <reason>``: one line per item. An error's report is printed
    under its ``ERROR at setup of …`` header, as the reason on one line. ``str()`` is the
    whole reason (JUnit's text, xdist's serialization).
    """

    __slots__ = ("nodeid", "text", "when")

    def __init__(self, text: str, nodeid: str, when: str) -> None:
        self.text = text
        self.nodeid = nodeid
        self.when = when

    @property
    def reprcrash(self) -> _CrashLine:
        """The one line: node id and reason."""
        return _CrashLine(self.nodeid, self.text)

    def toterminal(self, tw: Any) -> None:
        """Print the report's body: nothing for a failure (its crash line follows)."""
        if self.when != "call":
            tw.line(_one_line(self.text))

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"ItemReason({self.nodeid!r}, {self.when!r})"


def _line_mode(config: pytest.Config) -> bool:
    return getattr(config.option, "tbstyle", None) == "line"


def line_mode_repr(config: pytest.Config, report: pytest.TestReport) -> None:
    """Give a record item's failed report its one-line form under ``--tb=line`` (in place).

    Called where reports are made (a single process, a worker) and where an xdist
    controller rebuilds them: serialization turns the reason back into a plain string.
    """
    if (
        report.failed
        and isinstance(report.longrepr, str)
        and _line_mode(config)
        and getattr(report, "legaleval_item", False)
    ):
        report.longrepr = ItemReason(report.longrepr, report.nodeid, report.when)  # type: ignore[assignment]


def _nothing() -> None:
    return None


def fast_report(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport | None:
    """The report of an item that raised one of our outcomes, built without a traceback.

    pytest's default report renders (and filters) the traceback even for ``pytrace=False``,
    at about a millisecond per failure, which a run failing thousands of records notices.
    Here pytest builds the report of a call that raised nothing (captured output, keywords
    and properties as it always gathers them), which then takes the failure's outcome,
    reason and timings: public API only. ``None`` for any other report (pytest builds
    those).
    """
    excinfo = call.excinfo
    if excinfo is None or not isinstance(excinfo.value, _OWN):
        return None
    if call.when not in ("setup", "call"):
        return None
    clean = pytest.CallInfo.from_call(_nothing, when=call.when)
    report = pytest.TestReport.from_item_and_call(item, clean)
    report.outcome = "failed"
    report.longrepr = str(excinfo.value.msg)
    report.duration, report.start, report.stop = call.duration, call.start, call.stop
    return report
