"""The records a run asked, read back from its ``input_dataset.json`` for the item view.

``input_dataset.json`` is one JSON document that can weigh 50 MB; :func:`iter_json_records`
streams its ``records`` array one element at a time. A run of more than 10,000 records
lists them by reference only (``mode: reference``): the records are then read again from the
dataset files the run names, when they are still there with the same SHA-256, and otherwise
the page says why it cannot show the questions. Nothing here raises on a bad file: the
report is still written, without questions, and says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pytest_legaleval.errors import InvalidValue, LegalEvalError
from pytest_legaleval.metrics.artifacts import INPUT_DATASET
from pytest_legaleval.report.texts import text

__all__ = ["InputRecords", "RecordTexts", "iter_json_records", "record_texts"]

_CHUNK = 1 << 20
_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\r\n"


class _Stream:
    """A JSON text read a chunk at a time, decoded one value at a time."""

    def __init__(self, handle: TextIO, chunk: int) -> None:
        self._handle = handle
        self._chunk = chunk
        self._buf = ""
        self._pos = 0
        self._eof = False

    def _fill(self, size: int = 0) -> bool:
        if self._eof:
            return False
        more = self._handle.read(size or self._chunk)
        if not more:
            self._eof = True
            return False
        self._buf = self._buf[self._pos :] + more
        self._pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not whitespace (empty at the end), not consumed."""
        while True:
            while self._pos < len(self._buf) and self._buf[self._pos] in _WHITESPACE:
                self._pos += 1
            if self._pos < len(self._buf) or not self._fill():
                return self._buf[self._pos : self._pos + 1]

    def take(self, expected: str) -> None:
        """Consume ``expected`` (a structural character) or raise ``ValueError``."""
        found = self.peek()
        if found != expected:
            raise InvalidValue(f"expected {expected!r}, found {found or 'the end'!r}")
        self._pos += 1

    def value(self) -> Any:
        """The next JSON value, read on until it is whole (a large record takes chunks)."""
        self.peek()
        size = self._chunk
        while True:
            try:
                found, end = _DECODER.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError:
                if not self._fill(size):
                    raise
                size *= 2  # a value larger than the buffer: read on geometrically
                continue
            # A number that ends the buffer may go on in the next chunk.
            if end < len(self._buf) or self._eof:
                self._pos = end
                return found
            if not self._fill(size):
                self._pos = end
                return found


def iter_json_records(path: Path, head: dict[str, Any], chunk: int = _CHUNK) -> Iterator[Any]:
    """The elements of the top-level ``records`` array of the JSON object in ``path``.

    The object's other members are put into ``head`` as they are read.

    Raises:
        OSError: the file cannot be read.
        ValueError: the file is not a JSON object (``json.JSONDecodeError`` is one).

    """
    with path.open(encoding="utf-8") as handle:
        stream = _Stream(handle, chunk)
        stream.take("{")
        while stream.peek() != "}":
            key = stream.value()
            stream.take(":")
            if key == "records" and stream.peek() == "[":
                stream.take("[")
                while stream.peek() != "]":
                    yield stream.value()
                    if stream.peek() == ",":
                        stream.take(",")
                stream.take("]")
            else:
                head[str(key)] = stream.value()
            if stream.peek() == ",":
                stream.take(",")
        stream.take("}")


@dataclass
class InputRecords:
    """The payloads of a run's records: ``(dataset, record_id, payload)`` when iterated.

    ``note`` says, after an iteration, why some or all questions cannot be shown (empty
    when every record was found).
    """

    run_path: Path
    note: str = ""
    _missing: int = field(default=0, repr=False)

    def __iter__(self) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
        """Every record with a payload, in the file's order (read again on each call)."""
        self.note, self._missing = "", 0
        path = self.run_path / INPUT_DATASET
        if not path.is_file():
            self.note = f"{INPUT_DATASET} is not in the run directory"
            return
        head: dict[str, Any] = {}
        try:
            for entry in iter_json_records(path, head):
                payload = entry.get("payload") if isinstance(entry, Mapping) else None
                if isinstance(payload, Mapping):
                    yield (
                        text(entry.get("dataset_id", payload.get("dataset"))),
                        text(entry.get("record_id", payload.get("id"))),
                        payload,
                    )
                else:
                    self._missing += 1
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            self.note = f"{INPUT_DATASET} cannot be read ({exc}); questions are missing"
            return
        if self._missing:
            yield from self._from_datasets(head)

    def _from_datasets(self, head: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
        """The records of a run that lists them by reference, from its dataset files."""
        from pytest_legaleval.formats import DatasetStream
        from pytest_legaleval.records import Record
        from pytest_legaleval.run.artifacts import record_payload
        from pytest_legaleval.run.directory import file_sha256

        notes = []
        for info in head.get("datasets") or []:
            if not isinstance(info, Mapping):
                continue
            where, fmt = Path(text(info.get("path"))), text(info.get("format")) or "auto"
            try:
                if file_sha256(where) != info.get("sha256"):
                    notes.append(f"{where} changed since the run (its SHA-256 differs)")
                    continue
                for entry in DatasetStream([where], fmt):
                    if isinstance(entry, Record):
                        yield entry.dataset, entry.id, record_payload(entry)
            except (OSError, LegalEvalError, ValueError) as exc:
                notes.append(f"{where} cannot be read ({exc})")
        read = f"{INPUT_DATASET} lists its records by reference; "
        self.note = read + "; ".join(notes) + "; those questions are missing" if notes else ""


@dataclass(frozen=True, slots=True)
class RecordTexts:
    """What the item view shows of a record (full texts; the page cuts them)."""

    task_type: str
    prompt: str
    context: str
    messages: list[tuple[str, str]]
    """``(role, content)`` of each conversation turn before the prompt."""
    choices: list[tuple[str, str]]
    """``(id, text)`` of each choice."""
    gold: list[str]
    """The correct choices' ids."""
    references: list[str]
    rubric: list[tuple[str, str, float | None]]
    """``(id, title, weight)`` of each rubric criterion."""
    criteria: list[str]
    """The required criteria (``criteria`` records)."""
    attachments: list[str]
    """Each attachment's title or path."""

    def free_texts(self) -> Iterator[str]:
        """The texts previews cut (not the rubric's titles: they have a class of their own)."""
        yield self.prompt
        yield self.context
        for _, content in self.messages:
            yield content
        for _, choice in self.choices:
            yield choice
        yield from self.references
        yield from self.criteria


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def _weight(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def record_texts(payload: Mapping[str, Any]) -> RecordTexts:
    """The texts of a record payload (the canonical record as ``input_dataset.json`` has it)."""
    messages = [
        (text(m.get("role")), text(m.get("content")))
        for m in _list(payload.get("messages"))
        if isinstance(m, Mapping)
    ]
    choices = [
        (text(c.get("id")), text(c.get("text")))
        for c in _list(payload.get("choices"))
        if isinstance(c, Mapping)
    ]
    rubric = [
        (text(c.get("id")), text(c.get("title")), _weight(c.get("weight")))
        for c in _list(payload.get("rubric"))
        if isinstance(c, Mapping)
    ]
    attachments = [
        text(a.get("title") or a.get("path")) if isinstance(a, Mapping) else text(a)
        for a in _list(payload.get("attachments"))
    ]
    criteria = [
        text(c.get("title") or c.get("text")) if isinstance(c, Mapping) else text(c)
        for c in _list(payload.get("required_criteria"))
    ]
    return RecordTexts(
        task_type=text(payload.get("task_type")),
        prompt=text(payload.get("prompt")),
        context=text(payload.get("context")),
        messages=messages,
        choices=choices,
        gold=[text(g) for g in _list(payload.get("correct_choice_ids"))],
        references=[text(r) for r in _list(payload.get("reference_answers"))],
        rubric=rubric,
        criteria=criteria,
        attachments=attachments,
    )
