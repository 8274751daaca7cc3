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
            leave.wait(60)  # a hang guard: the test sets it

    thread = threading.Thread(target=body)
    thread.start()
    assert entered.wait(60)
    return thread


def test_the_collector_returns_when_the_last_overlapping_block_ends(collector_on: None) -> None:
    entered, leave = threading.Event(), threading.Event()
    with collector_paused():
        thread = _in_thread(entered, leave)  # begins while the collector is already off
        assert not gc.isenabled()
    assert not gc.isenabled(), "the other thread's block is still running"
    leave.set()
    thread.join(60)
    assert gc.isenabled()


def test_a_block_that_outlives_the_first_one_keeps_the_collector_off(collector_on: None) -> None:
    entered, leave = threading.Event(), threading.Event()
    thread = _in_thread(entered, leave)
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
    leave.set()
    thread.join(60)
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
