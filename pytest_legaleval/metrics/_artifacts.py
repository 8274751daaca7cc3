"""The files of a run directory, as one table: an artifact is one row.

Each :class:`Artifact` says what a file is (``name``, ``schema``), who writes it
(``writer``: the recorder's step), whether every run has it (``presence``), how long the
service keeps it (``retention``), whether the service lists and serves it (``listed``) and
how ``legaleval merge`` combines the shards' copies (``merge``). The recorder (the only
writer of a run directory), ``merge``, ``verify``, the service's retention sweep and
listing, the HTML report and the run-file reader all read this table; the constants of
``run.names`` are views of it.

Every file name is spelled once, here: the upper-case constants (:data:`PREDICTIONS`,
:data:`METRICS_SUMMARY`, ...) are the built-in rows' names, and the code that opens, writes,
links or lists a run-directory file uses them or the table, never a literal of its own (a
test scans the package for one).

Adding an artifact is one module plus one :func:`register_artifact` call. A row with a
``derive`` function is *derived*: the recorder writes it at the end of the run from the
finished figures (:class:`FinishedRun`), in the same checksummed, read-only directory.

It sits in ``metrics`` (below ``run``), so the run-file reader can use it too; it imports
nothing of ours but the errors.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.records import PredictionLine

__all__ = [
    "ARTIFACT_TABLE",
    "ATTEMPT_LOGS",
    "CHECKSUMS",
    "FAILURES",
    "FLAKY_RECORDS",
    "HUMAN_LABELS_VALIDATION",
    "INCOMPLETE_RECORDS",
    "INPUT_DATASET",
    "METRICS_BY_SLICE",
    "METRICS_SUMMARY",
    "PREDICTIONS",
    "RECORD_VALIDATION",
    "REGRESSIONS",
    "RUN_MANIFEST",
    "TRANSCRIPTS",
    "Artifact",
    "FinishedRun",
    "Merge",
    "Presence",
    "Retention",
    "Writer",
    "artifact",
    "artifacts",
    "register_artifact",
    "unregister_artifact",
]

Writer = Literal["open", "record", "finalize", "gates"]
"""The recorder's step that writes it: when the directory opens, per item, at the end, or
when the gates compare with ``--baseline`` (through :meth:`RunRecorder.write_regressions`)."""
Presence = Literal["contract", "always", "optional"]
"""One of the Dataset Contract's eight files, in every run besides them, or in some runs."""
Retention = Literal["raw", "summary"]
"""What the service's retention sweep deletes first (``raw``) and keeps (``summary``)."""
Merge = Literal["first", "concat", "recompute", "none"]
"""How ``merge`` combines the shards' copies: the first shard's, every shard's lines in item
order, computed again from the merged lines, or not carried over."""

CHECKSUMS = "SHA256SUMS"
"""Written last, in ``sha256sum`` format (``<hex>  <name>``), over every artifact."""

# The built-in rows' names, one constant each, so that a misspelt name fails at import (or in
# mypy) rather than as a missing file at run time.
RUN_MANIFEST = "run_manifest.json"
INPUT_DATASET = "input_dataset.json"
RECORD_VALIDATION = "record_validation.jsonl"
PREDICTIONS = "predictions.jsonl"
ATTEMPT_LOGS = "attempt_logs.jsonl"
METRICS_SUMMARY = "metrics_summary.json"
METRICS_BY_SLICE = "metrics_by_slice.json"
FAILURES = "failures.jsonl"
TRANSCRIPTS = "transcripts.jsonl"
FLAKY_RECORDS = "flaky_records.jsonl"
INCOMPLETE_RECORDS = "incomplete_records.jsonl"
REGRESSIONS = "regressions.jsonl"
HUMAN_LABELS_VALIDATION = "human_labels_validation.jsonl"


@dataclass(frozen=True)
class FinishedRun:
    """What a derived artifact is computed from, at the end of a run.

    Attributes:
        run_id: the run's id.
        summary: ``metrics_summary.json``'s figures.
        by_slice: ``metrics_by_slice.json``'s figures.
        predictions: the ``predictions.jsonl`` lines (read again from the file).

    """

    run_id: str
    summary: Mapping[str, Any]
    by_slice: Mapping[str, Any]
    predictions: Callable[[], Iterable[PredictionLine]]


@dataclass(frozen=True)
class Artifact:
    """One file of a run directory.

    Attributes:
        name: the file name (``.jsonl``: one JSON document per line; ``.json``: one).
        description: what it holds, one line.
        schema: the ``schemas/<schema>.schema.json`` stem that validates it (each line of
            a JSONL file), or ``None``.
        writer: the recorder's step that writes it.
        presence: contract, always or optional.
        retention: raw or summary.
        listed: the service lists and serves it (``GET /v1/runs/{id}/artifacts``).
        merge: how ``legaleval merge`` combines it.
        derive: for a derived artifact (a ``.jsonl`` file), its lines from the finished
            run, or ``None`` when the run has none (no file then). Without ``derive`` the
            recorder writes it from its own step.

    """

    name: str
    description: str
    schema: str | None
    writer: Writer
    presence: Presence
    retention: Retention
    listed: bool = True
    merge: Merge = "none"
    derive: Callable[[FinishedRun], Iterable[Mapping[str, Any]] | None] | None = None

    @property
    def jsonl(self) -> bool:
        """Whether it holds one document per line."""
        return self.name.endswith(".jsonl")


ARTIFACT_TABLE: tuple[Artifact, ...] = (
    Artifact(RUN_MANIFEST, "the run's identity, settings, states and counts",
             "run_manifest", "finalize", "contract", "summary", merge="recompute"),
    Artifact(INPUT_DATASET, "the accepted records (or their files' hashes)",
             "input_dataset", "open", "contract", "raw", merge="first"),
    Artifact(RECORD_VALIDATION, "one line per input entry: accepted or why not",
             "record_validation", "open", "contract", "raw", merge="first"),
    Artifact(PREDICTIONS, "one line per item (and epoch): the verdict",
             "prediction", "record", "contract", "raw", merge="concat"),
    Artifact(ATTEMPT_LOGS, "one line per call to a model",
             "attempt_log", "record", "contract", "raw", merge="concat"),
    Artifact(METRICS_SUMMARY, "the run's figures", "metrics_summary", "finalize",
             "contract", "summary", merge="recompute"),
    Artifact(METRICS_BY_SLICE, "the figures per slice", "metrics_by_slice",
             "finalize", "contract", "summary", merge="recompute"),
    Artifact(FAILURES, "one line per item without a pass", "failure", "record",
             "contract", "raw", merge="concat"),
    Artifact(TRANSCRIPTS, "what each item sent and got back", None, "record",
             "always", "raw", merge="concat"),
    Artifact(FLAKY_RECORDS, "records whose epochs disagree (--epochs K > 1)", None,
             "finalize", "optional", "raw", merge="recompute"),
    Artifact(INCOMPLETE_RECORDS,
             "items without a verdict in some epoch, left out of pass@k (--epochs K > 1)",
             None, "finalize", "optional", "raw", merge="recompute"),
    Artifact(REGRESSIONS, "items worse than in the --baseline run", "regression",
             "gates", "optional", "raw"),
    Artifact(HUMAN_LABELS_VALIDATION, "--human-labels rows left out, and why", None,
             "finalize", "optional", "raw"),
)  # fmt: skip
"""The built-in artifacts, in the order the service lists them."""

_LOCK = threading.Lock()
_EXTRA: dict[str, Artifact] = {}


def register_artifact(row: Artifact) -> Artifact:
    """Add an artifact (returned). A derived one (``derive``) is written by every run.

    Raises:
        ConfigError: its name is taken, or it is not a ``.json``/``.jsonl`` file name.

    """
    if not row.name.endswith((".json", ".jsonl")) or "/" in row.name or row.name == CHECKSUMS:
        raise ConfigError(f"artifact {row.name!r}: a plain .json or .jsonl file name is needed")
    if row.derive is not None and not row.jsonl:
        raise ConfigError(f"artifact {row.name!r}: a derived artifact is a .jsonl file")
    with _LOCK:
        if any(a.name == row.name for a in ARTIFACT_TABLE) or row.name in _EXTRA:
            raise ConfigError(f"artifact {row.name!r} is already in the table")
        _EXTRA[row.name] = row
    return row


def unregister_artifact(name: str) -> None:
    """Remove a registered artifact (a test's); built-ins and unknown names are ignored."""
    with _LOCK:
        _EXTRA.pop(name, None)


def artifacts() -> tuple[Artifact, ...]:
    """Every artifact: the built-ins, then the registered ones."""
    with _LOCK:
        return (*ARTIFACT_TABLE, *_EXTRA.values())


def artifact(name: str) -> Artifact | None:
    """The row of ``name``, or ``None``."""
    return next((row for row in artifacts() if row.name == name), None)
