"""Run the README's quick start as a new user does: its commands, verbatim, one per line.

The commands are the first ``bash`` block of the README's ``## Quick start`` section, read
from the README (never copied here). Each runs in a bash of its own, from the repository's
root, in the active venv (``.ci/run`` makes it fresh). Two commands are expected:

1. the evaluation on bundled data: it must exit with the status the section promises
   ("exits N") and print the summary it quotes (`` `N failed, M passed` ``);
2. the test suite: it must pass, and run tests (pytest's exit 5, "no tests ran", fails).

Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST_COMMAND_BUDGET_S = 600
"""The README's test command should stay under about ten minutes on 2 cores."""


def quick_start(readme: str) -> tuple[list[str], str]:
    """The commands of the ``## Quick start`` section, and the section's text."""
    match = re.search(r"^## Quick start\n(.*?)(?=^## )", readme, re.M | re.S)
    if match is None:
        sys.exit("README.md has no '## Quick start' section")
    section = match.group(1)
    block = re.search(r"^```bash\n(.*?)^```", section, re.M | re.S)
    if block is None:
        sys.exit("the quick start has no ```bash block")
    commands = [
        line.strip()
        for line in block.group(1).splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    return commands, section


def promises(section: str) -> tuple[int, str]:
    """What the section says the evaluation ends with: its exit status and summary line."""
    status = re.search(r"\bexits (\d+)\b", section)
    summary = re.search(r"`(\d+ failed, \d+ passed)`", section)
    if status is None or summary is None:
        sys.exit(
            "the quick start must say how the evaluation ends: 'exits N', `N failed, M passed`"
        )
    return int(status.group(1)), summary.group(1)


def run(command: str) -> tuple[int, str, float]:
    """Run ``command`` in bash from the repository's root; echo and keep its output."""
    print(f"\n$ {command}", flush=True)
    started = time.monotonic()
    proc = subprocess.Popen(
        ["bash", "-c", command],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        sys.stdout.write(line)
        lines.append(line)
    status = proc.wait()
    return status, "".join(lines), time.monotonic() - started


def main() -> int:
    """Run both commands; exit 1 naming every broken promise."""
    commands, section = quick_start((ROOT / "README.md").read_text(encoding="utf-8"))
    if len(commands) != 2:
        sys.exit(f"the quick start should be two commands, found {len(commands)}: {commands}")
    evaluation, tests = commands
    expected_status, expected_summary = promises(section)

    status, output, seconds = run(evaluation)
    problems = []
    if status != expected_status:
        problems.append(f"the evaluation exited {status}, the README says {expected_status}")
    if not re.search(rf"^=+ {re.escape(expected_summary)} in ", output, re.M):
        problems.append(f"the evaluation did not end with '{expected_summary}'")
    print(f"\nquick start, evaluation: exit {status} in {seconds:.0f} s", flush=True)

    status, output, seconds = run(tests)
    if status != 0:
        why = "ran no test" if status == 5 else "failed"
        problems.append(f"the README's test command {why} (exit {status})")
    print(f"\nquick start, test command: exit {status} in {seconds:.0f} s", flush=True)
    if seconds > TEST_COMMAND_BUDGET_S:
        print(f"warning: the README's test command took {seconds:.0f} s, over its budget")

    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
