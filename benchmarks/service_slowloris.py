"""`legaleval serve` under a slowloris attack: how fast it answers while 1,030 sockets hang.

    python benchmarks/service_slowloris.py [--rounds 3] [--header-timeout 5]

Starts the service with its shipped settings (and a soft limit of 1,024 open files, which it
must raise itself), then, per round: opens 1,030 connections that send half a request head,
times ``GET /healthz``, an authenticated ``GET /v1/runs`` and an authenticated upload (each on
a fresh connection), checks how many attacking sockets were still held before and after the
calls, and times how long the header deadline takes to close all of them. Issue 31's
contract is an answer within 5 s while the sockets are held; the test
(``tests/adversarial/test_service_slowloris.py``) asserts the answers and the holding as
events, this prints the latencies.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_legaleval.testing.mock_openai import MockOpenAIServer
from tests.adversarial.test_service_slowloris import HALF_OPEN, TOKEN, Loris, _call
from tests.processes import wait_until
from tests.service_harness import ServiceProcess, document, record


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--header-timeout", type=float, default=None, help="default: shipped")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, HALF_OPEN + 1000), hard))
    extra = [] if args.header_timeout is None else ["--header-timeout", str(args.header_timeout)]
    upload = json.dumps(document("loris", [record("a", "Who is held?")])).encode()
    with MockOpenAIServer() as mock, tempfile.TemporaryDirectory() as folder:
        service = ServiceProcess(
            Path(folder) / "data",
            ["--model", "openai/cand", "--base-url", mock.base_url, "--workers", "1",
             "--log-level", "warning", *extra],
            tokens=TOKEN,
            nofile=1024,
        )  # fmt: skip
        service.start()
        try:
            host, port = service.url.removeprefix("http://").split(":")
            address = (host, int(port))
            print(f"{'round':>5} {'open s':>7} {'healthz s':>9} {'list s':>7} {'upload s':>8} "
                  f"{'held before/after':>17} {'all closed s':>12}")  # fmt: skip
            for number in range(1, args.rounds + 1):
                loris = Loris(address)
                try:
                    started = time.perf_counter()
                    loris.open(HALF_OPEN)
                    opened = time.perf_counter() - started
                    before = loris.held()
                    timings, codes = [], []
                    for method, path, token, body in (
                        ("GET", "/healthz", None, b""),
                        ("GET", "/v1/runs?limit=5", TOKEN, b""),
                        ("POST", "/v1/runs", TOKEN, upload),
                    ):
                        call = time.perf_counter()
                        codes.append(_call(address, method, path, token=token, body=body))
                        timings.append(time.perf_counter() - call)
                    after = loris.held()
                    wait_until(lambda: loris.held() == 0, 300)  # noqa: B023 - used at once
                    closed = time.perf_counter() - started
                finally:
                    loris.close()
                print(f"{number:5} {opened:7.2f} {timings[0]:9.3f} {timings[1]:7.3f} "
                      f"{timings[2]:8.3f} {f'{before}/{after}':>17} {closed:12.1f}"
                      f"  {codes}")  # fmt: skip
        finally:
            service.stop()
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


if __name__ == "__main__":
    main()
