"""Tests that need an optional extra skip cleanly, with the reason, when it is not installed.

The README's test command runs without ``[local]`` and Chromium; ``[import]`` and ``[serve]``
are part of ``[dev]``, so only this test shows that their tests skip without them. Both run
the suite as a developer would, in a process of its own, under ``tests/without_extras.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

pytestmark = pytest.mark.slow


def _pytest(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LEGALEVAL_REQUIRE_EXTRAS"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.without_extras", "-p", "no:cacheprovider",
         "-p", "no:xdist", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip


def test_the_whole_suite_collects_without_any_extra() -> None:
    """No test module imports an extra's module at its top without a skip."""
    done = _pytest("--collect-only", "-q", "tests")
    summary = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.fullmatch(r"\d+ tests collected in .*", summary), summary


def test_tests_that_need_import_or_serve_skip_without_them() -> None:
    """[import] (Parquet), [serve] (FastAPI, Hypercorn) and the tests' reference libraries
    are part of [dev]: only here do their tests run without them."""
    needs = re.compile(r'needs_import|import_or_skip\(|importorskip\("(fastapi|uvicorn)"')
    files = sorted(
        str(path.relative_to(REPO))
        for path in (REPO / "tests").rglob("test_*.py")
        if path != Path(__file__)  # which names them
        and needs.search(path.read_text(encoding="utf-8"))
    )
    assert len(files) >= 8, files
    done = _pytest("-q", "-rs", *files)
    output = done.stdout
    assert done.returncode == 0, output[-3000:] + done.stderr[-2000:]
    skips = [line for line in output.splitlines() if line.startswith("SKIPPED")]
    assert len(skips) >= 10, output[-3000:]
    for line in skips:  # each names the extra to install
        assert any(extra in line for extra in ("[import]", "[serve]", "[dev]", "[stats]")), line
