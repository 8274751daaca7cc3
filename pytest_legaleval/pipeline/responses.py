"""Pre-computed responses (``--responses FILE``): one JSONL row per (record, model, epoch).

Two row shapes are read: ours ``{"record_id", "response", "model"?, "epoch"?}`` (``epoch``
0-based, for ``--epochs K``; absent means 0) and the Legal
Benchmark Runner's prefilled rows ``{"example_id", "candidate_name", "response_text"}``.
Either may carry the call's ``usage`` (``prompt_tokens``/``completion_tokens``, or
``input_tokens``/``output_tokens``) and ``latency_s``, as LBR's ``responses.jsonl`` does:
they become the result's tokens and latency (:class:`Recorded`).

Rows are data, as endpoint replies are (``engine.sanitize``): a lone surrogate in a text
becomes U+FFFD (every output encodes UTF-8), an absurd token count or latency is dropped;
each leaves a warning on the row's result. NUL and control characters are kept, as in a
reply. A key repeated in a row is an error naming it (parsers disagree on which value
counts), and so is a ``NaN``, ``Infinity`` or ``1e999`` anywhere in a row (not standard
JSON; Python's own parser would read them). A ``.json`` file holding a JSON array is a
Turing answer file (``answers/<question-model>/<answer-model>.json``): each succeeded
entry's last attempt answers the benchmark record of its question, for the model
``answer_model``.

A file in which no row names a model answers for one unnamed model (labelled
``prefilled``, which a row may also name); a file that mixes rows with and without
``model`` is an error naming the lines (each unnamed row would become an item of a model
of its own).

Rows that match no record of the dataset are counted by :func:`match_responses`; the
pytest layer warns about them, and none matching at all is a usage error.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from pytest_legaleval.engine.sanitize import clean_text, token_count
from pytest_legaleval.errors import InvalidValue, LegalEvalWarning, ResponsesError
from pytest_legaleval.util import strict_json
from pytest_legaleval.validation.duplicates import (
    colon_count,
    find_duplicate_keys,
    may_have_duplicate_keys,
)

__all__ = [
    "DEFAULT_RESPONSE_MODEL",
    "Recorded",
    "ResponseMatch",
    "ResponseTable",
    "ResponsesWarning",
    "load_responses",
    "match_responses",
]

DEFAULT_RESPONSE_MODEL = "prefilled"
"""Model label of rows that name no model."""

_MAX_PROBLEMS_SHOWN = 20
_MAX_LATENCY_S = 7 * 24 * 3600.0
"""A latency above a week is not a call's."""
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class ResponsesWarning(LegalEvalWarning):
    """A responses file the run can use, with rows it cannot (issued by the pytest layer)."""


@dataclass(frozen=True, slots=True)
class Recorded:
    """What a row says about the call that produced its response."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float | None = None
    warnings: tuple[str, ...] = ()
    """What was repaired or dropped in the row (no row text is quoted)."""


Key = tuple[str, str, int]
"""``(record_id, model, epoch)``."""


@dataclass(frozen=True, slots=True)
class ResponseTable:
    """Responses keyed by ``(record_id, model, epoch)``; ``models`` in first-seen order."""

    path: str
    models: tuple[str, ...]
    responses: Mapping[Key, str]
    recorded: Mapping[Key, Recorded] = field(default_factory=dict)
    """Usage, latency and warnings of the rows that have any."""

    def __post_init__(self) -> None:
        # Read-only views (no copy): a run plan holds the table, and nothing may change it.
        object.__setattr__(self, "responses", MappingProxyType(self.responses))
        object.__setattr__(self, "recorded", MappingProxyType(self.recorded))

    def get(self, record_id: str, model: str, epoch: int = 0) -> str | None:
        """The response for one record, model and epoch, or ``None`` when the file has none."""
        return self.responses.get((record_id, model, epoch))

    def recorded_for(self, record_id: str, model: str, epoch: int = 0) -> Recorded | None:
        """The row's usage, latency and warnings, when it has any."""
        return self.recorded.get((record_id, model, epoch))

    @property
    def epochs(self) -> int:
        """One more than the highest epoch of any row (1 for a file without ``epoch``)."""
        return 1 + max((epoch for _, _, epoch in self.responses), default=0)

    def __len__(self) -> int:
        return len(self.responses)


@dataclass(frozen=True, slots=True)
class ResponseMatch:
    """How the rows of a responses file match the records of a dataset."""

    path: str
    rows: int
    matched: int
    unmatched: int
    examples: tuple[str, ...]
    """Up to five unmatched record ids (printable)."""
    dataset_examples: tuple[str, ...]
    """Up to three record ids of the dataset (printable), to compare with."""

    def warning(self) -> str | None:
        """The warning about unmatched rows, or ``None`` when every row matches."""
        if not self.unmatched or not self.matched:
            return None
        return (
            f"{self.unmatched} of {self.rows} rows of {self.path} match no record of the "
            f"dataset and are ignored (e.g. {', '.join(self.examples)})"
        )

    def check(self, flag: str = "--responses") -> None:
        """Raise when rows exist but none matches: the file is for another dataset.

        Raises:
            ResponsesError: no row matches a record.

        """
        if self.rows and not self.matched:
            raise ResponsesError(
                f"{flag} {self.path}: none of its {self.rows} rows matches a record of the "
                f"dataset (its record ids, e.g. {', '.join(self.examples)}; the dataset's, "
                f"e.g. {', '.join(self.dataset_examples) or '(none)'}): is it the file of "
                "another --dataset?"
            )


def match_responses(table: ResponseTable, record_ids: Iterable[str | None]) -> ResponseMatch:
    """Count the rows of ``table`` whose record id is one of ``record_ids`` (pure)."""
    known: set[str] = set()
    shown: list[str] = []
    for record_id in record_ids:
        if record_id is None:
            continue
        known.add(record_id)
        if len(shown) < 3:
            shown.append(_printable(record_id))
    unmatched = [rid for rid, _, _ in table.responses if rid not in known]
    examples = tuple(dict.fromkeys(_printable(rid) for rid in unmatched))[:5]
    return ResponseMatch(
        table.path,
        len(table.responses),
        len(table.responses) - len(unmatched),
        len(unmatched),
        examples,
        tuple(shown),
    )


def _printable(value: str) -> str:
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 60 else text[:57] + "..."


def _rows(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as handle:
        yield from enumerate(handle, start=1)


def _recorded(obj: Mapping[str, object], warnings: list[str]) -> Recorded | None:
    usage = obj.get("usage")
    input_tokens = output_tokens = None
    if isinstance(usage, Mapping):
        for name, target in (
            ("prompt_tokens", "in"),
            ("input_tokens", "in"),
            ("completion_tokens", "out"),
            ("output_tokens", "out"),
        ):
            if name in usage:
                value = token_count(usage[name], f"usage.{name}", warnings)
                if target == "in" and input_tokens is None:
                    input_tokens = value
                elif target == "out" and output_tokens is None:
                    output_tokens = value
    elif usage is not None:
        warnings.append(f"usage dropped: not an object ({type(usage).__name__})")
    elif "model_response" in obj:  # a predictions.jsonl line carries its own counts
        input_tokens = token_count(obj.get("input_tokens"), "input_tokens", warnings)
        output_tokens = token_count(obj.get("output_tokens"), "output_tokens", warnings)
    latency_ms = None
    recorded_ms = obj.get("latency_ms") if "model_response" in obj else None
    if isinstance(recorded_ms, int | float) and not isinstance(recorded_ms, bool):
        if math.isfinite(recorded_ms) and 0 <= recorded_ms <= _MAX_LATENCY_S * 1000:
            latency_ms = float(recorded_ms)
    latency = obj.get("latency_s")
    if latency is not None:
        if isinstance(latency, bool) or not isinstance(latency, int | float):
            warnings.append(f"latency_s dropped: not a number ({type(latency).__name__})")
        elif not (math.isfinite(latency) and 0 <= latency <= _MAX_LATENCY_S):
            warnings.append(f"latency_s dropped: not in [0, {_MAX_LATENCY_S:.0f}] s")
        else:
            latency_ms = float(latency) * 1000.0
    if input_tokens is None and output_tokens is None and latency_ms is None and not warnings:
        return None
    return Recorded(input_tokens, output_tokens, latency_ms, tuple(warnings))


def _clean(value: str, name: str, warnings: list[str]) -> str:
    text, repaired = clean_text(value)
    if repaired:
        warnings.append(f"{name}: {repaired} lone surrogate(s) replaced by U+FFFD")
    return text


_Row = tuple[str, str | None, int, str, Recorded | None]


def _epoch(obj: Mapping[str, object]) -> int:
    value = obj.get("epoch", 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 10_000:
        raise InvalidValue(f"epoch must be an integer in [0, 10000), got {_printable_value(value)}")
    return value


def _parse_row(obj: object) -> _Row | None:
    """The row's ``(record_id, model, epoch, response, recorded)``.

    ``model`` is ``None`` when the row names none; ``None`` for a prediction without answer.
    """
    if not isinstance(obj, dict):
        raise InvalidValue(f"expected a JSON object, got {type(obj).__name__}")
    if "model_response" in obj and "response" not in obj:
        # A line of a run's predictions.jsonl: its answer is the response (an item that
        # never got one has none to give).
        if obj["model_response"] is None:
            return None
        record_id, response, model = obj.get("record_id"), obj["model_response"], obj.get("model")
        names = ("record_id", "model_response", "model")
    elif "record_id" in obj or "response" in obj:
        record_id, response, model = obj.get("record_id"), obj.get("response"), obj.get("model")
        names = ("record_id", "response", "model")
    elif "example_id" in obj:
        record_id, response = obj.get("example_id"), obj.get("response_text")
        model = obj.get("candidate_name")
        names = ("example_id", "response_text", "candidate_name")
    else:
        raise InvalidValue("expected keys record_id and response (or example_id and response_text)")
    if not isinstance(record_id, str) or not record_id:
        raise InvalidValue(
            f"{names[0]} must be a non-empty string, got {_printable_value(record_id)}"
        )
    if not isinstance(response, str):
        raise InvalidValue(f"{names[1]} must be a string, got {type(response).__name__}")
    epoch = _epoch(obj)
    if model is not None and (not isinstance(model, str) or not model):
        raise InvalidValue(
            f"{names[2]} must be a non-empty string when present, got {_printable_value(model)}"
        )
    warnings: list[str] = []
    record_id = _clean(record_id, names[0], warnings)
    if model is not None:
        model = _clean(model, names[2], warnings)
    response = _clean(response, names[1], warnings)
    controls = len(_CONTROL.findall(response))
    if controls:
        warnings.append(f"{names[1]}: {controls} NUL/control character(s), kept as sent")
    return record_id, model, epoch, response, _recorded(obj, warnings)


def _printable_value(value: object) -> str:
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def _repeated_keys(text: str, obj: object) -> str | None:
    if not may_have_duplicate_keys(text, colon_count(obj)):
        return None
    found = find_duplicate_keys(text)
    if not found:
        return None
    return (
        f"{found[0].describe()}: JSON parsers disagree on which value counts, so give each key once"
    )


def _is_turing_answers(file: Path) -> bool:
    if file.suffix.lower() != ".json":
        return False
    with file.open("rb") as handle:
        return handle.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"[")


def _turing_answers(file: Path, path: str | Path, flag: str) -> ResponseTable:
    # A Turing answer file (answers/<question-model>/<answer-model>.json): a JSON array.
    from pytest_legaleval.errors import DatasetRejected
    from pytest_legaleval.formats.turing import load_turing_answers

    try:
        responses, problems = load_turing_answers(file)
    except DatasetRejected as exc:
        raise ResponsesError(f"{flag} {path}: {exc.message}") from None
    if problems:
        shown = "\n  ".join(problems[:_MAX_PROBLEMS_SHOWN])
        raise ResponsesError(f"{flag} {path}: {len(problems)} bad entries:\n  {shown}")
    models = tuple(dict.fromkeys(model for _, model in responses))
    keyed = {(record_id, model, 0): text for (record_id, model), text in responses.items()}
    return ResponseTable(path=str(file), models=models, responses=keyed)


def load_responses(path: str | Path, flag: str = "--responses") -> ResponseTable:
    """Read a responses file; every problem is collected and raised together.

    ``flag`` names the option the file came from in the errors (``--conversation-from``
    reads the same format).

    Raises:
        ResponsesError: the file is missing, or rows are malformed or duplicated (all of
            them are listed, with line numbers).

    """
    file = Path(path)
    if not file.is_file():
        raise ResponsesError(f"{flag} {path}: no such file")
    if _is_turing_answers(file):
        return _turing_answers(file, path, flag)
    responses: dict[Key, str] = {}
    recorded: dict[Key, Recorded] = {}
    first_line: dict[Key, int] = {}
    models: dict[str, None] = {}
    problems: list[str] = []
    named: list[int] = []
    unnamed: list[int] = []
    for number, raw in _rows(file):
        text = raw.decode("utf-8", errors="strict") if raw.isascii() else None
        if text is None:
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                problems.append(f"line {number}: not valid UTF-8 ({exc.reason})")
                continue
        if not text.strip():
            continue
        try:
            # Standard JSON only: a NaN or Infinity anywhere makes the row an error.
            obj = strict_json.loads(text)
            repeated = _repeated_keys(text, obj)
            if repeated is not None:
                raise InvalidValue(repeated)
            parsed = _parse_row(obj)
        except (ValueError, RecursionError) as exc:
            problems.append(f"line {number}: {exc}")
            continue
        if parsed is None:
            continue
        record_id, named_model, epoch, response, row = parsed
        # A row naming the unnamed model's label is one of the unnamed ones.
        unlabelled = named_model is None or named_model == DEFAULT_RESPONSE_MODEL
        (unnamed if unlabelled else named).append(number)
        model = named_model if named_model is not None else DEFAULT_RESPONSE_MODEL
        key = (record_id, model, epoch)
        if key in responses:
            at = f" epoch {epoch}" if epoch else ""
            problems.append(
                f"line {number}: duplicate response for record {record_id!r} and model "
                f"{model!r}{at} (first on line {first_line[key]})"
            )
            continue
        responses[key] = response
        if row is not None:
            recorded[key] = row
        first_line[key] = number
        models.setdefault(model, None)
    if named and unnamed:
        problems.append(_mixed_models(named, unnamed))
    if problems:
        shown = "\n  ".join(problems[:_MAX_PROBLEMS_SHOWN])
        more = len(problems) - _MAX_PROBLEMS_SHOWN
        tail = f"\n  … and {more} more" if more > 0 else ""
        raise ResponsesError(f"{flag} {path}: {len(problems)} bad rows:\n  {shown}{tail}")
    return ResponseTable(
        path=str(file), models=tuple(models), responses=responses, recorded=recorded
    )


def _lines(numbers: list[int]) -> str:
    shown = ", ".join(map(str, numbers[:5]))
    return shown + (f" and {len(numbers) - 5} more" if len(numbers) > 5 else "")


def _mixed_models(named: list[int], unnamed: list[int]) -> str:
    return (
        f"rows without a model (line {_lines(unnamed)}) beside rows that name one (line "
        f"{_lines(named)}): give every row its model, or none (one unnamed model)"
    )
