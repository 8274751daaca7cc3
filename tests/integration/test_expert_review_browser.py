"""Two experts label a 60-item stratified sample of LBR's real run in headless Chromium.

As a person does it: with the keyboard (P/F, a grade, criteria marked met or not met,
Enter), reloading the page, going back to a submitted item, through a restart of the
server; a second rater joins the same sample for its 20 shared items. Every response the
page received (Chromium's network log) is searched for the judge's reasons, the verdict
fields, the models' names and the run's ids: none may be there before the rater submitted
the item. Then ``legaleval audit`` gives the judge–expert and expert–expert κ, equal to
scikit-learn's on the same labels. Without Debian's ``chromium`` the test is skipped with
the install hint; with ``LEGALEVAL_REQUIRE_EXTRAS=1`` it fails instead.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="legaleval review needs the [serve] extra")
pytest.importorskip("hypercorn", reason="legaleval review needs the [serve] extra")

from ..extras import STATS_REASON, import_or_skip, installed
from .conftest import read_jsonl
from .report_cdp import Browser
from .review_server import ReviewServer
from .test_report_browser import chromium  # noqa: F401  (the fixture: skip or fail)

pytestmark = pytest.mark.slow
VERDICT_KEYS = ("score", "passed", "outcome", "judge", "reason")


class Network:
    """Every response body the page received, in order, from Chromium's network log."""

    def __init__(self, browser: Browser) -> None:
        self.browser = browser
        self.bodies: list[tuple[str, str]] = []
        self._urls: dict[str, str] = {}
        self._seen = 0
        browser.call("Network.enable")

    def harvest(self) -> None:
        """Read the bodies of the responses that finished since the last harvest."""
        self.browser.js("1")  # a round trip: events sent before it are in the list now
        events = self.browser.events[self._seen :]
        self._seen = len(self.browser.events)
        for event in events:
            params = event.get("params", {})
            if event.get("method") == "Network.responseReceived":
                self._urls[params["requestId"]] = params["response"]["url"]
            elif event.get("method") == "Network.loadingFinished":
                url = self._urls.get(params["requestId"], "")
                if "/api/review/" not in url and not url.endswith((".js", ".css", "/")):
                    continue
                found = self.browser.call("Network.getResponseBody",
                                          {"requestId": params["requestId"]})  # fmt: skip
                body = found["body"]
                if found.get("base64Encoded"):
                    body = base64.b64decode(body).decode("utf-8", "replace")
                self.bodies.append((url, body))

    def reset(self) -> None:
        """The browser's event list was cleared (a page load): start reading it afresh."""
        self._seen = 0


@pytest.fixture(scope="module", autouse=True)
def _references_imported_once() -> None:
    """pytester (autouse in this folder) puts sys.modules back after each test, and numpy
    cannot be imported twice in a process: scikit-learn is imported before its snapshot."""
    if installed("numpy", "sklearn"):
        import sklearn.metrics  # noqa: F401


@pytest.fixture
def browser(chromium: str, tmp_path: Path) -> Iterator[Browser]:  # noqa: F811
    with Browser(chromium, tmp_path, width=1366, height=768) as opened:  # a laptop screen
        yield opened


def _open(browser: Browser, network: Network, url: str) -> None:
    network.harvest()
    browser.open(url)
    network.reset()
    browser.wait_for("document.getElementById('progress').textContent.includes('labelled')")


def _done(browser: Browser) -> int:
    text = browser.js("document.getElementById('progress').textContent")
    return int(text.split(" / ")[0])


def _label(browser: Browser, network: Network, count: int, rule: int) -> None:
    """Label ``count`` items with the keyboard: pass or fail by a rule on the answer's length."""
    for _ in range(count):
        browser.wait_for("document.body.dataset.item && !document.body.classList.contains('busy')"
                         " && !document.body.classList.contains('readonly')")  # fmt: skip
        shown = browser.js("document.body.dataset.item")
        length = browser.js("document.getElementById('response').textContent.length")
        browser.key("p" if length % rule else "f")
        if browser.js("!document.getElementById('grade').hidden"):
            browser.key("3")
        if browser.js("document.getElementById('criteria').children.length") >= 2:
            browser.key("m")  # the first criterion met, the second not
            browser.key("j")
            browser.key("u")
        browser.key("Enter")
        browser.wait_for(  # the next item is shown (or the end), or the page says why not
            f"(document.body.dataset.item !== {json.dumps(shown)}"
            " && !document.body.classList.contains('busy'))"
            " || !document.getElementById('done').hidden"
            " || document.getElementById('message').textContent.length > 0"
        )
        assert not browser.js("document.getElementById('message').textContent")
        network.harvest()


def _cohen(first: list[bool], second: list[bool]) -> float:
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(first, second))


def test_two_experts_label_lbr_s_sample_blind_through_a_restart(
    lbr_replayed_run: Path, browser: Browser, tmp_path: Path
) -> None:
    import_or_skip("sklearn", STATS_REASON)
    run = lbr_replayed_run
    folder = tmp_path / "review"
    network = Network(browser)
    alice = ReviewServer(run, "alice", folder, "--sample", "60", "--double", "0.3334",
                         "--seed", "7").start()  # fmt: skip
    try:
        _open(browser, network, alice.url)
        assert browser.js("document.getElementById('progress').textContent").startswith("0 / 60")
        # a laptop screen: no sideways scrolling, the verdict buttons in view
        assert browser.js("document.documentElement.scrollWidth <= window.innerWidth")
        assert browser.visible("#verdict button") == ["Pass P", "Fail F"]
        _label(browser, network, 5, rule=3)
        # reload: the labelled items stay labelled, the page resumes
        _open(browser, network, alice.url)
        assert _done(browser) == 5
        current = browser.js("document.getElementById('response').textContent")
        browser.key("b")  # back: the last submitted item, read only, with my verdict
        browser.wait_for("document.body.classList.contains('readonly')")
        assert browser.js("document.getElementById('response').textContent") != current
        assert browser.js("document.querySelector('[aria-pressed=true]') !== null")
        browser.key("n")
        browser.wait_for("!document.body.classList.contains('readonly')")
        assert browser.js("document.getElementById('response').textContent") == current
        # restart the server: nothing lost, labelling goes on
        assert alice.stop() == 0
        alice.start()
        _open(browser, network, alice.url)
        assert _done(browser) == 5
        _label(browser, network, 55, rule=3)
        browser.wait_for("!document.getElementById('done').hidden")
    finally:
        alice.stop()
    with ReviewServer(run, "bob", folder) as bob:
        _open(browser, network, bob.url)
        assert browser.js("document.getElementById('progress').textContent").startswith("0 / 20")
        _label(browser, network, 20, rule=2)
        browser.wait_for("!document.getElementById('done').hidden")
    network.harvest()
    assert not browser.errors, browser.errors

    # --- blind: nothing of the judge in any response the page received -----------------------
    sample = json.loads((folder / "sample.json").read_text())
    drawn = {(i["record_id"], i["model"]) for i in sample["items"]}
    lines = [line for line in read_jsonl(run / "predictions.jsonl")
             if (line["record_id"], line["model"]) in drawn]  # fmt: skip
    secrets = {str(line["explanation"]) for line in lines if line.get("explanation")}
    secrets |= {line["item_id"] for line in lines} | {line["record_id"] for line in lines}
    secrets |= {line["model"] for line in read_jsonl(run / "predictions.jsonl")}
    secrets |= {"replayed:", "below_threshold", "judge:rubric", "judge:reference"}
    api = [(url, body) for url, body in network.bodies if "/api/review/" in url]
    assert len([u for u, _ in api if u.endswith("/next")]) >= 80
    for url, body in network.bodies:
        leaked = [s for s in secrets if s and s in body]
        assert not leaked, (url, leaked[:3])
    for url, body in api:
        answer = json.loads(body) if body else {}
        shown = answer.get("item", answer) if "/items/" in url else answer
        named = _verdict_keys({k: v for k, v in shown.items() if k != "submitted"})
        assert not named, (url, named)

    # --- the labels, and the audit's figures against scikit-learn's ----------------------------
    labels = {who: read_jsonl(folder / "labels" / f"{who}.jsonl") for who in ("alice", "bob")}
    items = {who: {(r["record_id"], r["model"]): r["passed"] for r in rows
                   if "criterion_id" not in r} for who, rows in labels.items()}  # fmt: skip
    assert len(items["alice"]) == 60 and len(items["bob"]) == 20
    assert all(r["rater"] == who for who, rows in labels.items() for r in rows)
    assert all(isinstance(r.get("seconds"), float | int) for r in labels["alice"]
               if "criterion_id" not in r)  # fmt: skip
    shared = sorted(items["bob"])
    assert set(shared) <= set(items["alice"])
    audit = subprocess.run(
        [sys.executable, "-m", "pytest_legaleval.cli", "audit", str(run), "--human-labels",
         str(folder / "labels"), "--json"], capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert audit.returncode == 0, audit.stderr
    block = json.loads(audit.stdout)["judge_audit"]
    experts = block["expert_agreement"]["items"]
    assert experts["shared_items"] == 20 and experts["raters"] == ["alice", "bob"]
    alice_votes = [items["alice"][k] for k in shared]
    bob_votes = [items["bob"][k] for k in shared]
    assert experts["kappa"] == pytest.approx(_cohen(alice_votes, bob_votes), abs=1e-12)
    judge = {(r["record_id"], r["model"]): r["passed"] for r in lines}
    for who, votes in (("alice", alice_votes), ("bob", bob_votes)):
        expected = _cohen([judge[k] for k in shared], votes)
        assert experts["judge_kappa_by_rater"][who]["kappa"] == pytest.approx(expected)
    assert block["sample"]["size"] == 60 and block["sample"]["population_items"] == 340
    assert block["labelled"] + block["labels"]["ties"] == 60
    assert block["ppi_pass_rate"] is not None


def _verdict_keys(value: Any) -> list[str]:
    """Keys named like a verdict that carry a value, anywhere in ``value``."""
    found = []
    if isinstance(value, dict):
        for key, inner in value.items():
            if any(word in key for word in VERDICT_KEYS) and inner not in (None, [], {}):
                found.append(key)
            found += _verdict_keys(inner)
    elif isinstance(value, list):
        for inner in value:
            found += _verdict_keys(inner)
    return found
