"""Ctrl-C keeps what arrived: the answers a process holds are recorded, not cancelled.

When a run is interrupted, items whose answers are in but whose tests never ran would be
recorded ``cancelled``. A single process hands its item runner's finished results to the
recorder directly. Under xdist every worker receives the interrupt too (Ctrl-C signals
the whole process group), and the controller's loop stops taking reports: each worker,
the moment SIGINT arrives, writes its finished results to a spool folder the controller
named in its ``workerinput`` (one JSON file per worker, renamed into place when complete)
and then raises ``KeyboardInterrupt`` as Python's own handler does; the controller reads
what arrived within a short wait before it records the rest as cancelled. The worker's
handler is installed only for its run loop and restored after it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.pipeline.runner import ItemRunner
from pytest_legaleval.pytest.carrier import Carried, decode, encode
from pytest_legaleval.records import EvalResult

__all__ = ["SPOOL", "WAIT_S", "collect_spooled", "spool_finished", "spool_folder"]

SPOOL = "legaleval_spool"
"""``workerinput`` key: the folder a worker writes its finished results to when interrupted."""
WAIT_S = 1.0
"""How long the controller waits for the workers' spooled results after an interrupt."""

_FOLDER = pytest.StashKey[str]()


def spool_folder(config: pytest.Config) -> str:
    """The controller's spool folder (created once, removed when the session ends)."""
    folder = config.stash.get(_FOLDER, None)
    if folder is None:
        folder = tempfile.mkdtemp(prefix="legaleval-spool-")
        config.stash[_FOLDER] = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    return folder


def _lines(session: pytest.Session, runner: ItemRunner) -> Iterator[str]:
    nodeids = {}
    for item in session.items:
        spec = getattr(getattr(item, "callspec", None), "params", {}).get("record")
        if spec is not None:
            nodeids[spec.item_id] = item.nodeid
    for spec, result in runner.finished():
        nodeid = nodeids.get(spec.item_id)
        if nodeid is not None:
            line = {"nodeid": nodeid, **encode(Carried(spec.provenance(), result))}
            yield json.dumps(line, ensure_ascii=False) + "\n"


def spool_finished(session: pytest.Session, runner: ItemRunner) -> None:
    """An interrupted xdist worker: write its finished results for the controller (once)."""
    workerinput: dict[str, Any] | None = getattr(session.config, "workerinput", None)
    folder = workerinput.get(SPOOL) if workerinput is not None else None
    if workerinput is None or not folder or not os.path.isdir(folder):
        return
    if os.path.exists(os.path.join(folder, f"{workerinput['workerid']}.json")):
        return
    name = f"{workerinput['workerid']}.json"
    fd, temporary = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.writelines(_lines(session, runner))
    os.replace(temporary, os.path.join(folder, name))


@contextmanager
def spooling_on_interrupt(session: pytest.Session, runner: ItemRunner) -> Iterator[None]:
    """On an xdist worker: SIGINT spools the finished results, then interrupts as usual."""
    if (
        getattr(session.config, "workerinput", None) is None
        or threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return

    def interrupted(signum: int, frame: Any) -> None:
        try:
            spool_finished(session, runner)
        finally:
            signal.default_int_handler(signum, frame)

    handler: Callable[[int, Any], None] = interrupted
    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is handler:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def collect_spooled(config: pytest.Config, workers: int) -> list[tuple[str, Any, EvalResult]]:
    """The controller after an interrupt: ``(nodeid, provenance, result)`` the workers spooled.

    Waits up to :data:`WAIT_S` for ``workers`` files; reads those that arrived.
    """
    folder = config.stash.get(_FOLDER, None)
    if folder is None:
        return []
    deadline = time.monotonic() + WAIT_S
    files: list[Path] = []
    while True:
        files = sorted(Path(folder).glob("gw*.json"))
        if len(files) >= workers or time.monotonic() >= deadline:
            break
        time.sleep(0.02)
    found = []
    for file in files:
        for text in file.read_text(encoding="utf-8").splitlines():
            try:
                line = json.loads(text)
                item = decode(line)
                if item.result is not None:
                    found.append((str(line["nodeid"]), item.provenance, item.result))
            except (ValueError, KeyError, TypeError):
                continue  # a worker killed mid-line: its item is recorded cancelled
    return found
