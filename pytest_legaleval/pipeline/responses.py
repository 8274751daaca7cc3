"""Pre-computed responses (``--responses FILE``): one JSONL row per (record, model).

Two row shapes are read: ours ``{"record_id", "response", "model"?}`` and the Legal
Benchmark Runner's prefilled rows ``{"example_id", "candidate_name", "response_text"}``.
A ``.json`` file holding a JSON array is a Turing answer file
(``answers/<question-model>/<answer-model>.json``): each succeeded entry's last attempt
answers the benchmark record of its question, for the model ``answer_model``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pytest_legaleval.errors import ResponsesError

__all__ = ["DEFAULT_RESPONSE_MODEL", "ResponseTable", "load_responses"]

DEFAULT_RESPONSE_MODEL = "prefilled"
"""Model label of rows that name no model."""

_MAX_PROBLEMS_SHOWN = 20


@dataclass(frozen=True, slots=True)
class ResponseTable:
    """Responses keyed by ``(record_id, model)``; ``models`` in first-seen order."""

    path: str
    models: tuple[str, ...]
    responses: dict[tuple[str, str], str]

    def get(self, record_id: str, model: str) -> str | None:
        """The response for one record and model, or ``None`` when the file has none."""
        return self.responses.get((record_id, model))

    def __len__(self) -> int:
        return len(self.responses)


def _rows(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as handle:
        yield from enumerate(handle, start=1)


def _parse_row(obj: object) -> tuple[str, str, str] | None:
    """``(record_id, model, response)`` of a row; ``None`` for a prediction without answer."""
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
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
        raise ValueError("expected keys record_id and response (or example_id and response_text)")
    if not isinstance(record_id, str) or not record_id:
        raise ValueError(f"{names[0]} must be a non-empty string, got {record_id!r}")
    if not isinstance(response, str):
        raise ValueError(f"{names[1]} must be a string, got {type(response).__name__}")
    if model is None:
        model = DEFAULT_RESPONSE_MODEL
    if not isinstance(model, str) or not model:
        raise ValueError(f"{names[2]} must be a non-empty string when present, got {model!r}")
    return record_id, model, response


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
    return ResponseTable(path=str(file), models=models, responses=responses)


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
    responses: dict[tuple[str, str], str] = {}
    first_line: dict[tuple[str, str], int] = {}
    models: dict[str, None] = {}
    problems: list[str] = []
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
            parsed = _parse_row(json.loads(text))
        except (ValueError, RecursionError) as exc:
            problems.append(f"line {number}: {exc}")
            continue
        if parsed is None:
            continue
        record_id, model, response = parsed
        key = (record_id, model)
        if key in responses:
            problems.append(
                f"line {number}: duplicate response for record {record_id!r} and model "
                f"{model!r} (first on line {first_line[key]})"
            )
            continue
        responses[key] = response
        first_line[key] = number
        models.setdefault(model, None)
    if problems:
        shown = "\n  ".join(problems[:_MAX_PROBLEMS_SHOWN])
        more = len(problems) - _MAX_PROBLEMS_SHOWN
        tail = f"\n  … and {more} more" if more > 0 else ""
        raise ResponsesError(f"{flag} {path}: {len(problems)} bad rows:\n  {shown}{tail}")
    return ResponseTable(path=str(file), models=tuple(models), responses=responses)
