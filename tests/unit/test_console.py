"""The terminal table: one count vocabulary, old metrics read too, attachment warnings."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_legaleval.metrics._gates import metric_value
from pytest_legaleval.metrics._slices import SliceAccumulator
from pytest_legaleval.metrics._summary import MetricsAccumulator
from pytest_legaleval.run.console import MAX_WARNING_LINES, summary_lines

from .test_metrics_summary import result

OLD_RUN = Path(__file__).resolve().parents[1] / "data" / "report" / "run_v0"
SCAN = {"attachment_warnings": ["scan.pdf: the PDF has no text layer (scanned?)"]}


def _cells(line: str) -> list[str]:
    return line.split()


def _two_models() -> tuple[dict, dict]:
    summary, slices = MetricsAccumulator(), SliceAccumulator()
    rows = []
    for model in ("m1", "m2"):
        rows += [
            result("passed", model=model, record_id="q1", details=SCAN),
            result("failed", "wrong_answer", model=model, record_id="q2"),
            result("error", "judge_error", model=model, record_id="q3"),
            result("skipped", "skipped", model=model, record_id="q4"),
        ]
    for row in rows:
        summary.add(row)
        slices.add(row)
    for model in ("m1", "m2"):
        summary.add_invalid(("invalid", "d", 5))
        slices.add_invalid(dataset="d", model=model, key=("invalid", "d", 5))
    return summary.to_dict(resamples=50), slices.to_dict(resamples=50)


def test_the_table_counts_records_and_items_with_one_vocabulary() -> None:
    summary, slices = _two_models()
    lines = summary_lines(summary, slices)
    assert _cells(lines[0])[:8] == [
        "slice", "records", "items", "passed", "failed", "errors", "skipped", "invalid",
    ]  # fmt: skip
    # 5 records, 10 items: 2 passed, 2 wrong, 2 judge errors, 2 skipped, 2 invalid
    assert _cells(lines[1])[:8] == ["all", "5", "10", "2", "2", "2", "2", "2"]
    by_model = {_cells(line)[0]: _cells(line)[1:8] for line in lines[2:4]}
    assert by_model == {
        "model=m1": ["5", "5", "1", "1", "1", "1", "1"],
        "model=m2": ["5", "5", "1", "1", "1", "1", "1"],
    }
    assert summary["failed_records"] == 2  # q3 (judge errors) and the invalid record


def test_attachment_warnings_follow_the_table() -> None:
    summary, slices = _two_models()
    lines = summary_lines(summary, slices)
    at = lines.index("attachment warnings: 2 items")
    assert lines[at + 1] == "  d/q1 (m1): scan.pdf: the PDF has no text layer (scanned?)"
    assert lines[at + 2] == "  d/q1 (m2): scan.pdf: the PDF has no text layer (scanned?)"
    assert len(lines) == at + 3


def test_many_attachment_warnings_are_counted_and_a_few_quoted() -> None:
    acc = MetricsAccumulator()
    for i in range(12):
        acc.add(result("passed", record_id=f"q{i}", details=SCAN))
    lines = summary_lines(acc.to_dict(resamples=10), None)
    at = lines.index("attachment warnings: 12 items")
    assert len(lines[at + 1 :]) == MAX_WARNING_LINES + 1
    assert lines[-1] == f"  ({12 - MAX_WARNING_LINES} more in predictions.jsonl)"


def test_no_warning_line_without_warnings() -> None:
    acc = MetricsAccumulator()
    acc.add(result("passed"))
    assert not any("attachment" in line for line in summary_lines(acc.to_dict(), None))


def test_metrics_written_before_the_vocabulary_are_read_as_items() -> None:
    """An old metrics_summary.json: its *_records fields counted items."""
    old = json.loads((OLD_RUN / "metrics_summary.json").read_text())
    assert "total_items" not in old and old["total_records"] == 39
    lines = summary_lines(old, json.loads((OLD_RUN / "metrics_by_slice.json").read_text()))
    # records unknown ("-"); items 39 = 21 passed + 10 failed + 2 errors + 3 skipped + 3 invalid
    assert _cells(lines[1])[:8] == ["all", "-", "39", "21", "10", "2", "3", "3"]
    _, value, interval, n = metric_value(old, "pass_rate")
    assert n == 31 and value == old["pass_rate"] and interval is not None
    _, value, _, n = metric_value(old, "error_rate")
    assert n == 36 and value == old["error_rate"]
