"""The plan of a run: settings, the loaded dataset, the response source and the items.

Every process of a run (a single pytest process, an xdist controller and its workers, a
service worker) builds the same items from the same inputs in the same order, so an
item's index means the same everywhere. Nothing here knows pytest.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
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
from pytest_legaleval.grading.policies import PolicyBook
from pytest_legaleval.grading.registry import default_registry
from pytest_legaleval.pipeline.grading_plan import GradingPlan
from pytest_legaleval.pipeline.responses import ResponseTable, load_responses
from pytest_legaleval.pipeline.selection import entry_key, in_shard, select, selected_count
from pytest_legaleval.pipeline.settings import Settings, generation_settings
from pytest_legaleval.records import EvalResult, Record
from pytest_legaleval.run.ids import new_request_id

# The run directory's pieces, the verdict reader and asyncio are imported where they are
# used: an xdist worker (and every unrelated pytest run in the environment) needs none.
if TYPE_CHECKING:
    from pytest_legaleval.grading.verdicts import VerdictFile
    from pytest_legaleval.metrics.prices import PriceTable
    from pytest_legaleval.pipeline.evaluator import LiveEvaluator
    from pytest_legaleval.run.manifest import RunConfig
    from pytest_legaleval.run.recorder import DatasetSource
    from pytest_legaleval.run.redaction import Redactor
    from pytest_legaleval.validation import RecordError

__all__ = ["ItemSpec", "RunPlan"]


@dataclass(frozen=True, slots=True)
class ItemSpec:
    """One test item: an entry (valid or rejected record) and the model that answers it."""

    entry: Record | RejectedRecord
    model: str
    item_id: str
    index: int
    """Position in :attr:`RunPlan.items` (the same in every process)."""

    def provenance(self) -> dict[str, Any]:
        """What the run recorder needs to know about a result's record, besides the result.

        It travels on the test report, so the recorder (on an xdist controller, which never
        collects) needs no copy of the dataset.
        """
        entry = self.entry
        assert isinstance(entry, Record)
        return {
            "index": self.index,
            "dataset_version": entry.dataset_version,
            "tags": list(entry.tags),
            "metadata": dict(entry.metadata),
            "source_index": entry.source.index,
        }

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


class RunPlan:
    """Everything one process knows about the run it takes part in."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.request_id = new_request_id()
        self.responses: ResponseTable | None = (
            load_responses(settings.responses) if settings.responses else None
        )
        self.conversation: ResponseTable | None = (
            load_responses(settings.conversation_from, "--conversation-from")
            if settings.conversation_from
            else None
        )
        self.live: LiveEvaluator | None = None
        self.graders = default_registry()
        """The graders of this run; the pytest layer lets users' hooks add theirs."""
        if settings.judgments:
            from pytest_legaleval.grading.replay import ReplayGrader

            replay = ReplayGrader(self.read_judgments, settings.judgments)
            for task_type in ("reference_qa", "rubric_qa", "criteria"):
                self.graders.register(replay, task_type=task_type)
        self.warn_policies = True
        """Warn about unknown policy ids (one xdist worker does, not every one)."""
        self._load: LoadResult | None = None
        self._streamed: tuple[list[DatasetInfo], int, int] | None = None
        """Datasets, records and selected records, from a full streaming pass."""
        self._rejection: DatasetRejected | None = None

    @property
    def models(self) -> tuple[str, ...]:
        """The models of this run: from the responses file, else ``--model``."""
        if self.responses is not None:
            return self.responses.models or ("prefilled",)
        return self.settings.model

    def load(self) -> LoadResult:
        """Load (once) and validate the datasets; re-raise a dataset-level rejection."""
        if self._rejection is not None:
            raise self._rejection
        if self._load is None:
            try:
                self._load = load_dataset(list(self.settings.dataset), self.settings.dataset_format)
            except DatasetRejected as exc:
                self._rejection = exc
                raise
        return self._load

    @property
    def loaded(self) -> LoadResult | None:
        """The dataset, if this process has loaded it (it collected the items)."""
        return self._load

    @property
    def rejected(self) -> DatasetRejected | None:
        """The dataset-level rejection, once ``load`` has failed."""
        return self._rejection

    @cached_property
    def selected(self) -> list[Record | RejectedRecord]:
        """Entries this run evaluates, in file order."""
        s = self.settings
        return select(
            self.load().entries, shard=s.shard, sample=s.sample, seed=s.seed, limit=s.limit
        )

    @cached_property
    def items(self) -> list[ItemSpec]:
        """One item per selected entry and model."""
        models = self.models
        several = len(models) > 1
        items: list[ItemSpec] = []
        for entry in self.selected:
            if isinstance(entry, Record):
                base = f"{entry.dataset}/{entry.id}"
            else:
                dataset = entry.dataset or Path(entry.source.path).stem
                where = entry.record_id or (
                    f"line{entry.source.line}"
                    if entry.source.line
                    else f"index{entry.source.index}"
                )
                base = f"{dataset}/{where}"
            for model in models:
                item_id = f"{base}-{model}" if several else base
                items.append(ItemSpec(entry, model, item_id, len(items)))
            if (
                self.warn_policies
                and isinstance(entry, Record)
                and entry.policy_id
                and entry.policy_id not in self.graders.policy_ids()
            ):
                self.policies.for_record(entry)  # warns (once per id) about unknown policies
        return items

    @cached_property
    def policies(self) -> PolicyBook:
        """The built-in policies and those of ``--policy-dir``."""
        return PolicyBook(self.settings.policy_dir)

    @cached_property
    def grading(self) -> GradingPlan:
        """The run's policies and graders (built-in, and those added with :attr:`graders`)."""
        return GradingPlan(self.policies, self.graders)

    def read_judgments(self) -> VerdictFile:
        """The ``--judgments`` file's verdicts, checked against the loaded records.

        Raises:
            ConfigError: the file cannot be read.

        """
        from pytest_legaleval.grading.verdicts import read_verdicts

        path = self.settings.judgments
        assert path is not None
        records = {r.id: r for r in self.load().records}
        try:
            with open(path, "rb") as handle:
                return read_verdicts(handle, records=records)
        except OSError as exc:
            raise ConfigError(f"--judgments {path}: cannot be read ({exc})") from None

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

        return Redactor.for_settings(self.settings.redact, self.key_env_vars())

    def secret_scrubber(self) -> Callable[[str], str]:
        """Secrets only (PII stays): for the response cache, local working state."""
        from pytest_legaleval.run.redaction import Redactor

        return Redactor.for_settings((), self.key_env_vars()).text

    def dataset_source(self) -> DatasetSource:
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
        loaded = self.loaded
        if loaded is not None:
            self.items  # noqa: B018 - a selection error is raised here, as in collection
            return DatasetSource(
                loaded.datasets, loaded.entries, len(loaded.records), len(self.selected)
            )
        stream = DatasetStream(list(s.dataset), s.dataset_format)
        if self._streamed is not None:  # counted by an earlier pass (the estimate's)
            datasets, records, selected = self._streamed
            return DatasetSource(datasets, stream, records, selected)
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

    def stream_selected(self) -> Iterator[Record | RejectedRecord]:
        """The selected entries, read from the files one at a time (none held in memory).

        Read to its end, the pass also keeps what :meth:`dataset_source` needs (the
        datasets and their counts), so a process that never loads the dataset (an xdist
        controller) reads the files for the run directory once more only to write them.
        ``--sample`` needs a count first: those runs read the files for it.
        """
        from pytest_legaleval.pipeline.estimate import plan_entries

        s = self.settings
        if s.sample is not None:
            yield from plan_entries(self, stream=True)
            return
        stream = DatasetStream(list(s.dataset), s.dataset_format)
        records = shard_count = 0
        for entry in stream:
            records += isinstance(entry, Record)
            if s.shard is not None and not in_shard(entry_key(entry), s.shard):
                continue
            shard_count += 1
            if s.limit is None or shard_count <= s.limit:
                yield entry
        self._streamed = (
            list(stream.datasets),
            records,
            selected_count(shard_count, sample=None, limit=s.limit),
        )

    def attachment_errors(self, record: Record) -> list[RecordError]:
        """The record's refused or missing attachments, under the roots the user allowed.

        One rule wherever an item can stop before its call: a pytest item's setup, the
        pytest-free pipeline, the cost estimate. Nothing is read.
        """
        if not record.attachments:
            return []
        from pytest_legaleval.grading.attachments import missing_attachments

        return missing_attachments(record, self.settings.attachments_root)

    def start_live(
        self, share: int = 1, position: int = 0
    ) -> LiveEvaluator:
        """Build this process's live evaluator (the engine ready) and keep it in ``live``.

        ``share`` processes split the run's limits; this one is number ``position``.
        """
        from pytest_legaleval.pipeline.evaluator import LiveEvaluator

        self.live = LiveEvaluator(
            self.settings,
            share=share,
            position=position,
            conversation=self.conversation,
            responses=self.responses,
            policies=self.policies,
            graders=self.graders,
            scrub=self.secret_scrubber(),
        )
        return self.live

    def evaluate(self, spec: ItemSpec) -> EvalResult:
        """The graded result of one item (pre-computed responses are graded here)."""
        record = spec.entry
        assert isinstance(record, Record), "rejected records never reach evaluation"
        if self.responses is not None and self.live is None:
            value = self.grading.prefilled(record, spec.model, self.responses, None)
            if inspect.isawaitable(value):  # a user's grader that awaits: on its own loop
                import asyncio

                return asyncio.run(_awaited(value))
            return value
        if self.live is None:
            raise RuntimeError("live evaluation was not started for this process")
        return self.live.evaluate(record, spec.model)


async def _awaited(value: Awaitable[EvalResult]) -> EvalResult:
    return await value
