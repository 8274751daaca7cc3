"""Engine throughput per HTTP transport against a local mock OpenAI server.

Runs N requests at concurrency C against a server with a fixed latency L and prints, per
variant, wall time, the ideal N·L/C, efficiency (ideal / wall) and client CPU per request.
The server runs in its own process so its CPU is not charged to the client.

    python benchmarks/transport.py [--n 2000] [--concurrency 50] [--latency 0.1] [--repeat 3]

Variants: the Engine on the openai SDK's public client (``--transport sdk``), on the
wire-format client (``wire``, the default), the wire client with the SQLite cache on, and a
raw aiohttp client (no SDK, no engine) as the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

from raw_client import raw_calls

from pytest_legaleval.engine import Engine, EngineSettings, GenerationRequest


@dataclass(frozen=True)
class Measurement:
    name: str
    wall_s: float
    cpu_s: float
    ok: int


# Another mock module with the same CLI (e.g. an older copy on PYTHONPATH), to compare
# mock servers under the same engine code.
MOCK_MODULE = os.environ.get("LEGALEVAL_BENCH_MOCK", "pytest_legaleval.testing.mock_openai")


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            MOCK_MODULE,
            "--latency",
            str(latency),
            "--max-recorded",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("MOCK_OPENAI_URL="):
        proc.kill()
        raise SystemExit(f"mock server did not start: {line!r}")
    return proc, line.split("=", 1)[1]


def requests_for(n: int, tag: str) -> list[GenerationRequest]:
    return [
        GenerationRequest(
            model="openai/mock-model",
            messages=({"role": "user", "content": f"[{tag}] question number {i}: what is law?"},),
        )
        for i in range(n)
    ]


def run_engine(
    base_url: str, n: int, concurrency: int, transport: str, cache_dir: str | None, tag: str
) -> Measurement:
    settings = EngineSettings(
        base_url=base_url,
        concurrency=concurrency,
        transport=transport,
        cache_path=None if cache_dir is None else os.path.join(cache_dir, f"{tag}.sqlite"),
    )
    requests = requests_for(n, tag)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    with Engine(settings) as engine:
        futures = engine.submit_many(requests)
        ok = sum(1 for f in futures if f.result().ok)
        wall = time.perf_counter() - wall0
    return Measurement("", wall, time.process_time() - cpu0, ok)


def run_raw_aiohttp(base_url: str, n: int, concurrency: int, tag: str) -> Measurement:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    ok = asyncio.run(raw_calls(base_url, n, concurrency, tag))
    return Measurement("", time.perf_counter() - wall0, time.process_time() - cpu0, ok)


def best_of(repeat: int, run: Callable[[int], Measurement], name: str) -> Measurement:
    runs = [run(i) for i in range(repeat)]
    best = min(runs, key=lambda m: m.wall_s)
    return Measurement(name, best.wall_s, min(m.cpu_s for m in runs), best.ok)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n, c, lat = args.n, args.concurrency, args.latency
    ideal = n * lat / c
    proc, base_url = start_server(lat)
    try:
        run_engine(base_url, 100, c, "sdk", None, "warmup")
        with tempfile.TemporaryDirectory() as tmp:
            rows = [
                best_of(
                    args.repeat,
                    lambda i: run_engine(base_url, n, c, "sdk", None, f"sdk{i}"),
                    "engine/sdk",
                ),
                best_of(
                    args.repeat,
                    lambda i: run_engine(base_url, n, c, "wire", None, f"wire{i}"),
                    "engine/wire",
                ),
                best_of(
                    args.repeat,
                    lambda i: run_engine(base_url, n, c, "wire", tmp, f"cache{i}"),
                    "engine/wire+cache",
                ),
                best_of(
                    args.repeat,
                    lambda i: run_raw_aiohttp(base_url, n, c, f"raw{i}"),
                    "raw aiohttp (floor)",
                ),
            ]
    finally:
        proc.terminate()
        proc.wait(10)
    print(f"N={n} concurrency={c} latency={lat * 1000:.0f} ms ideal N*L/C={ideal:.2f} s")
    print(
        f"{'variant':<22} {'wall s':>7} {'ideal s':>7} {'effic.':>7} {'CPU ms/req':>10} {'ok':>5}"
    )
    for m in rows:
        print(
            f"{m.name:<22} {m.wall_s:7.2f} {ideal:7.2f} {ideal / m.wall_s:7.0%} "
            f"{m.cpu_s / n * 1000:10.2f} {m.ok:5d}"
        )


if __name__ == "__main__":
    main()
