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


def test_the_payload_of_every_record_shape_is_what_asdict_gives(tmp_path: Path) -> None:
    """record_payload reads the record's known shapes directly; it must equal the generic walk."""
    import dataclasses

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from pytest_legaleval.formats import load_dataset
    from pytest_legaleval.records import Attachment, Choice, Criterion, Message
    from pytest_legaleval.run import artifacts
    from pytest_legaleval.testing.strategies import legal_eval_rows

    shapes = {
        "messages": Message,
        "attachments": Attachment,
        "choices": Choice,
        "rubric": Criterion,
    }
    for name, kind in shapes.items():  # a new field of a value type must be listed
        assert artifacts._VALUE_FIELDS[name] == tuple(f.name for f in dataclasses.fields(kind))

    @settings(max_examples=60, suppress_health_check=list(HealthCheck), deadline=None)
    @given(st.lists(legal_eval_rows(), min_size=1, max_size=4))
    def check(rows: list[dict]) -> None:
        path = tmp_path / "d.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        try:
            loaded = load_dataset([str(path)])
        except Exception:
            return  # a rejected dataset has no payload to write
        for record in loaded.records:
            walked = {f: artifacts._plain(getattr(record, f)) for f in artifacts._PAYLOAD_FIELDS}
            assert artifacts.record_payload(record) == walked

    check()
