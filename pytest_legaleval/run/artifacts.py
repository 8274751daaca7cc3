"""The lines and documents of the run directory, built from records and item results.

Pure functions: the recorder decides when to write; this module decides what a line holds.
Field names follow the Dataset Contract §4.2 and ``schemas/*.schema.json``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from pytest_legaleval.formats import DatasetInfo, RejectedRecord
from pytest_legaleval.metrics._summary import failure_type
from pytest_legaleval.records import EvalResult, PredictionLine, Provenance, Record
from pytest_legaleval.run.names import ARTIFACTS, EXTRA_ARTIFACTS

__all__ = [
    "ARTIFACTS",
    "EXTRA_ARTIFACTS",
    "INLINE_MAX_BYTES",
    "INLINE_MAX_RECORDS",
    "PREDICTION_VERSION",
    "attempt_lines",
    "dataset_entry",
    "failure_line",
    "input_dataset",
    "invalid_failure_line",
    "prediction_line",
    "record_payload",
    "transcript_line",
    "validation_line",
]


PREDICTION_VERSION = 2
"""The version of a ``predictions.jsonl`` line: 2 adds ``artifact_version``,
``policy_version``, ``scoring`` and ``scoring_version`` (a line without
``artifact_version`` is version 1; readers accept both)."""

INLINE_MAX_RECORDS = 10_000
"""Above this many accepted records, ``input_dataset.json`` references the files by hash."""
INLINE_MAX_BYTES = 50 * 1024 * 1024
"""… or above this many bytes of dataset files."""

_STAGES = {
    "invalid_record": "validation",
    "missing_response": "response",
    "timeout": "generation",
    "latency_exceeded": "generation",
    "judge_error": "judging",
    "cancelled": "run",
    "evaluation_error": "run",
}


def dataset_entry(info: DatasetInfo) -> dict[str, Any]:
    """A dataset's identity in the manifest and ``input_dataset.json``."""
    return {
        "dataset_id": info.dataset_id,
        "dataset_version": info.dataset_version,
        "schema_version": info.schema_version,
        "format": info.format,
        "path": info.path,
        "sha256": info.sha256,
        "content_address": f"sha256:{info.sha256}",
        "total_records": info.total_records,
        "accepted_records": info.accepted_records,
    }


def validation_line(entry: Record | RejectedRecord) -> dict[str, Any]:
    """One ``record_validation.jsonl`` line (the same for every run of the same input)."""
    source = {"path": entry.source.path, "index": entry.source.index, "line": entry.source.line}
    if isinstance(entry, Record):
        return {
            "index": entry.source.index,
            "record_id": entry.id,
            "dataset_id": entry.dataset,
            "dataset_version": entry.dataset_version,
            "schema_version": entry.schema_version or None,
            "status": "accepted",
            "record_sha256": entry.sha256,
            "source": source,
            "errors": [],
        }
    return {
        "index": entry.source.index,
        "record_id": entry.record_id,
        "dataset_id": entry.dataset,
        "dataset_version": None,
        "schema_version": None,
        "status": "rejected",
        "record_sha256": None,
        "source": source,
        "errors": [error.to_dict() for error in entry.errors],
    }


_PAYLOAD_FIELDS = tuple(
    f.name for f in dataclasses.fields(Record) if f.name not in ("source", "sha256")
)


def _plain(value: Any) -> Any:
    """``value`` as JSON-ready data, as ``dataclasses.asdict`` gives it.

    Without ``asdict``'s deep copies (strings and numbers are immutable): about 2 to 3
    times faster on a record.
    """
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


_SCALAR_TYPES = (str, int, float, bool, type(None))
_VALUE_FIELDS = {
    "messages": ("role", "content"),
    "attachments": ("path", "kind", "title"),
    "choices": ("id", "text"),
    "rubric": ("id", "title", "description", "weight"),
}
"""The record's tuple-of-values fields and their values' fields (known shapes: no walk)."""


def record_payload(record: Record) -> dict[str, Any]:
    """The canonical record as JSON (``source`` and ``sha256`` are listed beside it).

    As ``dataclasses.asdict`` gives it, field by field by shape: a record's values are
    known, so only the free-form mappings (``expected``, ``metadata``) are walked.
    """
    out: dict[str, Any] = {}
    for name in _PAYLOAD_FIELDS:
        value = getattr(record, name)
        if isinstance(value, _SCALAR_TYPES):
            out[name] = value
        elif name in _VALUE_FIELDS:
            keys = _VALUE_FIELDS[name]
            out[name] = [{key: getattr(item, key) for key in keys} for item in value]
        elif isinstance(value, tuple) and all(type(item) is str for item in value):
            out[name] = list(value)
        else:
            out[name] = _plain(value)
    return out


def input_dataset(
    run_id: str, datasets: Sequence[DatasetInfo], records: Iterable[Record], record_count: int
) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
    """Head and record stream of ``input_dataset.json`` (inline or by reference).

    ``records`` is consumed lazily, once, while the file is written; ``record_count`` is
    how many it yields (the head comes first).
    """
    size = sum(Path(info.path).stat().st_size for info in datasets if Path(info.path).is_file())
    inline = record_count <= INLINE_MAX_RECORDS and size <= INLINE_MAX_BYTES
    head = {
        "run_id": run_id,
        "mode": "inline" if inline else "reference",
        "inline_limit": {"max_records": INLINE_MAX_RECORDS, "max_bytes": INLINE_MAX_BYTES},
        "datasets": [dataset_entry(info) for info in datasets],
        "record_count": record_count,
    }

    def stream() -> Iterator[dict[str, Any]]:
        for record in records:
            line: dict[str, Any] = {
                "index": record.source.index,
                "record_id": record.id,
                "dataset_id": record.dataset,
                "record_sha256": record.sha256,
            }
            if inline:
                line["payload"] = record_payload(record)
            yield line

    return head, stream()


def _evaluator_scores(result: Mapping[str, Any]) -> dict[str, Any]:
    scores: dict[str, Any] = {"score": result.get("score"), "passed": result.get("passed")}
    details = result.get("details") or {}
    for key in ("exact_match", "token_f1", "criteria"):
        if key in details:
            scores[key] = details[key]
    judge = result.get("judge")
    if judge is not None:
        scores["judge_score"] = judge.get("score")
    return scores


def prediction_line(
    run_id: str,
    item_id: str,
    result: Mapping[str, Any],
    test_outcome: str,
    *,
    record: Provenance | None,
    generation_settings: Mapping[str, Any],
    version: str,
) -> PredictionLine:
    """One ``predictions.jsonl`` line: the item's result under the contract's names.

    ``record`` is the item's ``ItemSpec.provenance()`` (dataset version, tags, metadata).
    """
    line: dict[str, Any] = {
        "artifact_version": PREDICTION_VERSION,
        "run_id": run_id,
        "item_id": item_id,
    }
    for key, value in result.items():
        if key not in _NOT_ON_THE_LINE:
            line["model_response" if key == "response" else key] = value
    judge = result.get("judge") or {}
    details = result.get("details") or {}
    line.update(
        {
            "dataset_id": str(result.get("dataset") or ""),  # a string, as the line type says
            "dataset_version": record.dataset_version if record else None,
            "tags": list(record.tags) if record else [],
            "metadata": dict(record.metadata) if record else {},
            "evaluator_scores": _evaluator_scores(result),
            "evaluator": {
                "grader": result.get("grader"),
                "version": version,
                "prompt_template_version": details.get("template_version"),
                "judge_models": list(judge.get("models") or []),
                "judge_template_sha256": judge.get("template_sha256"),
                "policy_id": result.get("policy_id"),
                "policy_sha256": result.get("policy_sha256"),
            },
            "generation_settings": dict(generation_settings),
            "attempt_count": len(result.get("attempts") or []),
            "failure_type": failure_type(result),
            "test_outcome": test_outcome,
        }
    )
    return cast(PredictionLine, line)  # its keys: the result's fields and the ones above


_NOT_ON_THE_LINE = frozenset(("epochs", "transcript"))
"""Result fields written elsewhere: each epoch is a line of its own, the transcript goes to
``transcripts.jsonl``."""


def transcript_line(run_id: str, item_id: str, result: EvalResult) -> dict[str, Any]:
    """One ``transcripts.jsonl`` line: what one item's epoch sent and got back.

    ``request`` (the messages after templating and the parameters; ``None`` for a
    pre-computed answer), ``reply`` (the raw answer), ``judge`` (per judge question: model,
    criterion, messages and reply, prompt-cache tokens, batch flag), ``usage`` (the
    answer's tokens, prompt-cache tokens and batch flag) and ``truncated`` (a text longer
    than ``pipeline.results.TRANSCRIPT_TEXT_LIMIT`` was cut).
    """
    transcript = result.transcript or {}
    return {
        "run_id": run_id,
        "item_id": item_id,
        "record_id": result.record_id,
        "model": result.model,
        "epoch": result.epoch,
        "request": transcript.get("request"),
        "reply": transcript.get("reply"),
        "usage": transcript.get("usage"),
        "judge": list(transcript.get("judge") or ()),
        "truncated": bool(transcript.get("truncated")),
    }


def attempt_lines(run_id: str, item_id: str, result: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The ``attempt_logs.jsonl`` lines of one item: its generation, then its judge calls."""
    for attempt in result.get("attempts") or []:
        yield {
            "run_id": run_id,
            "record_id": result["record_id"],
            "dataset_id": result.get("dataset"),
            "model": result["model"],
            "item_id": item_id,
            "purpose": "generation",
            **attempt,
            "retry": int(attempt.get("number") or 1) > 1,
        }
    judge = result.get("judge") or {}
    for verdict in judge.get("verdicts") or []:
        for attempt in verdict.get("attempts") or []:
            yield {
                "run_id": run_id,
                "record_id": result["record_id"],
                "dataset_id": result.get("dataset"),
                "model": verdict.get("model"),
                "item_id": item_id,
                "purpose": "judge",
                **attempt,
                "retry": int(attempt.get("number") or 1) > 1,
            }


def failure_line(
    run_id: str, item_id: str, result: Mapping[str, Any], index: int | None = None
) -> dict[str, Any] | None:
    """The ``failures.jsonl`` line of an item, or ``None`` when it did not fail permanently."""
    label = failure_type(result)
    if label is None:
        return None
    errors: list[dict[str, Any]] = []
    judge = result.get("judge") or {}
    for verdict in judge.get("verdicts") or []:
        if verdict.get("error"):
            errors.append(
                {
                    "judge_model": verdict.get("model"),
                    "error": verdict["error"],
                    "raw": verdict.get("raw"),
                }
            )
    stage = "generation" if label.startswith("generation_error:") else _STAGES.get(label, "run")
    return {
        "run_id": run_id,
        "item_id": item_id,
        "record_id": result.get("record_id"),
        "dataset_id": result.get("dataset"),
        "model": result.get("model"),
        "failure_type": label,
        "stage": stage,
        "reason": result.get("reason") or label,
        "message": result.get("explanation") or "",
        "record_sha256": result.get("record_sha256"),
        "index": index,
        "attempt_count": len(result.get("attempts") or []),
        "first_attempt_at": result.get("first_attempt_at"),
        "last_attempt_at": result.get("last_attempt_at"),
        "errors": errors,
    }


def invalid_failure_line(run_id: str, item_id: str, rejection: Mapping[str, Any]) -> dict[str, Any]:
    """The ``failures.jsonl`` line of an invalid record's item (``ItemSpec.rejection()``)."""
    errors = list(rejection["errors"])
    return {
        "run_id": run_id,
        "item_id": item_id,
        "record_id": rejection["record_id"],
        "dataset_id": rejection["dataset"],
        "model": rejection["model"],
        "failure_type": "invalid_record",
        "stage": "validation",
        "reason": "invalid_record",
        "message": "; ".join(f"{e['path']}: {e['message']}" for e in errors),
        "record_sha256": None,
        "index": rejection["source_index"],
        "attempt_count": 0,
        "first_attempt_at": None,
        "last_attempt_at": None,
        "errors": errors,
    }
