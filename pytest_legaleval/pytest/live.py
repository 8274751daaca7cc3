"""The model calls of a process: its items submitted up front, the engine stopped at the end.

An xdist worker knows its items before it runs them (round-robin, or the dead worker's
items it took over, see ``scheduling``); a single process runs all. Items pytest skips
before their fixtures are never submitted.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.pipeline.plan import ItemSpec, RunPlan
from pytest_legaleval.pytest import tricks
from pytest_legaleval.pytest.state import STATE_KEY
from pytest_legaleval.records import Record

if TYPE_CHECKING:
    from pytest_legaleval.pipeline.evaluator import LiveEvaluator

__all__ = ["evaluating", "live_evaluator", "own_specs"]


def own_specs(session: pytest.Session) -> list[ItemSpec]:
    """The items this process will run, in order (an xdist worker: its round-robin share)."""
    from pytest_legaleval.pytest.scheduling import (
        ORPHANS,
        own_indices,
        skipped_up_front,
        worker_position,
    )

    items = session.items
    workerinput = getattr(session.config, "workerinput", None)
    if workerinput is not None:
        orphans = workerinput.get(ORPHANS)
        indices: Sequence[int] = (
            orphans
            if orphans is not None  # a replacement: the dead worker's items
            else own_indices(
                len(items),
                worker_position(workerinput["workerid"]),
                int(workerinput["workercount"]),
            )
        )
        items = [items[i] for i in indices if 0 <= i < len(items)]
    specs = []
    skipped_parents: dict[Any, bool] = {}
    for item in items:
        callspec = getattr(item, "callspec", None)
        spec = callspec.params.get("record") if callspec is not None else None
        if (
            isinstance(spec, ItemSpec)
            and isinstance(spec.entry, Record)
            and not skipped_up_front(item, skipped_parents)
        ):
            specs.append(spec)
    return specs


def live_evaluator(session: pytest.Session, state: RunPlan) -> LiveEvaluator:
    """The evaluator of this process: the SDK imported, its client built, the engine ready."""
    workerinput = getattr(session.config, "workerinput", None)
    share = int(workerinput["workercount"]) if workerinput else 1
    position = 0
    if workerinput:
        from pytest_legaleval.pytest.scheduling import worker_position

        # A worker that replaces a crashed one gets the next free number (gw2 of 2).
        position = worker_position(workerinput["workerid"]) % share
    # The SDK import creates many long-lived objects and no garbage: no collections.
    try:
        with tricks.collector_paused():
            live = state.start_live(share, position)
            # The SDK's modules and the collected items live until the process ends. Frozen
            # before the collector is back: else its first pass is a full one over them all.
            tricks.freeze()
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    return live


@contextmanager
def evaluating(session: pytest.Session) -> Iterator[None]:
    """The model calls of this process, around pytest's run loop.

    Before the first item: the evaluator is built and every item this process will run is
    submitted at once (each item then waits only for its own result). Ctrl-C cancels what is
    pending; the engine stops when the loop ends. Nothing happens for a run on pre-computed
    responses without a judge (graded where each item waits), or when nothing runs.
    """
    state = session.config.stash.get(STATE_KEY, None)
    live = None
    if (
        state is not None
        and (state.responses is None or state.settings.judge_model)
        and session.items
        and not session.config.option.collectonly
    ):
        live = live_evaluator(session, state)
        try:
            # Bulk-creating futures and jobs: no garbage, so no collections meanwhile.
            with tricks.collector_paused():
                live.prefetch(
                    [
                        (spec.entry, spec.model)
                        for spec in own_specs(session)
                        if isinstance(spec.entry, Record)
                    ]
                )
        except ConfigError as exc:  # the engine starts here (its cache opens)
            live.close()
            raise pytest.UsageError(str(exc)) from None
    try:
        yield
    except KeyboardInterrupt:
        if live is not None:
            live.cancel()
        raise
    finally:
        if live is not None:
            live.close()
