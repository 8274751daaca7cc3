"""What every importer shares: the row type it yields, its options and small helpers.

An importer turns the files of one public benchmark, in their upstream layout, into
``legal_eval_v1`` records. It never writes anything: it yields one :class:`SourceRow` per
upstream row (or per question × variant, where one upstream row holds several), each with
either the record or the reason it could not be built, and the shared writer
(:mod:`pytest_legaleval.importers.writer`) validates, counts and writes them.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError, LegalEvalError
from pytest_legaleval.importers.limits import UnreadRow

__all__ = [
    "ImportOptions",
    "Importer",
    "RowError",
    "SourceRow",
    "choice_id",
    "expand_files",
    "literal_list",
    "new_record",
    "number",
    "short_hash",
    "text",
]

SCHEMA_VERSION = "legal_eval_v1"
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class RowError(LegalEvalError, ValueError):
    """One source row that cannot become a record; the message names the field or says why.

    Raised by the benchmark importers and by conversion mappings (``importers.mapping``
    re-exports it): either way the row is counted as failed and the rest are read.
    """


@dataclass(frozen=True)
class ImportOptions:
    """What ``legaleval import`` passes to every importer.

    Attributes:
        split: only rows of this split (``test``, ``train``, ``dev`` ...); ``None`` for all.
        few_shot: LegalBench: demonstrations from ``train.tsv`` put before a test question.
        seed: the seed of every random draw (sampling, few-shot demonstrations).
        protocol: legalbench, lexam: the protocol the records get (``importers.protocols``);
            ``None``: the benchmark's official one.

    """

    split: str | None = None
    few_shot: int = 0
    seed: int | None = None
    protocol: str | None = None


@dataclass(frozen=True)
class SourceRow:
    """One unit of upstream data and what became of it.

    Attributes:
        where: where it came from, for messages (``"MCQs_test.xlsx row 12"``).
        split: its split, when the layout says (``None`` when it does not).
        record: the ``legal_eval_v1`` record (not yet validated), or ``None``.
        error: why no record could be built, or ``None``.
        skip: why there is nothing to build (a task folder without data), or ``None``;
            counted as skipped under this reason.

    """

    where: str
    split: str | None
    record: dict[str, Any] | None = None
    error: str | None = None
    skip: str | None = None

    @classmethod
    def built(
        cls, where: str, split: str | None, build: Callable[..., dict[str, Any]], *args: Any
    ) -> SourceRow:
        """The record ``build(*args)`` makes, or the reason its :class:`RowError` gives.

        A row the reader could not hold (an :class:`~.limits.UnreadRow` among ``args``)
        fails with the reader's reason, without calling ``build``.
        """
        unread = next((arg for arg in args if isinstance(arg, UnreadRow)), None)
        if unread is not None:
            return cls(where, split, error=unread.reason)
        try:
            return cls(where, split, record=build(*args))
        except RowError as exc:
            return cls(where, split, error=str(exc))


@dataclass(frozen=True)
class Importer:
    """One source: how to find its files and how to turn them into rows.

    Attributes:
        name: the ``SOURCE`` of ``legaleval import SOURCE`` and of ``--dataset SOURCE:PATH``.
        what: what is imported, one line (for ``--help`` and the README table).
        version: bumped when the records an importer writes change; part of the cache key.
        files: the upstream files the paths name, in reading order (the cache hashes them).
        rows: every row of those files, in order.
        names_files: its records name files (attachments) by paths relative to the source
            folder; the import cache then keys an import by that folder too, since the same
            rows in another folder name other files.

    """

    name: str
    what: str
    version: int
    files: Callable[[Sequence[Path]], list[Path]]
    rows: Callable[[Sequence[Path], ImportOptions], Iterator[SourceRow]]
    names_files: bool = False


def expand_files(paths: Sequence[Path], suffixes: Iterable[str], what: str) -> list[Path]:
    """The files of ``paths``: files as given, directories searched recursively, by name.

    Raises:
        ConfigError: a path that does not exist, or nothing with one of ``suffixes``.

    """
    wanted = tuple(s.lower() for s in suffixes)
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                sorted(
                    child
                    for child in path.rglob("*")
                    if child.is_file()
                    and child.suffix.lower() in wanted
                    and not any(part.startswith(".") for part in child.relative_to(path).parts)
                )
            )
        elif path.is_file():
            found.append(path)
        else:
            raise ConfigError(f"{path}: no such file or directory")
    if not found:
        names = ", ".join(str(p) for p in paths)
        raise ConfigError(f"no {what} file ({', '.join(wanted)}) in {names}")
    unique: dict[Path, Path] = {}
    for file in found:
        unique.setdefault(file.resolve(), file)
    return list(unique.values())


def choice_id(index: int) -> str:
    """The id of the choice at ``index``: ``A`` to ``Z``, then ``CHOICE_26``, ``CHOICE_27``.

    The ids past ``Z`` are those of LBR's merged set (LEXam's 32-option questions).
    """
    return _LETTERS[index] if 0 <= index < len(_LETTERS) else f"CHOICE_{index}"


def text(value: object) -> str:
    """A cell as text: ``None`` is ``""``, a whole float ``2.0`` is ``"2"``."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def number(value: object, field: str) -> int:
    """A whole number from a cell (``2``, ``2.0``, ``"2"``).

    Raises:
        RowError: anything else.

    """
    if isinstance(value, bool):
        raise RowError(f"{field} is {value!r}, not a whole number")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip():
        try:
            parsed = float(value.strip())
        except ValueError:
            parsed = None
        if parsed is not None and parsed.is_integer():
            return int(parsed)
    raise RowError(f"{field} is {text(value)[:40]!r}, not a whole number")


def literal_list(value: object, field: str) -> list[Any]:
    """A list cell: a list already, or its JSON or Python-literal text (``"['a', 'b']"``).

    Raises:
        RowError: empty, or not a list.

    """
    if isinstance(value, list | tuple):
        return list(value)
    if hasattr(value, "tolist"):  # a NumPy array from a Parquet reader
        converted = value.tolist()
        if isinstance(converted, list):
            return converted
    if isinstance(value, str) and value.strip():
        raw = value.strip()
        for parse in (json.loads, ast.literal_eval):
            try:
                parsed = parse(raw)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(parsed, list | tuple):
                return list(parsed)
        raise RowError(f"{field} is not a list literal: {raw[:60]!r}")
    raise RowError(f"{field} is {'empty' if not text(value) else 'not a list'}")


def short_hash(value: str, length: int = 16) -> str:
    """A stable hexadecimal digest of ``value`` (SHA-256, first ``length`` digits)."""
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def new_record(
    record_id: str,
    dataset: str,
    task_type: str,
    prompt: str,
    *,
    context: str = "",
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The top-level fields of a record, in the order LBR writes them."""
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "id": record_id,
        "dataset": dataset,
        "task_type": task_type,
        "prompt": prompt,
    }
    if context:
        record["context"] = context
    if metadata:
        record["metadata"] = dict(metadata)
    return record
