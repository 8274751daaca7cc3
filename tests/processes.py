"""Process helpers shared by the tests: is a process alive, wait for an event."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        # ProcessLookupError: the process was reaped between opening its stat and reading it.
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_until(condition: Callable[[], object], within_s: float = 30.0) -> bool:
    """Poll ``condition`` every 50 ms; whether it held within ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
