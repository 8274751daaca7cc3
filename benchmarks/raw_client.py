"""The floor of the throughput benchmarks: a bare aiohttp client, no SDK, no engine, no pytest.

    python benchmarks/raw_client.py BASE_URL N CONCURRENCY [TAG]

N chat completions, at most CONCURRENCY in flight, each response read and parsed; prints the
number answered 200 with a choice. ``engine_throughput.py`` times it twice: in its own
process (imports already done) and as this script (interpreter start and ``import aiohttp``
included, the way a ``pytest`` run is timed).
"""

from __future__ import annotations

import asyncio
import json
import sys

import aiohttp


async def raw_calls(base_url: str, n: int, concurrency: int, tag: str) -> int:
    """Send the N requests; the number that succeeded."""
    limit = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(i: int) -> bool:
            body = {
                "model": "mock-model",
                "messages": [{"role": "user", "content": f"[{tag}] raw {i}"}],
            }
            async with limit:
                async with session.post(f"{base_url}/chat/completions", json=body) as resp:
                    data = json.loads(await resp.read())
                    return resp.status == 200 and bool(data["choices"])

        results = await asyncio.gather(*(one(i) for i in range(n)))
    return sum(results)


if __name__ == "__main__":
    url, count, limit_arg = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    print(asyncio.run(raw_calls(url, count, limit_arg, sys.argv[4] if len(sys.argv) > 4 else "")))
