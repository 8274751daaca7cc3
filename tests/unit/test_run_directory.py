"""The run directory writer: exclusive, redacting, atomic, checksummed, read-only."""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.run.directory import CHECKSUMS, RunDirectory, verify_checksums
from pytest_legaleval.run.redaction import Redactor

KEY = "sk-" + "Z" * 40


def test_an_existing_run_id_is_refused(tmp_path: Path) -> None:
    RunDirectory.create(tmp_path, "run_x")
    with pytest.raises(ConfigError, match="write-once"):
        RunDirectory.create(tmp_path, "run_x")


def test_every_write_goes_through_the_redactor(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "r", Redactor())
    directory.append("a.jsonl", {"text": f"key {KEY}", "authorization": "Bearer abcdefgh1234"})
    directory.write_json("b.json", {"nested": [KEY]})
    directory.write_json_stream("c.json", {"head": KEY}, "items", iter([{"v": KEY}, {"v": 1}]))
    directory.finalize()
    for path in directory.path.iterdir():
        assert KEY not in path.read_text(), path.name
    streamed = json.loads((directory.path / "c.json").read_text())
    assert streamed == {"head": "[REDACTED:openai_key]",
                        "items": [{"v": "[REDACTED:openai_key]"}, {"v": 1}]}  # fmt: skip


def test_streamed_json_handles_empty_heads_and_arrays(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "r")
    directory.write_json_stream("e.json", {}, "items", iter([]))
    directory.write_json_stream("f.json", {"a": 1}, "items", iter([1, 2]))
    assert json.loads((directory.path / "e.json").read_text()) == {"items": []}
    assert json.loads((directory.path / "f.json").read_text()) == {"a": 1, "items": [1, 2]}


class _Timers:
    """threading.Timer stand-in: the test fires a timer when it chooses."""

    def __init__(self) -> None:
        self.armed: list[_Timer] = []

    def __call__(self, interval: float, function: Callable[[], None]) -> _Timer:
        timer = _Timer(interval, function)
        self.armed.append(timer)
        return timer


class _Timer:
    def __init__(self, interval: float, function: Callable[[], None]) -> None:
        self.interval, self.function = interval, function
        self.daemon = False
        self.started = self.cancelled = False

    def start(self) -> None:
        self.started = True

    def cancel(self) -> None:
        self.cancelled = True

    def fire(self) -> None:
        assert self.started and not self.cancelled
        self.function()


def test_jsonl_lines_reach_the_os_within_the_flush_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_legaleval.run import directory as module

    timers = _Timers()
    monkeypatch.setattr(module.threading, "Timer", timers)
    directory = RunDirectory.create(tmp_path, "r")
    lines = directory.path / "p.jsonl"
    directory.append("p.jsonl", {"n": 1})
    assert lines.read_text() == ""  # buffered: not a system call per line
    directory.append("p.jsonl", {"n": 2})
    assert len(timers.armed) == 1  # one deadline for the lines written since the last flush
    (timer,) = timers.armed
    assert timer.interval == module.FLUSH_INTERVAL_S and timer.daemon
    timer.fire()  # no further append needed: a run stuck on a slow call still flushes
    assert lines.read_text() == '{"n":1}\n{"n":2}\n'  # on disk: a crash keeps them
    directory.append("p.jsonl", {"n": 3})
    assert len(timers.armed) == 2  # the next line arms the next deadline
    directory.write_json("m.json", {"state": "running"})  # never ahead of the lines
    assert lines.read_text().count("\n") == 3
    directory.append("p.jsonl", {"n": 4}, flush=False)  # a batch ends with flush()
    assert len(timers.armed) == 2
    directory.close()
    assert timers.armed[1].cancelled  # no timer outlives the files it would flush
    assert lines.read_text().count("\n") == 4


def test_a_flush_the_timer_could_not_make_fails_the_next_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_legaleval.run import directory as module

    timers = _Timers()
    monkeypatch.setattr(module.threading, "Timer", timers)
    directory = RunDirectory.create(tmp_path, "r")
    directory.append("p.jsonl", {"n": 1})
    handle = directory._handles["p.jsonl"]
    real_flush = handle.flush

    def full() -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(handle, "flush", full)
    timers.armed[0].fire()  # the timer's thread must not die with the error, nor lose it
    monkeypatch.setattr(handle, "flush", real_flush)
    with pytest.raises(OSError, match="No space left"):
        directory.append("p.jsonl", {"n": 2})
    directory.append("p.jsonl", {"n": 3})  # the error is reported once
    directory.close()
    assert (directory.path / "p.jsonl").read_text() == '{"n":1}\n{"n":3}\n'


def test_a_real_timer_flushes_a_run_that_writes_nothing_more(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "r")
    lines = directory.path / "p.jsonl"
    directory.append("p.jsonl", {"n": 1})
    pause = threading.Event()
    for _ in range(6000):  # a hang guard of 60 s, not a stopwatch: the timer's 0.2 s is an event
        if lines.read_text():
            break
        pause.wait(0.01)
    assert lines.read_text() == '{"n":1}\n'
    directory.close()


def test_finalize_writes_checksums_and_makes_everything_read_only(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "r")
    directory.append("p.jsonl", {"n": 1})
    directory.touch("empty.jsonl")
    directory.write_json("m.json", {"ok": True})
    directory.finalize()
    lines = (directory.path / CHECKSUMS).read_text().splitlines()
    assert [line.split("  ")[1] for line in lines] == ["empty.jsonl", "m.json", "p.jsonl"]
    assert verify_checksums(directory.path) == []
    for path in directory.path.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o444, path.name
    assert not [p for p in directory.path.iterdir() if p.name.startswith(".")]  # no temp files
    with pytest.raises(RuntimeError, match="write-once"):
        directory.write_json("m.json", {"ok": False})
    with pytest.raises(RuntimeError, match="write-once"):
        directory.append("p.jsonl", {"n": 2})


def test_checksums_catch_a_changed_file(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "r")
    directory.write_json("m.json", {"ok": True})
    directory.finalize()
    target = directory.path / "m.json"
    os.chmod(target, 0o644)
    target.write_text('{"ok": false}\n')
    assert verify_checksums(directory.path) == ["m.json"]


def test_verify_reads_lines_that_hold_unicode_line_separators(tmp_path: Path) -> None:
    """json.dumps leaves U+0085 and U+2028 unescaped; a JSONL line ends at "\\n" only."""
    from pytest_legaleval.run.verify import _documents

    path = tmp_path / "x.jsonl"
    path.write_text(
        json.dumps({"a": "one\x85two\u2028three"}, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    assert _documents(path) == [("x.jsonl:1", {"a": "one\x85two\u2028three"})]


def test_the_recorded_version_is_the_distributions() -> None:
    from importlib import metadata

    import pytest_legaleval
    from pytest_legaleval.run.manifest import package_version

    assert package_version() == pytest_legaleval.__version__ == metadata.version("pytest-legaleval")
    assert package_version("no-such-distribution-here") is None
