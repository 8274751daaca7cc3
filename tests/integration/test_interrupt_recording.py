"""An interrupt waits for the item being recorded: its lines are written whole or not at all.

Ctrl-C and SIGTERM raise ``KeyboardInterrupt`` wherever the main thread is. Landing
between "this item is recorded" and its prediction line, it lost the line: the item was
neither written nor recorded ``cancelled``. These tests put the signal exactly there.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from pytest_legaleval.pytest.preflight import deferring_sigint, recording_whole
from pytest_legaleval.run.verify import check_run_directory

from .conftest import mcq_row, read_jsonl, run_dirs, write_jsonl


@pytest.fixture
def default_sigint() -> Iterator[None]:
    """Python's own SIGINT handler, whatever the test runner (an xdist worker) installed."""
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def test_ctrl_c_inside_a_recording_is_raised_when_it_ends(default_sigint: None) -> None:
    reached = []
    with deferring_sigint():
        with pytest.raises(KeyboardInterrupt):
            with recording_whole():
                signal.raise_signal(signal.SIGINT)
                reached.append("the rest of the item")
                with recording_whole():  # nested: raised by the outermost only
                    reached.append("inner")
                reached.append("outer end")
        assert reached == ["the rest of the item", "inner", "outer end"]
        with pytest.raises(KeyboardInterrupt):  # outside a recording: at once
            signal.raise_signal(signal.SIGINT)
            reached.append("never")
        assert reached[-1] == "outer end"
        with recording_whole():  # nothing pending is left behind
            reached.append("quiet")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored


def test_an_error_inside_a_recording_does_not_swallow_the_interrupt(
    default_sigint: None,
) -> None:
    with deferring_sigint():
        with pytest.raises(KeyboardInterrupt) as caught:
            with recording_whole():
                signal.raise_signal(signal.SIGINT)
                raise OSError("disk full")
        assert isinstance(caught.value.__context__, OSError)


def test_without_python_s_handler_nothing_is_installed() -> None:
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with deferring_sigint():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


# The third prediction line is built, and the signal sent, after the item was marked
# recorded and before its line is written: the widest point of the window.
_SIGNAL_MID_RECORD = """
import os
import signal

from pytest_legaleval.run import artifacts

_real = artifacts.prediction_line
_calls = []


def _prediction_line(*args, **kwargs):
    _calls.append(1)
    if len(_calls) == 3:
        os.kill(os.getpid(), getattr(signal, os.environ["MID_RECORD_SIGNAL"]))
    return _real(*args, **kwargs)


artifacts.prediction_line = _prediction_line
"""


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_an_interrupt_mid_record_keeps_the_item_s_line(
    pytester: pytest.Pytester, signame: str
) -> None:
    pytester.makeconftest(_SIGNAL_MID_RECORD)
    ids = [f"q{i:02d}" for i in range(12)]
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row(i) for i in ids])
    responses = write_jsonl(
        pytester.path / "r.jsonl", [{"record_id": i, "response": "Answer: B"} for i in ids]
    )
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
         "--dataset", str(data), "--responses", str(responses), "--run-dir", "runs"],
        cwd=pytester.path,
        env={**os.environ, "MID_RECORD_SIGNAL": signame},
        capture_output=True,
        text=True,
        timeout=300,  # a hang guard
    )  # fmt: skip
    assert completed.returncode == pytest.ExitCode.INTERRUPTED, completed.stdout
    (run,) = run_dirs(pytester.path / "runs")
    predictions = read_jsonl(run / "predictions.jsonl")
    assert sorted(p["record_id"] for p in predictions) == ids  # every item, once
    by_id = {p["record_id"]: p for p in predictions}
    assert by_id["q02"]["passed"] is True  # the item the signal landed in: written whole
    assert all(by_id[i]["passed"] is True for i in ("q00", "q01"))
    assert check_run_directory(run) == []
