"""How an item's result becomes a pytest outcome, and the text pytest shows for it.

Every item is one of the count vocabulary's categories (``metrics/_items.py``), and pytest
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
(:func:`fast_report`): its first line says why in one line (``run.reasons``:
``invalid_record: prompt is required (bad.jsonl line 1)``, ``below_threshold 0.16 < 0.70:
missed "…", +3``), the rest gives the details (the ``record_errors`` JSON, every criterion).
The report's ``longrepr`` is an :class:`ItemReason` (:func:`item_repr`): pytest's short
summary and JUnit's ``message`` attribute read its one line (``reprcrash.message``), the
FAILURES section and JUnit's element text the whole text; under ``--tb=line`` pytest
prints one line per item: the node id and the reason.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_legaleval.metrics._items import item_category
from pytest_legaleval.records import EvalResult
from pytest_legaleval.run.reasons import one_line

__all__ = [
    "InvalidItem",
    "ItemReason",
    "NoVerdict",
    "RecordFailed",
    "fast_report",
    "has_no_verdict",
    "item_repr",
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


class _CrashLine:
    """``reprcrash`` of an :class:`ItemReason`: what the short summary and JUnit read."""

    __slots__ = ("message", "nodeid")

    def __init__(self, nodeid: str, message: str) -> None:
        self.nodeid = nodeid
        self.message = message
        """The one-line reason (pytest's short summary shows it after the node id)."""

    def __str__(self) -> str:
        return f"{self.nodeid} - {self.message}"


class ItemReason:
    """A record item's reason as its report's ``longrepr``.

    pytest reads a ``longrepr``'s crash line (``reprcrash``) for the short test summary,
    ``--tb=line`` and JUnit's ``message`` attribute, and prints the report (``toterminal``)
    in the FAILURES and ERRORS sections. Here the crash line is the reason's first line
    (one line, cut at ``run.reasons.LINE_LIMIT``) and the report the whole text. Under
    ``--tb=line`` pytest prints, per failed test, the report and then its crash line: a
    failure's report prints nothing there (its crash line, ``<node id> - <reason>``, is the
    one line), an error's prints its one line under its ``ERROR at setup of …`` header.
    ``str()`` is the whole text (JUnit's element text, xdist's serialization).
    """

    __slots__ = ("line_mode", "nodeid", "text", "when")

    def __init__(self, text: str, nodeid: str, when: str, *, line_mode: bool = False) -> None:
        self.text = text
        self.nodeid = nodeid
        self.when = when
        self.line_mode = line_mode

    @property
    def reprcrash(self) -> _CrashLine:
        """The one line: the reason's first line."""
        return _CrashLine(self.nodeid, one_line(self.text.partition("\n")[0]))

    def toterminal(self, tw: Any) -> None:
        """Print the report's body: the whole text; under ``--tb=line`` one line or none."""
        if not self.line_mode:
            for line in self.text.splitlines():
                tw.line(line)
        elif self.when != "call":
            tw.line(self.reprcrash.message)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"ItemReason({self.nodeid!r}, {self.when!r})"


def _line_mode(config: pytest.Config) -> bool:
    return getattr(config.option, "tbstyle", None) == "line"


def item_repr(config: pytest.Config, report: pytest.TestReport) -> None:
    """Give a record item's failed report its reason as an :class:`ItemReason` (in place).

    Called where reports are made (a single process, a worker) and where an xdist
    controller rebuilds them: serialization turns the reason back into a plain string.
    """
    if (
        report.failed
        and isinstance(report.longrepr, str)
        and getattr(report, "legaleval_item", False)
    ):
        report.longrepr = ItemReason(  # type: ignore[assignment]
            report.longrepr, report.nodeid, report.when, line_mode=_line_mode(config)
        )


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
