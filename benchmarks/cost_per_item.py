"""The cost of an item: our own CPU per record above bare pytest, and where it goes.

    python benchmarks/cost_per_item.py [--records 2000] [--latency 0.1] [--concurrency 50]
                                       [--repeat 3] [--phases]

Against one mock server (its own process), ``--repeat`` interleaved rounds of seven whole
processes, each timed by the operating system (user + system CPU of the process tree, and
wall time):

* ``bare``: pytest running N trivial parametrized tests, plugin off — what pytest itself
  costs per item; ``bare (same failures)``: the same, with the tests that fail where our run's
  records fail (``pytest.fail`` with a one-line reason, as ours) — pytest's own price of a
  failure (its summary scans every report per failure); ``bare --collect-only``;
* ``ours --collect-only``, ``ours prefilled`` (``--responses`` holding the mock's own
  replies: the same outcomes as the live run, no call) and ``ours live`` (``pytest suites/
  -n 0`` calling the mock, ``--no-cache``);
* ``raw aiohttp``: the floor of the HTTP work (``raw_client.py`` as its own process).

The phases are differences of those processes, round by round (then the median), so no
profiler distorts them: start-up and collection (ours --collect-only − bare
--collect-only), the per-item run without model calls — pytest's protocol for our items,
grading, recording, the summary (ours prefilled − ours --collect-only, minus bare (same
failures) − bare --collect-only), and the model calls — request building, HTTP, parsing,
the engine (ours live − ours prefilled). "Own CPU per record" is (ours live − bare) / N,
the issue's definition, and beside it (ours live − bare (same failures)) / N. With
``--phases`` one more live run is profiled (yappi, CPU clock, every thread) and its CPU is
split by the module each function lives in; the profiler slows everything: shares only.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from engine_throughput import ENV, _dataset, _reset, cpu_seconds, load_row, timed_process
from transport import start_server

from pytest_legaleval.grading._prompts import build_messages
from pytest_legaleval.testing.mock_openai import default_reply, prompt_text

REPO = Path(__file__).resolve().parents[1]
BARE = """
import pytest

@pytest.mark.parametrize("i", range({n}))
def test_trivial(i):
    pass
"""


def _timed(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    wall, usage, output = timed_process(cmd, cwd, {**ENV, "PYTEST_DEBUG_TEMPROOT": str(cwd)})
    return wall, cpu_seconds(usage), output


def _pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]


PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("start-up imports", ("<frozen importlib", "importlib/")),
    ("collection", ("pytest_legaleval/formats", "pytest_legaleval/validation", "jsonschema")),
    (
        "request building",
        (
            "pytest_legaleval/grading/_prompts",
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


MIX = """
import pytest

FAILING = {failing!r}


@pytest.mark.parametrize("i", range({n}))
def test_mix(i):
    if i in FAILING:
        pytest.fail("wrong_answer: chose A (from 'Answer: A'); correct is B", pytrace=False)
"""


def _fixtures(work: Path, n: int, accuracy: float) -> None:
    """The dataset, the mock's own replies as a responses file, and the bare suites."""
    _dataset(work / "data.jsonl", n, accuracy)
    failing = []
    with (
        (work / "data.jsonl").open(encoding="utf-8") as rows,
        (work / "responses.jsonl").open("w", encoding="utf-8") as out,
    ):
        for i, line in enumerate(rows):
            row = json.loads(line)
            reply = default_reply(prompt_text(build_messages(load_row(row))))
            out.write(json.dumps({"record_id": row["id"], "response": reply}) + "\n")
            if reply[-1] not in row["correct_choice_ids"]:
                failing.append(i)
    for name, text in (("bare", BARE.format(n=n)), ("mix", MIX.format(n=n, failing=failing))):
        (work / name).mkdir()
        (work / name / f"test_{name}.py").write_text(text)


def _outcome(output: str) -> str:
    """pytest's last line without its time: "400 failed, 1600 passed"."""
    last = [line for line in output.splitlines() if line.strip()][-1]
    return re.sub(r" in [0-9.]+s.*", "", last).strip("= ")


def _median(values: list[float]) -> float:
    return statistics.median(values)


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
    phases: list[list[str]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            _fixtures(work, n, 0.8)
            ours = [
                str(REPO / "suites"), "--dataset", str(work / "data.jsonl"), "--no-cache",
                "--run-dir", str(work / "runs"), "--rootdir", str(work), "-p", "no:xdist",
            ]  # fmt: skip
            live = [*ours, "--model", "openai/mock-model", "--base-url", base_url,
                    "--concurrency", str(c)]  # fmt: skip
            prefilled = [*ours, "--responses", str(work / "responses.jsonl")]
            bare_args = ("-p", "no:xdist", "-p", "no:legaleval")
            commands: dict[str, tuple[list[str], Path]] = {
                "bare": (_pytest(*bare_args, "test_bare.py"), work / "bare"),
                "bare (same failures)": (_pytest(*bare_args, "test_mix.py"), work / "mix"),
                "bare --collect-only": (
                    _pytest(*bare_args, "--collect-only", "test_bare.py"),
                    work / "bare",
                ),
                "ours --collect-only": (_pytest(*prefilled, "--collect-only"), work),
                "ours prefilled": (_pytest(*prefilled), work),
                "ours live": (_pytest(*live), work),
            }
            raw = [sys.executable, str(REPO / "benchmarks" / "raw_client.py"), base_url, str(n),
                   str(c)]  # fmt: skip
            _timed(_pytest(*live, "--limit", "10"), work)  # warm-up: byte code, caches
            outcomes = {}
            for name, (cmd, cwd) in commands.items():
                _reset(base_url)
                outcomes[name] = _outcome(_timed(cmd, cwd)[2])
            # The subtractions compare like with like: the same failures everywhere.
            same = {outcomes[k] for k in ("bare (same failures)", "ours prefilled", "ours live")}
            if len(same) != 1:
                raise SystemExit(f"the runs' outcomes differ: {outcomes}")
            for i in range(args.repeat):
                row = {}
                for name, (cmd, cwd) in commands.items():
                    _reset(base_url)
                    row[name] = _timed(cmd, cwd)[:2]
                row["raw aiohttp"] = _timed([*raw, f"raw{i}"], work)[:2]
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
    _print(rounds, n, args, phases)


def _print(rounds: list[dict[str, tuple[float, float]]], n: int, args: argparse.Namespace,
           phases: list[list[str]]) -> None:  # fmt: skip
    print(f"N={n} records, latency {args.latency * 1000:.0f} ms, concurrency "
          f"{args.concurrency}, {args.repeat} rounds")  # fmt: skip
    print(f"{'process':24} {'CPU s (median, min-max)':>26} {'wall s':>8}")
    for name in rounds[0]:
        cpus = [row[name][1] for row in rounds]
        walls = [row[name][0] for row in rounds]
        print(f"{name:24} {_median(cpus):10.2f} ({min(cpus):.2f}-{max(cpus):.2f})"
              f"{'':6} {_median(walls):8.2f}")  # fmt: skip

    def per_record(fn: Callable[[dict[str, float]], float]) -> str:
        values = [fn({k: v[1] for k, v in row.items()}) * 1000 / n for row in rounds]
        return f"{_median(values):6.2f} ({min(values):.2f}-{max(values):.2f})"

    print("our own CPU per record, ms (median of the rounds' differences, min-max):")
    lines = {
        "start-up and collection": lambda r: r["ours --collect-only"] - r["bare --collect-only"],
        "per-item run, no calls": lambda r: (
            (r["ours prefilled"] - r["ours --collect-only"])
            - (r["bare (same failures)"] - r["bare --collect-only"])
        ),
        "model calls (engine, HTTP)": lambda r: r["ours live"] - r["ours prefilled"],
        "pytest's price of failures": lambda r: r["bare (same failures)"] - r["bare"],
        "own CPU vs bare": lambda r: r["ours live"] - r["bare"],
        "own CPU vs bare (same fails)": lambda r: r["ours live"] - r["bare (same failures)"],
        "raw aiohttp floor (process)": lambda r: r["raw aiohttp"],
    }
    for name, fn in lines.items():
        print(f"  {name:30} {per_record(fn)}")
    ratios = [row["ours live"][0] / row["raw aiohttp"][0] for row in rounds]
    print(f"wall: ours live / raw floor {_median(ratios):.2f}x ({min(ratios):.2f}-"
          f"{max(ratios):.2f})")  # fmt: skip
    if phases:
        print("CPU by phase (profiled live run, shares of its CPU):")
        for name, share in phases:
            print(f"  {name:20} {float(share):6.1%}")


if __name__ == "__main__":
    main()
