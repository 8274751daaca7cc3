"""One redaction point for what pytest prints and writes: the terminal and the JUnit XML.

The run directory redacts everything it writes (``run.redaction``); the text of a failed
item (the grader's reasons, a judge's raw reply, an assertion message quoting the model's
answer) and the captured output of any item reach the terminal, ``-rA`` and the JUnit XML
through the test report instead. This plugin scrubs each report as it is made, with the
run's redactor (secrets always, PII kinds with ``--redact``), in the process that made it,
so an xdist worker sends only scrubbed text. A report with nothing to scrub is left as it
is (its structured traceback included); one with something to scrub keeps its text only.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from pytest_legaleval.run.redaction import Redactor

__all__ = ["RedactingPlugin"]


class RedactingPlugin:
    """Registered in every process of an active run."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor

    def scrub(self, text: str) -> str:
        """``text`` with secrets (and the chosen PII kinds) replaced."""
        return self.redactor.text(text) if self.redactor.needed(text) else text

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Scrub the report's text, captured output and user properties."""
        report = yield
        longrepr: Any = report.longrepr
        if longrepr is not None:
            if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip
                path, line, reason = longrepr
                report.longrepr = (path, line, self.scrub(str(reason)))
            else:
                text = str(longrepr)
                if self.redactor.needed(text):
                    report.longrepr = self.redactor.text(text)
        if report.sections:
            report.sections = [(name, self.scrub(content)) for name, content in report.sections]
        if report.user_properties:
            report.user_properties = [
                (name, self.scrub(value) if isinstance(value, str) else value)
                for name, value in report.user_properties
            ]
        return report
