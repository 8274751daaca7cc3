"""Live generation through the real openai client against our mock server on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pytest_legaleval.run.verify import check_run_directory
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from .conftest import mcq_row, read_jsonl, run_dirs, write_jsonl

FAST_RETRIES = ["--retry-delays", "0.01,0.03,0.07"]


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer(latency=0.02) as srv:
        # The right answer for every record whose prompt says "[ans=X]".
        srv.add_reply(r"\[ans=B\]", "Answer: B")
        yield srv


def _dataset(path: Path, n: int, *, correct: str = "B") -> Path:
    rows = [
        mcq_row(f"q{i:03d}", correct=correct, prompt=f"Question q{i:03d} [ans=B]?")
        for i in range(n)
    ]
    return write_jsonl(path, rows)


def _args(server: MockOpenAIServer, data: Path, *extra: str) -> list[str]:
    return [
        "--dataset",
        str(data),
        "--model",
        "openai/mock-model",
        "--base-url",
        server.base_url,
        "--run-dir",
        "runs",
        "--cache",
        "cache.sqlite",
        *FAST_RETRIES,
        *extra,
    ]


def _predictions(root: Path) -> list[dict]:
    (run,) = run_dirs(root)
    return read_jsonl(run / "predictions.jsonl")


def test_live_run_is_pipelined_and_records_usage(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    # Nothing is answered before 20 calls are in flight: they overlap on any machine, and
    # the peak shows the limit held.
    server.hold(until_in_flight=20)
    data = _dataset(pytester.path / "d.jsonl", 40)
    result = pytester.runpytest(*_args(server, data, "--concurrency", "20"))
    result.assert_outcomes(passed=40)
    assert server.stats()["peak_in_flight"] == 20
    predictions = _predictions(pytester.path / "runs")
    assert all(
        p["source"] == "live" and p["input_tokens"] and p["output_tokens"] for p in predictions
    )
    assert all(len(p["attempts"]) == 1 and p["first_attempt_at"] for p in predictions)
    sent = server.requests(limit=1)[0]
    assert sent["model"] == "mock-model"
    content = sent["messages"][-1]["content"]
    assert "A) option A" in content and "D) option D" in content  # choices reach the model


def test_transient_errors_are_retried_and_logged(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    data = _dataset(pytester.path / "d.jsonl", 4)
    server.add_fault("500", match="q001", times=2)
    server.add_fault("503", match="q002", times=3)
    server.add_fault("400", match="q003")
    result = pytester.runpytest(*_args(server, data))
    result.assert_outcomes(passed=2, errors=2)
    assert server.count_for("q001") == 3
    assert server.count_for("q002") == 3  # at most 3 attempts
    assert server.count_for("q003") == 1  # permanent: never retried
    by_id = {p["record_id"]: p for p in _predictions(pytester.path / "runs")}
    assert [a["error_code"] for a in by_id["q001"]["attempts"]] == [
        "internal_error",
        "internal_error",
        None,
    ]
    assert by_id["q001"]["passed"] is True
    assert by_id["q002"]["reason"] == "generation_error:service_unavailable"
    assert by_id["q003"]["reason"] == "generation_error:bad_request"
    (run,) = run_dirs(pytester.path / "runs")
    attempts = read_jsonl(run / "attempt_logs.jsonl")
    assert len(attempts) == 1 + 3 + 3 + 1
    manifest = json.loads((run / "run_manifest.json").read_text())
    assert "retrying" in [t["state"] for t in manifest["state_transitions"]]
    assert manifest["status"] == "completed_with_failures"


def test_latency_budget_fails_slow_answers(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    server.set_latency(0.15)
    doc = pytester.path / "doc.json"  # expected.* is a contract field
    doc.write_text(
        json.dumps(
            {
                "dataset_id": "lat",
                "dataset_version": "1",
                "schema_version": "1.0",
                "records": [
                    {
                        "record_id": "slow",
                        "input": {"prompt": "z"},
                        "reference": {"answer": "a"},
                        "expected": {"max_latency_ms": 50},
                    }
                ],
            }
        )
    )
    # A reference record without a judge is generated only when asked to.
    result = pytester.runpytest(*_args(server, doc, "--generate-ungraded"))
    result.assert_outcomes(errors=1)  # no trustworthy verdict, as the metrics count it
    result.stdout.fnmatch_lines(["*latency_exceeded*expected.max_latency_ms=50*"])


def _judged_doc(path: Path) -> Path:
    path.write_text(
        json.dumps(
            {
                "dataset_id": "ungraded",
                "dataset_version": "1",
                "schema_version": "1.0",
                "records": [
                    {
                        "record_id": "ref",
                        "input": {"prompt": "ref-q"},
                        "reference": {"answer": "a"},
                    },
                    {
                        "record_id": "crit",
                        "input": {"prompt": "crit-q"},
                        "expected": {"required_criteria": ["accuracy"]},
                    },
                ],
            }
        )
    )
    return path


def test_without_a_judge_judged_records_are_skipped_before_any_call(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    doc = _judged_doc(pytester.path / "doc.json")
    result = pytester.runpytest(*_args(server, doc))
    result.assert_outcomes(skipped=2)
    assert server.stats()["requests"] == 0
    # nothing was evaluated: not a success (it exited 0 as "completed" before)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["nothing evaluated: 2 items need --judge-model*"])
    lines = read_jsonl(run_dirs(pytester.path / "runs")[0] / "predictions.jsonl")
    assert {(line["reason"], line["model_response"]) for line in lines} == {("needs_judge", None)}


def test_generate_ungraded_pays_for_the_answers_and_keeps_them(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    doc = _judged_doc(pytester.path / "doc.json")
    result = pytester.runpytest(*_args(server, doc, "--generate-ungraded"))
    result.assert_outcomes(skipped=2)
    assert server.stats()["requests"] == 2
    assert result.ret == pytest.ExitCode.OK  # answers asked for without grading: evaluated
    assert "nothing evaluated" not in result.stdout.str()
    lines = read_jsonl(run_dirs(pytester.path / "runs")[0] / "predictions.jsonl")
    assert all(line["reason"] == "needs_judge" and line["model_response"] for line in lines)


def test_a_429_storm_slows_the_run_without_failing_records(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    data = _dataset(pytester.path / "d.jsonl", 30)
    server.add_fault("429", calls=set(range(1, 21)), retry_after=0.02)
    result = pytester.runpytest(*_args(server, data, "--concurrency", "8", "--max-attempts", "6"))
    result.assert_outcomes(passed=30)
    assert server.stats()["faults_by_kind"]["429"] == 20


def test_cache_makes_a_rerun_free(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    data = _dataset(pytester.path / "d.jsonl", 10)
    pytester.runpytest(*_args(server, data)).assert_outcomes(passed=10)
    before = server.stats()["requests"]
    pytester.runpytest(*_args(server, data)).assert_outcomes(passed=10)
    assert server.stats()["requests"] == before
    (_, second) = run_dirs(pytester.path / "runs")
    assert all(p["details"]["cached"] for p in read_jsonl(second / "predictions.jsonl"))


def test_conversation_from_inserts_the_earlier_answer(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    rows = [
        mcq_row(
            "q1",
            prompt="Follow-up [ans=B]?",
            messages=[{"role": "user", "content": "First question?"}],
        )
    ]
    data = write_jsonl(pytester.path / "d.jsonl", rows)
    earlier = write_jsonl(
        pytester.path / "earlier.jsonl", [{"record_id": "q1", "response": "Earlier answer."}]
    )
    result = pytester.runpytest(*_args(server, data, "--conversation-from", str(earlier)))
    result.assert_outcomes(passed=1)
    messages = server.last_request()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == "Earlier answer."
    assert messages[2]["content"].startswith("Follow-up")


@pytest.mark.slow
def test_n2_equals_n0_live(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    data = _dataset(pytester.path / "d.jsonl", 24)
    server.add_reply("q00[0-4]", "Answer: C")  # some wrong answers
    serial = pytester.runpytest_subprocess(*_args(server, data, "-p", "no:xdist", "--no-cache"))
    parallel = pytester.runpytest_subprocess(
        *_args(server, data, "-n", "2", "--no-cache", "--run-dir", "runs2")
    )
    assert serial.parseoutcomes() == parallel.parseoutcomes()

    def outcomes(root: Path) -> dict[str, str]:
        return {p["record_id"]: p["reason"] for p in _predictions(root)}

    assert outcomes(pytester.path / "runs") == outcomes(pytester.path / "runs2")


def test_three_workers_hold_the_whole_concurrency(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    """7 slots over 3 workers are 3, 2 and 2: the endpoint sees 7 in flight, not 3 x 2."""
    # One wave per worker (7 records: 3, 2, 2), held until all 7 are in flight: the waves
    # overlap however far apart the workers start.
    server.hold(until_in_flight=7)
    data = _dataset(pytester.path / "d.jsonl", 7)
    result = pytester.runpytest_subprocess(
        *_args(server, data, "-n", "3", "--no-cache", "--concurrency", "7")
    )
    result.assert_outcomes(passed=7)
    assert server.stats()["peak_in_flight"] == 7


@pytest.mark.parametrize(
    "workers", [["-n", "2"], ["--tx", "2*popen", "--dist", "load"]], ids=["n", "tx"]
)
def test_fewer_slots_than_workers_is_warned_about(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer, workers: list[str]
) -> None:
    server.hold(until_in_flight=2)  # one call per worker, held until both are in flight
    data = _dataset(pytester.path / "d.jsonl", 2)
    result = pytester.runpytest_subprocess(
        *_args(server, data, *workers, "--no-cache", "--concurrency", "1")
    )
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(
        ["*--concurrency 1 is below the 2 xdist workers: each worker keeps one call in flight*"]
    )
    assert server.stats()["peak_in_flight"] == 2


_SKIP_TWO = """
import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if "q001" in item.nodeid:
            item.add_marker(pytest.mark.skip(reason="not today"))
        elif "q002" in item.nodeid:
            item.add_marker(pytest.mark.skipif(True, reason="not here"))
        elif "q003" in item.nodeid:
            item.add_marker(pytest.mark.skipif("False", reason="a string: pytest decides"))
"""


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["n0", "n2"])
def test_items_skipped_up_front_are_never_called(
    pytester: pytest.Pytester,
    suite: Path,
    server: MockOpenAIServer,
    workers: list[str],
) -> None:
    """No call is paid for an item that pytest skips before its fixtures."""
    pytester.makeconftest(_SKIP_TWO)
    data = _dataset(pytester.path / "d.jsonl", 6)
    result = pytester.runpytest_subprocess(*_args(server, data, "--no-cache", *workers))
    result.assert_outcomes(passed=4, skipped=2)
    assert server.stats()["requests"] == 4
    reasons = {p["record_id"]: p["reason"] for p in _predictions(pytester.path / "runs")}
    assert reasons == {
        "q000": "correct",
        "q001": "skipped",
        "q002": "skipped",
        "q003": "correct",
        "q004": "correct",
        "q005": "correct",
    }


_SPOIL_CACHE_AFTER_CONFIGURE = """
def pytest_collection_finish(session):
    # After the configure-time check: only the engine, opening it, can find out.
    with open("cache.sqlite", "wb") as out:
        out.write(b"SQLite format 3\\x00" + b"\\xff" * 200)
"""


def test_a_cache_the_engine_cannot_open_is_a_usage_error(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    pytester.makeconftest(_SPOIL_CACHE_AFTER_CONFIGURE)
    data = _dataset(pytester.path / "d.jsonl", 3)
    result = pytester.runpytest_subprocess(*_args(server, data, "-p", "no:xdist"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: Cannot use 'cache.sqlite' as the result cache*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert server.stats()["requests"] == 0
    (run,) = run_dirs(pytester.path / "runs")
    manifest = json.loads((run / "run_manifest.json").read_text())
    assert manifest["status"] == "failed"
    assert "as the result cache" in manifest["error"]


_ENGINE_IMPORT_PROBE = """
import sys
import threading

import pytest

from pytest_legaleval.pytest.tricks import ENGINE_MODULE, ENGINE_THREAD


def _role(config):
    # Not $PYTEST_XDIST_WORKER: the controller inherits it when this suite runs under xdist.
    return getattr(config, "workerinput", {}).get("workerid") or (
        "controller" if config.pluginmanager.has_plugin("dsession") else "main"
    )


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    started = ENGINE_MODULE in sys.modules or any(
        t.name == ENGINE_THREAD for t in threading.enumerate()
    )
    config._probe = [f"started={started}"]


def pytest_unconfigure(config):
    config._probe.append(f"imported={ENGINE_MODULE in sys.modules}")
    with open(f"{_role(config)}.txt", "w") as out:
        out.write(" ".join(config._probe))
"""


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["n0", "n2"])
def test_xdist_workers_import_the_engine_while_they_collect(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer, workers: list[str]
) -> None:
    """Workers start the SDK import at configure; a single process in its run loop; the
    controller never imports it."""
    pytester.makeconftest(_ENGINE_IMPORT_PROBE)
    data = _dataset(pytester.path / "d.jsonl", 4)
    result = pytester.runpytest_subprocess(*_args(server, data, "--no-cache", *workers))
    result.assert_outcomes(passed=4)
    probes = {p.stem: p.read_text() for p in pytester.path.glob("*.txt")}
    if workers[0] == "-n":
        assert probes == {
            "controller": "started=False imported=False",
            "gw0": "started=True imported=True",
            "gw1": "started=True imported=True",
        }
    else:
        assert probes == {"main": "started=False imported=True"}
    assert server.stats()["requests"] == 4


@pytest.mark.parametrize(
    "extra", [["--collect-only"], ["--responses", "r.jsonl"]], ids=["collect-only", "responses"]
)
def test_no_engine_import_on_workers_that_call_no_model(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer, extra: list[str]
) -> None:
    pytester.makeconftest(_ENGINE_IMPORT_PROBE)
    data = _dataset(pytester.path / "d.jsonl", 2)
    write_jsonl(
        pytester.path / "r.jsonl", [{"record_id": f"q{i:03d}", "response": "B"} for i in range(2)]
    )
    args = ["--dataset", str(data), "--run-dir", "runs", "-n", "2", *extra]
    if extra[0] == "--collect-only":
        args += ["--model", "openai/mock-model", "--base-url", server.base_url]
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == 0, result.stdout.str()
    probes = {p.stem: p.read_text() for p in pytester.path.glob("*.txt")}
    # (--collect-only turns xdist off: one process collects, and calls no model.)
    assert probes and set(probes.values()) == {"started=False imported=False"}, probes
    assert server.stats()["requests"] == 0


@contextmanager
def _pytest_process(
    pytester: pytest.Pytester, args: list[str]
) -> Iterator[subprocess.Popen[bytes]]:
    """``pytest ARGS`` in ``pytester.path`` as its own process group, killed if left running."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # a signal to the group reaches xdist's workers too
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _wait_for(
    proc: subprocess.Popen[bytes], ready: Callable[[], bool], state: Callable[[], object]
) -> None:
    """Poll ``ready`` (an event: counts, files) while ``proc`` runs; 120 s is a hang guard.

    ``state`` says what was reached when the wait fails.
    """
    deadline = time.monotonic() + 120
    while not ready():
        if proc.poll() is not None:
            output = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            pytest.fail(f"pytest ended ({proc.returncode}) first: {state()}\n{output}")
        if time.monotonic() > deadline:
            pytest.fail(f"hang guard: not ready after 120 s: {state()}")
        time.sleep(0.05)


@pytest.mark.slow
def test_sigkill_then_rerun_repeats_no_finished_call(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    # q000-q009 are answered, the later records' calls are held: the kill lands mid-run
    # however slow the machine, once the 10 answers are in the cache (durable) and 4 calls
    # (the concurrency) are held.
    server.clear_replies()
    server.add_reply(r"Question q0[1-5]\d ", {"content": "Answer: B", "delay": 600})
    server.add_reply(r"\[ans=B\]", "Answer: B")
    data = _dataset(pytester.path / "d.jsonl", 60)
    cache = pytester.path / "cache.sqlite"
    with _pytest_process(pytester, _args(server, data, "--concurrency", "4")) as proc:
        _wait_for(
            proc,
            lambda: server.stats()["in_flight"] >= 4 and _cached_rows(cache) >= 10,
            server.stats,
        )
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    answered = {f"q{i:03d}" for i in range(10)}
    (first,) = run_dirs(pytester.path / "runs")
    lines = first / "predictions.jsonl"  # none yet if the kill came before the first item
    finished = {p["record_id"] for p in read_jsonl(lines)} if lines.exists() else set()
    assert finished <= answered  # the lines that reached the disk
    server.clear_replies()
    server.add_reply(r"\[ans=B\]", "Answer: B")
    result = pytester.runpytest(*_args(server, data, "--run-dir", "rerun"))
    result.assert_outcomes(passed=60)
    for record_id in sorted(answered):  # each answer was durable: none is paid for twice
        assert server.count_for(f"Question {record_id} ") == 1, record_id


def _cached_rows(path: Path) -> int:
    import sqlite3

    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as db:
            return int(db.execute("SELECT count(*) FROM results").fetchone()[0])
    except sqlite3.Error:
        return 0


@pytest.mark.slow
@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["n0", "n2"])
def test_ctrl_c_keeps_what_arrived_cancels_the_rest_and_finalizes(
    pytester: pytest.Pytester, suite: Path, workers: list[str]
) -> None:
    """Ctrl-C (SIGINT to the process group): every answer already received is graded and
    recorded, even of items whose tests had not run yet; only calls still in flight are
    cancelled. The first items hang, so the answers of the later ones wait behind them."""
    with MockOpenAIServer(latency=0.0) as server:
        hanging = {f"q{i:03d}" for i in range(11)}
        server.add_reply(
            r"Question q0(0\d|10) ", {"content": "Answer: B", "delay": 60}
        )  # q000-q010
        server.add_reply(r"\[ans=B\]", "Answer: B")
        data = _dataset(pytester.path / "d.jsonl", 20)
        args = _args(server, data, "--concurrency", "20", *workers)
        cache = pytester.path / "cache.sqlite"
        with _pytest_process(pytester, args) as proc:
            # Counted, not timed: every call sent, and the 9 answers in the client's cache
            # (written before the client hands an answer on).
            _wait_for(
                proc,
                lambda: server.stats()["in_flight"] >= 11 and _cached_rows(cache) >= 9,
                server.stats,
            )
            # From the cache's commit to the item's future is a thread switch on the
            # writer thread (microseconds); no event outside the process marks its end.
            time.sleep(1.0)
            os.killpg(proc.pid, signal.SIGINT)
            assert proc.wait(timeout=60) == pytest.ExitCode.INTERRUPTED
    (run,) = run_dirs(pytester.path / "runs")
    manifest = json.loads((run / "run_manifest.json").read_text())
    assert manifest["status"] == "cancelled"
    predictions = {p["record_id"]: p for p in read_jsonl(run / "predictions.jsonl")}
    assert len(predictions) == 20
    assert {r for r, p in predictions.items() if p["reason"] == "cancelled"} == hanging
    kept = [p for r, p in predictions.items() if r not in hanging]
    assert all(p["passed"] is True and p["test_outcome"] == "passed" for p in kept)
    summary = json.loads((run / "metrics_summary.json").read_text())
    assert summary["outcomes_by_reason"]["cancelled"] == 11
    assert check_run_directory(run) == []


_MARK_FINISHED = """
from pathlib import Path

_records = []


def pytest_configure(config):
    # Not $PYTEST_XDIST_WORKER: the controller inherits it when this suite runs under xdist.
    _records.append(getattr(config, "workerinput", None) is None)


def pytest_runtest_logfinish(nodeid):
    if _records[0]:  # the process that records the item
        with Path(__file__).with_name("finished.txt").open("a") as out:
            out.write(nodeid + "\\n")
"""


def _finished_items(root: Path) -> set[str]:
    path = root / "finished.txt"
    return set(path.read_text().splitlines()) if path.exists() else set()


@pytest.mark.slow
@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["n0", "n2"])
def test_sigterm_cancels_and_finalizes_like_ctrl_c(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer, workers: list[str]
) -> None:
    """A cancelled CI job sends SIGTERM to the whole process group."""
    # q000-q009 are answered, the later records' calls are held: once their 10 items are
    # finished (a conftest marks each in the process that records it) every process waits
    # on a held call, and the signal lands there, mid-run, however slow the machine.
    pytester.makeconftest(_MARK_FINISHED)
    server.clear_replies()
    server.add_reply(r"Question q0[1-7]\d ", {"content": "Answer: B", "delay": 600})
    server.add_reply(r"\[ans=B\]", "Answer: B")
    data = _dataset(pytester.path / "d.jsonl", 80)
    args = _args(server, data, "--concurrency", "2", *workers)
    with _pytest_process(pytester, args) as proc:
        _wait_for(
            proc,
            lambda: len(_finished_items(pytester.path)) >= 10,
            lambda: sorted(_finished_items(pytester.path)),
        )
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=120) == pytest.ExitCode.INTERRUPTED
    (run,) = run_dirs(pytester.path / "runs")
    manifest = json.loads((run / "run_manifest.json").read_text())
    assert manifest["status"] == "cancelled"
    predictions = read_jsonl(run / "predictions.jsonl")
    assert len(predictions) == 80
    assert 0 < sum(p["reason"] == "cancelled" for p in predictions) < 80
    assert (run / "metrics_summary.json").exists() and (run / "SHA256SUMS").exists()
    assert check_run_directory(run) == []


def test_missing_api_key_for_the_real_endpoint_is_a_usage_error(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    data = _dataset(pytester.path / "d.jsonl", 1)
    result = pytester.runpytest(
        "--dataset", str(data), "--model", "openai/gpt-x", "--run-dir", "runs"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*OPENAI_API_KEY*"])


def test_generation_settings_from_cli_and_per_model_yaml(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    data = _dataset(pytester.path / "d.jsonl", 1)
    (pytester.path / "legaleval.yaml").write_text(
        "models:\n  openai/mock-model:\n    temperature: 0.3\n    seed: 7\n    max_new_tokens: 64\n"
    )
    result = pytester.runpytest(*_args(server, data, "--top-p", "0.9", "--seed", "11"))
    result.assert_outcomes(passed=1)
    sent = server.last_request()
    # the session's values win; the model's YAML entry fills what the session leaves unset
    assert (sent["temperature"], sent["seed"], sent["max_tokens"], sent["top_p"]) == (
        0.3,
        11,
        64,
        0.9,
    )
    (run,) = run_dirs(pytester.path / "runs")
    manifest = json.loads((run / "run_manifest.json").read_text())
    assert manifest["generation_settings"]["openai/mock-model"] == {
        "temperature": 0.3,
        "top_p": 0.9,
        "max_new_tokens": 64,
        "seed": 11,
    }


def test_an_api_key_in_the_yaml_is_refused(
    pytester: pytest.Pytester, suite: Path, server: MockOpenAIServer
) -> None:
    data = _dataset(pytester.path / "d.jsonl", 1)
    (pytester.path / "legaleval.yaml").write_text(
        "models:\n  openai/mock-model:\n    api_key: sk-secret\n"
    )
    result = pytester.runpytest(*_args(server, data))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown settings*api_key*environment only*"])
