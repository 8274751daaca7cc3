"""The process-wide tricks: one switch, and undone when the session ends.

``legaleval_process_tweaks`` (ini, default true) lets the plugin pause and freeze the
garbage collector during a run; the freeze is undone at unconfigure, so the user's process
gets its collector back as it was. With the switch off the collector is left alone.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from .conftest import mcq_row, run_eval, write_jsonl

CONFTEST = """
import gc, json, pathlib

def pytest_legaleval_result(result, record, run_id, config):
    seen = pathlib.Path("seen.jsonl")
    with seen.open("a") as handle:
        handle.write(json.dumps({"frozen": gc.get_freeze_count()}) + "\\n")
"""


def _run(pytester: pytest.Pytester, *extra: str) -> list[int]:
    pytester.makeconftest(CONFTEST)
    data = write_jsonl(pytester.path / "mcq.jsonl", [mcq_row(f"q{n}") for n in range(2)])
    answers = [{"record_id": f"q{n}", "response": "B"} for n in range(2)]
    responses = write_jsonl(pytester.path / "responses.jsonl", answers)
    seen = pytester.path / "seen.jsonl"
    seen.unlink(missing_ok=True)
    result = run_eval(pytester, data, responses, *extra)
    result.assert_outcomes(passed=2)
    return [json.loads(line)["frozen"] for line in seen.read_text().splitlines()]


def test_the_freeze_is_undone_at_the_end_and_the_switch_turns_it_off(
    pytester: pytest.Pytester, suite: Path
) -> None:
    gc.unfreeze()  # a clean start: what this test process froze before does not count
    assert all(count > 0 for count in _run(pytester))  # frozen while the run ran ...
    assert gc.get_freeze_count() == 0  # ... and given back at the session's end
    assert _run(pytester, "-o", "legaleval_process_tweaks=false") == [0, 0]
    assert gc.get_freeze_count() == 0
