"""``legaleval review`` as a real process on 127.0.0.1, and plain HTTP calls to it."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from ..processes import wait_until

REVIEW = [sys.executable, "-m", "pytest_legaleval.cli", "review"]


class ReviewServer:
    """One ``legaleval review RUN_DIR --rater NAME`` process (a context manager)."""

    def __init__(self, run: Path, rater: str, folder: Path, *args: str) -> None:
        self.run, self.rater, self.folder, self.args = run, rater, folder, args
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.starts = 0

    def start(self) -> ReviewServer:
        self.starts += 1
        out = self.folder.parent / f"{self.rater}.out{self.starts}"
        self.err = self.folder.parent / f"{self.rater}.err{self.starts}"
        command = [*REVIEW, str(self.run), "--rater", self.rater, "--port", "0",
                   "--review-dir", str(self.folder), *self.args]  # fmt: skip
        with out.open("wb") as stdout, self.err.open("wb") as stderr:
            self.process = subprocess.Popen(command, stdout=stdout, stderr=stderr)

        def ready() -> bool:
            found = re.search(r"LEGALEVAL_REVIEW_URL=(\S+)", out.read_text(errors="replace"))
            if found:
                self.url = found.group(1)
            return bool(found) or self.process is None or self.process.poll() is not None

        if not wait_until(ready, 60) or not self.url:
            self.stop()
            raise AssertionError(f"legaleval review did not start:\n{self.log()}")
        return self

    def log(self) -> str:
        return self.err.read_text(errors="replace")[-4000:]

    def stop(self) -> int:
        """SIGTERM (the server finishes requests in flight), then wait."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(30)

    def __enter__(self) -> ReviewServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """One request to the API (``path`` after ``api/review/``): status and JSON body."""
        data = body if isinstance(body, bytes) else None if body is None else json.dumps(body)
        request = urllib.request.Request(
            self.url + "api/review/" + path,
            data=data.encode() if isinstance(data, str) else data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                raw = answer.read()
                return answer.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            raw = error.read()
            return error.code, json.loads(raw) if raw else None
