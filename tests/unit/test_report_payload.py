"""An xdist worker's report carries its results as one JSON string; the controller unpacks it."""

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


def test_a_worker_packs_the_results_and_the_controller_gets_them_back_equal() -> None:
    worker = SimpleNamespace(workerinput={"workerid": "gw0"})
    data = _serialized(legaleval=dict(_RESULT), legaleval_record=dict(_RECORD))
    sent = _through(plugin.pytest_report_to_serializable, worker, None, data)
    assert "legaleval" not in sent and "legaleval_record" not in sent
    assert isinstance(sent["legaleval_json"], str)
    assert sent["nodeid"] == "t.py::test[q1]"  # pytest's own fields are left alone

    received = dict(sent)
    gen = plugin.pytest_report_from_serializable(object(), received)
    next(gen)  # pytest's own implementation now builds the report from ``received``
    assert received["legaleval"] == _RESULT
    assert received["legaleval_record"] == _RECORD
    assert "legaleval_json" not in received
    with pytest.raises(StopIteration) as stop:
        gen.send("the report")
    assert stop.value.value == "the report"


def test_an_invalid_records_rejection_travels_the_same_way() -> None:
    worker = SimpleNamespace(workerinput={"workerid": "gw1"})
    rejection = {"index": 3, "errors": [{"code": "E_SCHEMA", "path": "/choices"}]}
    sent = _through(
        plugin.pytest_report_to_serializable,
        worker,
        None,
        _serialized(when="setup", legaleval_invalid=rejection),
    )
    assert json.loads(sent["legaleval_json"]) == {"legaleval_invalid": rejection}


def test_outside_a_worker_and_without_results_nothing_changes() -> None:
    data = _serialized(legaleval=dict(_RESULT))
    controller = SimpleNamespace()  # no workerinput: e.g. a report log on the controller
    assert _through(plugin.pytest_report_to_serializable, controller, None, dict(data)) == data
    worker = SimpleNamespace(workerinput={"workerid": "gw0"})
    plain = _serialized()
    assert _through(plugin.pytest_report_to_serializable, worker, None, dict(plain)) == plain
    assert _through(plugin.pytest_report_to_serializable, worker, None, None) is None


def test_a_value_json_cannot_hold_is_sent_as_it_is() -> None:
    worker = SimpleNamespace(workerinput={"workerid": "gw0"})
    odd = _serialized(legaleval={"score": math.nan, "when": {1, 2}})
    sent = _through(plugin.pytest_report_to_serializable, worker, None, dict(odd))
    assert sent == odd
