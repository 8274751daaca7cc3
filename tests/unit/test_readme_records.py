"""The README's record of each task type validates, and its responses row answers it.

The blocks are read from README.md (```` ```jsonl <task_type>-record ```` and
```` ```jsonl <task_type>-response ````): each record passes ``legaleval validate`` with no
record error and has its task type, each responses row is read by the responses reader and
names the record.
"""

from __future__ import annotations

import re
from pathlib import Path

from pytest_legaleval.cli import validation_body
from pytest_legaleval.formats import load_dataset
from pytest_legaleval.pipeline.responses import load_responses
from pytest_legaleval.records import TASK_TYPES

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"^```jsonl? ([a-z_]+)-(record|response)\n(.*?)^```$", re.M | re.S)


def _blocks() -> dict[tuple[str, str], str]:
    return {(m.group(1), m.group(2)): m.group(3) for m in BLOCK.finditer(README.read_text())}


def test_the_readme_shows_a_record_and_a_response_of_each_task_type() -> None:
    found = _blocks()
    assert {task for task, _ in found} == set(TASK_TYPES)
    assert all((task, kind) in found for task in TASK_TYPES for kind in ("record", "response"))


def test_each_record_validates_and_each_row_answers_it(tmp_path: Path) -> None:
    found = _blocks()
    for task in TASK_TYPES:
        suffix = ".json" if found[(task, "record")].lstrip().startswith('{"dataset_id"') else ""
        data = tmp_path / f"{task}{suffix or '.jsonl'}"
        data.write_text(found[(task, "record")], encoding="utf-8")
        status, body, code = validation_body([str(data)])
        assert (status, code, body["record_errors"]) == (202, 0, []), (task, body)
        (record,) = load_dataset([str(data)], "auto").records
        assert record.task_type == task
        responses = tmp_path / f"{task}.responses.jsonl"
        responses.write_text(found[(task, "response")], encoding="utf-8")
        table = load_responses(responses)
        assert len(table) == 1 and table.get(record.id, table.models[0]), task
