"""The run driver: a plan's items evaluated by the item runner and recorded, start to end.

:class:`RunSession` is one run's recording: the run directory opened once the dataset is
accepted, each item's result recorded as it arrives, the items left without one named at
the end (skipped, lost, cancelled), the directory finalized. A pytest session feeds it from
its hooks (``pytest/recorder_plugin.py``: each test report is one item); the HTTP service
drives a whole run with :func:`run_evaluation`, which walks the items itself. Both use the
same :class:`~pytest_legaleval.pipeline.runner.ItemRunner` to evaluate, so a pytest session
and the service write the same artifacts for the same inputs.

:func:`run_evaluation` can also continue a run that a crash cut short (:class:`Resume`):
the items the crashed process had already recorded are recorded again from its
``predictions.jsonl`` lines without any call, the others are evaluated (the response cache
answers what was already paid for) or, when that is not allowed, recorded as
``evaluation_error``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import DatasetRejected
from pytest_legaleval.pipeline.plan import ItemSpec, RunPlan
from pytest_legaleval.pipeline.results import cancelled_result, unfinished_result
from pytest_legaleval.pipeline.runner import ItemRunner
from pytest_legaleval.pipeline.settings import Settings
from pytest_legaleval.records import EvalResult, Record
from pytest_legaleval.run.recorder import DENOMINATORS, ResultListener, RunRecorder

__all__ = [
    "ProgressCallback",
    "Resume",
    "RunOutcome",
    "RunSession",
    "StateCallback",
    "outcome_of",
    "run_evaluation",
]

_log = logging.getLogger(__name__)

StateCallback = Callable[[str, str], None]
"""Called with ``(state, at)`` for every state of §3.1 the run enters, terminal one included."""
ProgressCallback = Callable[[int, int], None]
"""Called with ``(items recorded, items in all)`` after every recorded item."""


def outcome_of(result: EvalResult) -> str:
    """The pytest outcome the default suite's ``evaluation.check()`` gives a result."""
    if result.outcome == "skipped":
        return "skipped"
    return "passed" if result.passed else "failed"


class RunSession:
    """One run's recording (see the module's docstring).

    Args:
        plan: the run's plan.
        run_id: the run's id; ``<run_dir>/<run_id>`` must not exist yet.
        listeners: called with every recorded result (the users' result hook).

    Raises:
        ConfigError: an unreadable price table or ``--human-labels`` file.

    """

    def __init__(
        self, plan: RunPlan, run_id: str, *, listeners: Sequence[ResultListener] = ()
    ) -> None:
        self.plan = plan
        self.run_id = run_id
        labels = None
        if plan.settings.human_labels:
            from pytest_legaleval.metrics._human_labels import read_human_labels

            labels = read_human_labels(plan.settings.human_labels)
        self.recorder = RunRecorder(
            plan.run_config(run_id),
            redactor=plan.redactor(),
            prices=plan.prices(),
            listeners=listeners,
            labels=labels,
        )

    def open(self) -> bool:
        """Create the run directory once the dataset is accepted (``False``: rejected)."""
        return self.recorder.open(self.plan.dataset_source)

    @property
    def opened(self) -> bool:
        """Whether the run directory exists."""
        return self.recorder.directory is not None

    def record(
        self, spec: ItemSpec, result: EvalResult, outcome: str, item_id: str | None = None
    ) -> None:
        """One item's result, with the outcome its test had (``item_id``: the node's)."""
        self.recorder.record(result, item_id or spec.item_id, outcome, spec.provenance())

    def record_invalid(self, spec: ItemSpec, item_id: str | None = None) -> None:
        """An invalid record's item."""
        self.recorder.record_invalid(spec.rejection(), item_id or spec.item_id)

    def is_recorded(self, spec: ItemSpec) -> bool:
        """Whether the item has its line (or needs none)."""
        return self.recorder.is_recorded(spec.index)

    def record_missing(
        self,
        specs: Iterable[ItemSpec],
        *,
        causes: Mapping[str, tuple[str, str]] = {},
        cancel: bool,
        item_ids: Mapping[str, str] | None = None,
        on_recorded: Callable[[], None] | None = None,
        invalid: bool = False,
    ) -> None:
        """Give every item of ``specs`` still without a line its line.

        ``causes`` (by item id): pytest's outcome and why, for an item that ended without
        a result (a skip, a fixture error, a crashed worker): an ``unfinished_result``.
        With ``cancel`` every other such item is ``cancelled`` (Ctrl-C, ``-x``, the
        service's cancel). ``item_ids`` maps an item id to the id its line is written
        under (a pytest node id); items absent from it are not part of this run (pytest
        deselected them) and stay without a line. ``invalid``: give the invalid records'
        items their lines too. ``on_recorded`` is told of each line written.
        """
        for spec in specs:
            if self.is_recorded(spec):
                continue
            if item_ids is not None and spec.item_id not in item_ids:
                continue
            written_as = item_ids[spec.item_id] if item_ids is not None else spec.item_id
            entry = spec.entry
            if not isinstance(entry, Record):
                if invalid:
                    self.record_invalid(spec, written_as)
                    if on_recorded is not None:
                        on_recorded()
                continue
            policy = self.plan.policies.for_record(entry)
            found = causes.get(spec.item_id)
            if found is not None:
                outcome, why = found
                result = unfinished_result(entry, spec.model, outcome, why, policy)
            elif cancel:
                outcome, result = "cancelled", cancelled_result(entry, spec.model, policy)
            else:
                continue
            self.record(spec, result, outcome, written_as)
            if on_recorded is not None:
                on_recorded()

    def finish(self, interrupted: bool) -> None:
        """Write the metrics and the final manifest; seal the run directory."""
        self.recorder.finalize(interrupted)


# -- the service's driver ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Resume:
    """What a run that continues an interrupted one knows from it."""

    finished: Mapping[str, Mapping[str, Any]]
    """The interrupted run's ``predictions.jsonl`` lines, by ``item_id``: recorded again
    as they are, with no call."""
    evaluate: bool = True
    """Evaluate the unfinished items now (the response cache answers the calls already
    made); ``False`` records them as ``evaluation_error`` instead."""
    reason: str = "the process running the evaluation stopped before this item finished"
    """Why an unfinished item is an ``evaluation_error`` (with ``evaluate=False``)."""


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """How a run ended."""

    run_id: str
    """The run's id."""
    status: str
    """The terminal state of §3.1, or ``rejected`` (a dataset-level failure: nothing was
    written, see :attr:`rejection`)."""
    run_path: Path | None
    """The run directory (``None`` when nothing was written)."""
    items: int = 0
    """Items of the run (records × models)."""
    denominators: Mapping[str, int] = field(default_factory=dict)
    """The §3.3 denominators of the finalized run."""
    run_error: str | None = None
    """Why the run failed outside its records, if it did."""
    rejection: DatasetRejected | None = None
    """The dataset-level rejection, for ``rejected``."""


class _Driven:
    """One service run's pieces and the bookkeeping between them."""

    def __init__(
        self,
        session: RunSession,
        on_state: StateCallback | None,
        on_progress: ProgressCallback | None,
        announced: int,
    ) -> None:
        self.session = session
        self.recorder = session.recorder
        self.on_state = on_state
        self.on_progress = on_progress
        self.runner: ItemRunner | None = None
        self.done = 0
        self._announced = announced

    def announce(self) -> None:
        """Tell ``on_state`` about the transitions the recorder noted since the last call."""
        transitions = self.recorder.transitions
        while self._announced < len(transitions):
            step = transitions[self._announced]
            self._announced += 1
            if self.on_state is not None:
                self.on_state(step["state"], step["at"])

    def recorded(self) -> None:
        self.done += 1
        self.announce()
        if self.on_progress is not None:
            self.on_progress(self.done, self.recorder.items)


def _evaluate_all(
    run: _Driven, specs: Sequence[ItemSpec], cancel: threading.Event, resume: Resume | None
) -> int:
    """Record every item in order; return the index of the first one left unrecorded."""
    session = run.session
    for position, spec in enumerate(specs):
        if cancel.is_set():
            return position
        entry = spec.entry
        if not isinstance(entry, Record):
            session.record_invalid(spec)
            run.recorded()
            continue
        if resume is not None and spec.item_id in resume.finished:
            line = resume.finished[spec.item_id]
            result = EvalResult.from_dict(line)
            session.record(spec, result, str(line.get("test_outcome") or outcome_of(result)))
            run.recorded()
            continue
        policy = session.plan.policies.for_record(entry)
        if resume is not None and not resume.evaluate:
            lost = unfinished_result(entry, spec.model, "failed", resume.reason, policy)
            session.record(spec, lost, "failed")
            run.recorded()
            continue
        assert run.runner is not None
        try:
            result = run.runner.evaluate(spec)
        except Exception as exc:
            # As in a pytest session, where the item's fixture errors: the item is an
            # evaluation_error and the run goes on (§3.3: records fail in isolation).
            _log.exception("item %s failed", spec.item_id)
            why = (str(exc).splitlines() or [""])[0]
            message = f"{type(exc).__name__}: {why}"[:500]
            result = unfinished_result(entry, spec.model, "failed", message, policy)
        if cancel.is_set():
            # Cancelled while this item waited: like an interrupted test, it is cancelled.
            return position
        session.record(spec, result, outcome_of(result))
        run.recorded()
    return len(specs)


def _watch_cancel(cancel: threading.Event, run: _Driven, finished: threading.Event) -> None:
    """Cancel the pending calls as soon as ``cancel`` is set, so no item waits on one."""
    while not finished.is_set():
        if cancel.wait(0.05):
            if run.runner is not None:
                run.runner.cancel()
            return


def run_evaluation(
    settings: Settings,
    run_id: str,
    *,
    cancel: threading.Event | None = None,
    on_state: StateCallback | None = None,
    on_progress: ProgressCallback | None = None,
    request_id: str | None = None,
    history: Sequence[Mapping[str, str]] = (),
    resume: Resume | None = None,
    share: int = 1,
    position: int = 0,
    batch_state: Any = None,
) -> RunOutcome:
    """Evaluate one run from its settings and write its run directory.

    Args:
        settings: the run's settings (``settings.dataset``, the response source, limits).
        run_id: the run's id; ``<settings.run_dir>/<run_id>`` must not exist yet.
        cancel: set it to cancel the run (§3.1): pending calls are cancelled, items without
            a result are recorded ``cancelled`` and the run is finalized ``cancelled``.
        on_state: told every state the run enters (``validating``, ``running``, …, and the
            terminal one), with its time.
        on_progress: told ``(recorded, total)`` after every recorded item.
        request_id: the request id of the dataset's validation (the contract's
            ``request_id``), recorded in the manifest; default: a new one.
        history: the states the run went through before this call (``{"state", "at"}``,
            e.g. ``queued`` when it was uploaded, and an interrupted attempt's): they head
            the manifest's transitions, so ``created_at`` is when the run was queued.
            Default: queued now. ``on_state`` hears only of the states after them.
        resume: continue an interrupted run (see :class:`Resume`).
        share: processes that evaluate runs at once and share the limits (``--concurrency``,
            ``--rpm``, ``--tpm`` are totals), as xdist workers do.
        position: this process's place among them (0-based).
        batch_state: where ``--batch`` keeps its batches (an
            ``engine.batch_store.BatchState``, e.g. the service's database shared by its
            replicas); default: tables in the response cache's file.

    Returns:
        How the run ended. A dataset-level rejection is an outcome (``rejected``) with
        nothing written; a failure outside the records (storage, an unexpected error)
        finalizes the run ``failed`` with :attr:`RunOutcome.run_error` saying why.

    Raises:
        ConfigError: an impossible configuration (a bad price table, an engine that cannot
            start, a missing API key), found before anything is written.
        KeyboardInterrupt: re-raised after the run was finalized ``cancelled``.

    """
    cancel = cancel if cancel is not None else threading.Event()
    plan = RunPlan.build(settings, request_id=request_id)
    session = RunSession(plan, run_id)
    recorder = session.recorder
    if history:
        recorder.resume_history(history)
    run = _Driven(session, on_state, on_progress, len(history))
    run.announce()
    try:
        specs = plan.items
    except DatasetRejected as exc:
        return RunOutcome(run_id, "rejected", None, rejection=exc)
    todo = [
        spec
        for spec in specs
        if isinstance(spec.entry, Record)
        and (resume is None or (resume.evaluate and spec.item_id not in resume.finished))
    ]
    run.runner = runner = ItemRunner(plan, share=share, position=position, batch_state=batch_state)
    if todo and not cancel.is_set():  # a run cancelled before it started makes no call
        try:
            runner.start()
            runner.prefetch(todo)
        except BaseException:
            runner.close()
            raise
    try:
        opened = session.open()
    except BaseException:
        runner.cancel()
        runner.close()
        raise
    if not opened:  # the dataset changed or vanished since it was planned
        runner.cancel()
        runner.close()
        if plan.dataset.rejected is not None:
            return RunOutcome(run_id, "rejected", None, rejection=plan.dataset.rejected)
        return RunOutcome(run_id, "failed", None, run_error="the dataset could not be read again")
    run.announce()
    interrupted = False
    finished = threading.Event()
    watcher = threading.Thread(
        target=_watch_cancel, args=(cancel, run, finished), name="legaleval-cancel", daemon=True
    )
    watcher.start()
    try:
        interrupted = _evaluate_all(run, specs, cancel, resume) < len(specs)
    except KeyboardInterrupt:
        interrupted = True
        cancel.set()
        raise
    except Exception as exc:
        _log.exception("run %s failed", run_id)
        recorder.fail(f"{type(exc).__name__}: {exc}")
    finally:
        finished.set()
        if interrupted:
            runner.cancel()
        stats = runner.stats()
        if "batches_created" in stats:  # --batch: the manifest says what is still pending
            recorder.note_batches({k: v for k, v in stats.items() if k.startswith("batch")})
        runner.close()
        if interrupted and recorder.run_error is None:
            session.record_missing(specs, cancel=True, on_recorded=run.recorded, invalid=True)
        session.finish(interrupted)
        run.announce()
    final = recorder.final[0] if recorder.final else {}
    return RunOutcome(
        run_id,
        recorder.status or "failed",
        Path(recorder.directory.path) if recorder.directory is not None else None,
        items=len(specs),
        denominators={key: int(final.get(key) or 0) for key in DENOMINATORS},
        run_error=recorder.run_error,
    )
