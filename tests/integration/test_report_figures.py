"""The report's figure sections in a real headless Chromium: official figures, epochs, calibration.

Driven over the DevTools protocol (``report_cdp.Browser``) with its own mouse events, as
``test_report_review.py`` does; skipped without Debian's ``chromium`` (failed with
``LEGALEVAL_REQUIRE_EXTRAS=1``). Screenshots go into each test's tmp path, printed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_legaleval.cli.audit import audit_body
from pytest_legaleval.metrics.artifacts import FLAKY_RECORDS
from pytest_legaleval.report import write_report

from .conftest import EXAMPLES, read_jsonl
from .report_cdp import Browser
from .report_sections import MODELS, write_figures_run
from .test_audit_cli import lbr_run  # noqa: F401  (the fixture: LBR's run, replayed)
from .test_report_browser import chromium  # noqa: F401  (the fixture: skip or fail)
from .test_report_review import _shot, browser  # noqa: F401  (the fixture: no script error)

_ROWS = (
    "Array.prototype.map.call(document.querySelectorAll('#records tr.rec'), function (t)"
    " { return [t.cells[0].textContent, t.cells[3].textContent]; })"
)


def _scroll(page: Browser, selector: str) -> None:
    assert page.js(f"!!document.querySelector({json.dumps(selector)})"), selector
    page.js(f"document.querySelector({json.dumps(selector)}).scrollIntoView()")


@pytest.fixture
def figures_page(tmp_path: Path) -> Path:
    return write_report(write_figures_run(tmp_path), tmp_path / "figures.html")


def test_the_official_figures_show_their_protocol_and_manual_tasks(
    browser: Browser,  # noqa: F811
    tmp_path: Path,
) -> None:
    run = write_figures_run(tmp_path, models=MODELS[:1], labels=None, epochs=1)
    browser.open(write_report(run, tmp_path / "official.html").as_uri())
    protocols = browser.visible("#official p.protocol")
    assert [p.split(" scored by the protocol ")[1].split(",")[0] for p in protocols] == [
        "legalbench_official version 1", "lexam_official version 1",
    ]  # fmt: skip
    assert browser.visible('.card[data-metric="benchmarks.legalbench.score"] .value') == ["0.688"]
    assert browser.visible("#legalbench-tasks td.manual") == [
        "needs manual evaluation (graded by hand upstream; no value)"
    ]
    assert browser.visible('#lexam-headline td[data-figure="open"]') == ["41.2"]
    _scroll(browser, "#official")
    _shot(browser, tmp_path, "official-figures")


def test_the_flaky_link_filters_the_items_to_the_flaky_ones(
    browser: Browser,  # noqa: F811
    figures_page: Path,
    tmp_path: Path,
) -> None:
    flaky = read_jsonl(figures_page.parent / "runs" / "run_figures" / FLAKY_RECORDS)
    expected = sorted([line["record_id"], line["model"]] for line in flaky)
    browser.open(figures_page.as_uri())
    assert browser.visible("#shown-count") == ["26 of 26 items"]
    _scroll(browser, "#uncertainty")
    _shot(browser, tmp_path, "epochs-and-uncertainty")
    browser.click("#flaky-link")
    assert browser.visible("#shown-count") == [f"{len(flaky)} of 26 items"]
    assert sorted(browser.js(_ROWS)) == expected
    assert browser.js("document.getElementById('flaky-filter').checked") is True
    # a flaky item's view lists epochs that disagree
    browser.click("#records tr.rec td.question-cell")
    marks = "".join(browser.visible(".detail p.epochs span[data-epoch]"))
    assert "✓" in marks and "✗" in marks
    _shot(browser, tmp_path, "flaky-items")
    browser.click("#flaky-filter")  # unticked: every item again
    assert browser.visible("#shown-count") == ["26 of 26 items"]
    browser.open(figures_page.as_uri() + "#flaky=1")
    assert browser.visible("#shown-count") == [f"{len(flaky)} of 26 items"]


def test_a_disagreeing_item_opens_its_item_view(
    browser: Browser,  # noqa: F811
    figures_page: Path,
    tmp_path: Path,
) -> None:
    browser.open(figures_page.as_uri())
    side = browser.visible('#audit-side-by-side tr[data-scope="all"] td')
    assert side[:3] == ["all judge-graded items", "8", "18"]
    _scroll(browser, "#calibration")
    _shot(browser, tmp_path, "calibration")
    rows = browser.js(
        "Array.prototype.map.call(document.querySelectorAll('#disagreements tr.disagreement'),"
        " function (t) { return [t.getAttribute('data-record'), t.getAttribute('data-model')]; })"
    )
    assert len(rows) == 6
    for n, (record, model) in enumerate(rows):
        browser.click(f"#disagreements tr.disagreement:nth-child({n + 1}) td.id")
        current = browser.js(
            "[document.querySelector('tr.current').cells[0].textContent,"
            " document.querySelector('tr.current').cells[3].textContent]"
        )
        assert current == [record, model]
        assert browser.js("document.querySelectorAll('tr.detail-row').length") == 1
    # the last is the rubric record's criterion: its view has the criteria table
    criteria = browser.visible(".detail .criteria-table td.criterion")
    assert criteria == ["Cites the statute", "Invents no fact"]
    _shot(browser, tmp_path, "disagreement-opened")


@pytest.mark.slow
def test_lbr_s_replayed_run_calibrated_against_the_example_labels(
    browser: Browser,  # noqa: F811
    lbr_run: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The real run (955 judged items) with the example labels: the page's figures are
    ``legaleval audit``'s, and each disagreement opens its item."""
    labels = EXAMPLES / "lbr_human_labels.jsonl"
    page = write_report(lbr_run, tmp_path / "lbr.html", human_labels=labels)
    body = audit_body(lbr_run, labels)
    audit = body["judge_audit"]
    browser.open(page.as_uri())
    side = browser.visible('#audit-side-by-side tr[data-scope="all"] td')
    ppi = audit["ppi_pass_rate"]
    assert side[1:3] == [str(audit["labelled"]), str(audit["unlabelled"])]
    assert side[5] == f"{ppi['estimate']:.1%} [{ppi['ci95'][0]:.1%}, {ppi['ci95'][1]:.1%}]"
    assert side[7].startswith(f"{audit['cohen_kappa']:.3f}")
    listed = body["calibration"]["disagreements"]
    assert browser.js("document.querySelectorAll('#disagreements tr.disagreement').length") == len(
        listed
    )
    browser.click("#disagreements tr.disagreement:nth-child(1) td.id")
    current = browser.js(
        "[document.querySelector('tr.current').cells[0].textContent,"
        " document.querySelector('tr.current').cells[3].textContent]"
    )
    assert current == [listed[0]["record_id"], listed[0]["model"]]
    _shot(browser, tmp_path, "lbr-calibration")
