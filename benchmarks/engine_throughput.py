"""End-to-end throughput: `pytest suites/` on 2,000 MCQ records against a mock endpoint.

    python benchmarks/engine_throughput.py [--records 2000] [--latency 0.1] [--concurrency 50]
                                           [--repeat 3]

Runs, in one invocation and against one mock server (its own process), ``--repeat`` rounds
of: a raw aiohttp client (the floor, in this process, its imports done), the same client as
its own process (``raw_client.py``, timed from spawn to exit like the pytest runs), `pytest
suites/ -n 0` and `pytest suites/ -n 2`. Prints, per round, wall time, the ratio to that
round's floor, the ideal N·L/C, efficiency (ideal / wall), the server's peak in-flight count
and the harness CPU per record (user + system CPU of the process tree, divided by N); then
the median and range of each ratio over the rounds. The floors are checked against the
in-process floor, the stricter of the two.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from transport import run_raw_aiohttp, start_server

from pytest_legaleval.grading._prompts import build_messages
from pytest_legaleval.records import Choice, Record
from pytest_legaleval.testing.mock_openai import default_reply, prompt_text

REPO = Path(__file__).resolve().parents[1]
# As on a user's machine: byte-code caching on (the warm-up run below fills the caches).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _stats(base_url: str) -> dict:
    root = base_url.rsplit("/v1", 1)[0]
    with urllib.request.urlopen(f"{root}/stats") as response:  # loopback only
        return json.load(response)


def _reset(base_url: str) -> None:
    root = base_url.rsplit("/v1", 1)[0]
    request = urllib.request.Request(f"{root}/reset", method="POST", data=b"")
    urllib.request.urlopen(request).close()


def _dataset(path: Path, n: int, accuracy: float) -> None:
    """MCQ rows; the mock's deterministic answer is right for about ``accuracy`` of them."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            row = {
                "schema_version": "legal_eval_v1",
                "id": f"bench:{i:05d}",
                "dataset": "bench",
                "task_type": "mcq",
                "prompt": f"Question {i}: which clause governs the termination of the lease?",
                "choices": [{"id": c, "text": f"Clause {c}.{i % 13}"} for c in "ABCD"],
                "correct_choice_ids": ["A"],
            }
            messages = build_messages(load_row(row))
            answer = default_reply(prompt_text(messages))[-1]
            wrong = "ABCD"[("ABCD".index(answer) + 1) % 4]
            row["correct_choice_ids"] = [answer if (i * 7919 % 1000) < accuracy * 1000 else wrong]
            out.write(json.dumps(row) + "\n")


def load_row(row: dict) -> Record:
    return Record(
        id=row["id"],
        dataset="bench",
        task_type="mcq",
        prompt=row["prompt"],
        choices=tuple(Choice(c["id"], c["text"]) for c in row["choices"]),
        correct_choice_ids=tuple(row["correct_choice_ids"]),
    )


def timed_process(
    cmd: list[str],
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    ok: tuple[int, ...] = (0, 1),
) -> tuple[float, resource.struct_rusage, str]:
    """Run ``cmd`` to its exit: wall seconds (spawn to exit), its process tree's resource
    usage (the OS's own accounting) and its output; an exit status not in ``ok`` ends the
    benchmark with the output's tail (pytest exits 1 when records fail: a measured run)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=ENV if env is None else env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    assert proc.stdout is not None
    output = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in ok:
        raise SystemExit(f"{' '.join(cmd[:4])} exited {code}:\n{output[-3000:]}")
    return wall, usage, output


def cpu_seconds(usage: resource.struct_rusage) -> float:
    """User + system CPU seconds of a finished process tree."""
    return usage.ru_utime + usage.ru_stime


def _pytest(args: list[str], cwd: Path) -> tuple[float, float, str]:
    wall, usage, output = timed_process(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd,
        # pytest's temporary directories under the benchmark's own root: xdist makes the
        # controller create one, and at exit pytest deletes its older siblings, which after
        # a test-suite run is a large tree that has nothing to do with the run measured.
        {**ENV, "PYTEST_DEBUG_TEMPROOT": str(cwd)},
    )
    summary = [line for line in output.splitlines() if " in " in line and "passed" in line]
    return wall, cpu_seconds(usage), summary[-1] if summary else ""


def _raw_process(base_url: str, n: int, c: int, tag: str) -> tuple[float, float, int]:
    """The raw client as its own process, timed like a pytest run (spawn to exit)."""
    script = str(Path(__file__).with_name("raw_client.py"))
    wall, usage, output = timed_process(
        [sys.executable, script, base_url, str(n), str(c), tag], ok=(0,)
    )
    return wall, cpu_seconds(usage), int(output.strip().splitlines()[-1])


Row = tuple[str, float, float | None, int, str]
FLOOR, OWN_PROCESS, N0, N2 = (
    "raw aiohttp (floor)",
    "raw aiohttp, own process",
    "pytest suites/ -n 0",
    "pytest suites/ -n 2",
)


def _round(base_url: str, common: list[str], work: Path, n: int, c: int, tag: str) -> list[Row]:
    """One measurement of every variant, in a fixed order, against the same server."""
    raw = run_raw_aiohttp(base_url, n, c, f"floor{tag}")
    rows: list[Row] = [
        (FLOOR, raw.wall_s, raw.cpu_s, _stats(base_url)["peak_in_flight"], f"{raw.ok} ok")
    ]
    _reset(base_url)
    wall, cpu, ok = _raw_process(base_url, n, c, f"own{tag}")
    rows.append((OWN_PROCESS, wall, cpu, _stats(base_url)["peak_in_flight"], f"{ok} ok"))
    for label, extra in ((N0, ["-p", "no:xdist"]), (N2, ["-n", "2"])):
        _reset(base_url)
        wall, cpu, summary = _pytest([*common, *extra], work)
        rows.append((label, wall, cpu, _stats(base_url)["peak_in_flight"], summary))
    return rows


def _table(rows: list[Row], n: int, ideal: float) -> None:
    floor = rows[0][1]
    print(
        f"{'variant':24} {'wall s':>7} {'vs floor':>9} {'efficiency':>10} {'peak':>5} "
        f"{'CPU ms/rec':>10}  result"
    )
    for label, wall, cpu, peak, summary in rows:
        cpu_text = f"{cpu * 1000 / n:10.2f}" if cpu is not None else f"{'-':>10}"
        print(
            f"{label:24} {wall:7.2f} {wall / floor:8.2f}x {ideal / wall:9.0%} {peak:5d} "
            f"{cpu_text}  {summary}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="rounds of every variant, interleaved; each ratio is to the same round's floor",
    )
    parser.add_argument(
        "--accuracy",
        type=float,
        default=0.8,
        help="share of records the mock answers correctly (failures cost "
        "pytest more to report than passes)",
    )
    parser.add_argument(
        "--tb",
        default="auto",
        help="pytest --tb style; 'line' prints one line per failed record and skips "
        "pytest's failure summary, whose cost grows with failures x items",
    )
    args = parser.parse_args()
    n, latency, c = args.records, args.latency, args.concurrency
    ideal = n * latency / c
    proc, base_url = start_server(latency)
    rounds: list[list[Row]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            data = work / "data.jsonl"
            _dataset(data, n, args.accuracy)
            common = [
                str(REPO / "suites"),
                "--dataset",
                str(data),
                "--model",
                "openai/mock-model",
                "--base-url",
                base_url,
                "--concurrency",
                str(c),
                "--no-cache",
                "--run-dir",
                str(work / "runs"),
                "--rootdir",
                str(work),
                f"--tb={args.tb}",
            ]
            _pytest([*common, "-p", "no:xdist", "--limit", "10"], work)  # warm-up
            for i in range(args.repeat):
                _reset(base_url)
                rounds.append(_round(base_url, common, work, n, c, str(i)))
    finally:
        proc.terminate()
        proc.wait()
    print(
        f"N={n} records, latency {latency * 1000:.0f} ms, concurrency {c}, --tb={args.tb}, "
        f"{args.accuracy:.0%} answered right; ideal N*L/C = {ideal:.2f} s"
    )
    for i, rows in enumerate(rounds, start=1):
        print(f"round {i} of {len(rounds)}")
        _table(rows, n, ideal)
    if len(rounds) > 1:
        print(f"over {len(rounds)} rounds (ratio to the same round's in-process floor)")
        print(f"{'variant':24} {'median wall s':>13} {'median x':>9} {'range x':>12}")
        for j, (label, *_) in enumerate(rounds[0]):
            walls = [rows[j][1] for rows in rounds]
            ratios = [rows[j][1] / rows[0][1] for rows in rounds]
            print(
                f"{label:24} {statistics.median(walls):13.2f} {statistics.median(ratios):8.2f}x "
                f"{min(ratios):5.2f}-{max(ratios):.2f}x"
            )
    print("floors: -n 0 <= 2.0x floor, -n 2 <= 1.5x floor, peak in flight reaches concurrency")


if __name__ == "__main__":
    main()
