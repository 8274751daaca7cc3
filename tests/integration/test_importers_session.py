"""A pytest session on ``--dataset lexam:PATH``: no intermediate file, one item per record."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_legaleval.importers import ImportOptions, get_importer

from ..extras import needs_import
from .conftest import DATA, read_jsonl, run_dirs, run_eval, write_jsonl


@needs_import
def test_a_run_on_an_upstream_spreadsheet(pytester: pytest.Pytester, suite: Path) -> None:
    sheet = pytester.path / "MCQs_test.xlsx"
    shutil.copyfile(DATA / "importers" / "lexam" / "MCQs_test.xlsx", sheet)
    records = [
        row.record
        for row in get_importer("lexam").rows([sheet], ImportOptions())
        if row.record is not None
    ]
    right, *wrong = records
    # the official protocol (the import's default): LEXam's "Correct Answer: ###X###"
    gold = f"Correct Answer: ###{right['correct_choice_ids'][0]}###"
    answers = [{"record_id": right["id"], "response": gold}]
    for record in wrong:
        correct = record["correct_choice_ids"]
        other = next(c["id"] for c in record["choices"] if c["id"] not in correct)
        answers.append({"record_id": record["id"], "response": f"###{other}###"})
    responses = write_jsonl(pytester.path / "responses.jsonl", answers)

    result = run_eval(pytester, Path("lexam:MCQs_test.xlsx"), responses)

    assert result.parseoutcomes() == {"passed": 1, "failed": len(wrong)}
    (run,) = run_dirs(pytester.path / "runs")
    predictions = read_jsonl(run / "predictions.jsonl")
    assert {p["record_id"] for p in predictions} == {r["id"] for r in records}
    assert list((pytester.path / ".legaleval" / "imports").glob("lexam-*.jsonl"))
