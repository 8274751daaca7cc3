"""The canonical ``Record``: every input format is an adapter to this one type."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "TASK_TYPES",
    "Attachment",
    "Choice",
    "Criterion",
    "Message",
    "Record",
    "SourceRef",
    "TaskType",
]

TaskType = Literal["mcq", "reference_qa", "rubric_qa", "criteria"]
TASK_TYPES: tuple[str, ...] = ("mcq", "reference_qa", "rubric_qa", "criteria")


@dataclass(frozen=True, slots=True)
class Message:
    """One conversation turn."""

    role: str
    """``system``, ``user`` or ``assistant``."""
    content: str
    """Non-empty message text."""


@dataclass(frozen=True, slots=True)
class Choice:
    """One option of a multiple-choice question."""

    id: str
    """The label the model should answer with (``A``, ``B`` …)."""
    text: str
    """The option's text."""


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file that belongs to the record (read by the grading policy)."""

    path: str
    """Path relative to the dataset file."""
    kind: str | None = None
    """Type hint such as ``pdf`` or ``image``."""
    title: str | None = None
    """Human-readable label."""


@dataclass(frozen=True, slots=True)
class Criterion:
    """One rubric criterion; a negative weight is a penalty."""

    id: str
    """Criterion id, unique within the record."""
    title: str
    """What the answer must (or, with a negative weight, must not) do."""
    description: str | None = None
    """Longer guidance for the judge."""
    weight: float = 1.0
    """Weight in the rubric score; absent weights count as 1.0."""


@dataclass(frozen=True, slots=True)
class SourceRef:
    """Where a record came from, for messages and audit."""

    path: str
    """The dataset file."""
    index: int
    """Zero-based index of the record in the file (row or ``records[i]``)."""
    line: int | None = None
    """One-based line number for line-oriented formats."""
    format: str = ""
    """The format name that read it (``legal_eval_v1``, ``contract_v1`` …)."""


@dataclass(frozen=True, slots=True)
class Record:
    """One evaluation item, whatever file format it came from."""

    id: str
    """Stable record id, unique within a run."""
    dataset: str
    """Dataset name (``lexam``) or the contract's ``dataset_id``."""
    task_type: TaskType
    """How the record is graded."""
    prompt: str
    """The user-facing question or instruction."""
    dataset_version: str | None = None
    """The dataset's version, where the format carries one."""
    schema_version: str = ""
    """The input schema version (``legal_eval_v1``, ``1.0``)."""
    context: str = ""
    """Supporting text shown to the model with the prompt."""
    messages: tuple[Message, ...] = ()
    """Conversation turns, all of them, in order."""
    attachments: tuple[Attachment, ...] = ()
    """Files that belong to the record."""
    choices: tuple[Choice, ...] = ()
    """MCQ options."""
    correct_choice_ids: tuple[str, ...] = ()
    """MCQ correct option ids (a set, kept in file order)."""
    rubric: tuple[Criterion, ...] = ()
    """Rubric criteria for ``rubric_qa``."""
    reference_answers: tuple[str, ...] = ()
    """Reference answers for ``reference_qa`` (optional for ``rubric_qa``)."""
    required_criteria: tuple[str, ...] = ()
    """Contract criteria (``accuracy`` …) for ``criteria`` records."""
    tags: tuple[str, ...] = ()
    """Free labels; each becomes a pytest marker ``tag_<name>``."""
    expected: Mapping[str, Any] = field(default_factory=dict)
    """Expectations such as ``max_latency_ms``."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Provenance and dataset-specific attributes (``policy_id`` …)."""
    source: SourceRef = field(default_factory=lambda: SourceRef(path="", index=0))
    """Where the record was read."""
    sha256: str = ""
    """SHA-256 of the record's canonical JSON (sorted keys, NFC, no whitespace)."""

    @property
    def policy_id(self) -> str | None:
        """``metadata.policy_id`` when it is a string."""
        value = self.metadata.get("policy_id")
        return value if isinstance(value, str) else None
