"""Checking a run directory before anything trusts it: checksums, then every line.

A run directory read back (``--baseline``, ``report``, ``compare``, ``audit``, ``merge``,
``plan``, the service) may be corrupt or tampered with. Everything here turns a problem
into one :class:`RunDirectoryError` (a ``ConfigError``: a usage error, exit 4 under pytest
and 2 for ``legaleval`` commands) that names the file and line, before any model call:

* ``SHA256SUMS`` (when the run was sealed) must match every file it lists that is still
  there (retention deletes raw artifacts and keeps their lines), and every known artifact
  present must be listed — an edit after sealing is refused, naming the file;
* :func:`verify_run_dir` reads every known artifact once, so a bad line anywhere refuses
  the run, not only in the files a command happens to read;
* every line is strict UTF-8 JSON, an object, nested at most :data:`MAX_DEPTH` deep, every
  number finite and within :data:`MAX_NUMBER` (``1e999`` is refused; the ``NaN`` and
  ``Infinity`` tokens that runs written before every artifact was standard JSON hold are
  read as ``null`` with a ``NonFiniteWarning``, so such runs stay readable);
* every field of a prediction line has the type ``records.PredictionLine`` declares (ids
  and models strings, ``epoch`` a non-negative integer, ``passed`` a boolean, ``score``
  and token counts numbers, ``tags`` a list of strings, ``details`` an object …):
  :func:`prediction_lines` is the one place a line read back becomes a typed
  ``PredictionLine``, and the metrics and gates take nothing else.

A run without ``SHA256SUMS`` (crashed before sealing, or older) is checked line by line
only; ``input_dataset.json``, as large as the dataset, is hashed but left to the report's
streaming reader. The checksums are not signed: they catch an edit after sealing, not a
forger who rewrites ``SHA256SUMS`` too.

The artifact table (:mod:`~pytest_legaleval.metrics._artifacts`, registered rows included)
says which files are known, and every reader of run directories goes through it
(``metrics._runfiles``).
"""

from __future__ import annotations

import hashlib
import json
import math
import types
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final, Union, cast, get_args, get_origin, get_type_hints

from pytest_legaleval.errors import ConfigError, NonFiniteWarning
from pytest_legaleval.metrics._artifacts import CHECKSUMS, INPUT_DATASET, PREDICTIONS, artifacts
from pytest_legaleval.records import PredictionLine

__all__ = [
    "CHECKSUMS",
    "MAX_DEPTH",
    "MAX_LINE_BYTES",
    "MAX_NUMBER",
    "RunDirectoryError",
    "as_prediction_line",
    "checked_json",
    "checked_lines",
    "prediction_lines",
    "verify_run_dir",
]

MAX_DEPTH: Final = 64
"""Deepest nesting accepted in a line (our own lines are a handful of levels deep)."""
MAX_NUMBER: Final = 2.0**63
"""Largest magnitude of any number in a run file (seeds and nanosecond clocks fit)."""
MAX_LINE_BYTES: Final = 256 * 1024 * 1024
"""Longest line read (a reply is bounded far below this by ``engine.bounded``)."""

_STREAMED: Final = frozenset({INPUT_DATASET})
"""JSON files as large as the dataset: hashed here, read by their streaming reader
(``report``), which tolerates a cut record, and never parsed whole."""
_TYPED: Final = frozenset({PREDICTIONS})
_EXTRA_NUMBERS: Final = ("cost_usd",)
"""Numbers some readers sum that ``PredictionLine`` does not declare (older lines)."""


class RunDirectoryError(ConfigError):
    """A run directory that cannot be trusted: corrupt, tampered with, or not one."""


def _file_digest(path: Path) -> Any:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise RunDirectoryError(f"{path}: unreadable ({exc.strerror or exc})") from None
    return digest


def _sha256(path: Path) -> str:
    return str(_file_digest(path).hexdigest())


def _read_sums(sums_path: Path) -> dict[str, str]:
    try:
        text = sums_path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RunDirectoryError(f"{sums_path}: unreadable ({exc})") from None
    listed: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        digest, sep, name = line.partition("  ")
        name = name.lstrip("*")
        valid = len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)
        if not sep or not valid or not name or "/" in name or name in (".", ".."):
            raise RunDirectoryError(f"{sums_path}:{number}: not a sha256sum line")
        listed[name] = digest
    return listed


def verify_run_dir(root: str | Path) -> bool:
    """Check all of ``root`` before anything of it is used; whether it was sealed.

    Every known artifact present is read once: its bytes against ``SHA256SUMS`` (when the
    run was sealed) and every line checked (:func:`checked_lines`, :func:`checked_json`),
    so a corrupt line in a file the caller never reads still refuses the run. A run without
    ``SHA256SUMS`` (one that crashed before sealing, or older) is checked line by line only:
    ``False``.

    Raises:
        RunDirectoryError: a file that differs from its checksum, a known artifact the
            checksums do not list, an unreadable ``SHA256SUMS``, or any bad line.

    """
    base = Path(root)
    sums_path = base / CHECKSUMS
    sealed = sums_path.is_file()
    listed = _read_sums(sums_path) if sealed else {}
    # Every row of the table, registered ones too: a sealed run must list each one present.
    known = {row.name for row in artifacts()}
    for name in sorted(known):
        target = base / name
        if not target.is_file():
            continue
        if sealed and name not in listed:
            raise RunDirectoryError(
                f"{target}: not listed in {CHECKSUMS} (added after the run was sealed); "
                "refusing to read the run"
            )
        digest = hashlib.sha256()
        if name.endswith(".jsonl"):
            for _ in _lines(target, digest):
                pass
        elif name in _STREAMED:
            digest = _file_digest(target)
        else:
            raw = _read(target)
            digest.update(raw)
            _parse(raw, str(target))
        if sealed and digest.hexdigest() != listed[name]:
            raise RunDirectoryError(
                f"{target}: does not match {CHECKSUMS} (changed after the run was sealed); "
                "refusing to read the run"
            )
    for name, expected in listed.items():
        target = base / name
        if name not in known and target.is_file() and _sha256(target) != expected:
            raise RunDirectoryError(
                f"{target}: does not match {CHECKSUMS} (changed after the run was sealed); "
                "refusing to read the run"
            )
    return sealed


class _Constants:
    """Counts the ``NaN``/``Infinity`` tokens the decoder met (read as ``null``)."""

    seen = 0

    @classmethod
    def read(cls, name: str) -> None:
        cls.seen += 1
        return None


_DECODER: Final = json.JSONDecoder(parse_constant=_Constants.read)
"""One decoder for every line (``json.loads`` with a keyword builds one per call)."""


def _check_value(value: Any, where: str) -> None:
    """Nesting depth and numbers of one parsed value (iterative: no recursion limit)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > MAX_DEPTH:
                raise RunDirectoryError(f"{where}: nested more than {MAX_DEPTH} levels deep")
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            if depth > MAX_DEPTH:
                raise RunDirectoryError(f"{where}: nested more than {MAX_DEPTH} levels deep")
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, float):
            if not math.isfinite(item) or abs(item) > MAX_NUMBER:
                raise RunDirectoryError(f"{where}: a number out of range ({item!r})")
        elif isinstance(item, int) and not isinstance(item, bool):
            if item.bit_length() > 63:
                raise RunDirectoryError(
                    f"{where}: a number out of range (an integer of {item.bit_length()} bits)"
                )


def _kinds(hint: Any) -> tuple[type, ...]:
    """The Python types a JSON value of a declared field may have."""
    if get_origin(hint) in (Union, types.UnionType):
        return tuple(kind for arg in get_args(hint) for kind in _kinds(arg))
    if hint is type(None):
        return (type(None),)
    if hint is float:  # JSON has one number type: an integral score reads as an int
        return (int, float)
    origin = get_origin(hint)
    return (origin if isinstance(origin, type) else hint,)


def _element(hint: Any) -> type | None:
    """The element type of a ``list[str]`` or ``list[dict[...]]`` field, else ``None``."""
    for arg in (hint, *get_args(hint)):
        if get_origin(arg) is list:
            (item,) = get_args(arg)
            kind = get_origin(item) or item
            return kind if isinstance(kind, type) else None
    return None


def _describe(kinds: tuple[type, ...]) -> str:
    words = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
             list: "a list", dict: "an object"}  # fmt: skip
    if float in kinds:
        kinds = tuple(k for k in kinds if k is not int)
    named = [words.get(k, k.__name__) for k in kinds if k is not type(None)]
    return " or ".join(named) + (" or null" if type(None) in kinds else "")


_FIELDS: Final = {
    name: (_kinds(hint), _element(hint)) for name, hint in get_type_hints(PredictionLine).items()
}
"""Every declared field of a prediction line: its accepted types and its list's element type."""


def _check_fields(row: Mapping[str, Any], where: str) -> None:
    """Every declared field of a prediction line that is present has its declared type.

    Two readings older runs rely on are kept: a boolean counts as 0/1 where a number is
    expected, and ``passed`` may be written 0 or 1.
    """
    for name, value in row.items():
        spec = _FIELDS.get(name)
        if spec is None:
            continue
        kinds, element = spec
        if name == "passed":
            if value is not None and value not in (True, False):
                raise RunDirectoryError(f"{where}: passed must be true, false or null")
        elif name == "epoch":
            if type(value) is not int or value < 0:
                raise RunDirectoryError(
                    f"{where}: epoch must be a non-negative integer, got {value!r}"
                )
        elif not isinstance(value, kinds):
            raise RunDirectoryError(f"{where}: {name} must be {_describe(kinds)}")
        elif element is not None and isinstance(value, list):
            if not all(isinstance(item, element) for item in value):
                each = _describe((element,))
                raise RunDirectoryError(f"{where}: {name} must be a list, each item {each}")
    for name in _EXTRA_NUMBERS:
        value = row.get(name)
        if value is not None and not isinstance(value, int | float):
            raise RunDirectoryError(f"{where}: {name} must be a number")


def as_prediction_line(row: Mapping[str, Any], where: str = "prediction line") -> PredictionLine:
    """``row`` as a typed ``PredictionLine``, once its fields are checked.

    The one conversion of a parsed line into the type the metrics and gates take; every
    key it declares that the row holds has its declared type, so the cast states a fact.

    Raises:
        RunDirectoryError: a field of the wrong type (named, with ``where``).

    """
    _check_fields(row, where)
    return cast(PredictionLine, row)


def _parse(raw: bytes, where: str) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RunDirectoryError(f"{where}: not UTF-8 (byte {exc.start})") from None
    before = _Constants.seen
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        raise RunDirectoryError(f"{where}: nested too deeply") from None
    except ValueError as exc:
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise RunDirectoryError(f"{where}: not JSON ({message[:120]})") from None
    if _Constants.seen != before:
        # Runs written before every artifact was standard JSON hold these tokens: they stay
        # readable, the number read as null (never as a number), and the reader is told.
        warnings.warn(
            NonFiniteWarning(f"{where}: a NaN or Infinity token was read as null"),
            stacklevel=4,
        )
    _check_value(value, where)
    return value


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise RunDirectoryError(f"{path}: unreadable ({exc.strerror or exc})") from None


def checked_json(path: Path) -> Any:
    """The value of a JSON file of a run directory, checked; ``None`` when it is absent.

    Raises:
        RunDirectoryError: unreadable, not UTF-8 JSON, too deep, a number out of range.

    """
    if not path.is_file():
        return None
    return _parse(_read(path), str(path))


def checked_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The objects of a JSONL file of a run directory, each checked (absent: none).

    Raises:
        RunDirectoryError: a line that is not UTF-8 JSON, not an object, too deep, holds a
            number out of range or a field of the wrong type (named by file and line).

    """
    if not path.is_file():
        return iter(())
    return _lines(path, None)


def prediction_lines(path: Path) -> Iterator[PredictionLine]:
    """The lines of a ``predictions.jsonl`` file (whatever its name), checked and typed.

    Each line is checked as :func:`checked_lines` checks it, and every field
    ``PredictionLine`` declares has its type (:func:`as_prediction_line`): what the metrics
    and gates read. A missing file yields none.

    Raises:
        RunDirectoryError: a bad line, named by file and line.

    """
    if not path.is_file():
        return iter(())
    # Only a line whose fields were checked is yielded (typed=True), so the cast is a fact.
    return cast(Iterator[PredictionLine], _lines(path, None, typed=True))


def _lines(path: Path, digest: Any, *, typed: bool = False) -> Iterator[dict[str, Any]]:
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise RunDirectoryError(f"{path}: unreadable ({exc.strerror or exc})") from None
    # Prediction lines are ours alone; other files may quote a dataset's own (bad) values.
    typed = typed or path.name in _TYPED
    with handle:
        number = 0
        while True:
            raw = handle.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            if digest is not None:
                digest.update(raw)
            number += 1
            where = f"{path}:{number}"
            if len(raw) > MAX_LINE_BYTES:
                raise RunDirectoryError(f"{where}: a line longer than {MAX_LINE_BYTES} bytes")
            if not raw.strip():
                continue
            row = _parse(raw, where)
            if not isinstance(row, dict):
                raise RunDirectoryError(f"{where}: not a JSON object")
            if typed:
                _check_fields(row, where)
            yield row
