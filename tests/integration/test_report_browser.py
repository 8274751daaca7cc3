"""The HTML report rendered by a real headless Chromium: DOM content, filtering, screenshot.

CI installs Debian's ``chromium`` (.ci/run). Elsewhere the fixture installs it with apt-get
when it can (root, apt-get present); the tests are skipped only when that is impossible.
"""

from __future__ import annotations

import fcntl
import html
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from pytest_legaleval.report import write_report

from .conftest import EXAMPLES, copy_in, read_jsonl, run_dirs, run_eval, write_jsonl

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
HOSTILE = '<script>document.title="pwned"</script><img src=x onerror="alert(1)"> & "quotes"'


def _install_chromium() -> str | None:
    """Install Debian's chromium once (a file lock keeps xdist workers from racing)."""
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        return None
    lock_path = Path(tempfile.gettempdir()) / "legaleval-chromium-install.lock"
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if shutil.which("chromium") is None:
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            for command in (
                ["apt-get", "update", "-qq"],
                ["apt-get", "install", "-y", "-qq", "chromium"],
            ):
                done = subprocess.run(command, env=env, capture_output=True, timeout=900)
                if done.returncode != 0:
                    return None
    return shutil.which("chromium")


@pytest.fixture(scope="session")
def chromium() -> str:
    found = shutil.which("chromium") or _install_chromium()
    if found is None:
        pytest.skip("Debian's chromium is not installed and cannot be (needs root and apt-get)")
    return found


def _browse(chromium: str, url: str, tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    profile = tempfile.mkdtemp(dir=tmp, prefix="profile-")
    return subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, url],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _dom(chromium: str, report: Path, tmp: Path, fragment: str = "") -> str:
    done = _browse(chromium, report.as_uri() + fragment, tmp, "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _text_of(dom: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}"[^>]*>([^<]*)<', dom)
    assert match, f"no #{element_id} in the DOM"
    return html.unescape(match.group(1))


@pytest.fixture
def report(pytester: pytest.Pytester, suite: Path, tmp_path: Path) -> tuple[Path, list[dict]]:
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


def test_report_renders_in_chromium(
    chromium: str, report: tuple[Path, list[dict]], tmp_path: Path
) -> None:
    path, predictions = report
    source = path.read_text(encoding="utf-8")
    # self-contained: a CSP forbids fetching, and nothing refers to another resource
    assert "default-src 'none'" in source
    assert not re.search(r'(?:src|href)\s*=\s*["\']?(?:https?:|//)', source)
    dom = _dom(chromium, path, tmp_path)
    n = len(predictions)
    passed = sum(p["outcome"] == "passed" for p in predictions)
    failed = sum(p["outcome"] == "failed" for p in predictions)
    # the script ran: it wrote the counts
    assert _text_of(dom, "shown-count") == f"{n} of {n} records shown"
    assert _text_of(dom, "outcome-counts") == f"failed: {failed} · passed: {passed}"
    # summary numbers, per-record rows and the grader's explanations are there
    assert re.search(rf'data-metric="pass_rate".*?{passed / n:.1%}', dom, re.S)
    assert dom.count('class="rec ') == n
    for p in predictions:
        assert html.escape(p["record_id"]) in dom
        assert html.escape(p["explanation"], quote=False) in dom
    assert 'id="score-histogram"' in dom and "<svg" in dom
    # hostile text stayed text: no second script ran, no image element was created
    assert "<title>pwned</title>" not in dom
    assert dom.count("<script>") == 1
    assert "<img" not in dom
    assert "&lt;script&gt;document.title" in dom


def test_filtering_in_chromium(
    chromium: str, report: tuple[Path, list[dict]], tmp_path: Path
) -> None:
    path, predictions = report
    n = len(predictions)
    wrong = sum(p["reason"] == "wrong_answer" for p in predictions)
    dom = _dom(chromium, path, tmp_path, "#filter=wrong_answer")
    assert _text_of(dom, "shown-count") == f"{wrong} of {n} records shown"
    assert dom.count('class="rec failed hidden"') + dom.count('class="rec passed hidden"') == (
        n - wrong
    )
    failed = sum(p["outcome"] == "failed" for p in predictions)
    dom = _dom(chromium, path, tmp_path, "#outcome=failed")
    assert _text_of(dom, "shown-count") == f"{failed} of {n} records shown"
    one = predictions[3]["record_id"]
    dom = _dom(chromium, path, tmp_path, f"#filter={one.upper()}")
    assert _text_of(dom, "shown-count") == f"1 of {n} records shown"


def test_screenshot(chromium: str, report: tuple[Path, list[dict]], tmp_path: Path) -> None:
    path, _ = report
    shot = tmp_path / "report.png"
    done = _browse(
        chromium, path.as_uri(), tmp_path, f"--screenshot={shot}", "--window-size=1280,1600"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 1600)
    assert len(data) > 20_000  # a rendered page, not a blank canvas
