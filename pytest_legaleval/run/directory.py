"""The write-once run directory: exclusive creation, appended JSONL, atomic JSON, checksums.

Every byte an artifact gets passes through :meth:`RunDirectory._prepare`, the one place where
redaction is applied. Every artifact is standard JSON: a ``NaN`` or infinity that reaches
a writer (a grader's own score, a hostile shard being merged) is written as ``null`` with a
:class:`~pytest_legaleval.errors.NonFiniteWarning` naming the file and the field — the
line is never lost, and no strict parser ever meets a ``NaN`` token.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from pytest_legaleval.errors import ConfigError, NonFiniteWarning
from pytest_legaleval.run.names import CHECKSUMS
from pytest_legaleval.util.strict_json import without_non_finite

__all__ = [
    "CHECKSUMS",
    "RunDirectory",
    "dump_json_line",
    "file_sha256",
    "finite_dump",
    "verify_checksums",
]


_READ_ONLY = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
FLUSH_INTERVAL_S = 0.2
"""The longest a written JSONL line stays in the process's buffer."""


def dump_json_line(obj: Any) -> str:
    """One compact JSON line (UTF-8 text kept as is).

    Raises:
        ValueError: ``obj`` holds a ``NaN`` or an infinity (standard JSON has none).

    """
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"


def _dump_item(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False)


def _dump_document(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def finite_dump(name: str, obj: Any, dump: Callable[[Any], str]) -> tuple[str, Any]:
    """``dump(obj)`` and the object dumped; non-finite numbers become ``null`` with a warning.

    ``dump`` must refuse non-finite numbers (``allow_nan=False``). Only the values that are
    not finite change; the caller still writes its line.
    """
    try:
        return dump(obj), obj
    except ValueError:
        cleaned, paths = without_non_finite(obj)
        if not paths:
            raise
    text = dump(cleaned)
    message = (
        f"{name}: a non-finite number (NaN or infinity) at {', '.join(paths)} was written as "
        "null; standard JSON has none"
    )
    try:
        warnings.warn(NonFiniteWarning(message), stacklevel=3)
    except NonFiniteWarning:
        # A filter that turns warnings into errors (-W error) must not cost the run the
        # rest of its lines: the null is written either way.
        pass
    return text, cleaned


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, read a block at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_checksums(path: str | Path) -> list[str]:
    """Names whose content no longer matches ``SHA256SUMS`` (missing files included)."""
    root = Path(path)
    bad = []
    for line in (root / CHECKSUMS).read_text(encoding="utf-8").splitlines():
        digest, _, name = line.partition("  ")
        target = root / name
        if not target.is_file() or file_sha256(target) != digest:
            bad.append(name)
    return bad


class RunDirectory:
    """``<run-dir>/<run_id>/``: created exclusively, never overwritten.

    JSONL files are appended line by line and handed to the OS within
    :data:`FLUSH_INTERVAL_S` of being written (and whenever a JSON file is written, and at
    the end), so a crash keeps all but the last fraction of a second — an item whose line
    was lost is evaluated again from the response cache, never paid twice; a line per
    system call cost more than the rest of writing it. The deadline holds while the run
    waits: a timer flushes the lines of a run that writes nothing more (one stuck on a slow
    call), not the next append. JSON files are written to a temporary file and renamed into
    place. ``finalize`` writes ``SHA256SUMS`` and makes every file read-only.
    """

    def __init__(self, path: Path, redact: Callable[[Any], Any] | None = None) -> None:
        self.path = path
        self._redact = redact
        self._handles: dict[str, IO[str]] = {}
        self._finalized = False
        # The handles are written by the caller's thread and flushed by a timer's: one lock.
        # Re-entrant, as a signal handler may flush between two statements of an append.
        self._lock = threading.RLock()
        self._timer: threading.Timer | None = None
        self._flush_error: OSError | None = None

    @classmethod
    def create(
        cls, root: str | Path, run_id: str, redact: Callable[[Any], Any] | None = None
    ) -> RunDirectory:
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
        return cls(path, redact)

    def _prepare(self, obj: Any) -> Any:
        """The single choke point: everything persisted is redacted here first."""
        if self._finalized:
            raise RuntimeError(f"{self.path} is finalized; artifacts are write-once")
        return self._redact(obj) if self._redact is not None else obj

    def _serialize(self, name: str, obj: Any, dump: Callable[[Any], str]) -> str:
        """``dump(obj)``, redacted: a line the redactor can clear from its text is kept."""
        if self._finalized:
            raise RuntimeError(f"{self.path} is finalized; artifacts are write-once")
        text, obj = finite_dump(name, obj, dump)
        clean = getattr(self._redact, "clean_json", None)
        if self._redact is None or (clean is not None and clean(text)):
            return text
        redacted = self._redact(obj)
        return text if redacted is obj else dump(redacted)

    def append(self, name: str, obj: Any, *, flush: bool = True) -> None:
        """Append one JSON line to ``name``.

        The lines reach the OS within :data:`FLUSH_INTERVAL_S`; ``flush=False`` leaves them
        buffered, for a batch that ends with :meth:`flush`.
        """
        line = self._serialize(name, obj, dump_json_line)
        with self._lock:
            self._raise_flush_error()
            handle = self._handles.get(name)
            if handle is None:
                handle = (self.path / name).open("a", encoding="utf-8")
                self._handles[name] = handle
            handle.write(line)
            if flush and self._timer is None:
                timer = threading.Timer(FLUSH_INTERVAL_S, self._flush_due)
                timer.daemon = True
                self._timer = timer
                timer.start()

    def _flush_due(self) -> None:
        """The timer's flush; its error is raised by the next append or flush."""
        with self._lock:
            self._timer = None
            try:
                for handle in self._handles.values():
                    handle.flush()
            except OSError as exc:  # disk full: the caller learns it on its next write
                self._flush_error = exc

    def _raise_flush_error(self) -> None:
        error, self._flush_error = self._flush_error, None
        if error is not None:
            raise error

    def flush(self) -> None:
        """Flush every JSONL file to the OS."""
        with self._lock:
            self._raise_flush_error()
            for handle in self._handles.values():
                handle.flush()

    def touch(self, name: str) -> None:
        """Make sure a JSONL file exists even when it gets no line."""
        with self._lock:
            if name not in self._handles:
                self._handles[name] = (self.path / name).open("a", encoding="utf-8")

    def _atomic(self, name: str, write: Callable[[IO[str]], None]) -> None:
        if self._finalized:
            raise RuntimeError(f"{self.path} is finalized; artifacts are write-once")
        self.flush()  # a JSON file (the manifest's state) never runs ahead of the lines
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=self.path)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                write(handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def write_json(self, name: str, obj: Any) -> None:
        """Write ``name`` atomically (temp file in the same directory, then rename)."""
        text, _ = finite_dump(name, self._prepare(obj), _dump_document)

        def write(handle: IO[str]) -> None:
            handle.write(text)

        self._atomic(name, write)

    def write_json_stream(
        self, name: str, head: dict[str, Any], key: str, items: Iterable[Any]
    ) -> None:
        """Write ``{**head, key: [items…]}`` atomically, one item at a time (large arrays)."""
        prepared_head = self._prepare(head)
        opening, prepared_head = finite_dump(name, prepared_head, _dump_document)
        opening = opening.rstrip("\n")

        def write(handle: IO[str]) -> None:
            handle.write(opening[:-2] if prepared_head else "{")
            handle.write(",\n" if prepared_head else "\n")
            handle.write(f"  {json.dumps(key)}: [")
            first = True
            for item in items:
                handle.write("\n    " if first else ",\n    ")
                handle.write(self._serialize(name, item, _dump_item))
                first = False
            handle.write("\n  ]\n}\n" if not first else "]\n}\n")

        self._atomic(name, write)

    def close(self) -> None:
        """Flush and close the JSONL files."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            try:
                self._raise_flush_error()
            finally:
                for handle in self._handles.values():
                    handle.close()
                self._handles.clear()

    def finalize(self) -> None:
        """Close, write ``SHA256SUMS`` over every file, and make all of them read-only."""
        self.close()
        names = sorted(
            p.name for p in self.path.iterdir() if p.is_file() and not p.name.startswith(".")
        )
        sums = "".join(f"{file_sha256(self.path / n)}  {n}\n" for n in names if n != CHECKSUMS)

        def write(handle: IO[str]) -> None:
            handle.write(sums)

        self._atomic(CHECKSUMS, write)
        self._finalized = True
        for name in (*names, CHECKSUMS):
            target = self.path / name
            if target.is_file():
                target.chmod(_READ_ONLY)
