"""The values a run is made of: the canonical ``Record`` and an item's ``EvalResult``.

Every input format is an adapter to ``Record``; every grader's work ends in one
``EvalResult``, built once and never changed, which the run directory writes as a
``predictions.jsonl`` line. Frozen dataclasses, no pytest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypedDict

__all__ = [
    "TASK_TYPES",
    "Attachment",
    "Choice",
    "Criterion",
    "EvalResult",
    "JudgeSummary",
    "JudgeVerdict",
    "Message",
    "Outcome",
    "PredictionLine",
    "Provenance",
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


# -- results ---------------------------------------------------------------------------------

Outcome = Literal["passed", "failed", "skipped", "error"]
"""An item's verdict as a pytest outcome."""


def _shallow(value: Mapping[str, Any]) -> dict[str, Any]:
    """A dict copy of a mapping whose values are JSON-ready (the common case, cheap)."""
    if type(value) is dict and all(
        type(v) in _SCALARS or (type(v) is list and all(type(x) in _SCALARS for x in v))
        for v in value.values()
    ):
        return dict(value)
    return _plain(value)  # type: ignore[no-any-return]


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any) -> Any:
    """A JSON-safe copy: mappings become dicts, tuples lists (recursively)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


_PROVENANCE_KEYS = ("index", "dataset_version", "tags", "metadata", "source_index")


@dataclass(frozen=True, slots=True)
class Provenance(Mapping[str, Any]):
    """What the run recorder (and a user's result hook) know of a result's record.

    It travels with the result (on an xdist report, in the interrupt spool), so the
    recorder needs no copy of the dataset. Read it by attribute; it is also a read-only
    mapping of the same names (``record["tags"]``), as the dict it replaces was.
    """

    index: int
    """The item's index in the run's selection (one bit per item in the recorder)."""
    dataset_version: str | None
    tags: tuple[str, ...]
    metadata: Mapping[str, Any]
    source_index: int
    """The record's index in its dataset file."""

    def __getitem__(self, key: str) -> Any:
        if key not in _PROVENANCE_KEYS:
            raise KeyError(key)  # the Mapping protocol's own error for a missing key
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(_PROVENANCE_KEYS)

    def __len__(self) -> int:
        return len(_PROVENANCE_KEYS)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (the carrier's and the interrupt spool's ``record``)."""
        return {
            "index": self.index,
            "dataset_version": self.dataset_version,
            "tags": list(self.tags),
            "metadata": dict(self.metadata),
            "source_index": self.source_index,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Provenance:
        """Read :meth:`to_dict`'s form back."""
        return cls(
            index=int(data["index"]),
            dataset_version=data.get("dataset_version"),
            tags=tuple(data.get("tags") or ()),
            metadata=dict(data.get("metadata") or {}),
            source_index=int(data.get("source_index", 0)),
        )


@dataclass(frozen=True, slots=True)
class JudgeVerdict:
    """One judge model's verdict on one item (several judges: one verdict each)."""

    model: str
    """The judge model."""
    score: float | None
    """This judge's score in [0, 1]; ``None`` when it produced a judge error."""
    rationale: str = ""
    """The judge's reasons (reference answers; rubric reasons are per criterion)."""
    criteria: tuple[Mapping[str, Any], ...] = ()
    """Per criterion (rubric / criteria records): ``id``, ``met`` (bool) or ``rating``,
    ``score`` in [0, 1], ``rationale``; a criterion that failed has ``error`` and ``raw``."""
    error: str | None = None
    """Why this judge failed (``judge_error``), else ``None``."""
    raw: str | None = None
    """The raw reply that could not be parsed (kept for audit), else ``None``."""
    calls: int = 0
    """Judge calls made (re-asks included; cache hits count too)."""
    input_tokens: int | None = None
    """Input tokens over this judge's calls."""
    output_tokens: int | None = None
    """Output tokens over this judge's calls."""
    cached_input_tokens: int | None = None
    """Input tokens of these calls served from the provider's prompt cache."""
    batch_input_tokens: int | None = None
    """Input tokens of the calls answered through a Batch API (``--batch``)."""
    batch_output_tokens: int | None = None
    """Output tokens of the calls answered through a Batch API."""
    latency_ms: float | None = None
    """Latency summed over this judge's calls."""
    cached: bool = False
    """Every call of this judge was a cache hit (nothing paid this run)."""
    attempts: tuple[Mapping[str, Any], ...] = ()
    """Every network attempt of this judge's calls; cache hits make none."""
    judge_epoch: int = 0
    """Which judging of the answer this verdict is (``--judge-epochs``; 0 grades it)."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``predictions.jsonl``, the test report)."""
        return {
            "model": self.model,
            "score": self.score,
            "rationale": self.rationale,
            "criteria": _plain(self.criteria),
            "error": self.error,
            "raw": self.raw,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "batch_input_tokens": self.batch_input_tokens,
            "batch_output_tokens": self.batch_output_tokens,
            "latency_ms": self.latency_ms,
            "cached": self.cached,
            "attempts": _plain(self.attempts),
            "judge_epoch": self.judge_epoch,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgeVerdict:
        """Read :meth:`to_dict`'s form back."""
        return cls(
            model=str(data.get("model", "")),
            score=data.get("score"),
            rationale=str(data.get("rationale") or ""),
            criteria=tuple(data.get("criteria") or ()),
            error=data.get("error"),
            raw=data.get("raw"),
            calls=int(data.get("calls") or 0),
            input_tokens=data.get("input_tokens"),
            output_tokens=data.get("output_tokens"),
            cached_input_tokens=data.get("cached_input_tokens"),
            batch_input_tokens=data.get("batch_input_tokens"),
            batch_output_tokens=data.get("batch_output_tokens"),
            latency_ms=data.get("latency_ms"),
            cached=bool(data.get("cached")),
            attempts=tuple(data.get("attempts") or ()),
            judge_epoch=epoch if isinstance(epoch := data.get("judge_epoch"), int) else 0,
        )


@dataclass(frozen=True, slots=True)
class JudgeSummary:
    """Provenance and outcome of judging one item."""

    models: tuple[str, ...]
    """The judge models, in the order they were configured."""
    params: Mapping[str, Any]
    """``temperature``, ``max_tokens``, ``reasks``, structured-output modes."""
    template_sha256: str
    """sha256 of the judge template text (the policy's, with its scale)."""
    kind: str
    """``reference``, ``rubric`` or ``criteria``."""
    score: float | None
    """Mean of the judges' scores; ``None`` when a judge failed."""
    verdicts: tuple[JudgeVerdict, ...]
    """One verdict per judge model."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "models": list(self.models),
            "params": _plain(self.params),
            "template_sha256": self.template_sha256,
            "kind": self.kind,
            "score": self.score,
            "verdicts": [v.to_dict() for v in self.verdicts],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgeSummary:
        """Read :meth:`to_dict`'s form back."""
        return cls(
            models=tuple(data.get("models") or ()),
            params=dict(data.get("params") or {}),
            template_sha256=str(data.get("template_sha256") or ""),
            kind=str(data.get("kind") or ""),
            score=data.get("score"),
            verdicts=tuple(JudgeVerdict.from_dict(v) for v in data.get("verdicts") or ()),
        )


@dataclass(frozen=True, slots=True)
class EvalResult:
    """What one (record × model) item produced, built once by the item runner.

    Its fields are written once, here: :meth:`to_dict` and :meth:`from_dict` are derived
    from them. It travels as itself through the pipeline (the run recorder, the users'
    ``pytest_legaleval_result`` hook) and as :meth:`to_json` on the pytest report from an
    xdist worker to the controller, which writes it as a ``predictions.jsonl`` line (one
    per epoch with ``--epochs K``).
    """

    record_id: str
    """The record's id."""
    dataset: str
    """The record's dataset."""
    task_type: str
    """The record's task type."""
    model: str
    """The model (or responses-file label) that answered."""
    source: str
    """``live`` (generated now), ``prefilled`` (``--responses``) or ``none`` (never asked)."""
    outcome: Outcome
    """The verdict as a pytest outcome."""
    passed: bool | None
    """Whether the pass rule held; ``None`` without a verdict."""
    score: float | None
    """The grader's score in [0, 1]; ``None`` without one."""
    reason: str
    """A short machine-readable reason: ``correct``, ``wrong_answer``,
    ``no_answer_extracted``, ``missing_response``, ``needs_judge``, ``judge_error`` …"""
    explanation: str
    """The grader's explanation, for people."""
    response: str | None = None
    """The model's answer text."""
    grader: str = "none"
    """Who graded: ``mcq``, ``judge:rubric`` …, a user grader's name, or ``none``."""
    details: Mapping[str, Any] = field(default_factory=dict)
    """Grader-specific, JSON-safe details (chosen ids, criteria, lexical scores …)."""
    record_sha256: str = ""
    """The record's content hash."""
    latency_ms: float | None = None
    """Generation latency (the successful attempt's)."""
    input_tokens: int | None = None
    """Generation input tokens."""
    output_tokens: int | None = None
    """Generation output tokens."""
    total_tokens: int | None = None
    """Generation tokens in all."""
    first_attempt_at: str | None = None
    """When the first generation attempt started (UTC, ISO 8601)."""
    last_attempt_at: str | None = None
    """When the last generation attempt started."""
    attempts: tuple[Mapping[str, Any], ...] = ()
    """Every generation attempt (``attempt_logs.jsonl``)."""
    policy_id: str | None = None
    """The policy that prompted and graded the item; ``None`` if it was never prompted."""
    policy_sha256: str | None = None
    """sha256 of the policy's content."""
    judge: JudgeSummary | None = None
    """Judging provenance and verdicts; ``None`` for programmatic grading."""
    policy_version: int | None = None
    """The policy's revision (results written before policies had one: 1)."""
    scoring: str | None = None
    """The policy's rubric scoring rule (``minmax``, ``clipped``)."""
    scoring_version: int | None = None
    """The scoring rule's revision."""
    epoch: int = 0
    """Which sample of the item this is (0-based; ``--epochs K`` draws K)."""
    epochs: tuple[EvalResult, ...] = ()
    """With ``--epochs K > 1``, on the item's reduced result: the K results it was reduced
    from, in epoch order (each is a ``predictions.jsonl`` line of its own)."""
    transcript: Mapping[str, Any] | None = None
    """What was sent and what came back (``transcripts.jsonl``): the messages and
    parameters, the raw reply, the judge's prompts and replies. Not on the prediction line."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (every field, in declaration order)."""
        out: dict[str, Any] = {}
        for name in _RESULT_FIELDS:
            value = getattr(self, name)
            if name == "details":
                value = _shallow(value)
            elif name == "attempts":
                value = [dict(attempt) for attempt in value]
            elif name == "judge":
                value = value.to_dict() if value is not None else None
            elif name == "epochs":
                value = [epoch.to_dict() for epoch in value]
            elif name == "transcript":
                value = _plain(value) if value is not None else None
            out[name] = value
        return out

    def to_json(self) -> str:
        """:meth:`to_dict` as one JSON string (how a result crosses a process boundary)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> EvalResult:
        """Read :meth:`to_json`'s form back."""
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalResult:
        """Read :meth:`to_dict`'s form back (a report payload, a prediction line).

        A prediction line names the answer ``model_response`` and the dataset
        ``dataset_id`` as well; older lines lack the later fields (their defaults apply).
        """
        values: dict[str, Any] = {}
        for name in _RESULT_FIELDS:
            if name in data:
                values[name] = data[name]
        if "response" not in data and "model_response" in data:
            values["response"] = data["model_response"]
        values["record_id"] = str(data["record_id"])
        values["dataset"] = str(data.get("dataset") or data.get("dataset_id") or "")
        for name in ("task_type", "model", "reason", "explanation", "record_sha256"):
            values[name] = str(data.get(name) or "")
        values["source"] = str(data.get("source") or "none")
        values["outcome"] = data.get("outcome") or "error"
        values["grader"] = str(data.get("grader") or "none")
        values["details"] = dict(data.get("details") or {})
        values["attempts"] = tuple(data.get("attempts") or ())
        judge = data.get("judge")
        values["judge"] = JudgeSummary.from_dict(judge) if isinstance(judge, Mapping) else None
        epoch = data.get("epoch")
        values["epoch"] = epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else 0
        values["epochs"] = tuple(
            cls.from_dict(e) for e in data.get("epochs") or () if isinstance(e, Mapping)
        )
        transcript = data.get("transcript")
        values["transcript"] = transcript if isinstance(transcript, Mapping) else None
        return cls(**values)


_RESULT_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(EvalResult))


class PredictionLine(TypedDict, total=False):
    """One ``predictions.jsonl`` line, typed.

    What the writer (``run.artifacts``) builds and the recorder, the metrics and the gates
    read. The keys are those of ``schemas/prediction.schema.json`` (a test holds the two and the
    writer together). ``total=False``: a version-1 line (an older run directory) lacks the
    version-2 keys, and readers use ``.get`` for what a hand-edited file may lack.
    """

    artifact_version: int
    run_id: str
    item_id: str
    record_id: str
    dataset: str
    dataset_id: str
    dataset_version: str | None
    record_sha256: str
    task_type: str
    tags: list[str]
    metadata: dict[str, Any]
    model: str
    source: str
    model_response: str | None
    outcome: str
    passed: bool | None
    score: float | None
    reason: str
    explanation: str
    grader: str
    evaluator_scores: dict[str, Any]
    evaluator: dict[str, Any]
    generation_settings: dict[str, Any]
    details: dict[str, Any]
    judge: dict[str, Any] | None
    policy_id: str | None
    policy_sha256: str | None
    policy_version: int | None
    scoring: str | None
    scoring_version: int | None
    latency_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int | None
    first_attempt_at: str | None
    last_attempt_at: str | None
    attempts: list[dict[str, Any]]
    attempt_count: int
    failure_type: str | None
    test_outcome: str
    epoch: int
    """With ``--epochs K > 1``: which sample of the item the line is (0-based)."""

