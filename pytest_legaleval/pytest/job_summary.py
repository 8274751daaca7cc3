"""The GitHub Actions job summary a run appends to ``$GITHUB_STEP_SUMMARY`` (controller only).

Under GitHub Actions every step gets a file whose Markdown the job's page shows. When the
variable is set, the recorder's session end appends the run's summary to it
(``run.markdown.job_summary``): the headline with the pass rate and its interval, the
official benchmark figures, every gate with its value, the regressions against
``--baseline`` and the worst failures, as tables — every string from data escaped for
Markdown and HTML. The figures are the recorder's and the gatekeeper's own; the failures
are read back from the finished run directory, one line at a time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_legaleval.metrics.artifacts import FAILURES, PREDICTIONS
from pytest_legaleval.metrics.runfiles import iter_jsonl
from pytest_legaleval.pytest.state import GATES_KEY
from pytest_legaleval.run.console import benchmark_lines, printable
from pytest_legaleval.run.markdown import SHOWN_ROWS, job_summary, worst_items

if TYPE_CHECKING:
    from pytest_legaleval.pytest.recorder_plugin import RecorderPlugin

__all__ = ["SUMMARY_VARIABLE", "write_job_summary"]

SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"
"""The file GitHub Actions shows as the job summary."""


def _rows(run: Path) -> Iterator[dict[str, Any]]:
    yield from iter_jsonl(run / PREDICTIONS)
    for row in iter_jsonl(run / FAILURES):
        if row.get("failure_type") == "invalid_record":
            yield row


def _baseline(config: pytest.Config) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The gates' results and the baseline comparison's figures, if gates were set."""
    gatekeeper = config.stash.get(GATES_KEY, None)
    if gatekeeper is None:
        return [], None
    gates = [result.to_dict() for result in gatekeeper.results or ()]
    if gatekeeper.baseline is None:
        return gates, None
    if gatekeeper.scoring_mismatch is not None:
        return gates, {"error": gatekeeper.scoring_mismatch}
    comparison = gatekeeper.comparison
    if comparison is None:
        return gates, None
    worse = ("pass_to_fail", "pass_to_error", "fewer_passes")
    changes = [c.to_dict() for c in comparison.changes if c.change in worse]
    return gates, {
        "run_id": gatekeeper.baseline.run_id,
        "paired": comparison.paired,
        "regressions": comparison.regressions,
        "improvements": comparison.improvements,
        "pass_rate_delta": comparison.pass_rate_delta,
        "regressed": gatekeeper.regressed,
        "changes": changes,
    }


def write_job_summary(plugin: RecorderPlugin, session: pytest.Session) -> None:
    """Append the run's Markdown summary to ``$GITHUB_STEP_SUMMARY`` when it is set."""
    target = os.environ.get(SUMMARY_VARIABLE)
    final = plugin.recorder.final
    if not target or plugin.directory is None or final is None:
        return
    summary, _ = final
    run = Path(plugin.directory.path)
    gates, baseline = _baseline(session.config)
    worst, not_passed = worst_items(_rows(run), SHOWN_ROWS)
    text = job_summary(
        summary,
        run_id=plugin.run_id,
        status=plugin.status,
        benchmarks=benchmark_lines(summary.get("benchmarks") or {}),
        gates=gates,
        baseline=baseline,
        worst=worst,
        not_passed=not_passed,
    )
    try:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")
    except OSError as exc:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(
                printable(f"legaleval: cannot append the job summary to {target}: {exc}")
            )
