"""The RAG evaluation splits ``rag_qa`` and ``rag_summaries``, with their manifest.

``qa_pairs.jsonl`` and ``summaries.jsonl`` both become ``reference_qa`` records: the
question (or summarisation instruction) is the prompt, the numbered contexts are the
record's context, the reference answer (or summary) is the reference, and
``metadata.policy_id`` is ``rag_qa_v1`` or ``rag_summary_v1`` so grading picks the QA or
summary policy. The envelope fields stay in ``metadata["rag"]``.

A ``manifest.json`` in the split's directory supplies the dataset version, and its split
count must equal the file's row count: a mismatch rejects the dataset (the split was
edited or truncated after the build; rebuild it or remove the manifest).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import DatasetRejected
from pytest_legaleval.formats.base import (
    JSON_WHITESPACE,
    UTF8_BOM,
    DatasetInfo,
    Entry,
    EntryTally,
    FileScan,
    LoadContext,
    RejectedRecord,
    decode_document,
    display_name,
)
from pytest_legaleval.formats.legal_eval_v1 import parse_json_line
from pytest_legaleval.records import Message, Record, SourceRef
from pytest_legaleval.util.paths import confined_path, is_within
from pytest_legaleval.validation import RecordError
from pytest_legaleval.validation.checks import Issue, canonicalize, scan_values, show, usable_id
from pytest_legaleval.validation.duplicates import duplicate_key_issues
from pytest_legaleval.validation.record_error import issues_to_errors
from pytest_legaleval.validation.schemas import schema_issues

__all__ = [
    "ENVELOPE_FIELDS",
    "MANIFEST_NAME",
    "QA_POLICY",
    "RAG_QA",
    "RAG_SUMMARIES",
    "SUMMARY_POLICY",
    "RagFormat",
    "manifest_file",
    "number_contexts",
    "offline_dataset_name",
    "read_manifest",
]

MANIFEST_NAME = "manifest.json"
QA_POLICY = "rag_qa_v1"
SUMMARY_POLICY = "rag_summary_v1"
ENVELOPE_FIELDS: tuple[str, ...] = (
    "task_id",
    "task_type",
    "rag_prompt",
    "contexts",
    "sources",
    "retrieved",
    "citations",
    "answer_citations",
    "instruction",
)
"""The fields kept in ``Record.metadata["rag"]`` (the last two only where present)."""

_MARKER = re.compile(r"\A\s*\[\d+\]\s*")


def number_contexts(contexts: Sequence[str]) -> list[str]:
    """Number contexts ``[1] …``, ``[2] …`` by position, replacing any existing marker.

    Generators number inconsistently (none, zero-based, gaps); the position is what a
    citation ``[n]`` in an answer refers to, so it is the only numbering kept.
    """
    return [f"[{i}] {_MARKER.sub('', text, count=1)}" for i, text in enumerate(contexts, start=1)]


def read_manifest(path: Path) -> dict[str, Any]:
    """Read and validate a ``manifest.json``.

    Raises:
        DatasetRejected: it is not JSON, repeats a key, or does not match
            ``schemas/rag_manifest``.

    """
    name = display_name(path)
    try:
        manifest = decode_document(path.read_bytes().decode("utf-8-sig"), where=f"manifest {name}")
    except DatasetRejected:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise DatasetRejected(f"manifest {name} is not valid JSON: {exc}") from None
    issues = schema_issues("rag_manifest", manifest)
    if issues:
        first = issues[0]
        where = ".".join(str(p) for p in first.parts) or "manifest"
        raise DatasetRejected(
            f"manifest {name} is invalid: {where} {first.text}",
            details={"problems": len(issues)},
        )
    assert isinstance(manifest, dict)
    return manifest


def _manifest_split(manifest: Mapping[str, Any], split: str, file: Path) -> dict[str, Any] | None:
    # The split is the one whose path names this file; a file the manifest does not name
    # (the offline dataset next to the splits) has no count to check.
    splits: Mapping[str, Any] = manifest["splits"]
    named = [entry for entry in splits.values() if Path(entry["path"]).name == file.name]
    if len(named) > 1:
        named = [entry for name, entry in splits.items() if name == split] or named[:1]
    return dict(named[0]) if named else None


def manifest_file(manifest: Path, name: str, extra_roots: Iterable[str | Path] = ()) -> Path:
    """Where a file a manifest names (a split, the offline dataset) is, confined.

    The name is data, so it may only lead inside the manifest's folder or ``extra_roots``
    (see :func:`~pytest_legaleval.util.paths.confined_path`). It is looked up, in order:
    from the manifest's folder; from each folder above it (the builder writes paths
    relative to the project root, which holds the manifest's folder); from each extra
    root; and by its file name in the manifest's folder (a copied dataset folder). The
    first that exists wins; the working directory plays no part.

    Returns:
        The file; when none exists, where the manifest's folder says it should be.

    Raises:
        PathRefused: the name leads outside the allowed folders, under ``/proc``, ``/sys``
            or ``/dev``, or to something other than a regular file.

    """
    folder = manifest.parent
    roots = tuple(extra_roots)
    where = "the manifest's folder"
    named = confined_path(name, folder, roots, where=where)
    if named.exists() or os.path.isabs(name):
        return named
    allowed = [os.path.abspath(p) for p in (folder, *roots)]
    bases = [*Path(os.path.abspath(folder)).parents, *(Path(r) for r in roots)]
    for base in bases:
        candidate = os.path.normpath(os.path.join(os.path.abspath(base), name))
        if any(is_within(candidate, root) for root in allowed) and os.path.exists(candidate):
            return confined_path(candidate, folder, roots, where=where)
    moved = folder / Path(name).name
    if moved.exists():
        return confined_path(Path(name).name, folder, roots, where=where)
    return named


def offline_dataset_name(directory: Path) -> str | None:
    """The file name of the offline dataset a directory's manifest was built from, if any.

    A directory argument skips it: the raw generator output is not a dataset to run.
    """
    try:
        manifest = json.loads((directory / MANIFEST_NAME).read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return None
    source = manifest.get("source_offline_dataset") if isinstance(manifest, dict) else None
    return Path(source).name if isinstance(source, str) and source else None


class RagFormat:
    """One RAG split format; :data:`RAG_QA` and :data:`RAG_SUMMARIES` are the instances."""

    SUFFIXES: tuple[str, ...] = ()

    def __init__(self, name: str, split: str, question: str, reference: str, policy: str):
        self.NAME = name
        self.split = split
        self.question_field = question
        self.reference_field = reference
        self.policy_id = policy
        self.schema = name

    def __repr__(self) -> str:
        return f"RagFormat({self.NAME!r})"

    def sniff(self, first_line: object, head: str) -> bool:
        """Say whether the file looks like this split (see ``DatasetFormat``)."""
        if not isinstance(first_line, dict) or "rag_prompt" not in first_line:
            return False
        if self.split == "summaries":
            return "reference_summary" in first_line or "instruction" in first_line
        return "reference_summary" not in first_line and (
            "reference_answer" in first_line or "question" in first_line
        )

    def row_issues(self, row: object) -> list[Issue]:
        """Schema and alignment problems of one parsed row (encoding is checked apart)."""
        issues = schema_issues(self.schema, row)
        if isinstance(row, dict):
            contexts, sources = row.get("contexts"), row.get("sources")
            if (
                isinstance(contexts, list)
                and isinstance(sources, list)
                and sources
                and len(sources) != len(contexts)
            ):
                issues.append(
                    Issue(
                        "value_out_of_range",
                        ("sources",),
                        f"has {len(sources)} items but contexts has {len(contexts)}; "
                        "sources must align with contexts",
                    )
                )
        return issues

    def to_record(
        self, row: Mapping[str, Any], source: SourceRef, sha256: str, version: str | None
    ) -> Record:
        """Build the canonical record of one valid row."""
        contexts = number_contexts(row["contexts"])
        rag = {key: row[key] for key in ENVELOPE_FIELDS if key in row}
        rag["contexts"] = contexts
        metadata = {**row["metadata"], "policy_id": self.policy_id, "rag": rag}
        rag_prompt = row.get("rag_prompt")
        # The dataset's own RAG instruction is the system turn the model sees (the RAG
        # policies add no system prompt of their own).
        messages = (
            (Message("system", rag_prompt),)
            if isinstance(rag_prompt, str) and rag_prompt.strip()
            else ()
        )
        return Record(
            id=row["task_id"],
            dataset=self.NAME,
            task_type="reference_qa",
            prompt=row[self.question_field],
            messages=messages,
            dataset_version=version,
            schema_version=self.NAME,
            context="\n\n".join(contexts),
            reference_answers=(row[self.reference_field],),
            metadata=metadata,
            source=source,
            sha256=sha256,
        )

    def scan(self, path: Path, context: LoadContext) -> FileScan:
        """Read one split file, streamed line by line, and check it against its manifest.

        Raises:
            DatasetRejected: no rows, every row invalid, an invalid manifest, or a row
                count that differs from the manifest's.

        """
        name = display_name(path)
        manifest_path = path.with_name(MANIFEST_NAME)
        manifest = read_manifest(manifest_path) if manifest_path.is_file() else None
        version = manifest["version"] if manifest else None
        hasher = hashlib.sha256()
        tally = EntryTally()
        index = 0
        with path.open("rb") as handle:
            for line_number, raw in enumerate(handle, start=1):
                hasher.update(raw)
                line = raw.removeprefix(UTF8_BOM) if line_number == 1 else raw
                line = line.strip(JSON_WHITESPACE)
                if not line:
                    continue
                yield tally.add(self._entry(line, path, index, line_number, context, version))
                index += 1
        tally.verdict(name)
        if manifest is not None:
            expected = _manifest_split(manifest, self.split, path)
            if expected is not None and expected["count"] != tally.total:
                raise DatasetRejected(
                    f"{name} has {tally.total} rows but {MANIFEST_NAME} says "
                    f"{expected['count']} for split {self.split!r}: the split changed after "
                    "it was built; rebuild it with `legaleval build-dataset` or remove the "
                    "manifest",
                    details={"rows": tally.total, "manifest_count": expected["count"]},
                )
        return DatasetInfo(
            path=str(path),
            format=self.NAME,
            dataset_id=self.NAME,
            dataset_version=version,
            schema_version=self.NAME,
            total_records=tally.total,
            accepted_records=tally.accepted,
            sha256=hasher.hexdigest(),
        )

    def _entry(
        self,
        line: bytes,
        path: Path,
        index: int,
        line_number: int,
        context: LoadContext,
        version: str | None,
    ) -> Entry:
        where = f"{display_name(path)} line {line_number}"
        source = SourceRef(str(path), index, line_number, self.NAME)
        row, unreadable = parse_json_line(line)
        if unreadable is not None:
            error = RecordError(
                index,
                None,
                "invalid_encoding",
                f"line is {unreadable} ({where})",
                f"records[{index}]",
            )
            return RejectedRecord(source, None, self.NAME, (error,))
        canonical = canonicalize(row)
        issues = self.row_issues(row)
        if not canonical.clean:
            issues.extend(scan_values(row))
        issues.extend(duplicate_key_issues(line, canonical.colons))
        record_id = usable_id(row.get("task_id")) if isinstance(row, dict) else None
        errors = issues_to_errors(issues, index, record_id, where)
        if record_id is not None:
            first = context.first_seen(record_id, f"{display_name(path)} line ", line_number)
            if first is not None:
                errors.append(
                    RecordError(
                        index,
                        record_id,
                        "duplicate_record_id",
                        f"task_id {show(record_id)} duplicates the row at {first} ({where})",
                        f"records[{index}].task_id",
                    )
                )
        if errors:
            return RejectedRecord(source, record_id, self.NAME, tuple(errors))
        assert isinstance(row, dict)
        return self.to_record(row, source, canonical.sha256, version)


RAG_QA = RagFormat("rag_qa", "qa", "question", "reference_answer", QA_POLICY)
"""``qa_pairs.jsonl``: question and reference answer."""
RAG_SUMMARIES = RagFormat(
    "rag_summaries", "summaries", "instruction", "reference_summary", SUMMARY_POLICY
)
"""``summaries.jsonl``: instruction and reference summary."""
