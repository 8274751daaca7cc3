"""One carrier format: a result and its record's provenance, on an xdist report or in the spool.

``Provenance`` is a frozen dataclass that still reads as the mapping it replaced (users'
result hooks index it); ``carrier.encode``/``decode`` are the one JSON form, used by the
xdist report payload and by the Ctrl-C spool of an interrupted worker alike.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from pytest_legaleval.pytest.carrier import Carried, decode, encode
from pytest_legaleval.records import EvalResult, Provenance

PROVENANCE = Provenance(
    index=3, dataset_version="v2", tags=("tort",), metadata={"task": "hearsay"}, source_index=7
)
RESULT = EvalResult(
    record_id="r1", dataset="d", task_type="mcq", model="m", source="responses",
    outcome="passed", passed=True, score=1.0, reason="correct", explanation="",
    response="B", grader="mcq",
)  # fmt: skip


def test_provenance_is_frozen_and_reads_as_the_mapping_it_replaced() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        PROVENANCE.index = 4  # type: ignore[misc]
    assert PROVENANCE["tags"] == ("tort",) and PROVENANCE.get("metadata") == {"task": "hearsay"}
    assert dict(PROVENANCE) == {
        "index": 3, "dataset_version": "v2", "tags": ("tort",),
        "metadata": {"task": "hearsay"}, "source_index": 7,
    }  # fmt: skip
    with pytest.raises(KeyError):
        PROVENANCE["record_id"]
    assert Provenance.from_dict(json.loads(json.dumps(PROVENANCE.to_dict()))) == PROVENANCE


def test_a_result_and_a_rejection_survive_the_one_json_form() -> None:
    line = json.loads(json.dumps(encode(Carried(PROVENANCE, RESULT))))
    back = decode(line)
    assert back.provenance == PROVENANCE and isinstance(back.provenance, Provenance)
    assert back.result == RESULT
    rejection = {"index": 0, "model": "m", "record_id": None, "dataset": "d",
                 "source_stem": "d", "source_index": 0, "errors": [{"code": "x"}]}  # fmt: skip
    invalid = decode(json.loads(json.dumps(encode(Carried(rejection)))))
    assert invalid.provenance == rejection and invalid.result is None
    with pytest.raises(KeyError):
        decode({"result": RESULT.to_dict()})  # a line cut before its record


def test_the_prediction_line_type_the_schema_and_the_writer_name_the_same_fields() -> None:
    from pathlib import Path

    from pytest_legaleval.records import PredictionLine
    from pytest_legaleval.run.artifacts import prediction_line

    schema = json.loads(
        (Path(__file__).parents[2] / "schemas" / "prediction.schema.json").read_text("utf-8")
    )
    typed = set(PredictionLine.__annotations__)
    assert set(schema["properties"]) | {"epoch"} == typed  # epoch: the --epochs K lines
    written = prediction_line(
        "run", "item", RESULT.to_dict(), "passed",
        record=PROVENANCE, generation_settings={}, version="0",
    )  # fmt: skip
    assert set(written) <= typed and set(schema["required"]) <= set(written)
