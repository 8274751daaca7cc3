"""The cost of an item: our own CPU per record above bare pytest, and where it goes.

    python benchmarks/cost_per_item.py [--records 2000] [--latency 0.1] [--concurrency 50]
                                       [--repeat 3] [--phases]

Against one mock server (its own process), ``--repeat`` interleaved rounds of:

* ``bare pytest``: the same number of trivial parametrized tests, plugin off — what pytest
  itself costs per item;
* ``raw aiohttp``: the floor of the HTTP work (``raw_client.py`` as its own process);
* ``pytest -n 0``: ``pytest suites/`` on N live MCQ records (``--no-cache``).

Each is timed as a whole process (user + system CPU of the process tree, wall time).
Printed per round and as medians: our own CPU per record = (legaleval run − bare pytest)
/ N, and the run's wall time over the raw floor's. With ``--phases`` one more run is
profiled (yappi, CPU clock, every thread) and its CPU is split by phase, by the module
each function lives in: start-up imports, collection (formats, validation), the per-item
pytest protocol (pytest, pluggy, our pytest layer), request building, HTTP (aiohttp,
asyncio, sockets), reply parsing, grading, recording (run directory, metrics) and the rest.
The profiler slows everything; the phases are shares, not times.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from engine_throughput import _dataset, _reset
from transport import start_server

REPO = Path(__file__).resolve().parents[1]
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
BARE = """
import pytest

@pytest.mark.parametrize("i", range({n}))
def test_trivial(i):
    pass
"""


def _timed(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**ENV, "PYTEST_DEBUG_TEMPROOT": str(cwd)},
    )
    assert proc.stdout is not None
    output = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{cmd[:4]} exited {code}:\n{output[-3000:]}")
    return wall, usage.ru_utime + usage.ru_stime, output


def _pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]


PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("start-up imports", ("<frozen importlib", "importlib/")),
    ("collection", ("pytest_legaleval/formats", "pytest_legaleval/validation", "jsonschema")),
    (
        "request building",
        (
            "pytest_legaleval/grading/prompts",
            "pytest_legaleval/engine/providers",
            "pytest_legaleval/engine/wire",
            "pytest_legaleval/engine/routing",
            "pytest_legaleval/engine/cache",
        ),
    ),
    ("parsing", ("pytest_legaleval/engine/openai_reply", "pytest_legaleval/engine/sanitize")),
    ("HTTP", ("aiohttp", "asyncio", "selectors", "socket", "ssl", "multidict", "yarl")),
    ("grading", ("pytest_legaleval/grading",)),
    (
        "engine bookkeeping",
        ("pytest_legaleval/engine", "pytest_legaleval/pipeline/runner", "concurrent/futures"),
    ),
    ("recording", ("pytest_legaleval/run", "pytest_legaleval/metrics", "json/")),
    (
        "per-item protocol",
        ("_pytest", "pluggy", "pytest_legaleval/pytest", "pytest_legaleval/plugin"),
    ),
    ("report", ("pytest_legaleval/report",)),
)


PROFILE = """
import sys, yappi, pytest
yappi.set_clock_type("cpu")
yappi.start(builtins=True)
code = pytest.main(sys.argv[1:])
yappi.stop()
phases = {phases!r}
totals = {{name: 0.0 for name, _ in phases}}
totals["other"] = 0.0
for stat in yappi.get_func_stats():
    where = stat.module or ""
    for name, keys in phases:
        if any(key in where for key in keys):
            totals[name] += stat.tsub
            break
    else:
        totals["other"] += stat.tsub
whole = sum(totals.values())
for name, value in sorted(totals.items(), key=lambda kv: -kv[1]):
    print(f"PHASE {{name}} {{value / whole:.3f}}")
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--phases", action="store_true", help="one more run, profiled by phase")
    args = parser.parse_args()
    n, c = args.records, args.concurrency
    proc, base_url = start_server(args.latency)
    rounds: list[dict[str, tuple[float, float]]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            data = work / "data.jsonl"
            _dataset(data, n, 0.8)
            (work / "bare").mkdir()
            (work / "bare" / "test_bare.py").write_text(BARE.format(n=n))
            live = [
                str(REPO / "suites"), "--dataset", str(data), "--model", "openai/mock-model",
                "--base-url", base_url, "--concurrency", str(c), "--no-cache",
                "--run-dir", str(work / "runs"), "--rootdir", str(work), "-p", "no:xdist",
            ]  # fmt: skip
            bare = [*_pytest("-p", "no:xdist", "-p", "no:legaleval", "test_bare.py")]
            raw = [sys.executable, str(REPO / "benchmarks" / "raw_client.py"), base_url, str(n),
                   str(c), "raw"]  # fmt: skip
            _timed(_pytest(*live, "--limit", "10"), work)  # warm-up: byte code, caches
            _timed(bare, work / "bare")
            for i in range(args.repeat):
                row = {}
                _reset(base_url)
                row["bare pytest"] = _timed(bare, work / "bare")[:2]
                row["raw aiohttp"] = _timed([*raw[:-1], f"raw{i}"], work)[:2]
                _reset(base_url)
                row["pytest -n 0"] = _timed(_pytest(*live), work)[:2]
                rounds.append(row)
            if args.phases:
                script = work / "profile.py"
                script.write_text(PROFILE.format(phases=PHASES))
                _reset(base_url)
                output = _timed([sys.executable, str(script), "-q", *live], work)[2]
                phases = [
                    line.removeprefix("PHASE ").rsplit(" ", 1)
                    for line in output.splitlines()
                    if line.startswith("PHASE ")
                ]
    finally:
        proc.terminate()
        proc.wait()
    print(f"N={n} records, latency {args.latency * 1000:.0f} ms, concurrency {c}")
    print(f"{'round':>5} {'bare CPU s':>10} {'run CPU s':>9} {'own ms/rec':>10} "
          f"{'run wall s':>10} {'floor wall s':>12} {'x floor':>7}")  # fmt: skip
    own, ratio = [], []
    for i, row in enumerate(rounds, 1):
        bare_cpu = row["bare pytest"][1]
        run_wall, run_cpu = row["pytest -n 0"]
        floor_wall = row["raw aiohttp"][0]
        own.append((run_cpu - bare_cpu) * 1000 / n)
        ratio.append(run_wall / floor_wall)
        print(f"{i:>5} {bare_cpu:10.2f} {run_cpu:9.2f} {own[-1]:10.2f} {run_wall:10.2f} "
              f"{floor_wall:12.2f} {ratio[-1]:7.2f}")  # fmt: skip
    print(
        f"median: own CPU {statistics.median(own):.2f} ms per record "
        f"({min(own):.2f}-{max(own):.2f}); wall {statistics.median(ratio):.2f}x the raw floor "
        f"({min(ratio):.2f}-{max(ratio):.2f})"
    )
    if args.phases:
        print("CPU by phase (profiled run, shares of its CPU):")
        for name, share in phases:
            print(f"  {name:20} {float(share):6.1%}")


if __name__ == "__main__":
    main()
