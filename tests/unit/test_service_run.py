"""``run_evaluation`` and a worker's ``execute``: cancellation, resumption, rejection."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.pipeline.driver import Resume, run_evaluation
from pytest_legaleval.pipeline.plan import ItemSpec
from pytest_legaleval.pipeline.runner import ItemRunner
from pytest_legaleval.pipeline.settings import Settings, resolve_settings
from pytest_legaleval.run.verify import check_run_directory
from pytest_legaleval.service.config import DataDir, service_settings
from pytest_legaleval.service.execution import execute, read_finished
from pytest_legaleval.service.store import RunStore
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from ..processes import wait_until
from ..service_harness import Script, document, record, write

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def _prefilled(tmp_path: Path) -> Settings:
    return resolve_settings(
        {
            "dataset": [str(EXAMPLES / "legal_mcq.jsonl")],
            "responses": str(EXAMPLES / "legal_mcq.responses.jsonl"),
            "run_dir": str(tmp_path / "runs"),
        }
    )


@pytest.fixture
def mock() -> Iterator[tuple[MockOpenAIServer, Script]]:
    script = Script()
    with MockOpenAIServer() as server:
        server.add_reply(None, script)
        yield server, script


def _live(
    tmp_path: Path, server: MockOpenAIServer, doc: dict[str, Any], cache: bool = True
) -> Settings:
    path = write(tmp_path / "doc.json", doc)
    values = {
        "dataset": [str(path)], "dataset_format": "contract_v1", "model": ["openai/cand"],
        "judge_model": ["openai/judge"], "base_url": server.base_url,
        "run_dir": str(tmp_path / "runs"), "cache": str(tmp_path / "cache.sqlite"),
    }  # fmt: skip
    return resolve_settings(values, no_cache=not cache)


def test_a_run_cancelled_before_it_starts_is_still_finalized(tmp_path: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    outcome = run_evaluation(_prefilled(tmp_path), "run_c", cancel=cancel)
    assert outcome.status == "cancelled" and outcome.denominators["cancelled_records"] == 20
    assert outcome.run_path is not None and check_run_directory(outcome.run_path) == []
    rows = _lines(outcome.run_path / "predictions.jsonl")
    assert {(r["reason"], r["test_outcome"]) for r in rows} == {("cancelled", "cancelled")}


def test_cancel_mid_run_cancels_the_waiting_calls(
    tmp_path: Path, mock: tuple[MockOpenAIServer, Script]
) -> None:
    server, script = mock
    script.hold.set()
    doc = document("c", [record("f1", "Fast one?"), record("f2", "Fast two?"),
                         record("s1", "SLOW one?"), record("f3", "Fast three?")])  # fmt: skip
    cancel = threading.Event()

    def progress(done: int, total: int) -> None:
        if done == 2:
            cancel.set()  # the next item waits on a held call: cancelling must end the wait

    outcome = run_evaluation(
        _live(tmp_path, server, doc), "run_m", cancel=cancel, on_progress=progress
    )
    assert outcome.status == "cancelled"
    rows = {r["record_id"]: r for r in _lines(tmp_path / "runs" / "run_m" / "predictions.jsonl")}
    assert [rows[k]["reason"] for k in ("f1", "f2", "s1", "f3")] == [
        "correct", "correct", "cancelled", "cancelled",
    ]  # fmt: skip
    assert wait_until(lambda: server.stats()["in_flight"] == 0, 10)  # the held call was dropped


def test_a_resumed_run_records_finished_lines_and_calls_only_for_the_rest(
    tmp_path: Path, mock: tuple[MockOpenAIServer, Script]
) -> None:
    server, _ = mock
    doc = document("r", [record(f"q{i}", f"Question {i}?") for i in range(4)])
    first = run_evaluation(_live(tmp_path, server, doc, cache=False), "run_1")
    assert first.status == "completed" and server.stats()["requests"] == 9  # 4 + 4 + a probe
    done = {r["item_id"]: r for r in _lines(tmp_path / "runs" / "run_1" / "predictions.jsonl")}
    kept = {k: v for k, v in done.items() if not k.endswith(("q2", "q3"))}
    history = [{"state": "queued", "at": "2026-01-01T00:00:00.000Z"}]
    states: list[str] = []
    second = run_evaluation(
        _live(tmp_path, server, doc, cache=False), "run_2", resume=Resume(kept),
        history=history, on_state=lambda s, _: states.append(s),
    )  # fmt: skip
    assert second.status == "completed" and states[0] == "validating"
    assert server.count_for("Question 0?") == 2 and server.count_for("Question 3?") == 4
    rows = _lines(tmp_path / "runs" / "run_2" / "predictions.jsonl")
    assert [r["record_id"] for r in rows] == ["q0", "q1", "q2", "q3"]
    assert rows[0]["attempts"] == done["r/q0"]["attempts"]  # kept as it was
    manifest = json.loads((tmp_path / "runs" / "run_2" / "run_manifest.json").read_text())
    assert manifest["created_at"] == "2026-01-01T00:00:00.000Z"

    third = run_evaluation(
        _live(tmp_path, server, doc, cache=False), "run_3",
        resume=Resume(kept, evaluate=False, reason="the worker died"),
    )  # fmt: skip
    assert third.status == "completed_with_failures"
    rows = _lines(tmp_path / "runs" / "run_3" / "predictions.jsonl")
    assert [r["reason"] for r in rows] == [
        "correct",
        "correct",
        "evaluation_error",
        "evaluation_error",
    ]
    assert "the worker died" in rows[2]["explanation"]
    assert server.count_for("Question 3?") == 4  # no call


def test_a_rejected_dataset_writes_nothing(tmp_path: Path) -> None:
    bad = write(
        tmp_path / "bad.json", {**document("x", [record("a", "Q?")]), "schema_version": "9"}
    )
    settings = resolve_settings(
        {"dataset": [str(bad)], "model": ["openai/x"], "run_dir": str(tmp_path / "runs")}
    )
    outcome = run_evaluation(settings, "run_r")
    assert outcome.status == "rejected" and outcome.rejection is not None
    assert outcome.rejection.status == 400 and not (tmp_path / "runs").exists()


def test_read_finished_leaves_out_a_line_cut_by_a_crash(tmp_path: Path) -> None:
    (tmp_path / "predictions.jsonl").write_text(
        '{"item_id": "d/a", "x": 1}\n{"item_id": "d/b", "x": 2}\n{"item_id": "d/c", "x"'
    )
    assert sorted(read_finished(tmp_path)) == ["d/a", "d/b"]
    assert read_finished(tmp_path / "missing") == {}


def _service_run(
    tmp_path: Path, server: MockOpenAIServer, *, cache: bool
) -> tuple[DataDir, RunStore, Settings, str]:
    data = DataDir(tmp_path / "data")
    data.create()
    store = RunStore(data.state)
    run_id = "run_01J8Q4ER9Z7Y5V5K6F4A1P2M3N"
    doc = document("svc", [record(f"q{i}", f"Service question {i}?") for i in range(3)])
    upload = data.upload(run_id)
    upload.parent.mkdir(parents=True)
    write(upload, doc)
    store.create(
        run_id=run_id, owner="local", models=["openai/cand"], request_id="req",
        validation={}, dataset={}, total=3, max_queued=5, max_per_owner=5,
    )  # fmt: skip
    base = resolve_settings(
        {"model": ["openai/cand"], "judge_model": ["openai/judge"], "base_url": server.base_url},
        no_cache=not cache,
    )
    return data, store, service_settings(base, data), run_id


def test_execute_gives_up_unfinished_items_without_a_cache(
    tmp_path: Path, mock: tuple[MockOpenAIServer, Script]
) -> None:
    server, _ = mock
    data, store, settings, run_id = _service_run(tmp_path, server, cache=False)
    # A first attempt that recorded one item, then "died": its directory was never sealed.
    scratch = tmp_path / "scratch"
    run_evaluation(dataclasses.replace(settings, dataset=(str(data.upload(run_id)),),
                   model=("openai/cand",), run_dir=str(scratch)), run_id)  # fmt: skip
    partial = data.runs / run_id
    partial.mkdir()
    first_line = (scratch / run_id / "predictions.jsonl").read_text().splitlines()[0]
    (partial / "predictions.jsonl").write_text(first_line + "\n")
    store.set_state(run_id, "validating", "2026-01-01T00:00:01.000Z")
    store.set_state(run_id, "running", "2026-01-01T00:00:02.000Z")
    calls = server.stats()["requests"]
    assert execute(run_id, base=settings, data=data, store=store) == "completed_with_failures"
    assert server.stats()["requests"] == calls  # nothing evaluated again
    row = store.get(run_id)
    assert row is not None and row.resumes == 1 and row.denominators is not None
    assert row.denominators["evaluated_records"] == 1 and row.denominators["failed_records"] == 2
    assert (data.interrupted / f"{run_id}.1" / "predictions.jsonl").is_file()
    assert check_run_directory(data.runs / run_id) == []


def test_execute_copies_the_end_of_a_sealed_directory_the_table_missed(
    tmp_path: Path, mock: tuple[MockOpenAIServer, Script]
) -> None:
    server, _ = mock
    data, store, settings, run_id = _service_run(tmp_path, server, cache=True)
    assert execute(run_id, base=settings, data=data, store=store) == "completed"
    store.finish(run_id, "completed")
    # as if the worker died after sealing the directory, before writing the table
    conn = store._conn()
    conn.execute(
        "UPDATE runs SET status = 'finalizing', metrics = NULL WHERE run_id = ?", (run_id,)
    )
    calls = server.stats()["requests"]
    assert execute(run_id, base=settings, data=data, store=store) == "completed"
    row = store.get(run_id)
    assert row is not None and row.status == "completed" and row.metrics is not None
    assert server.stats()["requests"] == calls


def test_a_live_run_cancelled_before_it_starts_makes_no_call(
    tmp_path: Path, mock: tuple[MockOpenAIServer, Script]
) -> None:
    server, _ = mock
    cancel = threading.Event()
    cancel.set()
    doc = document("c", [record("q1", "Question one?")])
    outcome = run_evaluation(_live(tmp_path, server, doc), "run_x", cancel=cancel)
    assert outcome.status == "cancelled" and server.stats()["requests"] == 0


def test_an_item_whose_evaluation_raises_is_an_error_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    evaluate = ItemRunner.evaluate

    def crashing(self: ItemRunner, spec: ItemSpec) -> Any:
        if spec.index == 1:
            raise ValueError("the grader broke\nsecond line")
        return evaluate(self, spec)

    monkeypatch.setattr(ItemRunner, "evaluate", crashing)
    outcome = run_evaluation(_prefilled(tmp_path), "run_e")
    rows = _lines(tmp_path / "runs" / "run_e" / "predictions.jsonl")
    assert len(rows) == 20 and outcome.status == "completed_with_failures"
    assert rows[1]["reason"] == "evaluation_error" and rows[1]["test_outcome"] == "failed"
    assert rows[1]["explanation"].endswith("ValueError: the grader broke")
    assert sum(r["reason"] == "evaluation_error" for r in rows) == 1  # only that one
