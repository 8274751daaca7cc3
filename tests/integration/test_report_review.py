"""The reviewer's view in a real headless Chromium: clicks, keys, search, two runs.

The browser is driven over the DevTools protocol (``report_cdp.Browser``) with its own
mouse and keyboard events. Without Debian's ``chromium`` these tests are skipped with the
install hint; with ``LEGALEVAL_REQUIRE_EXTRAS=1`` (CI's second phase) they fail instead.
Screenshots go into each test's tmp path, which the test prints (``-rP`` or ``-s``).
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_legaleval.report import write_comparison, write_report
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from .report_cdp import Browser
from .report_runs import (
    GIP_RUBRIC,
    HOSTILE,
    LEASE_CHOICES,
    LEASE_PROMPT,
    REVIEW_MODELS,
    reply,
    reviewer_run,
    write_review_dir,
)
from .test_report_browser import chromium  # noqa: F401  (the fixture: skip or fail)

_CURRENT = "document.querySelector('tr.current')"


def _shot(browser: Browser, tmp_path: Path, name: str) -> Path:
    shot = browser.screenshot(tmp_path / f"{name}.png")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a page, not a blank
    print(f"screenshot ({name}): {shot}")
    return shot


@pytest.fixture
def browser(chromium: str, tmp_path: Path) -> Iterator[Browser]:  # noqa: F811
    with Browser(chromium, tmp_path) as opened:
        yield opened
        assert not opened.errors, opened.errors  # no script error in the page, ever


@pytest.fixture
def review_page(tmp_path: Path) -> Path:
    return write_report(write_review_dir(tmp_path, "a"), tmp_path / "review.html")


def _open_item(browser: Browser, record: str, model: str) -> None:
    """Filter the table to one item and click its row."""
    browser.js("document.getElementById('record-filter').value = ''")
    browser.type("#record-filter", record)
    browser.key("Enter")  # filters at once (typing alone waits for a pause)
    row = browser.js(
        "Array.prototype.filter.call(document.querySelectorAll('#records tr.rec'), function (t)"
        f" {{ return t.cells[0].textContent === {record!r} && t.cells[3].textContent === "
        f"{model!r}; }})[0].getAttribute('data-index')"
    )
    browser.click(f'#records tr.rec[data-index="{row}"] td.question-cell')
    browser.wait_for("document.querySelector('tr.detail-row')")


def test_a_failing_items_question_and_choices_show_after_a_click(
    browser: Browser, pytester: pytest.Pytester, suite: Path, tmp_path: Path
) -> None:
    """A real session's run: mq1 asked of gamma, which chose C where B is right."""
    with MockOpenAIServer(latency=0.002) as server:
        server.add_reply(reply)
        run, _ = reviewer_run(pytester, server)
    report = write_report(run, tmp_path / "report.html")
    browser.open(report.as_uri())
    assert browser.visible(".detail .prompt") == []  # nothing open yet
    _open_item(browser, "mq1", "openai/gamma")
    assert browser.visible(".detail .prompt") == ["Question mq1?"]
    choices = browser.js(
        "Array.prototype.map.call(document.querySelectorAll('.detail li.choice'), function (li)"
        " { return [li.getAttribute('data-choice'), li.className, li.textContent]; })"
    )
    assert choices == [
        ["A", "choice", "A. option A"],
        ["B", "choice gold", "B. option B ✓ correct"],
        ["C", "choice chosen", "C. option C ✗ chosen"],
        ["D", "choice", "D. option D"],
    ]
    assert browser.visible(".detail .detail-head") == ["failed — wrong_answer · score 0.00"]
    _shot(browser, tmp_path, "question-and-choices")
    # the hostile answer of mq5 is shown as text: no element, no script ran
    _open_item(browser, "mq5", "openai/alpha")
    assert HOSTILE in browser.visible(".detail .answer pre")[0]
    assert browser.js("document.title").startswith("legaleval report")
    assert browser.js("document.querySelectorAll('img').length") == 0


def test_a_replayed_rubric_item_shows_titles_and_honest_reasons(
    browser: Browser, review_page: Path, tmp_path: Path
) -> None:
    browser.open(review_page.as_uri())
    _open_item(browser, "r-gip", REVIEW_MODELS[0])
    assert browser.visible(".detail .criteria-table td.criterion") == [t for _, t, _ in GIP_RUBRIC]
    assert browser.visible(".detail .criteria-table td.reasons") == [
        "The answer cites Law 2011-525 in full.",
        "no reason recorded: the judge gave none",
        "No decision is invented.",
    ]
    assert not any("line" in cell for cell in browser.visible(".detail td.reasons"))
    # the transcript is collapsed, then opened: the judge's calls by criterion title
    assert browser.visible(".detail details.transcript h5") == []
    browser.click(".detail details.transcript summary")
    calls = [h for h in browser.visible(".detail details.transcript h5") if "judge" in h]
    assert calls == [f"judge judge/j · criterion: {t}" for _, t, _ in GIP_RUBRIC]
    sent = browser.visible(".detail details.transcript .turn pre")
    assert f"TEMPLATED PROMPT of r-gip: answer with a letter. {HOSTILE}" in sent
    _shot(browser, tmp_path, "replayed-rubric")


def test_epochs_are_listed_under_one_verdict(
    browser: Browser, review_page: Path, tmp_path: Path
) -> None:
    browser.open(review_page.as_uri())
    _open_item(browser, "q-epochs", REVIEW_MODELS[0])
    assert browser.visible("tr.current td.outcome") == ["passed (3 epochs)"]
    epochs = browser.visible(".detail p.epochs span[data-epoch]")
    assert epochs == ["0 ✓ 1.00", " · 1 ✗ 0.00", " · 2 ✓ 1.00"]
    _shot(browser, tmp_path, "epochs")


def test_keys_move_between_failures(browser: Browser, review_page: Path, tmp_path: Path) -> None:
    browser.open(review_page.as_uri())
    assert "j or ↓ opens the next failure" in browser.visible("#keys-help")[0]
    failures = browser.js(
        "Array.prototype.filter.call(document.querySelectorAll('#records tr.rec'), function (t)"
        " { return ['failed', 'error', 'invalid'].indexOf(t.getAttribute('data-outcome')) >= 0;"
        " }).map(function (t) { return t.getAttribute('data-index'); })"
    )
    assert len(failures) == 5
    visited = []
    for key in ("j", "j", "ArrowDown", "j", "j", "j"):  # the last goes past the end: stays
        browser.key(key)
        visited.append(browser.js(f"{_CURRENT}.getAttribute('data-index')"))
    assert visited == failures + failures[-1:]
    assert browser.js("document.querySelectorAll('tr.detail-row').length") == 1  # one open
    browser.key("k")
    browser.key("ArrowUp")
    assert browser.js(f"{_CURRENT}.getAttribute('data-index')") == failures[2]
    _shot(browser, tmp_path, "keyboard")
    browser.key("Escape")
    assert browser.js(f"{_CURRENT} === null && !document.querySelector('tr.detail-row')")
    # typing in the search box is typing, not navigating
    browser.type("#text-search", "j")
    assert browser.js(f"{_CURRENT}") is None


def test_search_reads_the_question_and_the_answer(
    browser: Browser, review_page: Path, tmp_path: Path
) -> None:
    browser.open(review_page.as_uri())
    browser.type("#text-search", "DEPOSIT be at most")  # in one question only
    browser.key("Enter")
    assert browser.visible("#shown-count") == ["2 of 10 items"]
    assert {row for row in browser.visible("#records tr.rec td.id")} == {"q-deposit"}
    browser.js("document.getElementById('text-search').value = ''")
    browser.type("#text-search", "tort of nuisance")  # in one answer only
    browser.key("Enter")
    assert browser.visible("#shown-count") == ["1 of 10 items"]
    assert browser.visible("#records tr.rec td.id") == ["ref-culpa"]
    _shot(browser, tmp_path, "search")
    browser.open(review_page.as_uri() + "#search=" + "Art. 271 OR")  # a choice's text
    assert browser.visible("#shown-count") == ["2 of 10 items"]


def test_two_runs_side_by_side_changed_verdicts_first(browser: Browser, tmp_path: Path) -> None:
    a, b = write_review_dir(tmp_path, "a"), write_review_dir(tmp_path, "b")
    page = write_comparison(a, b, tmp_path / "compare.html")
    assert html.escape(LEASE_PROMPT) in page.read_text(encoding="utf-8")
    browser.open(page.as_uri())
    changes = browser.js(
        "Array.prototype.map.call(document.querySelectorAll('#pairs tr.pair'), function (t)"
        " { return [t.cells[0].textContent, t.cells[2].textContent, t.getAttribute("
        "'data-change'), t.cells[3].textContent, t.cells[4].textContent]; })"
    )
    m1, m2 = REVIEW_MODELS
    assert changes[:3] == [
        ["q-deposit", m1, "regressed", "✓ 1.00", "✗ 0.00"],
        ["q-lease", m1, "fixed", "✗ 0.00", "✓ 1.00"],
        ["ref-culpa", m2, "fixed", "error judge_error", "✓ 0.90"],
    ]
    assert {c[2] for c in changes[3:]} == {"same"} and len(changes) == 10
    browser.key("j")
    browser.key("j")  # the second changed item: q-lease x m1, fixed
    assert browser.visible(".pair-detail .question .prompt") == [LEASE_PROMPT]
    gold = browser.visible(".pair-detail li.choice.gold")
    assert gold == [f"B. {LEASE_CHOICES[1]} ✓ correct"]
    heads = browser.visible(".pair-detail .side .detail-head")
    assert heads == ["failed — wrong_answer · score 0.00", "passed — correct · score 1.00"]
    answers = browser.visible(".pair-detail .side .answer pre")
    assert answers == [f"My answer is C ({m1}).", f"My answer is B ({m1})."]
    assert len(browser.visible(".pair-detail .side details.transcript summary")) == 2
    _shot(browser, tmp_path, "two-runs")
