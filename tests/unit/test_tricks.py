"""The collector pause is one per process: overlapping blocks on two threads."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from pytest_legaleval.pytest.tricks import collector_paused


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def _in_thread(entered: threading.Event, leave: threading.Event) -> threading.Thread:
    def body() -> None:
        with collector_paused():
            entered.set()
            leave.wait(10)

    thread = threading.Thread(target=body)
    thread.start()
    assert entered.wait(10)
    return thread


def test_the_collector_returns_when_the_last_overlapping_block_ends(collector_on: None) -> None:
    entered, leave = threading.Event(), threading.Event()
    with collector_paused():
        thread = _in_thread(entered, leave)  # begins while the collector is already off
        assert not gc.isenabled()
    assert not gc.isenabled(), "the other thread's block is still running"
    leave.set()
    thread.join(10)
    assert gc.isenabled()


def test_a_block_that_outlives_the_first_one_keeps_the_collector_off(collector_on: None) -> None:
    entered, leave = threading.Event(), threading.Event()
    thread = _in_thread(entered, leave)
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
    leave.set()
    thread.join(10)
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        with collector_paused(), collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


def test_legaleval_no_tricks_turns_every_trick_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_legaleval.pytest import tricks

    monkeypatch.setenv("LEGALEVAL_NO_TRICKS", "1")
    assert not tricks.enabled()
    was = gc.isenabled()
    gc.enable()
    try:
        with collector_paused():
            assert gc.isenabled()  # the collector is left alone
    finally:
        if not was:
            gc.disable()
    data = {"nodeid": "t.py::x", "when": "call", "outcome": "passed"}
    assert tricks.pack_report(dict(data), frozenset(data), ()) == data  # sent as it is
    before = gc.get_freeze_count()
    tricks.freeze()
    assert gc.get_freeze_count() == before  # nothing moved to the permanent generation
    monkeypatch.setenv("LEGALEVAL_NO_TRICKS", "0")
    assert tricks.enabled()


def test_a_packed_report_comes_back_equal() -> None:
    from pytest_legaleval.pytest import tricks

    data = {
        "nodeid": "t.py::x[a]",
        "location": ("t.py", 3, "x[a]"),
        "longrepr": ("t.py", 3, "Skipped: no"),
        "sections": [("Captured stdout call", "hi")],
        "legaleval": {"record_id": "a"},
    }
    packed = tricks.pack_report(dict(data), frozenset(data), ("legaleval",))
    assert set(packed) == {"legaleval_json"}
    tricks.unpack_report(packed)
    assert packed == data
