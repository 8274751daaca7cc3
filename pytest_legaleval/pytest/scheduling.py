"""Deterministic xdist scheduling, so every worker knows its items before it runs them.

Item ``i`` of the (identical) collection goes to worker ``i mod K``. A worker computes the
same assignment from its ``workerid`` and ``workercount`` and submits all of its model
calls to the engine at once, instead of learning its items one batch at a time.

The items themselves are handed out in windows of :data:`WINDOW`, refilled as the
controller processes their reports: a worker that runs ahead of the controller (answers
served from the cache, a fast endpoint) waits for it instead of piling up reports in the
controller's memory.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import pytest

__all__ = [
    "ORPHANS",
    "WINDOW",
    "RoundRobinScheduling",
    "own_indices",
    "skipped_up_front",
    "worker_position",
]

ORPHANS = "legaleval_orphans"
"""``workerinput`` key: the item indices a replacement worker takes over from a dead one."""

WINDOW = 256
"""Items a worker has been sent but not reported on, at most (refilled at half)."""


def own_indices(n_items: int, position: int, count: int) -> range:
    """Indices of the items that worker ``position`` of ``count`` runs."""
    return range(position, n_items, count)


def worker_position(workerid: str) -> int:
    """``gw3`` → 3."""
    return int(workerid.lstrip("gw") or 0)


class RoundRobinScheduling:
    """An xdist scheduler that hands each worker all of its items up front.

    A node that dies leaves its pending items to the worker xdist starts in its place:
    the replacement learns them in its ``workerinput`` (``ORPHANS``) and prefetches them
    all, so the run keeps its concurrency. Only when xdist will not replace the node (its
    restart limit is reached) do the surviving nodes take them, one call at a time.
    """

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        from xdist.workermanage import parse_tx_spec_config

        self.config = config
        self.numnodes = len(parse_tx_spec_config(config))
        self.node2collection: dict[Any, list[str]] = {}
        self.node2pending: dict[Any, list[int]] = {}
        self.node2queued: dict[Any, deque[int]] = {}
        """A node's own items not sent yet, in order."""
        self._started: set[Any] = set()
        self._orphans: list[int] = []
        self._reserved: dict[Any, list[int]] = {}
        """Orphans promised to a replacement node (in its workerinput), sent when it is up."""
        self.crashes = 0
        """Nodes that went down with an error (as xdist counts them for its restart limit)."""
        self._shut: set[Any] = set()
        self._initial_done = False
        self.collection: list[str] | None = None

    @property
    def nodes(self) -> list[Any]:
        """Every node known to the scheduler."""
        return list(self.node2pending)

    @property
    def collection_is_completed(self) -> bool:
        """Whether every node has sent its collection."""
        return len(self.node2collection) >= self.numnodes

    @property
    def tests_finished(self) -> bool:
        """Whether nothing is left to run (a node keeps one item while it runs it)."""
        if (
            not self.collection_is_completed
            or self._orphans
            or any(self._reserved.values())
            or any(self.node2queued.values())
        ):
            return False
        return all(len(pending) < 2 for pending in self.node2pending.values())

    @property
    def has_pending(self) -> bool:
        """Whether any item is still to be run."""
        return (
            bool(self._orphans)
            or any(self._reserved.values())
            or any(self.node2pending.values())
            or any(self.node2queued.values())
        )

    def add_node(self, node: Any) -> None:
        self.node2pending[node] = []
        self.node2queued[node] = deque()

    def add_node_collection(self, node: Any, collection: Sequence[str]) -> None:
        if self.collection is not None and list(collection) != self.collection:
            raise pytest.UsageError(
                f"worker {node.gateway.id} collected different items; legaleval needs an "
                "identical collection on every worker (same --dataset, --shard, --limit)"
            )
        if self.collection is None:
            self.collection = list(collection)
        # Every node shares the one list (50,000 node ids are megabytes).
        self.node2collection[node] = self.collection

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        pending = self.node2pending[node]
        pending.remove(item_index)
        self._refill(node)
        if self._orphans and node not in self._shut:
            self._send(node, self._orphans[:])
            self._orphans.clear()
        self._maybe_shutdown(node)

    def mark_test_pending(self, item: str) -> None:
        assert self.collection is not None
        self._orphans.append(self.collection.index(item))

    def remove_pending_tests_from_node(self, node: Any, indices: Sequence[int]) -> None:
        raise NotImplementedError  # xdist's scheduler protocol: only work stealing calls it

    def remove_node(self, node: Any) -> str | None:
        pending = self.node2pending.pop(node)
        pending.extend(self.node2queued.pop(node, ()))
        self._started.discard(node)
        if not pending:
            return None
        crashed = pending.pop(0)
        self._orphans.extend(pending)
        if not self._replacement_coming():
            for other in self._started:
                if other not in self._shut:
                    self._send(other, self._orphans[:])
                    self._orphans.clear()
                    break
        assert self.collection is not None
        return self.collection[crashed]

    def _replacement_coming(self) -> bool:
        """Whether xdist will start a node for the one that just went down with an error."""
        # xdist's documented default for --max-worker-restart: 4 x the workers of -n.
        given = self.config.option.maxworkerrestart
        workers = self.config.option.numprocesses
        limit = int(given) if given is not None else workers * 4 if workers else None
        return limit is None or self.crashes <= limit

    def reserve_orphans(self, node: Any) -> list[int]:
        """Promise the waiting orphans to ``node`` (a replacement being configured)."""
        if not self._orphans:
            return []
        taken, self._orphans = self._orphans, []
        self._reserved[node] = taken
        return taken

    def _refill(self, node: Any) -> None:
        """Send the node's next window of items once half of the last one is reported."""
        queued = self.node2queued.get(node)
        pending = self.node2pending[node]
        if queued and len(pending) <= WINDOW // 2:
            take = min(len(queued), WINDOW - len(pending))
            self._send(node, [queued.popleft() for _ in range(take)])

    def _send(self, node: Any, indices: list[int]) -> None:
        self.node2pending[node].extend(indices)
        node.send_runtest_some(indices)

    def _maybe_shutdown(self, node: Any) -> None:
        # A worker keeps its last item until it learns what follows: shut it down then.
        if (
            node not in self._shut
            and not self._orphans
            and not self.node2queued.get(node)
            and len(self.node2pending[node]) < 2
        ):
            node.shutdown()
            self._shut.add(node)

    def schedule(self) -> None:
        assert self.collection_is_completed and self.collection is not None
        if not self._initial_done:
            ordered = sorted(self.node2pending, key=lambda n: worker_position(n.gateway.id))
            for position, node in enumerate(ordered):
                self.node2queued[node].extend(
                    own_indices(len(self.collection), position, len(ordered))
                )
                self._refill(node)
                self._started.add(node)
            self._initial_done = True
            for node in ordered:
                self._maybe_shutdown(node)
            return
        for node in list(self.node2pending):  # a replacement for a node that died
            if node in self._started:
                continue
            self._started.add(node)
            promised = self._reserved.pop(node, [])
            if promised:
                self._send(node, promised)
            if self._orphans:
                self._send(node, self._orphans[:])
                self._orphans.clear()
            self._maybe_shutdown(node)


def skipped_up_front(item: pytest.Item, parents: dict[Any, bool]) -> bool:
    """Whether pytest skips the item before its fixtures: then no call is paid for it.

    A ``skip`` mark, or a ``skipif`` without a condition or with a true one; a string
    condition is not evaluated here (the item is prefetched, pytest decides). ``parents``
    caches the verdict of the marks of the item's parents (its module, class).
    """
    if any(_skips(mark) for mark in item.own_markers):
        return True
    parent = item.parent
    verdict = parents.get(parent)
    if verdict is None:
        chain = parent.listchain() if parent is not None else []
        verdict = parents[parent] = any(_skips(m) for node in chain for m in node.own_markers)
    return verdict


def _skips(mark: pytest.Mark) -> bool:
    if mark.name == "skip":
        return True
    if mark.name != "skipif":
        return False
    conditions = (mark.kwargs["condition"],) if "condition" in mark.kwargs else mark.args
    if not conditions:
        return True
    try:
        return any(not isinstance(c, str) and bool(c) for c in conditions)
    except Exception:  # a condition whose truth raises: pytest reports it, we prefetch
        return False
