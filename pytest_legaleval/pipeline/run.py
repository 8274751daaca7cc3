"""One whole run without pytest: plan, prefetch, evaluate, record, finalize.

:func:`run_evaluation` drives exactly the pieces a ``pytest suites/`` session drives through
its hooks — :class:`~pytest_legaleval.pipeline.plan.RunPlan` (the dataset and the items),
:class:`~pytest_legaleval.pipeline.evaluator.LiveEvaluator` (every item submitted up
front, each waited for in turn) and :class:`~pytest_legaleval.run.recorder.RunRecorder`
(the run directory) — in the order the hooks do, so the HTTP service and a pytest session
write the same artifacts for the same inputs. What pytest adds (test items, reports,
xdist, the terminal) is the only difference.

Per item, as the suite's ``record`` and ``evaluation`` fixtures do: an invalid record is
recorded with :meth:`RunRecorder.record_invalid`; a valid record whose attachment files are
missing is a ``record_error_result`` (nothing is sent); every other item is evaluated and
recorded with the test outcome ``evaluation.check()`` would give, and an item whose
evaluation raises is an ``evaluation_error`` (as pytest records an item whose fixture
errored) while the run goes on. On cancellation the
pending calls are cancelled and every item without a result is recorded ``cancelled``;
the run directory is finalized either way.

A run can also continue one that a crash cut short (:class:`Resume`): the items the
crashed process had already recorded are recorded again from its ``predictions.jsonl``
lines without any call, the others are evaluated (the response cache answers what was
already paid for) or, when that is not allowed, recorded as ``evaluation_error``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_legaleval.errors import DatasetRejected
from pytest_legaleval.grading.policies import Policy
from pytest_legaleval.pipeline.plan import ItemSpec, RunPlan
from pytest_legaleval.pipeline.results import (
    cancelled_result,
    record_error_result,
    unfinished_result,
)
from pytest_legaleval.pipeline.settings import Settings
from pytest_legaleval.records import EvalResult, Record
from pytest_legaleval.run.recorder import DENOMINATORS, RunRecorder

if TYPE_CHECKING:
    from pytest_legaleval.pipeline.evaluator import LiveEvaluator

__all__ = ["ProgressCallback", "Resume", "RunOutcome", "StateCallback", "run_evaluation"]

_log = logging.getLogger(__name__)

StateCallback = Callable[[str, str], None]
"""Called with ``(state, at)`` for every state of §3.1 the run enters, terminal one included."""
ProgressCallback = Callable[[int, int], None]
"""Called with ``(items recorded, items in all)`` after every recorded item."""


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


def _test_outcome(result: EvalResult) -> str:
    """The outcome the default suite's ``evaluation.check()`` gives a result."""
    if result.outcome == "skipped":
        return "skipped"
    return "passed" if result.passed else "failed"


class _Run:
    """One run's pieces and the bookkeeping between them."""

    def __init__(
        self,
        plan: RunPlan,
        recorder: RunRecorder,
        on_state: StateCallback | None,
        on_progress: ProgressCallback | None,
        announced: int,
    ) -> None:
        self.plan = plan
        self.recorder = recorder
        self.on_state = on_state
        self.on_progress = on_progress
        self.live: LiveEvaluator | None = None
        self.done = 0
        self._announced = announced
        """Transitions already known to ``on_state`` (the history the run came with)."""

    def announce(self) -> None:
        """Tell ``on_state`` about the transitions the recorder noted since the last call."""
        transitions = self.recorder.transitions
        while self._announced < len(transitions):
            step = transitions[self._announced]
            self._announced += 1
            if self.on_state is not None:
                self.on_state(step["state"], step["at"])

    def policy(self, record: Record) -> Policy:
        return self.plan.policies.for_record(record)

    def record(self, spec: ItemSpec, result: EvalResult | Mapping[str, Any], outcome: str) -> None:
        data = result.to_dict() if isinstance(result, EvalResult) else dict(result)
        self.recorder.record(data, spec.item_id, outcome, spec.provenance())
        self.progress()

    def progress(self) -> None:
        self.done += 1
        self.announce()
        if self.on_progress is not None:
            self.on_progress(self.done, self.recorder.items)


def _start_live(
    run: _Run, specs: Sequence[ItemSpec], resume: Resume | None, share: int, position: int
) -> None:
    """Start the engine and submit every item still to evaluate, as the run loop starts."""
    plan = run.plan
    settings = plan.settings
    todo = [
        (spec.entry, spec.model)
        for spec in specs
        if isinstance(spec.entry, Record)
        and (resume is None or (resume.evaluate and spec.item_id not in resume.finished))
    ]
    if not todo or (plan.responses is not None and not settings.judge_model):
        return  # pre-computed answers graded without the engine: RunPlan.evaluate does it
    live = run.live = plan.start_live(share, position)
    try:
        live.prefetch(todo)
    except BaseException:
        live.close()
        raise


def _watch_cancel(cancel: threading.Event, run: _Run, finished: threading.Event) -> None:
    """Cancel the pending calls as soon as ``cancel`` is set, so no item waits on one."""
    while not finished.is_set():
        if cancel.wait(0.05):
            live = run.live
            if live is not None:
                live.cancel()
            return


def _evaluate_all(
    run: _Run, specs: Sequence[ItemSpec], cancel: threading.Event, resume: Resume | None
) -> int:
    """Record every item in order; return the index of the first one left unrecorded."""
    for position, spec in enumerate(specs):
        if cancel.is_set():
            return position
        entry = spec.entry
        if not isinstance(entry, Record):
            run.recorder.record_invalid(spec.rejection(), spec.item_id)
            run.progress()
            continue
        if resume is not None and spec.item_id in resume.finished:
            line = resume.finished[spec.item_id]
            result = EvalResult.from_dict(line)
            run.record(spec, result, str(line.get("test_outcome") or _test_outcome(result)))
            continue
        if resume is not None and not resume.evaluate:
            lost = unfinished_result(entry, spec.model, "failed", resume.reason, run.policy(entry))
            run.record(spec, lost, "failed")
            continue
        missing = [error.to_dict() for error in run.plan.attachment_errors(entry)]
        if missing:
            run.record(
                spec, record_error_result(entry, spec.model, missing, run.policy(entry)), "failed"
            )
            continue
        try:
            result = run.plan.evaluate(spec)
        except Exception as exc:
            # As in a pytest session, where the item's fixture errors: the item is an
            # evaluation_error and the run goes on (§3.3: records fail in isolation).
            _log.exception("item %s failed", spec.item_id)
            why = (str(exc).splitlines() or [""])[0]
            result = unfinished_result(
                entry, spec.model, "failed", f"{type(exc).__name__}: {why}"[:500], run.policy(entry)
            )
        if cancel.is_set():
            # Cancelled while this item waited: like an interrupted test, it is cancelled.
            return position
        run.record(spec, result, _test_outcome(result))
    return len(specs)


def _record_cancelled(run: _Run, specs: Sequence[ItemSpec]) -> None:
    """Every item left without a line: invalid records as such, the others ``cancelled``."""
    for spec in specs:
        if run.recorder.is_recorded(spec.index):
            continue
        entry = spec.entry
        if isinstance(entry, Record):
            run.record(spec, cancelled_result(entry, spec.model, run.policy(entry)), "cancelled")
        else:
            run.recorder.record_invalid(spec.rejection(), spec.item_id)
            run.progress()


def _close(live: LiveEvaluator | None, *, cancel_first: bool) -> None:
    if live is None:
        return
    if cancel_first:
        live.cancel()
    live.close()


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
    plan = RunPlan(settings)
    if request_id is not None:
        plan.request_id = request_id
    recorder = RunRecorder(plan.run_config(run_id), redactor=plan.redactor(), prices=plan.prices())
    if history:
        recorder.transitions = [{"state": step["state"], "at": step["at"]} for step in history]
    run = _Run(plan, recorder, on_state, on_progress, len(history))
    run.announce()
    try:
        specs = plan.items
    except DatasetRejected as exc:
        return RunOutcome(run_id, "rejected", None, rejection=exc)
    if not cancel.is_set():  # a run cancelled before it started makes no call
        _start_live(run, specs, resume, share, position)
    try:
        opened = recorder.open(plan.dataset_source)
    except BaseException:
        _close(run.live, cancel_first=True)
        raise
    if not opened:  # the dataset changed or vanished since it was planned
        _close(run.live, cancel_first=True)
        if plan.rejected is not None:
            return RunOutcome(run_id, "rejected", None, rejection=plan.rejected)
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
        recorder.run_error = f"{type(exc).__name__}: {exc}"
    finally:
        finished.set()
        _close(run.live, cancel_first=interrupted)
        if interrupted and recorder.run_error is None:
            _record_cancelled(run, specs)
        recorder.finalize(interrupted)
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
