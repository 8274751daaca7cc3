"""The model calls of a process: its items submitted up front, the engine stopped at the end.

An xdist worker knows its items before it runs them (round-robin, or the dead worker's
items it took over, see ``scheduling``); a single process runs all. Items pytest skips
before their fixtures are never submitted.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.pipeline.plan import ItemSpec
from pytest_legaleval.pytest import tricks
from pytest_legaleval.pytest.state import BATCH_STATS_KEY, RUNNER_KEY
from pytest_legaleval.records import Record

__all__ = ["evaluating", "own_specs"]


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


@contextmanager
def evaluating(session: pytest.Session) -> Iterator[None]:
    """The model calls of this process, around pytest's run loop.

    Before the first item: the engine starts (when the run calls a model) and every item
    this process will run is submitted at once (each item then waits only for its own
    result). Ctrl-C cancels what is pending; the engine stops when the loop ends.
    """
    runner = session.config.stash.get(RUNNER_KEY, None)
    if runner is not None and session.items and not session.config.option.collectonly:
        try:
            # The engine's import and start create many long-lived objects and no
            # garbage; so does bulk-creating the items' futures: no collections meanwhile.
            with tricks.collector_paused():
                runner.start()
                # What exists now lives until the process ends: frozen before the
                # collector is back, else its first pass is a full one over it all.
                tricks.freeze()
                runner.prefetch(own_specs(session))
        except ConfigError as exc:  # the engine starts here (its cache opens)
            runner.close()
            raise pytest.UsageError(str(exc)) from None
    from pytest_legaleval.pytest.interrupt import spool_finished, spooling_on_interrupt

    try:
        if runner is None:
            yield
        else:
            with spooling_on_interrupt(session, runner):
                yield
    except KeyboardInterrupt:
        if runner is not None:
            # What arrived is kept (pytest/interrupt.py); only what is pending is cancelled.
            spool_finished(session, runner)
            runner.cancel(timeout_s=0.5)
        raise
    finally:
        if runner is not None:
            stats = runner.stats()
            if "batches_created" in stats:
                session.config.stash[BATCH_STATS_KEY] = {
                    k: v for k, v in stats.items() if k.startswith("batch")
                }
            runner.close()
