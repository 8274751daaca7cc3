"""One exit-status table for every ``legaleval`` command (issue 30; ``cli/exit_codes.py``).

A usage error exits 2 in every command — a bad flag (argparse's own) and each command's own
usage error (a missing input, not a run directory) alike; ``submit`` and ``merge`` were
the exceptions (4 and 1). Every command is covered: the list is checked against the
commands ``legaleval --help`` names. ``compare`` on runs with no item in common says so and
exits 1.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_legaleval.cli import main
from pytest_legaleval.cli.exit_codes import EXIT_FINDINGS, EXIT_USAGE

from .test_compare import row, write_run


def _usage_errors(missing: Path, out: Path) -> dict[str, list[str]]:
    """Per command: arguments that are its own usage error (an input that is not there)."""
    m = str(missing)
    return {
        "validate": ["validate", m],  # the contract's "rejected" status: also 2
        "report": ["report", m],
        "compare": ["compare", m, m],
        "merge": ["merge", m, "--out", str(out)],
        "build-dataset": ["build-dataset", "--config", m],
        "check-dataset": ["check-dataset", "--manifest", m],
        "agreement": ["agreement", m, m],
        "convert": ["convert", m, "--map", m, "--out", str(out)],
        "import": ["import", "lexam", m, "--out", str(out)],
        "serve": ["serve"],  # no --model
        "submit": ["submit", m, "--server", "http://127.0.0.1:9"],
        "audit": ["audit", m, "--human-labels", m],
        "plan": ["plan", "--dataset", m],
        "review": ["review", m, "--rater", "ann"],
        "batches": ["batches", "--cache", m],
    }


def _commands() -> set[str]:
    shown = subprocess.run(
        [sys.executable, "-m", "pytest_legaleval.cli", "--help"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    found = re.search(r"\{([a-z,-]+)\}", shown)
    assert found is not None, shown
    return set(found.group(1).split(","))


def test_the_table_covers_every_command(tmp_path: Path) -> None:
    assert set(_usage_errors(tmp_path, tmp_path)) == _commands()


@pytest.mark.parametrize("command", sorted(_usage_errors(Path("m"), Path("o"))))
def test_a_usage_error_exits_2_in_every_command(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _usage_errors(tmp_path / "missing", tmp_path / "out")[command]
    assert main(args) == EXIT_USAGE, capsys.readouterr().err
    err = capsys.readouterr().err
    assert err.startswith("legaleval") and "Traceback" not in err
    with pytest.raises(SystemExit) as exited:  # argparse's own usage error
        main([command, "--no-such-flag"])
    assert exited.value.code == EXIT_USAGE


def test_compare_says_when_the_runs_share_no_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path, "a", [row(f"q{i}", True) for i in range(3)])
    b = write_run(tmp_path, "b", [row(f"q{i}", True, dataset="renamed") for i in range(3)])
    out = tmp_path / "compare.json"
    assert main(["compare", str(a), str(b), "--format", "json", "--out", str(out)]) == (
        EXIT_FINDINGS
    )
    err = capsys.readouterr().err
    assert "legaleval compare: error: the runs have no item in common (A 3 items, B 3" in err
    assert json.loads(out.read_text())["paired"]["paired"] == 0  # still written
    same = write_run(tmp_path, "c", [row(f"q{i}", False) for i in range(3)])
    assert main(["compare", str(a), str(same), "--out", str(out)]) == 0
