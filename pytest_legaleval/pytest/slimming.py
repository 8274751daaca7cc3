"""Keep the terminal reporter's per-item memory small on long runs (50,000 items and more).

pytest's terminal reporter keeps every report until the session ends, and its progress
counter keeps every item's structured node id. The run recorder has written each result
to disk by the time the reporter holds it, so what the end-of-session summaries print can
be kept in a fraction of the memory, and nothing else:

- passed setup and teardown reports, filed under ``""`` where no summary shows them, go;
- passed call reports that no ``-rp/-rP/-rA`` will print become one shared stand-in (only
  their count is shown);
- a record's failed call report (a one-line reason, no traceback, no captured output)
  becomes a :class:`FailedRecordReport` holding its node id, reason, line and duration;
- other reports keep what the summaries read and lose the rest (keywords, JUnit
  properties, xdist's routing fields);
- the progress counter keeps a byte per record item instead of its parsed node id;
- pytest's failed-subtest counter stops inserting a zero for every item it reads.

Everything a summary prints is unchanged: ``short test summary info``, the ``FAILURES``
section of any ``--tb`` style, ``--durations`` and the counts (tests check each of them).
A report that carries another plugin's fields (hypothesis puts its statistics and failing
examples on a passed teardown report, for its own summary) is kept whole.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Hashable, Sequence
from types import MappingProxyType
from typing import Any

import pytest

from pytest_legaleval.pytest.outcomes import ItemReason

__all__ = [
    "PAYLOAD_FIELDS",
    "PYTEST_REPORT_FIELDS",
    "FailedRecordReport",
    "ItemProgress",
    "keep_subtest_counts_small",
    "release",
    "track_progress",
]

PASSED_STAND_IN = pytest.TestReport(
    "legaleval::passed", ("", None, ""), {}, "passed", None, "call", []
)
"""Counted in the terminal reporter's ``passed`` list in place of reports nobody reads."""

PAYLOAD_FIELDS = ("legaleval", "legaleval_record", "legaleval_invalid")
"""Our results on a test report (set by the plugin's ``makereport``, read by the recorder)."""
PYTEST_REPORT_FIELDS = (
    "nodeid",
    "location",
    "keywords",
    "outcome",
    "longrepr",
    "when",
    "user_properties",
    "sections",
    "duration",
    "start",
    "stop",
    "wasxfail",
)
"""A test report's own fields, as pytest serializes them."""
_ROUTING_FIELDS = ("node", "item_index", "testrun_uid", "worker_id", "$report_type")
# Since pytest 9 a report stores its node id parsed, as ``_id``.
_OWN_FIELDS = frozenset((*PYTEST_REPORT_FIELDS, "_id", *_ROUTING_FIELDS, *PAYLOAD_FIELDS))
"""A report's fields that pytest, xdist or we set; any other is another plugin's."""


class FailedRecordReport(pytest.TestReport):
    """A failed record's call report, reduced to what the end-of-session summaries read.

    It is a real ``TestReport`` (every summary and plugin treats it as one) whose node id,
    location and reason are the original's; the parsed node id is rebuilt on demand.
    """

    __slots__ = ("_id_type", "_lineno", "_nodeid", "_path", "duration", "longrepr")

    when = "call"
    outcome = "failed"
    keywords: Any = MappingProxyType({})
    user_properties: Any = ()
    sections: Any = ()
    start = 0.0
    stop = 0.0

    def __init__(self, report: pytest.TestReport, nodeid: str, reason: str | ItemReason) -> None:
        # TestReport.__init__ is not called: it would fill an instance dict with every field.
        assert report.location is not None
        self._nodeid = nodeid
        self._path = sys.intern(report.location[0])
        self._lineno = report.location[1]
        self.longrepr = reason  # type: ignore[assignment]  # pytest reads it as a TerminalRepr
        self.duration = report.duration
        # The parsed node id's class, taken from the original report (pytest 9 has one;
        # nothing is imported from pytest's private modules).
        self._id_type = type(getattr(report, "_id", None))

    @property  # type: ignore[misc]
    def nodeid(self) -> str:
        """The original report's node id."""
        return self._nodeid

    @property
    def _id(self) -> Any:  # type: ignore[override]
        parse = getattr(self._id_type, "parse", None)
        return parse(self._nodeid) if parse is not None else self._nodeid

    @property
    def id(self) -> Any:
        """The parsed node id (``NodeId``), rebuilt on demand."""
        return self._id

    @property
    def location(self) -> tuple[str, int | None, str]:  # type: ignore[override]
        """The original report's location (``_slimmable`` checked the domain)."""
        return (self._path, self._lineno, _domain(self._nodeid))

    def __repr__(self) -> str:
        return f"<FailedRecordReport {self._nodeid!r}>"


def _domain(nodeid: str) -> str:
    """``a.py::TestX::test_y[p]`` → ``TestX.test_y[p]``: a Python test item's domain."""
    head, _, tail = nodeid.partition("[")
    names = head.split("::")[1:]
    return ".".join(names) + (f"[{tail}" if tail else "")


def _slimmable(report: pytest.TestReport) -> bool:
    location = report.location
    return (
        report.failed
        and isinstance(report.longrepr, str | ItemReason)
        and not report.sections
        and not hasattr(report, "wasxfail")
        and location is not None
        and location[2] == _domain(report.nodeid)
    )


_REASONS_KEPT = 4096
"""Distinct failure reasons shared between failed reports (benchmarks repeat a few)."""


def release(
    report: pytest.TestReport,
    stats: dict[str, list[Any]],
    *,
    show_passed: bool,
    collection: Sequence[str] | None,
    reasons: dict[str, str],
) -> None:
    """Shrink what the terminal reporter keeps of ``report`` (see the module's docstring).

    ``collection`` is an xdist controller's list of collected node ids: a failed report
    then reuses its string for the node id instead of keeping its own copy. ``reasons``
    maps a failure reason to the one copy of it that failed reports share.
    """
    fields = report.__dict__
    for name in PAYLOAD_FIELDS:
        fields.pop(name, None)
    if fields.keys() - _OWN_FIELDS:
        return  # another plugin's data, which its own summary may read: kept whole
    if report.passed:
        if report.when != "call":
            _replace_last(stats.get(""), report, None)
        elif not show_passed:
            _replace_last(stats.get("passed"), report, PASSED_STAND_IN)
        return
    if report.skipped:
        return
    # A failed setup (an item without a verdict, an invalid record) is trimmed like any
    # other report below: xdist's routing fields would add a worker line to its summary.
    if report.when == "call" and _slimmable(report):
        nodeid = report.nodeid
        index = fields.get("item_index")
        if collection is not None and isinstance(index, int) and 0 <= index < len(collection):
            shared = collection[index]
            nodeid = shared if shared == nodeid else nodeid
        reason = str(report.longrepr)
        shared_reason = reasons.get(reason)
        if shared_reason is None:
            shared_reason = reason
            if len(reasons) < _REASONS_KEPT:
                reasons[reason] = reason
        # Under --tb=line the reason prints as one line with its node id (shared strings).
        longrepr = report.longrepr
        kept = (
            ItemReason(shared_reason, nodeid, "call")
            if isinstance(longrepr, ItemReason)
            else shared_reason
        )
        stand_in = FailedRecordReport(report, nodeid, kept)
        _replace_last(stats.get("failed"), report, stand_in)
        return
    report.keywords = {}
    report.user_properties = []
    for name in _ROUTING_FIELDS:
        fields.pop(name, None)


def _replace_last(bucket: list[Any] | None, report: object, stand_in: object | None) -> None:
    if bucket and bucket[-1] is report:
        if stand_in is None:
            bucket.pop()
        else:
            bucket[-1] = stand_in


class ItemProgress(set[int]):
    """The terminal reporter's set of reported items, as one byte per record item.

    The reporter only adds to it (the structured node id of each report it shows) and
    counts it, for the percentage. The recorder, which sees each report first, names the
    record item it belongs to (:attr:`next_index`); a report of anything else (another
    test, a record item's failed teardown) is kept as a hash of its node id.
    """

    def __init__(self, items: int) -> None:
        super().__init__()
        self._seen = bytearray(items)
        self._count = 0
        self.next_index: int | None = None
        """The record item (``ItemSpec.index``) of the report being logged, if any."""

    def add(self, element: Hashable) -> None:
        """Count ``element`` (once)."""
        index, self.next_index = self.next_index, None
        if index is not None and 0 <= index < len(self._seen):
            if not self._seen[index]:
                self._seen[index] = 1
                self._count += 1
            return
        super().add(hash(element))

    def __len__(self) -> int:
        return self._count + super().__len__()


def track_progress(reporter: object, items: int) -> ItemProgress | None:
    """Give ``reporter`` an :class:`ItemProgress`, if it has the set this expects."""
    current = getattr(reporter, "_progress_nodeids_reported", None)
    if type(current) is not set:
        return None
    progress = ItemProgress(items)
    for element in current:
        progress.add(element)
    reporter._progress_nodeids_reported = progress  # type: ignore[attr-defined]
    return progress


class _CountsReadWithoutInserting(defaultdict[Any, int]):
    """A ``defaultdict(int)`` whose reads of a missing key do not insert it."""

    def __missing__(self, key: Any) -> int:
        return 0


def keep_subtest_counts_small(config: pytest.Config) -> None:
    """Stop pytest's per-item failed-subtest counter from growing by one entry per test.

    pytest's subtests plugin reads ``counts[report.id]`` for every call report from a
    ``defaultdict(int)``, which inserts a zero (and keeps the parsed node id) for each of
    them. The same mapping, reading a missing key as 0 without inserting it, counts the
    same (``counts[id] += 1`` still stores), and stays as large as the failed subtests.
    """
    # pytest's subtests plugin, found through the plugin manager (no private import).
    subtests = config.pluginmanager.get_plugin("subtests")
    failed_subtests_key = getattr(subtests, "failed_subtests_key", None)
    if failed_subtests_key is None:  # another pytest version: nothing to do
        return
    counts = config.stash.get(failed_subtests_key, None)
    if type(counts) is defaultdict and counts.default_factory is int:
        config.stash[failed_subtests_key] = _CountsReadWithoutInserting(int, counts)
