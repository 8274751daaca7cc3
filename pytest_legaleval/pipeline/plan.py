"""The plan of a run: built once from the settings and the dataset, then only read.

Every process of a run (a single pytest process, an xdist controller and its workers, a
service worker) builds the same plan from the same inputs, so an item's index means the
same everywhere. The plan holds the settings, the grading plan (policies and graders, the
users' included), the pre-computed responses and the dataset's items; what it derives
(prices, the redactor, the manifest's configuration) it computes on demand. The item
runner (``pipeline.runner``) evaluates its items; nothing here calls a model or knows
pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_legaleval.errors import ConfigError, DatasetRejected
from pytest_legaleval.formats import (
    DatasetInfo,
    DatasetStream,
    LoadResult,
    RejectedRecord,
    load_dataset,
)
from pytest_legaleval.grading._policies import PolicyBook
from pytest_legaleval.grading._registry import GraderRegistry, default_registry
from pytest_legaleval.pipeline.grading_plan import GradingPlan
from pytest_legaleval.pipeline.responses import ResponseTable, load_responses
from pytest_legaleval.pipeline.selection import entry_key, in_shard, select, selected_count
from pytest_legaleval.pipeline.settings import Settings, Shard, generation_settings
from pytest_legaleval.pipeline.sources import dataset_paths
from pytest_legaleval.records import Provenance, Record
from pytest_legaleval.run.ids import new_request_id

# The run directory's pieces and the verdict reader are imported where they are used: an
# xdist worker (and every unrelated pytest run in the environment) needs none of them.
if TYPE_CHECKING:
    from pytest_legaleval.grading._verdicts import VerdictFile
    from pytest_legaleval.metrics._prices import PriceTable
    from pytest_legaleval.run.manifest import RunConfig
    from pytest_legaleval.run.recorder import DatasetSource
    from pytest_legaleval.run.redaction import Redactor
    from pytest_legaleval.validation import RecordError

__all__ = ["DatasetPlan", "ItemSpec", "RunPlan"]


@dataclass(frozen=True, slots=True)
class ItemSpec:
    """One test item: an entry (valid or rejected record) and the model that answers it."""

    entry: Record | RejectedRecord
    model: str
    item_id: str
    index: int
    """Position in :attr:`DatasetPlan.items` (the same in every process)."""

    def provenance(self) -> Provenance:
        """What the run recorder needs to know about a result's record, besides the result.

        It travels on the test report, so the recorder (on an xdist controller, which never
        collects) needs no copy of the dataset.
        """
        entry = self.entry
        assert isinstance(entry, Record)
        return Provenance(
            index=self.index,
            dataset_version=entry.dataset_version,
            tags=tuple(entry.tags),
            metadata=dict(entry.metadata),
            source_index=entry.source.index,
        )

    def rejection(self) -> dict[str, Any]:
        """What the run recorder and the gates need to know about an invalid record's item."""
        entry = self.entry
        assert isinstance(entry, RejectedRecord)
        return {
            "index": self.index,
            "model": self.model,
            "record_id": entry.record_id,
            "dataset": entry.dataset,
            "source_stem": Path(entry.source.path).stem,
            "source_index": entry.source.index,
            "errors": [error.to_dict() for error in entry.errors],
        }


def _item_base(entry: Record | RejectedRecord) -> str:
    if isinstance(entry, Record):
        return f"{entry.dataset}/{entry.id}"
    dataset = entry.dataset or Path(entry.source.path).stem
    where = entry.record_id or (
        f"line{entry.source.line}" if entry.source.line else f"index{entry.source.index}"
    )
    return f"{dataset}/{where}"


class _Memo:
    """What a :class:`DatasetPlan` has read: private, written only by the plan's methods.

    Every value kept is immutable (tuples of frozen records), so nothing a caller gets
    from the plan can change what the plan answers next.
    """

    __slots__ = ("datasets", "entries", "records_read", "rejection", "streamed")

    def __init__(self) -> None:
        self.datasets: tuple[DatasetInfo, ...] | None = None
        """The loaded files (``None``: not loaded in this process)."""
        self.entries: tuple[Record | RejectedRecord, ...] = ()
        """The loaded entries (only the shard's with ``--shard``)."""
        self.records_read = 0
        """Valid records in the files (more than ``entries`` holds when only a shard is kept)."""
        self.rejection: DatasetRejected | None = None
        self.streamed: tuple[tuple[DatasetInfo, ...], int, int] | None = None
        """Datasets, records and selected records, from a full streaming pass."""


@dataclass(frozen=True, eq=False)
class DatasetPlan:
    """The dataset of a run: read once (or streamed), selected, and made into items.

    A process that collects items loads the files once and keeps them; one that never
    collects (an xdist controller) streams them for the run directory instead. Frozen: what
    it has read is a private memo of immutable values, written only by its own methods, and
    every call gives the same answer, so the plan that holds it does not change for its
    users; what it hands out (:attr:`selected`, :attr:`items`, :meth:`load`) are tuples or
    fresh copies.
    """

    settings: Settings
    models: tuple[str, ...]
    grading: GradingPlan
    warn_policies: bool = field(kw_only=True)
    _memo: _Memo = field(default_factory=_Memo, init=False, repr=False)

    def load(self) -> LoadResult:
        """Load (once) and validate the datasets; re-raise a dataset-level rejection.

        With ``--shard K/N`` only the shard's entries are kept (every file is still read
        and validated in full: duplicates, counts and the dataset-level verdict are the
        whole dataset's), so N shards of a million records each hold a million over N.
        Each call returns a fresh ``LoadResult``: changing it changes nothing here.
        """
        memo = self._memo
        if memo.rejection is not None:
            raise memo.rejection
        if memo.datasets is None:
            s = self.settings
            try:
                if s.shard is None:
                    paths = dataset_paths(s.dataset, s.protocol)
                    found = load_dataset(paths, s.dataset_format)
                    memo.records_read = sum(isinstance(e, Record) for e in found.entries)
                else:
                    found = self._load_shard(s.shard)
            except DatasetRejected as exc:
                memo.rejection = exc
                raise
            memo.entries = tuple(found.entries)
            memo.datasets = tuple(found.datasets)
        return LoadResult(datasets=list(memo.datasets), entries=list(memo.entries))

    def _load_shard(self, shard: Shard) -> LoadResult:
        s = self.settings
        stream = DatasetStream(dataset_paths(s.dataset, s.protocol), s.dataset_format)
        kept: list[Record | RejectedRecord] = []
        records = 0
        for entry in stream:
            records += isinstance(entry, Record)
            if in_shard(entry_key(entry), shard):
                kept.append(entry)
        self._memo.records_read = records
        return LoadResult(datasets=list(stream.datasets), entries=kept)

    @property
    def partial(self) -> bool:
        """The loaded entries are one shard's, not every entry of the files."""
        return self.settings.shard is not None

    def in_run_shard(self, record_id: str) -> bool:
        """Whether a record with this id belongs to the run's shard (always, without one)."""
        shard = self.settings.shard
        return shard is None or in_shard(record_id, shard)

    @property
    def loaded(self) -> LoadResult | None:
        """The dataset, if this process has loaded it (it collected the items); a copy."""
        return self.load() if self._memo.datasets is not None else None

    @property
    def rejected(self) -> DatasetRejected | None:
        """The dataset-level rejection, once ``load`` has failed."""
        return self._memo.rejection

    @cached_property
    def selected(self) -> tuple[Record | RejectedRecord, ...]:
        """Entries this run evaluates, in file order."""
        s = self.settings
        return tuple(
            select(self.load().entries, shard=s.shard, sample=s.sample, seed=s.seed, limit=s.limit)
        )

    @cached_property
    def items(self) -> tuple[ItemSpec, ...]:
        """One item per selected entry and model."""
        models = self.models
        several = len(models) > 1
        items: list[ItemSpec] = []
        known = self.grading.graders.policy_ids()
        for entry in self.selected:
            base = _item_base(entry)
            for model in models:
                item_id = f"{base}-{model}" if several else base
                items.append(ItemSpec(entry, model, item_id, len(items)))
            if (
                self.warn_policies
                and isinstance(entry, Record)
                and entry.policy_id
                and entry.policy_id not in known
            ):
                self.grading.policies.for_record(entry)  # warns once per unknown id
        return tuple(items)

    def source(self) -> DatasetSource:
        """The accepted datasets, their counts and their entries, for the run directory.

        A process that loaded the dataset (it collected the items) reuses it; one that did
        not (an xdist controller) streams the files twice: here for the verdict and the
        counts, then again (iterating the stream returned) to write them.

        Raises:
            DatasetRejected: a dataset-level failure (nothing is written then).
            ConfigError: an unreadable dataset or an impossible selection.

        """
        from pytest_legaleval.run.recorder import DatasetSource

        s = self.settings
        memo = self._memo
        if memo.datasets is not None:
            self.items  # noqa: B018 - a selection error is raised here, as in collection
            entries: Iterable[Record | RejectedRecord] = memo.entries
            if self.partial:  # the files' other entries were not kept: read them again
                entries = DatasetStream(dataset_paths(s.dataset, s.protocol), s.dataset_format)
            return DatasetSource(
                list(memo.datasets), entries, memo.records_read, len(self.selected)
            )
        stream = DatasetStream(dataset_paths(s.dataset, s.protocol), s.dataset_format)
        if memo.streamed is not None:  # counted by an earlier pass (the estimate's)
            datasets, records, selected = memo.streamed
            return DatasetSource(list(datasets), stream, records, selected)
        shard_count = records = 0
        for entry in stream:
            records += isinstance(entry, Record)
            if s.shard is None or in_shard(entry_key(entry), s.shard):
                shard_count += 1
        return DatasetSource(
            list(stream.datasets),
            stream,
            records,
            selected_count(shard_count, sample=s.sample, limit=s.limit),
        )

    def stream_selected(
        self, sampled: Callable[[], Iterator[Record | RejectedRecord]]
    ) -> Iterator[Record | RejectedRecord]:
        """The selected entries, read from the files one at a time (none held in memory).

        Read to its end, the pass also keeps what :meth:`source` needs (the datasets and
        their counts), so a process that never loads the dataset (an xdist controller)
        reads the files for the run directory once more only to write them. ``--sample``
        needs a count first: those runs read through ``sampled``.
        """
        s = self.settings
        if s.sample is not None:
            yield from sampled()
            return
        stream = DatasetStream(dataset_paths(s.dataset, s.protocol), s.dataset_format)
        records = shard_count = 0
        for entry in stream:
            records += isinstance(entry, Record)
            if s.shard is not None and not in_shard(entry_key(entry), s.shard):
                continue
            shard_count += 1
            if s.limit is None or shard_count <= s.limit:
                yield entry
        self._memo.streamed = (
            tuple(stream.datasets),
            records,
            selected_count(shard_count, sample=None, limit=s.limit),
        )


@dataclass(frozen=True)
class RunPlan:
    """Everything one process knows about the run it takes part in; never changed.

    Build it with :meth:`build`. ``grading`` holds the graders the users' hooks added;
    ``dataset`` loads and selects the records on first use.
    """

    settings: Settings
    """The resolved settings."""
    grading: GradingPlan
    """The run's policies and graders."""
    responses: ResponseTable | None
    """Pre-computed answers (``--responses``), else ``None``: the models are called."""
    conversation: ResponseTable | None
    """Earlier answers for ``--conversation-from``."""
    dataset: DatasetPlan
    """The dataset, its selection and its items."""
    request_id: str
    """The request id of the dataset's validation (the contract's ``request_id``)."""

    @classmethod
    def build(
        cls,
        settings: Settings,
        *,
        graders: GraderRegistry | None = None,
        request_id: str | None = None,
        warn_policies: bool = True,
    ) -> RunPlan:
        """The plan of ``settings``: responses read, policies loaded, graders registered.

        ``graders``: the registry the users' hooks filled (default: the built-in graders),
        copied, never changed; ``--judgments`` adds its replay grader to the plan's copy,
        which is frozen once built. ``warn_policies``: warn about unknown
        policy ids (one xdist worker does, not every one).

        Raises:
            ConfigError: an unreadable policy directory.
            ResponsesError: an unreadable responses file.

        """
        responses = load_responses(settings.responses) if settings.responses else None
        conversation = (
            load_responses(settings.conversation_from, "--conversation-from")
            if settings.conversation_from
            else None
        )
        # A copy: the caller's registry is never changed (--judgments adds its replay
        # grader to the plan's own), and the plan's is frozen once built.
        registry = (graders if graders is not None else default_registry()).copy()
        if settings.judgments:
            from pytest_legaleval.grading._replay import ReplayGrader

            path = settings.judgments
            replay = ReplayGrader(lambda: plan.read_judgments(), path)
            for task_type in ("reference_qa", "rubric_qa", "criteria"):
                registry.register(replay, task_type=task_type)
            from pytest_legaleval.grading._protocols import protocols

            for protocol in protocols():  # a protocol's own judge would otherwise be asked
                for grader, kind in protocol.graders():
                    if grader.needs_judge:
                        registry.register(replay, policy_id=protocol.id, task_type=kind)
        grading = GradingPlan(PolicyBook(settings.policy_dir), registry.copy(frozen=True))
        models = (responses.models or ("prefilled",)) if responses is not None else settings.model
        plan = cls(
            settings,
            grading,
            responses,
            conversation,
            DatasetPlan(settings, models, grading, warn_policies=warn_policies),
            request_id or new_request_id(),
        )
        return plan

    @property
    def models(self) -> tuple[str, ...]:
        """The models of this run: from the responses file, else ``--model``."""
        if self.responses is not None:
            return self.responses.models or ("prefilled",)
        return self.settings.model

    @property
    def policies(self) -> PolicyBook:
        """The run's policies."""
        return self.grading.policies

    @property
    def items(self) -> tuple[ItemSpec, ...]:
        """The run's items (loads the dataset on first use)."""
        return self.dataset.items

    def read_judgments(self) -> VerdictFile:
        """The ``--judgments`` file's verdicts, checked against the loaded records.

        Raises:
            ConfigError: the file cannot be read.

        """
        from pytest_legaleval.grading._verdicts import read_verdicts

        path = self.settings.judgments
        assert path is not None
        records = {r.id: r for r in self.dataset.load().records}
        try:
            with open(path, "rb") as handle:
                found = read_verdicts(handle, records=records)
        except OSError as exc:
            raise ConfigError(f"--judgments {path}: cannot be read ({exc})") from None
        if self.dataset.partial:  # another shard's verdicts are not this run's problem
            found.problems = [
                p
                for p in found.problems
                if not (
                    p.code == "unknown_record"
                    and p.record_id is not None
                    and not self.dataset.in_run_shard(p.record_id)
                )
            ]
        return found

    def attachment_errors(self, record: Record) -> list[RecordError]:
        """The record's refused or missing attachments, under the roots the user allowed.

        One rule wherever an item can stop before its call: the item runner, the cost
        estimate. Nothing is read.
        """
        if not record.attachments:
            return []
        from pytest_legaleval.grading._attachments import missing_attachments

        return missing_attachments(record, self.settings.attachments_root)

    # -- what the run directory needs ---------------------------------------------------

    def run_config(self, run_id: str) -> RunConfig:
        """What the run directory records about this run's configuration."""
        from pytest_legaleval.run.manifest import RunConfig

        s = self.settings
        return RunConfig(
            run_dir=s.run_dir,
            run_id=run_id,
            request_id=self.request_id,
            models=self.models,
            configuration=s.public_dict(),
            generation_settings={m: generation_settings(s, m) for m in self.models},
            response_source="prefilled" if s.responses else "live",
            responses_path=s.responses,
            selection={
                "shard": str(s.shard) if s.shard else None,
                "sample": s.sample,
                "seed": s.seed,
                "limit": s.limit,
            },
            redact=s.redact,
            slice_by=s.slice_by,
            seed=s.seed,
            epochs=s.epochs,
            epoch_reducer=s.epoch_reducer,
            cluster_by=s.cluster_by,
            judge_epochs=s.judge_epochs,
            judge_models=s.judge_model,
        )

    def prices(self) -> PriceTable:
        """The price table: ``--price-table``, else ``pricing:`` in the YAML, else built in.

        Raises:
            ConfigError: an unreadable or malformed table.

        """
        from pytest_legaleval.pipeline.estimate import run_prices

        return run_prices(self.settings)

    def key_env_vars(self) -> list[str]:
        """The environment variables that hold this run's API keys (presets' included)."""
        from pytest_legaleval.engine.routing import key_env_vars

        return key_env_vars(self.settings)

    def redactor(self) -> Redactor:
        """What every output of this run meant to be read or shared is scrubbed with."""
        from pytest_legaleval.run.redaction import Redactor

        return Redactor.for_settings(
            self.settings.redact, self.key_env_vars(), urls=self.endpoint_urls()
        )

    def endpoint_urls(self) -> list[str]:
        """The base URLs this run may call (their credentials are redacted everywhere)."""
        from pytest_legaleval.engine.routing import endpoint_urls

        return endpoint_urls(self.settings)

    def secret_scrubber(self) -> Callable[[str], str]:
        """Secrets only (PII stays): for the response cache, local working state."""
        from pytest_legaleval.run.redaction import Redactor

        return Redactor.for_settings((), self.key_env_vars(), urls=self.endpoint_urls()).text

    def dataset_source(self) -> DatasetSource:
        """The run directory's view of the dataset (see :meth:`DatasetPlan.source`)."""
        return self.dataset.source()

    def stream_selected(self) -> Iterator[Record | RejectedRecord]:
        """The selected entries, streamed (see :meth:`DatasetPlan.stream_selected`)."""
        from pytest_legaleval.pipeline.estimate import plan_entries

        return self.dataset.stream_selected(lambda: plan_entries(self, stream=True))
