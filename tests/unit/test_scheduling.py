"""The round-robin xdist scheduler: windows of items, refills, shutdown and crashes."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pytest_legaleval.pytest.scheduling import WINDOW, RoundRobinScheduling, own_indices


class FakeNode:
    """What the scheduler uses of xdist's WorkerController."""

    def __init__(self, workerid: str) -> None:
        self.gateway = SimpleNamespace(id=workerid)
        self.sent: list[int] = []
        self.shut = False

    def send_runtest_some(self, indices: list[int]) -> None:
        assert not self.shut, "sent items after shutdown"
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shut = True


def _scheduler(
    nodes: int, items: int, max_restarts: int = 0
) -> tuple[RoundRobinScheduling, list[FakeNode]]:
    config: Any = SimpleNamespace(
        getvalue=lambda name: [f"{nodes}*popen"],
        option=SimpleNamespace(maxworkerrestart=str(max_restarts), numprocesses=nodes),
    )
    sched = RoundRobinScheduling(config)
    fakes = [FakeNode(f"gw{i}") for i in range(nodes)]
    collection = [f"t.py::test[{i}]" for i in range(items)]
    for node in fakes:
        sched.add_node(node)
    for node in fakes:
        sched.add_node_collection(node, list(collection))
    sched.schedule()
    return sched, fakes


def _run(sched: RoundRobinScheduling, node: FakeNode, done: int) -> None:
    """The worker reports its oldest ``done`` pending items."""
    for _ in range(done):
        sched.mark_test_complete(node, sched.node2pending[node][0])


def test_each_worker_gets_a_window_of_its_own_items_first() -> None:
    sched, (a, b) = _scheduler(2, 5 * WINDOW)
    assert a.sent == list(own_indices(5 * WINDOW, 0, 2))[:WINDOW]
    assert b.sent == list(own_indices(5 * WINDOW, 1, 2))[:WINDOW]
    assert sched.has_pending and not sched.tests_finished
    # Every node shares one collection list, not a copy each.
    assert sched.node2collection[a] is sched.node2collection[b]


def test_the_window_is_refilled_at_half_and_never_exceeded() -> None:
    sched, (a, _b) = _scheduler(2, 5 * WINDOW)
    _run(sched, a, WINDOW // 2 - 1)
    assert len(a.sent) == WINDOW  # not yet: more than half still pending
    _run(sched, a, 1)
    assert len(a.sent) == WINDOW + WINDOW // 2
    assert len(sched.node2pending[a]) == WINDOW


def test_all_items_run_once_in_order_and_workers_shut_down_at_the_end() -> None:
    n = 3 * WINDOW + 17
    sched, nodes = _scheduler(2, n)
    while not sched.tests_finished:
        for node in nodes:
            pending = sched.node2pending.get(node)
            if pending and len(pending) > 1:  # a worker keeps its last item until told
                _run(sched, node, 1)
    for position, node in enumerate(nodes):
        assert node.sent == list(own_indices(n, position, 2))
        assert node.shut
        _run(sched, node, len(sched.node2pending[node]))
    assert not sched.has_pending


def test_a_crashed_worker_leaves_its_sent_and_queued_items_to_another() -> None:
    n = 4 * WINDOW
    sched, (a, b) = _scheduler(2, n)  # no restarts: xdist will not replace a
    _run(sched, a, 10)
    sched.crashes += 1  # as pytest_testnodedown counts it
    crashed = sched.remove_node(a)
    assert crashed == f"t.py::test[{own_indices(n, 0, 2)[10]}]"
    rest = list(own_indices(n, 0, 2))[11:]
    assert b.sent[-len(rest) :] == rest  # everything a had not reported, once


def test_a_crashed_worker_s_items_wait_for_its_replacement() -> None:
    n = 4 * WINDOW
    sched, (a, b) = _scheduler(2, n, max_restarts=4)
    _run(sched, a, 10)
    sent_to_b = list(b.sent)
    sched.crashes += 1
    sched.remove_node(a)
    assert b.sent == sent_to_b  # the survivor is not handed a's items
    assert not sched.tests_finished and sched.has_pending
    replacement = FakeNode("gw2")
    promised = sched.reserve_orphans(replacement)  # at the replacement's configure
    assert promised == list(own_indices(n, 0, 2))[11:]
    assert sched.reserve_orphans(FakeNode("gw3")) == []  # promised once only
    sched.add_node(replacement)
    sched.add_node_collection(replacement, [f"t.py::test[{i}]" for i in range(n)])
    sched.schedule()
    assert replacement.sent == promised
