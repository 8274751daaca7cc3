"""The Turing pipeline's JSON files: eight kinds, one format name each (``turing_<kind>``).

List files (benchmarks, answers, critiques, debates) are JSON arrays in which ``{}`` marks
a missing entry; evaluation files are ``{"decisions": [...]}``; judging tasks and metadata
are single objects. Every kind is validated against ``schemas/turing_<kind>.schema.json``
with record-level errors in the contract's ``record_errors`` shape, so ``legaleval
validate`` reports on any of them.

Only benchmark files are datasets: each succeeded entry becomes a ``reference_qa`` record
(question and answer of the last refinement round of the last succeeded generation
round); failed and ill-posed entries are skipped and counted. Answer files are a response
source (:func:`load_turing_answers`, used by ``--responses``); evaluation files feed
``legaleval agreement``. The other kinds load as validated files without records.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import DatasetRejected
from pytest_legaleval.formats.base import (
    UTF8_BOM,
    DatasetInfo,
    Entry,
    FileScan,
    LoadContext,
    RejectedRecord,
    decode_document,
    display_name,
)
from pytest_legaleval.records import Record, SourceRef
from pytest_legaleval.validation import AllRecordsRejected, RecordError, check_payload_size
from pytest_legaleval.validation import contract as limits
from pytest_legaleval.validation.checks import (
    Issue,
    format_path,
    record_sha256,
    scan_values,
    show,
    usable_id,
)
from pytest_legaleval.validation.schemas import schema_issues

__all__ = [
    "KINDS",
    "TURING_FORMATS",
    "TuringFile",
    "TuringFormat",
    "benchmark_record_id",
    "detect_kind",
    "load_turing_answers",
    "read_turing_file",
]

KINDS: tuple[str, ...] = (
    "benchmark",
    "answers",
    "critiques",
    "debates",
    "automated_evaluation",
    "human_evaluation",
    "judging_task",
    "metadata",
)
_LIST_KINDS = frozenset({"benchmark", "answers", "critiques", "debates"})
_DECISION_KINDS = frozenset({"automated_evaluation", "human_evaluation"})
_AUTOMATED_ONLY = frozenset(
    {"judge_model", "reasoning", "raw_response", "status", "question", "answer", "claim"}
)
_KEY = re.compile(r'"([A-Za-z_]+)"\s*:')
DATASET = "turing"


def detect_kind(head: str) -> str | None:
    """Tell a Turing file's kind from the keys in its first bytes, or ``None``.

    Debates are recognized before critiques (a critique debate names a critic too), and
    automated decisions by the judge's own fields (a human decision has none of them).
    """
    text = head.lstrip()
    keys = set(_KEY.findall(text))
    if text.startswith("{"):
        if "decisions" in keys:
            return "automated_evaluation" if keys & _AUTOMATED_ONLY else "human_evaluation"
        if "generated_at" in keys and keys & {"model_name", "response_id", "created_timestamp"}:
            return "metadata"
        if {"id", "type"} <= keys and keys & {"critique", "question_model", "alice_model"}:
            return "judging_task"
        return None
    if not text.startswith("["):
        return None
    if "alice_model" in keys or "history" in keys:
        return "debates"
    if {"critic", "answer_author"} <= keys:
        return "critiques"
    if {"question_model", "answer_model"} <= keys:
        return "answers"
    if "generation_rounds" in keys or "refinement_rounds" in keys:
        return "benchmark"
    if {"id", "type"} <= keys and keys & {"critique", "alice_model"}:
        return "judging_task"
    return None


def benchmark_record_id(question_model: str, question: str) -> str:
    """The record id of a benchmark question; answer files join on the same id.

    The question text is the pipeline's own join key (answers, critiques and debates all
    repeat it; an answer's ``run_id`` is optional), hashed to keep ids short.
    """
    digest = hashlib.sha256(question.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{DATASET}:{question_model}:{digest}"


class TuringFile:
    """One parsed, validated Turing file."""

    def __init__(self, kind: str, path: Path) -> None:
        self.kind = kind
        self.path = path
        self.sha256 = ""
        self.entries: list[tuple[int, dict[str, Any]]] = []
        """Valid entries with their index in the file."""
        self.errors: dict[int, list[RecordError]] = {}
        """Index -> errors of the invalid entries."""
        self.placeholders = 0


def _read_json(path: Path) -> tuple[object, str]:
    name = display_name(path)
    with path.open("rb") as handle:
        check_payload_size(os.fstat(handle.fileno()).st_size, where=name)
        data = handle.read(limits.MAX_PAYLOAD_BYTES + 1)
    check_payload_size(len(data), where=name)
    sha256 = hashlib.sha256(data).hexdigest()
    try:
        text = data.removeprefix(UTF8_BOM).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetRejected(f"payload is not valid UTF-8 ({exc.reason}) ({name})") from None
    try:
        document = decode_document(text, where=name)
    except DatasetRejected:
        raise  # a repeated key: already the 400 it should be
    except ValueError as exc:
        raise DatasetRejected(f"payload is not valid JSON: {exc} ({name})") from None
    except RecursionError:
        raise DatasetRejected(f"payload is not valid JSON: nested too deeply ({name})") from None
    return document, sha256


def _items(kind: str, document: object, name: str) -> tuple[str, list[object]]:
    """Return ``(path prefix, items)`` or reject a file whose top level is wrong."""
    if kind in _LIST_KINDS:
        if not isinstance(document, list):
            raise DatasetRejected(f"a Turing {kind} file must be a JSON array ({name})")
        return "records", document
    if kind in _DECISION_KINDS:
        decisions = document.get("decisions") if isinstance(document, dict) else None
        if not isinstance(decisions, list):
            raise DatasetRejected(
                f"a Turing {kind} file must be an object with a decisions array ({name})"
            )
        return "decisions", decisions
    if kind == "judging_task" and isinstance(document, list):
        return "tasks", document
    if not isinstance(document, dict):
        raise DatasetRejected(f"a Turing {kind} file must be a JSON object ({name})")
    return kind, [document]


def _entry_issues(kind: str, item: object) -> list[Issue]:
    # Each entry is validated alone (wrapped as a one-entry file), so an error names its
    # entry and the file schema stays the single source of truth.
    schema = f"turing_{kind}"
    if kind in _LIST_KINDS:
        return [Issue(i.code, i.parts[1:], i.text) for i in schema_issues(schema, [item])]
    if kind in _DECISION_KINDS:
        wrapped = {"decisions": [item]}
        return [Issue(i.code, i.parts[2:], i.text) for i in schema_issues(schema, wrapped)]
    return schema_issues(schema, item)


def read_turing_file(path: Path, kind: str) -> TuringFile:
    """Parse and validate one Turing file of a known kind.

    Raises:
        DatasetRejected: unreadable, not JSON, over the payload limit, or a wrong top level.

    """
    name = display_name(path)
    document, sha256 = _read_json(path)
    prefix, items = _items(kind, document, name)
    file = TuringFile(kind, path)
    file.sha256 = sha256
    seen: dict[str, int] = {}
    single = prefix == kind
    for index, item in enumerate(items):
        if isinstance(item, dict) and not item and (kind in _LIST_KINDS or kind in _DECISION_KINDS):
            file.placeholders += 1
            continue
        issues = _entry_issues(kind, item)
        issues.extend(scan_values(item))
        base = prefix if single else f"{prefix}[{index}]"
        entry_id = _entry_id(kind, item)
        errors = [
            RecordError(
                index,
                entry_id,
                issue.code,
                f"{format_path('', issue.parts) or 'entry'} {issue.text} ({name} {base})",
                format_path(base, issue.parts),
            )
            for issue in issues
        ]
        if entry_id is not None and "id" in (item if isinstance(item, dict) else {}):
            if entry_id in seen:
                errors.append(
                    RecordError(
                        index,
                        entry_id,
                        "duplicate_record_id",
                        f"id {show(entry_id)} duplicates {prefix}[{seen[entry_id]}] ({name})",
                        f"{base}.id",
                    )
                )
            else:
                seen[entry_id] = index
        if errors:
            file.errors[index] = errors
        else:
            assert isinstance(item, dict)
            file.entries.append((index, item))
    return file


def _entry_id(kind: str, item: object) -> str | None:
    if not isinstance(item, dict):
        return None
    key = "run_id" if kind in _LIST_KINDS else "id"
    return usable_id(item.get(key))


def _final_question(entry: Mapping[str, Any]) -> tuple[str, str, int, int] | None:
    """Question and answer of the last refinement round of the last succeeded round."""
    rounds = entry.get("generation_rounds") or []
    for g_index in range(len(rounds) - 1, -1, -1):
        generation = rounds[g_index]
        refinements = generation["refinement_rounds"]
        if generation["status"] == "succeeded" and refinements:
            final = refinements[-1]
            return final["question"], final["answer"], g_index, len(refinements) - 1
    return None


class TuringFormat:
    """The format of one Turing file kind (``turing_benchmark`` …)."""

    SUFFIXES: tuple[str, ...] = ()

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.NAME = f"turing_{kind}"

    def __repr__(self) -> str:
        return f"TuringFormat({self.kind!r})"

    def sniff(self, first_line: object, head: str) -> bool:
        """Say whether the file looks like this kind (see ``DatasetFormat``)."""
        return detect_kind(head) == self.kind

    def scan(self, path: Path, context: LoadContext) -> FileScan:
        """Read one file; only benchmark files yield records (see ``FileScan``).

        The file is one JSON document, so it is parsed and checked whole before the first
        entry is yielded.

        Raises:
            DatasetRejected: a dataset-level failure, every entry invalid, or a benchmark
                file without a single succeeded question.

        """
        name = display_name(path)
        file = read_turing_file(path, self.kind)
        entries: list[Entry] = []
        skipped = 0
        valid = dict(file.entries)
        total = len(valid) + len(file.errors)
        for index in sorted([*valid, *file.errors]):
            source = SourceRef(str(path), index, None, self.NAME)
            if index in file.errors:
                errors = file.errors[index]
                entries.append(RejectedRecord(source, errors[0].record_id, DATASET, tuple(errors)))
            elif self.kind == "benchmark":
                entry = valid[index]
                if entry["status"] != "succeeded":
                    skipped += 1
                    continue
                entries.append(self._benchmark_record(entry, path, source, context))
        if total and not valid:
            raise AllRecordsRejected(
                dataset=name,
                record_errors=tuple(e for errs in file.errors.values() for e in errs),
                rejected_records=total,
            )
        accepted = sum(isinstance(e, Record) for e in entries) if self.kind == "benchmark" else 0
        if self.kind == "benchmark" and not entries:
            raise DatasetRejected(
                f"the benchmark has no succeeded question: {skipped} failed or ill-posed, "
                f"{file.placeholders} placeholders ({name})",
                details={"skipped_records": skipped, "placeholder_records": file.placeholders},
            )
        yield from entries
        return DatasetInfo(
            path=str(path),
            format=self.NAME,
            dataset_id=DATASET,
            dataset_version=None,
            schema_version=self.NAME,
            total_records=total,
            accepted_records=accepted if self.kind == "benchmark" else len(valid),
            sha256=file.sha256,
            placeholder_records=file.placeholders,
            skipped_records=skipped,
        )

    def _benchmark_record(
        self, entry: Mapping[str, Any], path: Path, source: SourceRef, context: LoadContext
    ) -> Entry:
        index = source.index
        final = _final_question(entry)
        run_id = entry["run_id"]
        where = f"{display_name(path)} records[{index}]"
        if final is None:
            error = RecordError(
                index,
                usable_id(run_id),
                "missing_required_field",
                f"generation_rounds has no succeeded round with a refinement round ({where})",
                f"records[{index}].generation_rounds",
            )
            return RejectedRecord(source, usable_id(run_id), DATASET, (error,))
        question, answer, g_index, r_index = final
        record_id = benchmark_record_id(path.stem, question)
        problems = []
        if not question.strip():
            problems.append(("question", "must not be empty"))
        if not answer.strip():
            problems.append(("answer", "must not be empty"))
        first = context.first_seen(record_id, f"{display_name(path)} records[", index, "]")
        if first is not None:
            problems.append(("question", f"repeats the question at {first}"))
        if problems:
            errors = tuple(
                RecordError(
                    index,
                    record_id,
                    "duplicate_record_id" if "repeats" in text else "value_out_of_range",
                    f"{field} {text} ({where})",
                    f"records[{index}].generation_rounds[{g_index}]"
                    f".refinement_rounds[{r_index}].{field}",
                )
                for field, text in problems
            )
            return RejectedRecord(source, record_id, DATASET, errors)
        metadata = {
            "question_model": path.stem,
            "run_id": run_id,
            "topic_slug": entry["topic_slug"],
            "topic_name": entry.get("topic_name"),
            "generation_round": g_index,
            "refinement_round": r_index,
        }
        canonical = record_sha256(
            {"id": record_id, "prompt": question, "reference": answer, "metadata": metadata}
        )
        return Record(
            id=record_id,
            dataset=DATASET,
            task_type="reference_qa",
            prompt=question,
            schema_version=self.NAME,
            reference_answers=(answer,),
            metadata=metadata,
            source=source,
            sha256=canonical,
        )


TURING_FORMATS: tuple[TuringFormat, ...] = tuple(TuringFormat(kind) for kind in KINDS)
"""One format per kind, registered as ``turing_<kind>``."""


def load_turing_answers(path: Path) -> tuple[dict[tuple[str, str], str], list[str]]:
    """Read a Turing answer file (``answers/<q-model>/<a-model>.json``) as responses.

    The directory name is the question model's slug (as the benchmark file's stem), so
    each response is keyed to :func:`benchmark_record_id` of its question. Entries that did
    not succeed, or have no attempt, give no response: such a record is then reported as
    missing its response, never skipped silently.

    Returns:
        ``({(record_id, answer_model): final answer}, problems)``; problems name the bad
        entries (invalid, duplicated).

    Raises:
        DatasetRejected: the file cannot be read as a Turing answer file at all.

    """
    file = read_turing_file(path, "answers")
    problems = [
        f"entry {index}: {error.message}"
        for index, errors in sorted(file.errors.items())
        for error in errors
    ]
    responses: dict[tuple[str, str], str] = {}
    question_model = path.parent.name
    for index, entry in file.entries:
        attempts = entry.get("attempts") or []
        if entry["status"] != "succeeded" or not attempts:
            continue
        key = (benchmark_record_id(question_model, entry["question"]), entry["answer_model"])
        if key in responses:
            problems.append(f"entry {index}: a second answer to the same question by {key[1]!r}")
            continue
        responses[key] = attempts[-1]["answer"]
    return responses, problems
