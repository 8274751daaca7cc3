"""Collection cost: `pytest --collect-only` over 50,000 ~1 KB records, with validation,
next to bare pytest collecting 50,000 trivial parameters, in the same invocation.

    python benchmarks/collect.py [--records 50000] [--repeat 1] [--shard N] [--ours-only]

Prints wall time and peak RSS of each pytest process. ``--shard N`` adds the run of shard
1/N of the same dataset (a shard process reads and validates every record but keeps only
its own): the way to collect a million records with each process under 2 GB.
``--ours-only`` skips bare pytest (at a million parameters it alone needs ~3 GB).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# As on a user's machine: byte-code caching on (each variant's first run fills the caches).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
FILLER = (
    "The tenant argues that the landlord failed to maintain the premises in a habitable "
    "condition, and that the lease therefore terminated by operation of law. "
)


def make_dataset(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            row = {
                "schema_version": "legal_eval_v1",
                "id": f"bench:{i:06d}",
                "dataset": "bench",
                "task_type": "mcq",
                "prompt": f"Question {i}: {FILLER * 4}Which statement is correct?",
                "choices": [
                    {"id": c, "text": f"Statement {c} about clause {i % 97}."} for c in "ABCD"
                ],
                "correct_choice_ids": ["ABCD"[i % 4]],
                "metadata": {"policy_id": "default", "split": "test", "n": i},
            }
            out.write(json.dumps(row) + "\n")


def make_responses(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            out.write(json.dumps({"record_id": f"bench:{i:06d}", "response": "Answer: A"}) + "\n")


def run(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MiB (of the pytest process itself), last output line."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert proc.stdout is not None
    output = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{output[-3000:]}")
    lines = [line for line in output.splitlines() if line.strip()]
    return wall, usage.ru_maxrss / 1024, lines[-1] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--shard", type=int, default=None, help="also time shard 1/N")
    parser.add_argument("--ours-only", action="store_true", help="no bare pytest run")
    args = parser.parse_args()
    n = args.records
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data, responses = work / "data.jsonl", work / "responses.jsonl"
        make_dataset(data, n)
        make_responses(responses, n)
        (work / "bare").mkdir()
        (work / "bare" / "test_bare.py").write_text(
            "import pytest\n\n"
            f"@pytest.mark.parametrize('x', range({n}))\n"
            "def test_x(x):\n    pass\n"
        )
        suite = work / "suite"
        suite.mkdir()
        (suite / "test_legal.py").write_text((REPO / "suites" / "test_legal.py").read_text())
        size_mb = data.stat().st_size / 2**20
        print(f"{n} records, dataset {size_mb:.1f} MiB ({data.stat().st_size / n:.0f} B/record)")
        py = sys.executable
        collect = [py, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        bare_cmd = [*collect, "-p", "no:legaleval", "bare"]
        ours_cmd = [*collect, "suite", "--dataset", str(data), "--responses", str(responses)]
        rows = []
        small, small_responses = work / "small.jsonl", work / "small_responses.jsonl"
        make_dataset(small, 5)
        make_responses(small_responses, 5)
        warm_up = [*collect, "suite", "--dataset", str(small), "--responses", str(small_responses)]
        run(warm_up, work)  # fills the byte-code caches
        for _ in range(args.repeat):
            if not args.ours_only:
                rows.append(("bare pytest, trivial params", *run(bare_cmd, work)))
            rows.append(("pytest-legaleval, validated", *run(ours_cmd, work)))
            if args.shard:
                shard = [*ours_cmd, "--shard", f"1/{args.shard}"]
                rows.append((f"pytest-legaleval, shard 1/{args.shard}", *run(shard, work)))
        print(f"{'':36} {'wall s':>8} {'peak RSS MiB':>13}  last line")
        for name, wall, rss, last in rows:
            print(f"{name:36} {wall:8.2f} {rss:13.0f}  {last}")
        ours = min(r[1] for r in rows if r[0] == "pytest-legaleval, validated")
        if not args.ours_only:
            bare = min(r[1] for r in rows if r[0].startswith("bare"))
            print(f"ratio ours/bare: {ours / bare:.2f} (floor: <= 2.0)")


if __name__ == "__main__":
    main()
