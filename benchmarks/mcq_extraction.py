"""MCQ answer extraction: throughput on realistic replies and CPU on pathological ones.

    python benchmarks/mcq_extraction.py [--repeats 300]

Prints extractions per second (wall and CPU) on a one-kilobyte German/English reply, and
the CPU milliseconds of each pathological reply of ``tests/unit/test_grading_mcq.py`` (the
inputs that once made the patterns backtrack for seconds to minutes). The tests guard the
same inputs with a CPU-time limit (a generous one, so that a loaded machine cannot fail
them); this prints the figures themselves.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_legaleval.grading.mcq import extract_choice_ids
from tests.unit.test_grading_mcq import A_P, ONE_KILOBYTE_REPLY, PATHOLOGICAL


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=300)
    args = parser.parse_args()
    extract_choice_ids("warm up", A_P)

    wall, cpu = time.perf_counter(), time.thread_time()
    for _ in range(args.repeats):
        extract_choice_ids(ONE_KILOBYTE_REPLY, A_P)
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    print(
        f"one-kilobyte reply ({len(ONE_KILOBYTE_REPLY)} chars) x{args.repeats}: "
        f"{args.repeats / wall:,.0f}/s wall, {args.repeats / cpu:,.0f}/s CPU"
    )

    print(f"{'pathological reply':32} {'chars':>7} {'CPU ms':>8}")
    total = 0.0
    for name in sorted(PATHOLOGICAL):
        text = PATHOLOGICAL[name]
        started = time.thread_time()
        extract_choice_ids(text, A_P)
        spent = time.thread_time() - started
        total += spent
        print(f"{name:32} {len(text):7,} {spent * 1000:8.1f}")
    print(f"{'all':32} {'':7} {total * 1000:8.1f}")


if __name__ == "__main__":
    main()
