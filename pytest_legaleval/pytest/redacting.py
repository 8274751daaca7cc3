"""One scrubbing point for what pytest prints and writes: the terminal and the JUnit XML.

The run directory redacts everything it writes (``run.redaction``); the text of a failed
item (the grader's reasons, a judge's raw reply, an assertion message quoting the model's
answer) and the captured output of any item reach the terminal, ``-rA``, the short test
summary and the JUnit XML through the test report instead. This plugin scrubs each report
as it is made, in the process that made it, so an xdist worker sends only scrubbed text:

- secrets always, and the chosen PII kinds with ``--redact`` (the run's redactor);
- control characters (ESC, OSC, BEL, NUL, C1, bidirectional overrides …) from data or a
  model, shown escaped (``run.console.printable``): a model's reply cannot clear the
  screen, retitle the window or plant a link, and the JUnit XML stays valid XML.

A report with nothing to scrub is left as it is (its structured traceback included); one
with something to scrub keeps its text only. Collection reports (a rejected dataset's
error) are scrubbed the same way.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from pytest_legaleval.run.console import printable
from pytest_legaleval.run.redaction import Redactor

__all__ = ["RedactingPlugin"]


class RedactingPlugin:
    """Registered in every process of an active run."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor

    def scrub(self, text: str, *, multiline: bool = True) -> str:
        """``text`` with secrets (and the chosen PII kinds) replaced, control characters escaped."""
        if self.redactor.needed(text):
            text = self.redactor.text(text)
        return printable(text, multiline=multiline)

    def _scrub_longrepr(self, report: pytest.TestReport | pytest.CollectReport) -> None:
        longrepr: Any = report.longrepr
        if longrepr is None:
            return
        if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip
            path, line, reason = longrepr
            report.longrepr = (path, line, self.scrub(str(reason)))
            return
        text = str(longrepr)
        scrubbed = self.scrub(text)
        if scrubbed != text:
            report.longrepr = scrubbed

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Scrub the report's text, captured output and user properties."""
        report = yield
        self._scrub_longrepr(report)
        if report.sections:
            report.sections = [(name, self.scrub(content)) for name, content in report.sections]
        if report.user_properties:
            report.user_properties = [
                (name, self.scrub(value, multiline=False) if isinstance(value, str) else value)
                for name, value in report.user_properties
            ]
        return report

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_make_collect_report(
        self, collector: pytest.Collector
    ) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
        """Scrub a collection error's text (a rejected dataset names its files)."""
        report = yield
        if report.failed:
            self._scrub_longrepr(report)
        return report
