"""``input_dataset.json`` payloads: the canonical record, as ``dataclasses.asdict`` gives it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from pytest_legaleval.formats import load_dataset
from pytest_legaleval.run.artifacts import record_payload

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_payloads_equal_asdict_without_source_and_hash() -> None:
    paths = [
        EXAMPLES / n for n in ("legal_mcq.jsonl", "legal_judged.jsonl", "contract_reference.json")
    ]
    records = load_dataset(paths).records
    assert len(records) > 20
    kinds = {record.task_type for record in records}
    assert {"mcq", "reference_qa"} <= kinds
    for record in records:
        expected = dataclasses.asdict(record)
        del expected["source"], expected["sha256"]
        expected["expected"] = dict(record.expected)
        expected["metadata"] = dict(record.metadata)
        got = record_payload(record)
        assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True), record.id
