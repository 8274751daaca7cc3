"""Run artifacts at scale: 5,000 and 50,000 MCQ records against the mock server.

    python benchmarks/artifacts_scale.py [--sizes 5000,50000] [--workers 2]
    python benchmarks/artifacts_scale.py --report [--sizes 50000]

``--report`` times the HTML report instead: a written run directory of N items (8 models,
3 KB answers, a quarter rubric items; ``tests/integration/report_runs.write_scale_run``),
once with ``predictions.jsonl`` only and once with the reviewer's files too
(``input_dataset.json``, ``transcripts.jsonl``); prints the page's size, its build time, the
preview length and the peak RSS of the process that builds it.

Each run is a fresh `pytest suites/` child process (live generation against one mock server
in its own process, near-zero latency, no cache) that writes the full run directory. Prints
the wall time, the controller's own peak RSS (the process that writes every artifact; read
with getrusage(RUSAGE_SELF) at its pytest_unconfigure by a small probe plugin) and the peak
RSS of the whole pytest process tree (os.wait4 of the child). Floor: controller peak RSS at
the largest size <= 1.5 x at the smallest (results are streamed to disk, not accumulated).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from engine_throughput import timed_process
from transport import start_server

REPO = Path(__file__).resolve().parents[1]
# As on a user's machine: byte-code caching on.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

PROBE = """
import json, os, resource

def pytest_unconfigure(config):
    if hasattr(config, "workerinput"):
        return
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with open(os.environ["RSS_PROBE_OUT"], "w") as out:
        json.dump({"controller_peak_kib": peak_kib}, out)
"""


def _dataset(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            row = {
                "schema_version": "legal_eval_v1",
                "id": f"scale:{i:06d}",
                "dataset": "scale",
                "task_type": "mcq",
                "prompt": f"Question {i}: which clause governs the termination of the lease?",
                "choices": [{"id": c, "text": f"Clause {c}.{i % 13}"} for c in "ABCD"],
                "correct_choice_ids": ["ABCD"[i % 4]],
                "metadata": {"jurisdiction": ["CH", "DE", "FR"][i % 3]},
            }
            out.write(json.dumps(row) + "\n")


def _run(work: Path, base_url: str, n: int, workers: int) -> dict[str, float | int | str]:
    data = work / f"data_{n}.jsonl"
    _dataset(data, n)
    probe_out = work / f"rss_{n}.json"
    path = os.pathsep.join(filter(None, [str(work), ENV.get("PYTHONPATH")]))
    env = {
        **ENV,
        "RSS_PROBE_OUT": str(probe_out),
        "OPENAI_API_KEY": "bench-key",
        "PYTHONPATH": path,
        # pytest's temporary directories under the benchmark's own root (xdist makes the
        # controller create one; at exit pytest deletes older ones, unrelated to this run).
        "PYTEST_DEBUG_TEMPROOT": str(work),
    }
    xdist = ["-n", str(workers)] if workers else ["-p", "no:xdist"]
    args = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "rss_probe",
        str(REPO / "suites"), "--dataset", str(data), "--model", "openai/mock-model",
        "--base-url", base_url, "--concurrency", "64", "--no-cache",
        "--run-dir", str(work / "runs"), "--rootdir", str(work), "--tb=no", "--no-header",
        "--slice-by", "metadata.jurisdiction", *xdist,
    ]  # fmt: skip
    wall, usage, _ = timed_process(args, work, env)
    runs = sorted((work / "runs").iterdir(), key=lambda p: p.stat().st_mtime)
    summary = json.loads((runs[-1] / "metrics_summary.json").read_text())
    assert summary["total_records"] == n, summary["total_records"]
    size = sum(p.stat().st_size for p in runs[-1].iterdir())
    return {
        "n": n,
        "wall_s": wall,
        "controller_mib": json.loads(probe_out.read_text())["controller_peak_kib"] / 1024,
        "tree_mib": usage.ru_maxrss / 1024,
        "run_dir_mib": size / 2**20,
        "pass_rate": f"{summary['pass_rate']:.3f}",
    }


def _result(i: int) -> dict[str, Any]:
    passed = i % 4 == 0
    return {
        "record_id": f"scale:{i:06d}", "dataset": "scale", "task_type": "mcq",
        "model": "openai/gpt-4o-mini", "source": "live",
        "outcome": "passed" if passed else "failed", "passed": passed,
        "score": 1.0 if passed else 0.0, "reason": "correct" if passed else "wrong_answer",
        "explanation": f"chose {'ABCD'[i % 4]}; correct is A",
        "response": f"Looking at clause {i % 13}, the answer is {'ABCD'[i % 4]}.",
        "grader": "mcq", "details": {"chosen": ["ABCD"[i % 4]], "correct": ["A"]},
        "record_sha256": f"{i:064x}", "latency_ms": 5.0 + i % 97, "input_tokens": 60,
        "output_tokens": 12, "total_tokens": 72, "first_attempt_at": "2026-01-01T00:00:00.000Z",
        "last_attempt_at": "2026-01-01T00:00:00.000Z",
        "attempts": [{"number": 1, "started_at": "2026-01-01T00:00:00.000Z", "latency_ms": 5.0,
                      "error_code": None, "status_code": 200, "message": ""}],
        "policy_id": "default", "policy_sha256": "0" * 64, "judge": None,
    }  # fmt: skip


def _recorder_path(n: int, work: Path) -> tuple[float, float, float]:
    """The recorder's own work without pytest: write and aggregate ``n`` results.

    Returns (memory retained after writing, in MiB; write seconds; finalize seconds).
    """
    from pytest_legaleval.metrics._prices import builtin_table
    from pytest_legaleval.metrics._slices import SliceAccumulator
    from pytest_legaleval.metrics._summary import MetricsAccumulator
    from pytest_legaleval.run import artifacts
    from pytest_legaleval.run.directory import RunDirectory
    from pytest_legaleval.run.redaction import Redactor

    prices = builtin_table()
    tracemalloc.start()
    directory = RunDirectory.create(work / "recorder-only", f"run_{n}", Redactor(pii=["pii"]))
    summary = MetricsAccumulator(prices=prices)
    slices = SliceAccumulator(["metadata.jurisdiction"], prices)
    settings = {"temperature": None, "top_p": None, "max_new_tokens": None, "seed": None}
    start = time.perf_counter()
    for i in range(n):
        result = _result(i)
        item = f"suites/test_legal.py::test_record[scale/scale:{i:06d}]"
        for line in artifacts.attempt_lines("run", item, result):
            directory.append("attempt_logs.jsonl", line)
        directory.append("predictions.jsonl", artifacts.prediction_line(
            "run", item, result, "passed", record=None, generation_settings=settings,
            version="bench"))  # fmt: skip
        summary.add(result)
        slices.add(result, tags=(f"t{i % 5}",), metadata={"jurisdiction": "CH"})
    write_s = time.perf_counter() - start
    retained = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.stop()
    start = time.perf_counter()
    directory.write_json("metrics_summary.json", summary.to_dict())
    directory.write_json("metrics_by_slice.json", slices.to_dict())
    directory.finalize()
    return retained, write_s, time.perf_counter() - start


_REPORT = """
import re, resource, sys, time
from pytest_legaleval.report import write_report
started = time.perf_counter()
page = write_report(sys.argv[1], sys.argv[2]).read_text(encoding="utf-8")
took = time.perf_counter() - started
preview = re.search(r"up to ([\\d,]+) characters", page).group(1)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{len(page.encode()) / 1e6:.2f} MB, built in {took:.1f} s, previews {preview} "
      f"characters, peak RSS {peak:.0f} MiB")
"""


def _report(sizes: list[int]) -> None:
    sys.path.insert(0, str(REPO))
    from tests.integration.report_runs import write_scale_run

    for n in sizes:
        for reviewer in (False, True):
            with tempfile.TemporaryDirectory() as tmp:
                run = write_scale_run(Path(tmp), items=n, reviewer=reviewer)
                done = subprocess.run(
                    [sys.executable, "-c", _REPORT, str(run), str(Path(tmp) / "r.html")],
                    capture_output=True, text=True, check=True, env=ENV,
                )  # fmt: skip
                inputs = sum(p.stat().st_size for p in run.iterdir()) / 1e6
                what = "+ records, transcripts" if reviewer else "predictions only"
                print(f"{n:>7} items, {what:<22} ({inputs:5.0f} MB): {done.stdout.strip()}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="5000,50000")
    parser.add_argument("--workers", type=int, default=2, help="xdist workers (0: no xdist)")
    parser.add_argument("--recorder-only", action="store_true", help="skip the pytest runs")
    parser.add_argument("--report", action="store_true", help="time the HTML report only")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.report:
        _report(sizes)
        return
    if args.recorder_only:
        with tempfile.TemporaryDirectory() as tmp:
            for n in sizes:
                print(n, _recorder_path(n, Path(tmp)))
        return
    proc, base_url = start_server(0.0)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            (work / "rss_probe.py").write_text(PROBE)
            for n in sizes:
                rows.append(_run(work, base_url, n, args.workers))
    finally:
        proc.terminate()
        proc.wait()
    print(f"pytest suites/ -n {args.workers}, live mock (latency 0), full run directory")
    header = ("records", "wall s", "controller MiB", "tree MiB", "artifacts MiB")
    print(
        f"{header[0]:>8} {header[1]:>8} {header[2]:>15} {header[3]:>9} {header[4]:>14}  pass rate"
    )
    for row in rows:
        print(
            f"{row['n']:>8} {row['wall_s']:8.1f} {row['controller_mib']:15.1f} "
            f"{row['tree_mib']:9.1f} {row['run_dir_mib']:14.1f}  {row['pass_rate']}"
        )
    ratio = float(rows[-1]["controller_mib"]) / float(rows[0]["controller_mib"])
    print(f"controller peak RSS {rows[-1]['n']} / {rows[0]['n']}: {ratio:.2f}x (floor <= 1.5x)")
    print("recorder path alone (no pytest; PII redaction on, 7 slices with bootstraps):")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            retained, write_s, final_s = _recorder_path(n, Path(tmp))
            print(
                f"{n:>8} records: {retained:6.2f} MiB retained after writing, "
                f"write {write_s:5.1f} s, finalize (metrics + SHA256SUMS) {final_s:5.2f} s"
            )


if __name__ == "__main__":
    main()
