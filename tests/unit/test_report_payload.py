"""An xdist worker's report travels as one JSON string; the controller unpacks it equal."""

from __future__ import annotations

import json
import math
from collections.abc import Generator
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_legaleval import plugin


def _through(hook: Any, config: object, arg: Any, result: Any) -> Any:
    """Drive a ``wrapper=True`` hook implementation around an inner ``result``."""
    gen: Generator[None, Any, Any] = hook(config, arg)
    next(gen)
    with pytest.raises(StopIteration) as stop:
        gen.send(result)
    return stop.value.value


_RESULT = {
    "record_id": "q1",
    "passed": False,
    "score": 0.0,
    "latency_ms": 12.5,
    "explanation": "chose C (from 'Answer: C'); correct is D — «Art. 41 OR»",
    "details": {"chosen": ["C"], "cached": False, "nested": {"a": [1, 2.5, None]}},
    "attempts": [{"number": 1, "error_code": None}],
}
_RECORD = {"index": 7, "tags": ["contract"], "metadata": {"jurisdiction": "CH"}}


def _serialized(**extra: Any) -> dict[str, Any]:
    return {"nodeid": "t.py::test[q1]", "when": "call", "outcome": "failed", **extra}


def _received(sent: dict[str, Any]) -> dict[str, Any]:
    """What the controller's pytest implementation gets, after our wrapper unpacked it."""
    received = dict(sent)
    received["item_index"] = 4  # xdist adds its own fields after the hook
    gen = plugin.pytest_report_from_serializable(object(), received)
    next(gen)  # pytest's own implementation now builds the report from ``received``
    with pytest.raises(StopIteration) as stop:
        gen.send("the report")
    assert stop.value.value == "the report"
    assert "legaleval_json" not in received
    del received["item_index"]
    return received


_WORKER = SimpleNamespace(workerinput={"workerid": "gw0"})


def test_a_plain_report_is_sent_whole_and_comes_back_equal_with_its_tuples() -> None:
    data = _serialized(
        legaleval=dict(_RESULT),
        legaleval_record=dict(_RECORD),
        location=("suites/test_legal.py", 11, "test_record[q1]"),
        keywords={"test_record[q1]": 1, "mcq": 1},
        sections=[("Captured stdout call", "hello\n")],
        user_properties=[],
        longrepr="wrong_answer: chose C",
        duration=0.25,
    )
    data["$report_type"] = "TestReport"
    sent = _through(plugin.pytest_report_to_serializable, _WORKER, None, dict(data))
    assert list(sent) == ["legaleval_json"]
    assert _received(sent) == data
    assert isinstance(_received(sent)["location"], tuple)


def test_a_skips_longrepr_tuple_survives() -> None:
    data = _serialized(outcome="skipped", longrepr=("suites/t.py", 3, "Skipped: no model"))
    sent = _through(plugin.pytest_report_to_serializable, _WORKER, None, dict(data))
    assert list(sent) == ["legaleval_json"]
    assert _received(sent) == data


def test_a_report_with_user_properties_or_unknown_fields_keeps_them_for_execnet() -> None:
    """JSON would refuse bytes and turn int keys into strings; execnet keeps both."""
    for extra in (
        {"user_properties": [("raw", b"\x00"), ("counts", {1: 2})]},
        {"plugin_field": {1: "one"}},
    ):
        data = _serialized(legaleval=dict(_RESULT), legaleval_record=dict(_RECORD), **extra)
        sent = _through(plugin.pytest_report_to_serializable, _WORKER, None, dict(data))
        # Only our results are packed; everything else is left as it is.
        assert sent.keys() - {"legaleval_json"} == data.keys() - {"legaleval", "legaleval_record"}
        assert json.loads(sent["legaleval_json"]) == {
            "legaleval": _RESULT,
            "legaleval_record": _RECORD,
        }
        assert _received(sent) == data


def test_an_invalid_records_rejection_travels_the_same_way() -> None:
    rejection = {"index": 3, "errors": [{"code": "E_SCHEMA", "path": "/choices"}]}
    data = _serialized(when="setup", legaleval_invalid=rejection, user_properties=[("k", 1)])
    sent = _through(plugin.pytest_report_to_serializable, _WORKER, None, dict(data))
    assert json.loads(sent["legaleval_json"]) == {"legaleval_invalid": rejection}
    assert _received(sent) == data


def test_outside_a_worker_nothing_changes() -> None:
    data = _serialized(legaleval=dict(_RESULT))
    controller = SimpleNamespace()  # no workerinput: e.g. a report log on the controller
    assert _through(plugin.pytest_report_to_serializable, controller, None, dict(data)) == data
    assert _through(plugin.pytest_report_to_serializable, _WORKER, None, None) is None
    unpacked = _serialized()
    gen = plugin.pytest_report_from_serializable(object(), unpacked)
    next(gen)
    assert unpacked == _serialized()


def test_a_value_json_cannot_hold_is_sent_as_it_is() -> None:
    odd = _serialized(legaleval={"score": math.nan, "when": {1, 2}})
    sent = _through(plugin.pytest_report_to_serializable, _WORKER, None, dict(odd))
    assert sent == odd
