"""The HTML report rendered by a real headless Chromium: DOM content, filtering, screenshots.

The run is a real three-model session through the mock server (``report_runs.py``). Without
Debian's ``chromium`` the tests are skipped, with the reason: the README's test command needs
no browser. ``.ci/run`` installs it and runs them, requiring that none is skipped.
Screenshots are written into each test's tmp path, which the test prints (see them with
``-rP`` or ``-s``).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pytest_legaleval.report import write_report
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from ..extras import require_extras
from .conftest import DATA, EXAMPLES, copy_in, read_jsonl, run_dirs, run_eval, write_jsonl
from .report_runs import HOSTILE, MODELS, reply, reviewer_run, write_scale_run

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
OLD_RUN = DATA / "report" / "run_v0"


@pytest.fixture(scope="session")
def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        if require_extras():
            pytest.fail("chromium is not installed, and LEGALEVAL_REQUIRE_EXTRAS=1 requires it")
        pytest.skip("needs Debian's chromium: apt-get install chromium (.ci/run installs it)")
    return found


def _browse(chromium: str, url: str, tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    profile = tempfile.mkdtemp(dir=tmp, prefix="profile-")  # an empty profile each time
    return subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, url],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _dom(chromium: str, report: Path, tmp: Path, fragment: str = "") -> str:
    done = _browse(
        chromium, report.as_uri() + fragment, tmp, "--dump-dom", "--enable-logging=stderr"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Uncaught" not in done.stderr, done.stderr[-2000:]  # the script ran to its end
    return done.stdout


def _screenshot(chromium: str, report: Path, tmp: Path, name: str, fragment: str = "") -> Path:
    shot = tmp / f"{name}.png"
    done = _browse(
        chromium, report.as_uri() + fragment, tmp, f"--screenshot={shot}",
        "--window-size=1400,2000",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1400, 2000)
    assert len(data) > 20_000  # a rendered page, not a blank canvas
    print(f"screenshot ({name}): {shot}")
    return shot


def _text_of(dom: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}"[^>]*>([^<]*)<', dom)
    assert match, f"no #{element_id} in the DOM"
    return html.unescape(match.group(1))


class _Tables(HTMLParser):
    """The rows of every table in a DOM: the row's attributes and its cells' text."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[tuple[dict[str, str], list[str]]]] = {}
        self._stack: list[str] = []
        self._row: tuple[dict[str, str], list[str]] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "table":
            self._stack.append(found.get("id") or found.get("class") or "")
            self.tables.setdefault(self._stack[-1], [])
        elif tag == "tr" and self._stack:
            self._row = (found, [])
            self.tables[self._stack[-1]].append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self._stack:
            self._stack.pop()
        elif tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row[1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _tables(dom: str) -> dict[str, list[tuple[dict[str, str], list[str]]]]:
    parser = _Tables()
    parser.feed(dom)
    return parser.tables


def _cards(dom: str) -> dict[str, str]:
    return {
        key: html.unescape(value)
        for key, value in re.findall(
            r'data-metric="([^"]+)"[^>]*><div class="label">[^<]*</div>'
            r'<div class="value">([^<]*)</div>',
            dom,
        )
    }


def _tally(dom: str) -> dict[str, str]:
    return dict(part.split(": ") for part in _text_of(dom, "outcome-counts").split(" · "))


@pytest.fixture
def review_server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer(latency=0.002) as server:
        server.add_reply(reply)
        yield server


@pytest.fixture
def review(
    pytester: pytest.Pytester, suite: Path, review_server: MockOpenAIServer, tmp_path: Path
) -> tuple[Path, Path, pytest.RunResult]:
    run, result = reviewer_run(pytester, review_server)
    return run, write_report(run, tmp_path / "report.html"), result


def test_metrics_and_terminal_count_records_and_items_apart(
    review: tuple[Path, Path, pytest.RunResult],
) -> None:
    """13 records x 3 models = 39 items; the JUnit-side outcome is pytest's, not ours."""
    run, _, result = review
    summary = json.loads((run / "metrics_summary.json").read_text())
    items = {k: summary[f"{k}_items"] for k in ("total", "passed", "failed", "error",
                                                  "skipped", "invalid")}  # fmt: skip
    assert items == {"total": 39, "passed": 21, "failed": 10, "error": 2, "skipped": 3,
                     "invalid": 3}  # fmt: skip
    records = {k: summary[f"{k}_records"] for k in ("total", "valid", "evaluated", "failed",
                                                    "skipped", "invalid", "error")}  # fmt: skip
    # mq6 (a generation error) and ref3 (a judge error) failed, as did the invalid record
    assert records == {"total": 13, "valid": 12, "evaluated": 9, "failed": 3, "skipped": 1,
                       "invalid": 1, "error": 2}  # fmt: skip
    assert summary["attachment_warning_items"] == 3
    assert summary["attachment_warning_records"] == 1
    assert len(read_jsonl(run / "failures.jsonl")) == items["error"] + items["invalid"]
    manifest = json.loads((run / "run_manifest.json").read_text())
    assert manifest["denominators"]["total_records"] == 13
    slices = json.loads((run / "metrics_by_slice.json").read_text())["slices"]
    for model in MODELS:
        assert slices["model"][model]["total_records"] == 13
    result.stdout.fnmatch_lines(
        [
            "slice *records *items *passed *failed *errors *skipped *invalid *pass rate*",
            "all *13 *39 *21 *10 *2 *3 *3 *67.7%*",
            "model=openai/gamma *13 *13 *5 *5 *1 *1 *1 *",
            "attachment warnings: 3 items",
            "  casebook/ref2 (openai/*): scan.pdf: the PDF has no text layer*",
        ]
    )


def test_the_report_opens_on_failures_and_counts_as_the_metrics(
    chromium: str, review: tuple[Path, Path, pytest.RunResult], tmp_path: Path
) -> None:
    run, report, _ = review
    summary = json.loads((run / "metrics_summary.json").read_text())
    source = report.read_text(encoding="utf-8")
    # self-contained: a CSP forbids fetching, and nothing refers to another resource
    assert "default-src 'none'" in source
    assert not re.search(r'(?:src|href)\s*=\s*["\']?(?:https?:|//)', source)
    dom = _dom(chromium, report, tmp_path)
    cards, tally = _cards(dom), _tally(dom)
    # one vocabulary: the cards, the table's tally and metrics_summary.json agree
    for label, field in (("failed", "failed"), ("errors", "error"), ("invalid", "invalid"),
                         ("passed", "passed"), ("skipped", "skipped")):  # fmt: skip
        assert cards[label] == tally[label] == str(summary[f"{field}_items"]), label
    assert (cards["records"], cards["items"]) == ("13", "39")
    assert cards["attachment_warnings"] == "3"
    assert _text_of(dom, "shown-count") == "39 of 39 items"
    rows = [r for r in _tables(dom)["records"] if "rec" in r[0].get("class", "")]
    outcomes = [r[0]["data-outcome"] for r in rows]
    # failures and errors first, then the rest
    assert (
        outcomes
        == ["failed"] * 10 + ["error"] * 2 + ["invalid"] * 3 + ["passed"] * 21 + ["skipped"] * 3
    )
    warned = [r[1] for r in rows if r[1][0] == "ref2"]
    assert len(warned) == 3 and all(cells[8].startswith("⚠ scan.pdf") for cells in warned)
    # the question column: each record's prompt, from its escaped element
    assert {cells[1] for cells in warned} == {"Open question ref2: what is culpa in contrahendo?"}
    assert 'id="latency-histogram"' in dom and "latency per item (ms)" in dom
    # hostile text stayed text: no second script ran, no image element was created
    assert "<title>pwned</title>" not in dom and "<img" not in dom
    _screenshot(chromium, report, tmp_path, "failures-first")


def test_a_rubric_item_opens_on_its_criteria(
    chromium: str, review: tuple[Path, Path, pytest.RunResult], tmp_path: Path
) -> None:
    _, report, _ = review
    fragment = "#filter=rub1&outcome=failed&model=1&open=first"  # openai/beta
    dom = _dom(chromium, report, tmp_path, fragment)
    assert _text_of(dom, "shown-count") == "1 of 39 items"
    criteria = _tables(dom)["criteria-table"]
    assert [cells[:3] for _, cells in criteria[1:]] == [
        ["CRIT-STATUTE", "3", "✗ not met"],
        ["CRIT-NOTICE", "1", "✓ met"],
        ["CRIT-INVENTED", "-2", "✓ met"],
    ]
    assert [attrs.get("class") for attrs, _ in criteria[1:]] == ["unmet", None, "penalty"]
    reasons = [cells[3] for _, cells in criteria[1:]]
    assert reasons[0].startswith("The answer does not satisfy CRIT-STATUTE. First,")
    assert all(HOSTILE in reason for reason in reasons)  # shown as text, whole
    assert "rubric: 1 of 2 criteria met (weight 1 of 4), 1 penalty applied" in dom
    assert "<img" not in dom
    _screenshot(chromium, report, tmp_path, "rubric-breakdown", fragment)


def test_the_model_matrix_shows_where_models_disagree(
    chromium: str, review: tuple[Path, Path, pytest.RunResult], tmp_path: Path
) -> None:
    run, report, _ = review
    dom = _dom(chromium, report, tmp_path)
    matrix = _tables(dom)["matrix"]
    head, summaries = matrix[0][1], [r for r in matrix if "model-summary" in r[0].get("class", "")]
    assert head[3:] == list(MODELS)
    by_record = {
        cells[0]: (attrs, cells) for attrs, cells in matrix if "rec" in attrs.get("class", "")
    }
    assert len(by_record) == 13
    disagree = {rid for rid, (attrs, _) in by_record.items() if "disagree" in attrs["class"]}
    assert disagree == {"mq1", "mq4", "ref1", "rub1", "rub2"}
    # the disagreeing rows come first
    order = [cells[0] for attrs, cells in matrix if "rec" in attrs.get("class", "")]
    assert set(order[:5]) == disagree
    assert by_record["mq1"][1][3:] == ["✓ 1.00", "✓ 1.00", "✗ 0.00"]
    assert by_record["mq6"][1][3:] == ["✓ 1.00", "✓ 1.00", "error"]
    assert by_record["bad"][1][3:] == ["invalid"] * 3
    assert by_record["skipme"][1][3:] == ["skip"] * 3
    assert by_record["ref2"][1][3:] == ["✓ 0.90 ⚠"] * 3
    # each model's summary sits in its column, as metrics_by_slice.json has it
    slices = json.loads((run / "metrics_by_slice.json").read_text())["slices"]["model"]
    pass_rates = next(cells for attrs, cells in summaries if attrs["data-metric"] == "pass_rate")
    for model, cell in zip(MODELS, pass_rates[1:], strict=True):
        assert cell.startswith(f"{slices[model]['pass_rate']:.1%}")
    counts = next(cells for attrs, cells in summaries if attrs["data-metric"] == "counts")
    assert counts[1:] == ["2 · 0 · 1 · 9 · 1", "3 · 1 · 1 · 7 · 1", "5 · 1 · 1 · 5 · 1"]
    assert _text_of(dom, "matrix-count") == "13 of 13 records · 5 with disagreeing models"
    fragment = "#outcome=failed&disagree=1"
    dom = _dom(chromium, report, tmp_path, fragment)
    assert _text_of(dom, "matrix-count") == "5 of 13 records · 5 with disagreeing models"
    _screenshot(chromium, report, tmp_path, "model-matrix", fragment)


def test_a_run_directory_of_before_the_vocabulary_renders(chromium: str, tmp_path: Path) -> None:
    report = write_report(OLD_RUN, tmp_path / "old.html")
    dom = _dom(chromium, report, tmp_path)
    cards, tally = _cards(dom), _tally(dom)
    assert (cards["records"], cards["items"]) == ("13", "39")
    assert tally == {"failed": "10", "errors": "2", "invalid": "3", "passed": "21",
                     "skipped": "3"}  # fmt: skip
    assert all(cards[k] == v for k, v in tally.items())
    assert "disagree" in dom and 'id="count-mismatch"' not in dom


@pytest.fixture
def prefilled(pytester: pytest.Pytester, suite: Path, tmp_path: Path) -> tuple[Path, list[dict]]:
    data, responses = copy_in(
        pytester, EXAMPLES / "legal_mcq.jsonl", EXAMPLES / "legal_mcq.responses.jsonl"
    )
    rows = read_jsonl(responses)
    rows[0] = {**rows[0], "response": f"{HOSTILE} Answer: A"}
    responses = write_jsonl(responses, rows)
    run_eval(pytester, data, responses)
    (run,) = run_dirs(pytester.path / "runs")
    predictions = read_jsonl(run / "predictions.jsonl")
    return write_report(run, tmp_path / "report.html"), predictions


def test_filtering_in_chromium(
    chromium: str, prefilled: tuple[Path, list[dict]], tmp_path: Path
) -> None:
    path, predictions = prefilled
    n = len(predictions)
    wrong = sum(p["reason"] == "wrong_answer" for p in predictions)
    dom = _dom(chromium, path, tmp_path, "#filter=wrong_answer")
    assert _text_of(dom, "shown-count") == f"{wrong} of {n} items"
    assert dom.count('class="rec ') == wrong
    failed = sum(p["outcome"] == "failed" for p in predictions)
    dom = _dom(chromium, path, tmp_path, "#outcome=failed")
    assert _text_of(dom, "shown-count") == f"{failed} of {n} items"
    one = predictions[3]["record_id"]
    dom = _dom(chromium, path, tmp_path, f"#filter={one.upper()}")
    assert _text_of(dom, "shown-count") == f"1 of {n} items"
    # one model, pre-computed responses: no matrix, no latencies, no empty caption
    assert 'id="matrix"' not in dom and 'id="latency-histogram"' not in dom
    assert "latency per item" not in dom and 'id="score-histogram"' in dom
    assert "<title>pwned</title>" not in dom and "<img" not in dom


@pytest.mark.slow
def test_fifty_thousand_items_stay_small_and_filter_fast(
    chromium: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """50,000 items with their records and transcripts: under 10 MB, memory flat."""
    run = write_scale_run(tmp_path, items=50_000, reviewer=True)
    report = tmp_path / "report.html"
    # In a process of its own, to read its peak memory: predictions.jsonl (285 MB) and
    # transcripts.jsonl (420 MB) are streamed, not loaded.
    # The peak is read as VmHWM, this process image's own: ru_maxrss would carry over the
    # forking test process's size (a worker deep into the suite is far larger).
    code = (
        "import re, sys, time\n"
        "from pytest_legaleval.report import write_report\n"
        "started = time.perf_counter()\n"
        "write_report(sys.argv[1], sys.argv[2])\n"
        "print(round(time.perf_counter() - started, 1))\n"
        "status = open('/proc/self/status').read()\n"
        "print(int(re.search(r'VmHWM:\\s+(\\d+)', status).group(1)) // 1024)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(run), str(report)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    build_s, peak_mb = done.stdout.split()[-2:]
    assert int(peak_mb) < 400
    size = report.stat().st_size
    assert size < 10_000_000
    page = report.read_text(encoding="utf-8")
    assert html.escape(str(run / "predictions.jsonl")) in page  # where the full texts are
    # every record's question is in the page as text (a preview), once
    assert page.count('<div class="q" id="q') == 50_000 // 8
    assert '<p class="q-prompt" data-n="' in page and "Question 123. " in page
    dom = _dom(chromium, report, tmp_path, "#filter=big:r000123")
    assert _text_of(dom, "shown-count") == "8 of 50000 items"
    took = re.search(r'id="shown-count"[^>]*data-ms="(\d+)"', dom)
    assert took is not None
    dom = _dom(chromium, report, tmp_path, "#search=question 123.")
    assert _text_of(dom, "shown-count") == "8 of 50000 items"
    preview = re.search(r"up to ([\d,]+) characters", page)
    assert preview is not None
    with capsys.disabled():
        print(
            f"\n50,000 items, {(run / 'predictions.jsonl').stat().st_size / 1e6:.0f} MB of "
            f"predictions, {(run / 'transcripts.jsonl').stat().st_size / 1e6:.0f} MB of "
            f"transcripts: report {size / 1e6:.2f} MB built in {build_s} s, previews "
            f"{preview.group(1)} characters, filtering in Chromium {took.group(1)} ms, peak "
            f"memory of the report {peak_mb} MB"
        )
