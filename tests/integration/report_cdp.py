"""Drive headless Chromium over the DevTools protocol on a pipe: click, type, look, shoot.

``--remote-debugging-pipe`` makes Chromium read commands from file descriptor 3 and write
answers to 4, each a JSON message ended by a NUL byte: no port, no WebSocket library. The
clicks and key presses are the browser's own input events (``Input.dispatch*``), trusted as
a user's, not events a script made up.
"""

from __future__ import annotations

import base64
import json
import os
import select
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["Browser"]

_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-debugging-pipe",
)
_TIMEOUT = 60.0
"""Seconds any one answer may take (a hang fails the test instead of blocking it)."""


class Browser:
    """One headless Chromium with one page, driven over the pipe (a context manager)."""

    def __init__(self, chromium: str, tmp: Path, width: int = 1400, height: int = 1400) -> None:
        profile = tempfile.mkdtemp(dir=tmp, prefix="profile-")
        ours_read, theirs_write = os.pipe()
        theirs_read, ours_write = os.pipe()

        def wire() -> None:  # in the child: its ends as fds 3 (commands) and 4 (answers)
            read, write = os.dup(theirs_read), os.dup(theirs_write)
            os.dup2(read, 3)
            os.dup2(write, 4)

        self._proc = subprocess.Popen(
            [chromium, *_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
             "about:blank"],
            preexec_fn=wire, close_fds=False, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        os.close(theirs_read)
        os.close(theirs_write)
        self._out, self._in = ours_write, ours_read
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        self.errors: list[str] = []
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page.enable", "Runtime.enable"):
            self.call(domain)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the browser (it was started by us; its id is ours): asked, then killed."""
        try:
            self._call("Browser.close")
        except (OSError, RuntimeError, TimeoutError):
            pass  # already gone, or not answering: killed below
        for fd in (self._out, self._in):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=30)
        if self._proc.stderr is not None:
            self._proc.stderr.close()

    def _send(self, message: dict[str, Any]) -> None:
        os.write(self._out, json.dumps(message).encode() + b"\0")

    def _receive(self) -> dict[str, Any]:
        deadline = time.monotonic() + _TIMEOUT
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._in], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        found: dict[str, Any] = json.loads(message)
        return found

    def _call(self, method: str, params: dict[str, Any] | None = None, **extra: Any) -> Any:
        self._next += 1
        ident = self._next
        self._send({"id": ident, "method": method, "params": params or {}, **extra})
        while True:
            message = self._receive()
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self._event(message)

    def _event(self, message: dict[str, Any]) -> None:
        self.events.append(message)
        if message.get("method") == "Runtime.exceptionThrown":
            details = message["params"]["exceptionDetails"]
            self.errors.append(str(details.get("exception", {}).get("description") or details))

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """A DevTools command to the page; its result."""
        return self._call(method, params, sessionId=self._session)

    def open(self, url: str) -> None:
        """Load ``url`` afresh and wait for its load event (the page's script has run).

        Through ``about:blank``: a second address that differs only in its fragment would
        otherwise only scroll the loaded page.
        """
        for address in ("about:blank", url):
            self.events.clear()
            self.call("Page.navigate", {"url": address})
            while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
                self._event(self._receive())
        assert not self.errors, self.errors

    def js(self, expression: str) -> Any:
        """Evaluate ``expression`` in the page; its value (JSON), awaited if a promise."""
        found = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in found:
            raise RuntimeError(f"{expression}: {found['exceptionDetails']}")
        return found["result"].get("value")

    def wait_for(self, condition: str) -> None:
        """Wait until ``condition`` (a JS expression) is true, checking each frame.

        Bounded by :data:`_TIMEOUT`: a page that never gets there fails, it does not hang.
        """
        self.js(
            "new Promise(function (done, fail) { var t0 = Date.now(); (function poll() {"
            f" if ({condition}) {{ done(true); }} else if (Date.now() - t0 > {_TIMEOUT * 1000})"
            f" {{ fail(new Error('never true: ' + {json.dumps(condition)})); }}"
            " else { requestAnimationFrame(poll); } }()); })"
        )

    def click(self, selector: str) -> None:
        """Scroll the element into view and click its middle with the mouse."""
        box = self.js(
            f"(function () {{ var n = document.querySelector({json.dumps(selector)});"
            " if (!n) { return null; } n.scrollIntoView({block: 'center'});"
            " var r = n.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; }())"
        )
        assert box is not None, f"nothing matches {selector}"
        x, y = box
        for kind in ("mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
            )

    def key(self, key: str) -> None:
        """Press and release one key (``"j"``, ``"ArrowDown"``, ``"Escape"``…)."""
        codes = {"ArrowDown": 40, "ArrowUp": 38, "Escape": 27, "Enter": 13}
        code = codes.get(key, ord(key.upper()) if len(key) == 1 else 0)
        down: dict[str, Any] = {"type": "keyDown", "key": key, "windowsVirtualKeyCode": code}
        if len(key) == 1:
            down["text"] = key
        self.call("Input.dispatchKeyEvent", down)
        self.call(
            "Input.dispatchKeyEvent", {"type": "keyUp", "key": key, "windowsVirtualKeyCode": code}
        )

    def type(self, selector: str, text: str) -> None:
        """Focus a field and type ``text`` into it, as the keyboard would."""
        self.click(selector)
        self.call("Input.insertText", {"text": text})

    def visible(self, selector: str) -> list[str]:
        """The text of every element matching ``selector`` that is rendered (not hidden)."""
        found: list[str] = self.js(
            f"Array.prototype.filter.call(document.querySelectorAll({json.dumps(selector)}),"
            " function (n) { return n.checkVisibility(); })"
            ".map(function (n) { return n.textContent; })"
        )
        return found

    def screenshot(self, path: Path) -> Path:
        """A PNG of the viewport, written to ``path``."""
        shot = self.call("Page.captureScreenshot", {"format": "png"})
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
