"""Judging a rubric record: its criteria are asked concurrently, not one after another.

Serves the OpenAI API from our mock server with a fixed latency, then judges one rubric
record of N criteria through the engine (judge pool of the given concurrency) and prints
the wall time next to one judge latency. The criteria of a record should take about one
latency in total (plus one structured-output probe the first time), not N latencies. A
second part judges R rubric records at once to show throughput against the ideal
``R * N * latency / concurrency``.

    python benchmarks/judge_latency.py --criteria 20 --latency 0.1 --concurrency 50
"""

from __future__ import annotations

import argparse
import json
import time

from pytest_legaleval.engine import Engine, EngineSettings
from pytest_legaleval.grading._panel import JudgePanel
from pytest_legaleval.grading._policies import PolicyBook
from pytest_legaleval.records import Criterion, Record
from pytest_legaleval.testing.mock_openai import MockConfig, MockOpenAIServer


def _record(index: int, criteria: int) -> Record:
    return Record(
        id=f"r{index}",
        dataset="bench",
        task_type="rubric_qa",
        prompt=f"Advise the client on question {index}.",
        rubric=tuple(
            Criterion(f"c{i}", f"criterion {i} of record {index}", weight=1.0 if i % 5 else -1.0)
            for i in range(1, criteria + 1)
        ),
    )


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--criteria", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--records", type=int, default=50)
    args = parser.parse_args()

    policy = PolicyBook().get("default")
    with MockOpenAIServer(MockConfig(latency=args.latency)) as server:
        server.add_reply(None, json.dumps({"met": True, "rationale": "present"}))
        settings = EngineSettings(
            base_url=server.base_url,
            cache_path=None,
            concurrency=args.concurrency,
            judge_concurrency=args.concurrency,
        )
        with Engine(settings) as engine:
            panel = JudgePanel(engine, ("openai/judge",))
            # the one-time structured-output probe, measured apart
            start = time.perf_counter()
            engine.run_coroutine(panel.structured.mode("openai/judge")).result()
            probe = time.perf_counter() - start

            start = time.perf_counter()
            outcome = engine.run_coroutine(
                panel.judge(_record(0, args.criteria), "An answer.", policy)
            ).result()
            one = time.perf_counter() - start
            assert outcome.error is None, outcome.error

            async def many() -> int:
                import asyncio

                results = await asyncio.gather(
                    *(
                        panel.judge(_record(i, args.criteria), "An answer.", policy)
                        for i in range(1, args.records + 1)
                    )
                )
                return sum(r.error is not None for r in results)

            start = time.perf_counter()
            errors = engine.run_coroutine(many()).result()
            bulk = time.perf_counter() - start
            assert errors == 0

    calls = args.records * args.criteria
    ideal = calls * args.latency / args.concurrency
    print(f"judge latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}")
    print(f"structured-output probe (once per judge model): {probe * 1000:.0f} ms")
    print(
        f"one rubric record, {args.criteria} criteria: {one * 1000:.0f} ms "
        f"= {one / args.latency:.2f} x one judge latency (sequential would be "
        f"{args.criteria:.0f} x)"
    )
    print(
        f"{args.records} rubric records ({calls} judge calls): {bulk:.2f} s, ideal "
        f"{ideal:.2f} s ({bulk / ideal:.2f} x ideal)"
    )


if __name__ == "__main__":
    main()
