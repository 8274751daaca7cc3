"""Tests that need an optional extra skip cleanly, with the reason, when it is not installed.

The README's test command runs without ``[local]`` and Chromium; ``[import]`` is part of
``[dev]``, so only this test shows that its tests skip without it. Both run the suite as a
developer would, in a process of its own, under ``tests/without_extras.py``.
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


def test_tests_that_read_xlsx_or_parquet_skip_without_the_import_extra() -> None:
    files = sorted(
        str(path.relative_to(REPO))
        for path in (REPO / "tests").rglob("test_*.py")
        if path != Path(__file__)  # which names them
        and re.search(r"needs_import|import_or_skip\(", path.read_text(encoding="utf-8"))
    )
    assert len(files) >= 6, files
    done = _pytest("-q", "-rs", *files)
    output = done.stdout
    assert done.returncode == 0, output[-3000:] + done.stderr[-2000:]
    skips = [line for line in output.splitlines() if line.startswith("SKIPPED")]
    assert len(skips) >= 6, output[-3000:]
    for line in skips:
        assert "pip install 'pytest-legaleval[import]'" in line, line
