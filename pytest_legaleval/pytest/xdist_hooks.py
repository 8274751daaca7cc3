"""Hooks that exist only under pytest-xdist, registered on the controller when it is loaded.

Our scheduler (``scheduling``), the hand-over of local model servers and of a dead worker's
items to its replacement, and the usage error of a run whose workers collected nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_legaleval.pytest import collection
from pytest_legaleval.pytest.session import LOCAL_KEY, LOCAL_URLS
from pytest_legaleval.pytest.state import SCHEDULER_KEY

__all__ = ["XdistHooks", "scheduler_of"]


def scheduler_of(config: pytest.Config) -> Any:
    """Our xdist scheduler, once the controller's session has made one.

    :meth:`XdistHooks.pytest_xdist_make_scheduler` (xdist's public hook) stashes it: xdist's
    own session object and its ``sched`` attribute are never reached.
    """
    from pytest_legaleval.pytest.scheduling import RoundRobinScheduling

    scheduler = config.stash.get(SCHEDULER_KEY, None)
    return scheduler if isinstance(scheduler, RoundRobinScheduling) else None


class XdistHooks:
    """xdist-only hooks, registered only when xdist is loaded."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.collection_errors = 0

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Count the workers' collection errors."""
        if report.failed:  # a worker's collection error: pytest's outcome, not ours
            self.collection_errors += 1

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """A worker with nothing to run had no record item (``collection``): a usage error."""
        config = self.config
        if not ids and not self.collection_errors and not config.option.collectonly:
            raise collection.no_record_items(config, None)

    def pytest_configure_node(self, node: Any) -> None:
        """Hand the controller's local model servers to the worker; workers start none.

        A node that replaces a dead one is told the items it takes over, to prefetch them.
        """
        servers = node.config.stash.get(LOCAL_KEY, None)
        if servers is not None:
            node.workerinput[LOCAL_URLS] = servers.urls()
        from pytest_legaleval.pytest.interrupt import SPOOL, spool_folder

        node.workerinput[SPOOL] = spool_folder(node.config)
        scheduler = scheduler_of(node.config)
        if scheduler is not None:  # nodes configured once scheduling started: replacements
            from pytest_legaleval.pytest.scheduling import ORPHANS

            # Even none: a replacement must not prefetch a live worker's share.
            node.workerinput[ORPHANS] = scheduler.reserve_orphans(node)

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """Count the nodes that went down with an error, as xdist does for its restarts."""
        scheduler = scheduler_of(node.config)
        if scheduler is not None and error is not None:
            scheduler.crashes += 1

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """Our round-robin scheduler, so that every worker can prefetch its items."""
        from pytest_legaleval.pytest.scheduling import RoundRobinScheduling

        scheduler = RoundRobinScheduling(config, log)
        config.stash[SCHEDULER_KEY] = scheduler
        return scheduler
