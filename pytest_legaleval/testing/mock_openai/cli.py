"""The standalone server: ``python -m pytest_legaleval.testing.mock_openai``."""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from pytest_legaleval.testing.mock_openai.config import Latency, MockConfig
from pytest_legaleval.testing.mock_openai.faults import FAULT_KINDS, FaultKind, FaultRule
from pytest_legaleval.testing.mock_openai.hostile import HOSTILE_KINDS, HostileKind, HostileRule
from pytest_legaleval.testing.mock_openai.hostile_server import HostileOpenAIServer
from pytest_legaleval.testing.mock_openai.server import MockOpenAIServer

__all__ = ["main"]

_PROG = "python -m pytest_legaleval.testing.mock_openai"


def _latency_arg(value: str) -> Latency:
    try:
        if "," in value:
            low, high = (float(part) for part in value.split(",", 1))
            return (low, high)
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError("expected SECONDS or MIN,MAX") from None


def _fault_arg(value: str) -> tuple[str, float]:
    kind, sep, rate = value.partition("=")
    if not sep or kind not in FAULT_KINDS:
        raise argparse.ArgumentTypeError(
            f"expected KIND=RATE with KIND in {', '.join(FAULT_KINDS)}"
        )
    try:
        return kind, float(rate)
    except ValueError:
        raise argparse.ArgumentTypeError(f"RATE must be a number, got {rate!r}") from None


def _hostile_arg(value: str) -> HostileRule:
    kind, _, match = value.partition("=")
    if kind not in HOSTILE_KINDS:
        raise argparse.ArgumentTypeError(
            f"expected KIND or KIND=REGEX with KIND in {', '.join(HOSTILE_KINDS)}"
        )
    try:
        return HostileRule(cast(HostileKind, kind), match=match or None)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_PROG,
        description="Serve a mock OpenAI Chat Completions endpoint until SIGTERM/SIGINT. "
        "Prints MOCK_OPENAI_URL=http://HOST:PORT/v1 on stdout once ready.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port; 0 picks a free one (default)")
    parser.add_argument("--latency", type=_latency_arg, help="seconds, or MIN,MAX for uniform")
    parser.add_argument("--seed", type=int, help="seed of the latency and fault RNGs")
    parser.add_argument("--model", action="append", dest="models", help="model name (repeat)")
    parser.add_argument(
        "--fault",
        action="append",
        type=_fault_arg,
        default=[],
        metavar="KIND=RATE",
        help=f"inject a fault at a rate, e.g. 429=0.05 (repeat); kinds: {', '.join(FAULT_KINDS)}",
    )
    parser.add_argument(
        "--hostile",
        action="append",
        type=_hostile_arg,
        default=[],
        metavar="KIND[=REGEX]",
        help="answer prompts matching REGEX (all without one) with a hostile reply, e.g. "
        "lone_surrogate=record-3 (repeat); serves in hostile mode; kinds: "
        + ", ".join(HOSTILE_KINDS),
    )
    parser.add_argument("--retry-after", default="1", help="Retry-After of 429 faults (seconds)")
    parser.add_argument("--hang-seconds", type=float, help="how long a hang fault lasts")
    parser.add_argument(
        "--script",
        type=Path,
        help="YAML/JSON file with a MockConfig mapping (replies, faults, hostile, latency, "
        "...) or a list of reply rules; command-line flags override it",
    )
    parser.add_argument("--max-recorded", type=int, help="request bodies kept for inspection")
    parser.add_argument(
        "--no-judge-replies",
        action="store_true",
        help="answer judge questions with the plain default reply, not a valid verdict",
    )
    batches = parser.add_argument_group("batch API", "How /v1/files and /v1/batches behave.")
    batches.add_argument("--no-batches", action="store_true", help="answer them 404")
    batches.add_argument(
        "--batch-polls", type=int, metavar="N", help="polls a batch stays in_progress (1)"
    )
    for name, what in (("expire", "expired"), ("cancel", "cancelled"), ("fail", "failed")):
        batches.add_argument(
            f"--batch-{name}",
            type=int,
            default=0,
            metavar="N",
            help=f"the next N batches end {what}",
        )
    batches.add_argument(
        "--batch-failures-to",
        choices=("output", "error", "both"),
        help="where non-200 lines go (error)",
    )
    return parser


def _config(args: argparse.Namespace) -> MockConfig:
    config = MockConfig.from_file(args.script) if args.script else MockConfig()
    changes: dict[str, Any] = {}
    if args.latency is not None:
        changes["latency"] = args.latency
    if args.seed is not None:
        changes["seed"] = args.seed
    if args.models:
        changes["models"] = args.models
    if args.hang_seconds is not None:
        changes["hang_seconds"] = args.hang_seconds
    if args.max_recorded is not None:
        changes["max_recorded_requests"] = args.max_recorded
    if args.no_judge_replies:
        changes["judge_replies"] = False
    faults = list(config.faults)
    faults.extend(
        FaultRule(cast(FaultKind, kind), rate=rate, retry_after=args.retry_after)
        for kind, rate in args.fault
    )
    hostile = [*config.hostile, *args.hostile]
    return dataclasses.replace(config, faults=faults, hostile=hostile, **changes)


def _batch_knobs(args: argparse.Namespace) -> dict[str, Any]:
    knobs: dict[str, Any] = {
        "enabled": not args.no_batches,
        "expire_next": args.batch_expire,
        "cancel_next": args.batch_cancel,
        "fail_next": args.batch_fail,
    }
    if args.batch_polls is not None:
        knobs["polls_in_progress"] = args.batch_polls
    if args.batch_failures_to is not None:
        knobs["failures_to"] = args.batch_failures_to
    return knobs


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server as a process until SIGTERM or SIGINT.

    A usage error (bad flag, unreadable or invalid script, port in use) is one line on
    stderr and exit status 2, without a traceback.

    Args:
        argv: Command-line arguments (default ``sys.argv[1:]``).

    Returns:
        The exit status, 0 after a clean shutdown.

    """
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        config = _config(args)
    except (OSError, ValueError, TypeError) as exc:
        parser.exit(2, f"{_PROG}: error: {args.script or 'config'}: {exc}\n")
    server_type = HostileOpenAIServer if config.hostile else MockOpenAIServer
    server = server_type(config, host=args.host, port=args.port)
    server.batch_knobs(**_batch_knobs(args))
    try:
        server.start()
    except RuntimeError as exc:
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        detail = os.strerror(cause.errno) if isinstance(cause, OSError) and cause.errno else cause
        parser.exit(2, f"{_PROG}: error: cannot listen on {args.host}:{args.port}: {detail}\n")

    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        print(f"MOCK_OPENAI_URL={server.base_url}", flush=True)
        # A timed wait: the main thread must wake up regularly for the handler to run.
        while not stop.wait(0.2):
            pass
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


if __name__ == "__main__":
    sys.exit(main())
