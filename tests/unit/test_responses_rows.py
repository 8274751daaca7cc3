"""Responses files: usage and latency kept, hostile rows repaired or refused, rows matched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import ResponsesError
from pytest_legaleval.formats import load_dataset
from pytest_legaleval.pipeline.plan import RunPlan
from pytest_legaleval.pipeline.responses import (
    Recorded,
    load_responses,
    match_responses,
)
from pytest_legaleval.pipeline.runner import ItemRunner
from pytest_legaleval.pipeline.settings import Settings
from pytest_legaleval.records import EvalResult, Record

LBR_RESPONSES = Path("/work/shared/data/lbr_run/responses_prefilled.jsonl")
REPO_LBR = Path(__file__).resolve().parents[1] / "data" / "lbr_run"


def _write(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _row(**fields: Any) -> str:
    return json.dumps(fields)


@pytest.fixture
def records(tmp_path: Path) -> dict[str, Record]:
    rows = [
        {
            "schema_version": "legal_eval_v1",
            "id": f"q{i}",
            "dataset": "t",
            "task_type": "mcq",
            "prompt": "Which?",
            "choices": [{"id": c, "text": c} for c in "ABCD"],
            "correct_choice_ids": ["B"],
        }
        for i in range(4)
    ]
    data = _write(tmp_path / "d.jsonl", *(json.dumps(r) for r in rows))
    return {r.id: r for r in load_dataset([str(data)], "auto").records}


def _prefilled(data: Path, responses: Path, record_id: str, model: str) -> EvalResult:
    """The item runner's result for one pre-computed answer (no engine, no judge)."""
    plan = RunPlan.build(Settings(dataset=(str(data),), responses=str(responses)))
    spec = next(s for s in plan.items if s.model == model and s.entry.id == record_id)  # type: ignore[union-attr]
    runner = ItemRunner(plan)
    assert not runner.needs_engine
    return runner.evaluate(spec)


def test_lbr_rows_keep_their_usage_and_latency(tmp_path: Path, records: dict[str, Record]) -> None:
    path = _write(
        tmp_path / "r.jsonl",
        _row(
            example_id="q1",
            candidate_name="claude",
            response_text="Answer: B",
            usage={"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127},
            latency_s=2.5,
        ),
        _row(
            record_id="q2",
            model="ours",
            response="Answer: A",
            usage={"input_tokens": 9, "output_tokens": 4},
        ),
        _row(record_id="q3", model="ours", response="Answer: B"),
    )
    table = load_responses(path)
    assert table.recorded_for("q1", "claude") == Recorded(120, 7, 2500.0)
    assert table.recorded_for("q2", "ours") == Recorded(9, 4, None)
    assert table.recorded_for("q3", "ours") is None
    data = tmp_path / "d.jsonl"
    result = _prefilled(data, path, "q1", "claude")
    assert (result.input_tokens, result.output_tokens, result.total_tokens) == (120, 7, 127)
    assert result.latency_ms == 2500.0 and result.passed
    plain = _prefilled(data, path, "q3", "ours")
    assert plain.latency_ms is None and plain.total_tokens is None


@pytest.mark.parametrize(
    ("extra", "warning"),
    [
        ({"usage": {"prompt_tokens": -3}}, "usage.prompt_tokens dropped: negative (-3)"),
        ({"usage": {"completion_tokens": 1e30}}, "usage.completion_tokens dropped: above"),
        ({"usage": {"prompt_tokens": "12"}}, "usage.prompt_tokens dropped: not a number (str)"),
        ({"usage": [1, 2]}, "usage dropped: not an object (list)"),
        ({"latency_s": -1}, "latency_s dropped: not in [0, 604800] s"),
        ({"latency_s": True}, "latency_s dropped: not a number (bool)"),
    ],
)
def test_insane_usage_and_latency_are_dropped_with_a_warning(
    tmp_path: Path, extra: dict[str, Any], warning: str
) -> None:
    path = _write(tmp_path / "r.jsonl", _row(record_id="q1", response="Answer: B", **extra))
    recorded = load_responses(path).recorded_for("q1", "prefilled")
    assert recorded is not None
    assert recorded.input_tokens is None and recorded.output_tokens is None
    assert recorded.latency_ms is None
    assert any(w.startswith(warning) for w in recorded.warnings), recorded.warnings


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_non_finite_number_is_a_bad_row_not_a_value(tmp_path: Path, token: str) -> None:
    """Python's json reads NaN, Infinity and 1e999 (as inf); standard JSON has none, so the
    row is an error naming its line, like any malformed row."""
    path = _write(
        tmp_path / "r.jsonl",
        '{"record_id": "q0", "response": "fine"}',
        f'{{"record_id": "q1", "response": "x", "latency_s": {token}}}',
    )
    with pytest.raises(ResponsesError, match=r"1 bad rows:\n  line 2: .*(NaN|Infinity|1e999)"):
        load_responses(path)


def test_lone_surrogates_are_repaired_and_control_characters_kept(
    tmp_path: Path, records: dict[str, Record]
) -> None:
    path = _write(
        tmp_path / "r.jsonl",
        r'{"record_id": "q1", "model": "m\ud800", "response": "Answer: B \ud83d"}',
        r'{"record_id": "q2", "model": "m", "response": "Answer: B \u0000 \u0007 \u001b[31m"}',
    )
    table = load_responses(path)
    assert table.models == ("m\ufffd", "m")
    assert table.get("q1", "m\ufffd") == "Answer: B \ufffd"
    recorded = table.recorded_for("q1", "m\ufffd")
    assert recorded is not None
    assert recorded.warnings == (
        "model: 1 lone surrogate(s) replaced by U+FFFD",
        "response: 1 lone surrogate(s) replaced by U+FFFD",
    )
    assert table.get("q2", "m") == "Answer: B \x00 \x07 \x1b[31m"
    kept = table.recorded_for("q2", "m")
    assert kept is not None
    assert kept.warnings == ("response: 3 NUL/control character(s), kept as sent",)
    # Every text of the table can be written as UTF-8 now.
    for (record_id, model, _), text in table.responses.items():
        (record_id + model + text).encode("utf-8")
    result = _prefilled(tmp_path / "d.jsonl", path, "q1", "m\ufffd")
    assert result.details["response_warnings"] == list(recorded.warnings)


@pytest.mark.parametrize("flag", ["--responses", "--conversation-from"])
def test_a_repeated_key_is_an_error_naming_it(tmp_path: Path, flag: str) -> None:
    path = _write(
        tmp_path / "r.jsonl",
        _row(record_id="q1", response="ok"),
        '{"record_id": "q2", "response": "Answer: A", "response": "Answer: B"}',
        '{"example_id": "q3", "candidate_name": "m", "response_text": "x", '
        '"usage": {"prompt_tokens": 1, "prompt_tokens": 900}}',
    )
    with pytest.raises(ResponsesError) as info:
        load_responses(path, flag)
    message = str(info.value)
    assert message.startswith(f"{flag} {path}: 2 bad rows:")
    assert 'line 2: key "response" repeated in the top-level object' in message
    assert 'line 3: key "prompt_tokens" repeated in usage' in message


def test_unmatched_rows_are_counted_with_examples(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "r.jsonl",
        *(_row(record_id=f"q{i}", response="x") for i in range(3)),
        *(_row(record_id=f"other-{i}", response="x") for i in range(7)),
    )
    found = match_responses(load_responses(path), ["q0", "q1", "q2", "q3", None])
    assert (found.rows, found.matched, found.unmatched) == (10, 3, 7)
    assert found.examples == tuple(f'"other-{i}"' for i in range(5))
    found.check()  # some match: no error
    assert found.warning() == (
        f"7 of 10 rows of {path} match no record of the dataset and are ignored (e.g. "
        '"other-0", "other-1", "other-2", "other-3", "other-4")'
    )
    ids = [f"q{i}" for i in range(3)] + [f"other-{i}" for i in range(7)]
    every = match_responses(load_responses(path), ids)
    assert every.warning() is None


def test_the_real_lbr_responses_against_another_dataset_match_nothing() -> None:
    table = load_responses(LBR_RESPONSES)
    found = match_responses(table, ["lexam:other-1", "legalbench:x"])
    assert (found.rows, found.matched) == (999, 0)
    assert found.warning() is None  # it is an error, not a warning
    with pytest.raises(ResponsesError, match=r"none of its 999 rows matches a record") as info:
        found.check()
    assert '"prbench:eb1963c8556cdebf83b100d8"' in str(info.value)
    assert '"lexam:other-1"' in str(info.value)


def test_the_real_lbr_responses_match_their_own_records() -> None:
    import gzip

    with gzip.open(REPO_LBR / "merged_legal_eval_v1.jsonl.gz", "rt", encoding="utf-8") as handle:
        ids = [json.loads(line)["id"] for line in handle if line.strip()]
    found = match_responses(load_responses(LBR_RESPONSES), ids)
    assert (found.rows, found.matched, found.unmatched) == (999, 999, 0)
