"""The write-once run directory: exclusive creation, appended JSONL, atomic JSON."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import IO, Any

from pytest_legaleval.errors import ConfigError

__all__ = ["RunDirectory", "dump_json_line"]


def dump_json_line(obj: Any) -> str:
    """One compact JSON line (UTF-8 text kept as is)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


class RunDirectory:
    """``<run-dir>/<run_id>/``: created exclusively, never overwritten.

    JSONL files are appended one flushed line per result, so a crash keeps what finished;
    JSON files are written to a temporary file and renamed into place.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handles: dict[str, IO[str]] = {}

    @classmethod
    def create(cls, root: str | Path, run_id: str) -> RunDirectory:
        """Create the directory; an existing run id is an error, never reused."""
        base = Path(root)
        base.mkdir(parents=True, exist_ok=True)
        path = base / run_id
        try:
            path.mkdir()
        except FileExistsError:
            raise ConfigError(
                f"run directory {path} already exists; runs are write-once — "
                "choose another --run-id or omit it"
            ) from None
        return cls(path)

    def append(self, name: str, obj: Any) -> None:
        """Append one JSON line to ``name`` and flush it to the OS."""
        handle = self._handles.get(name)
        if handle is None:
            handle = (self.path / name).open("a", encoding="utf-8")
            self._handles[name] = handle
        handle.write(dump_json_line(obj))
        handle.flush()

    def touch(self, name: str) -> None:
        """Make sure a JSONL file exists even when it gets no line."""
        if name not in self._handles:
            self._handles[name] = (self.path / name).open("a", encoding="utf-8")

    def write_json(self, name: str, obj: Any) -> None:
        """Write ``name`` atomically (temp file in the same directory, then rename)."""
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=self.path)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(obj, handle, ensure_ascii=False, indent=2, sort_keys=False)
                handle.write("\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def close(self) -> None:
        """Flush and close the JSONL files."""
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()
