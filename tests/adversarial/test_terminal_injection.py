"""Control bytes from data or a model never reach the terminal or the JUnit XML (issue 31.3).

A model that replies with ESC/OSC/BEL/NUL sequences, and a dataset whose ``dataset``,
record ids, prompts and ``metadata.*`` (under ``--slice-by``) hold them, are run through a
real pytest process — single and under ``-n 2`` — with ``-rA``, the short summary, a gate,
a baseline (regressed records are named) and ``--junitxml``: the output holds none of
those characters, only their escaped form, and the XML parses.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_legaleval.run.console import printable

from ..integration.conftest import mcq_row, run_dirs, write_jsonl

ESC = "\x1b"
HOSTILE = (
    f"{ESC}[2J{ESC}]0;pwned\x07{ESC}]8;;http://evil.example{ESC}\\link{ESC}]8;;{ESC}\\"
    "\x7f\x9b31m\u202edesrever\u2066\r"
)
"""Screen clear, window title (OSC 0 ended by BEL), an OSC 8 link, DEL, a C1 CSI, a
right-to-left override, an isolate and a carriage return."""
REPLY_ONLY = "\x00\x08\x0c"
"""NUL, backspace, form feed: a model reply may hold them (a record may not hold NUL)."""

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
"""Every character no terminal output may hold (tab and newline are layout)."""

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


# -- the sanitizer ------------------------------------------------------------------------------


def test_printable_escapes_as_pytest_escapes_node_ids() -> None:
    assert printable(f"a{ESC}[2Jb\x07\x00\x7f\x9b\u202e") == "a\\x1b[2Jb\\x07\\x00\\x7f\\x9b\\u202e"
    assert printable("line\nnext\ttab") == "line\\x0anext\\x09tab"
    assert printable("line\r\nnext\ttab\rx", multiline=True) == "line\nnext\ttab\\x0dx"
    assert printable("Zürich 中文 🙂 \\ ok") == "Zürich 中文 🙂 \\ ok"
    assert printable("x" * 10, limit=4) == "xxxx…"


@given(st.text())
def test_printable_leaves_no_unsafe_character(text: str) -> None:
    for multiline in (False, True):
        shown = printable(text, multiline=multiline)
        assert UNSAFE.search(shown) is None
        if not multiline:
            assert "\n" not in shown and "\t" not in shown


@given(st.text(alphabet=st.characters(exclude_categories=("Cc", "Cs", "Zl", "Zp", "Cf"))))
def test_printable_keeps_safe_text_as_it_is(text: str) -> None:
    assert printable(text) == text


# -- a real session -----------------------------------------------------------------------------

SUITE = """
def test_record(record, evaluation):
    print("answer:", evaluation.response)
    evaluation.check()
"""


def _data(root: Path) -> list[str]:
    dataset = "ds" + HOSTILE
    rows = [
        mcq_row(f"q{i}" + (HOSTILE if i % 2 else ""), dataset=dataset,
                prompt=f"Question {i} {HOSTILE}?", metadata={"area": f"a{i % 2}{HOSTILE}"})
        for i in range(6)
    ]  # fmt: skip
    broken = mcq_row("bad" + HOSTILE, dataset=dataset)
    del broken["prompt"]
    write_jsonl(root / "d.jsonl", [*rows, broken])
    return ["--dataset", str(root / "d.jsonl")]


def _baseline(root: Path, args: list[str]) -> Path:
    """A baseline in which every record passed: the wrong answers now are regressions."""
    rows = [json.loads(line) for line in (root / "d.jsonl").read_text().splitlines()]
    responses = [
        {"record_id": r["id"], "response": "Answer: B", "model": "openai/m"}
        for r in rows
        if "prompt" in r
    ]
    write_jsonl(root / "base.jsonl", responses)
    return root / "base.jsonl"


def _check_clean(text: str, where: str) -> None:
    found = UNSAFE.search(text)
    assert found is None, f"{where}: {found.group()!r} at {found.start()}: " + repr(
        text[max(0, found.start() - 80) : found.start() + 40]
    )


@pytest.mark.parametrize("workers", ["0", "2"])
def test_no_control_byte_reaches_the_terminal_or_junit(
    pytester: pytest.Pytester,
    mock_openai: Any,
    monkeypatch: pytest.MonkeyPatch,
    workers: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    args = _data(pytester.path)
    base = _baseline(pytester.path, args)
    first = pytester.runpytest_subprocess(
        *args, "--responses", str(base), "--run-dir", "base", "-p", "no:randomly"
    )
    assert first.ret == 1, first.stdout.str()  # the invalid record
    (baseline,) = run_dirs(pytester.path / "base")
    # Right on q0, q2, q4 (the reply still carries the bytes), wrong elsewhere.
    mock_openai.add_reply(r"Question [024] ", f"Answer: B {HOSTILE}{REPLY_ONLY}")
    mock_openai.add_reply(r"Question [135] ", f"Answer: C {HOSTILE}{REPLY_ONLY} because")
    result = pytester.runpytest_subprocess(
        *args, "--model", "openai/m", "--base-url", mock_openai.base_url, "--no-cache",
        "--run-dir", "runs", "--junitxml", "out.xml", "-rA", "-n", workers,
        "--slice-by", "metadata.area", "--gate", "pass_rate>=0.9",
        "--baseline", str(baseline), "-p", "no:randomly",
    )  # fmt: skip
    out, err = result.stdout.str(), result.stderr.str()
    assert result.ret == 1, out + err
    _check_clean(out, "stdout")
    _check_clean(err, "stderr")
    # What was shown is there, escaped: the model's reply, the slice values, the ids.
    assert "Answer: C \\x1b[2J\\x1b]0;pwned\\x07" in out  # captured output of a failure
    assert "\\x00\\x08\\x0c because" in out
    assert "metadata.area=a1\\x1b[2J" in out  # the summary table
    assert "regressed ds\\x1b[2J" in out  # the baseline's regression lines
    assert "FAILED gate pass_rate>=0.9" in out
    xml = (pytester.path / "out.xml").read_bytes().decode("utf-8")
    _check_clean(xml, "junit")
    root = ET.fromstring(xml)  # still XML
    assert len(list(root.iter("testcase"))) == 7


def test_validate_prints_json_with_no_control_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_legaleval.cli import main

    broken = mcq_row("bad" + HOSTILE, dataset="ds" + HOSTILE)
    del broken["prompt"]
    data = write_jsonl(tmp_path / "d.jsonl", [mcq_row("ok"), broken])
    assert main(["validate", str(data)]) == 1
    out = capsys.readouterr().out
    _check_clean(out, "validate")
    assert json.loads(out)["record_errors"][0]["record_id"] == "bad" + HOSTILE  # still JSON
