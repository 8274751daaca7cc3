"""A careless or hostile configuration is a usage error before anything is paid for.

Numbers out of range (``inf``, ``nan``, negative, absurd), unsafe run ids, a run id in use
by a live run, an alias bomb and paths leading out of the project in the automatically
read ``legaleval.yaml``: each ends the session at configure with pytest's usage error
(exit 4) naming the option, never an INTERNALERROR, a hang or a paid call.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.pipeline.settings import resolve_settings
from pytest_legaleval.run.claim import claim_run_id
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

SUITE = "def test_record(record, evaluation):\n    evaluation.check()\n"


def _dataset(root: Path) -> Path:
    row = {
        "schema_version": "legal_eval_v1",
        "id": "q1",
        "dataset": "t",
        "task_type": "mcq",
        "prompt": "Question q1?",
        "choices": [{"id": "A", "text": "a"}, {"id": "B", "text": "b"}],
        "correct_choice_ids": ["A"],
    }
    path = root / "d.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--retry-delays", "inf,inf", "finite"),
        ("--retry-delays", "1,99999", "[0, 3600]"),
        ("--request-timeout", "nan", "finite"),
        ("--request-timeout", "-1", "(0, 86400]"),
        ("--concurrency", "0", "[1, 100000]"),
        ("--concurrency", "1e9", "whole number"),
        ("--rpm", "inf", "finite"),
        ("--temperature", "-0.5", "[0, 2]"),
        ("--top-p", "0", "(0, 1]"),
        ("--max-attempts", "1000", "[1, 100]"),
        ("--judge-reasks", "-1", "[0, 20]"),
        ("--run-id", ".", "not a safe directory name"),
        ("--run-id", "..", "not a safe directory name"),
        ("--run-id", "", "not a safe directory name"),
        ("--epochs", "0", "[1, 100]"),
        ("--epoch-reducer", "median", "one of mean, majority, all, any"),
        ("--cluster-by", "metadata.", "expects a record field"),
        ("--judge-epochs", "21", "[1, 20]"),
        ("--protocol", "../x", "expects a name"),
    ],
)
def test_a_bad_number_or_run_id_is_a_usage_error(
    pytester: pytest.Pytester, option: str, value: str, says: str
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    data = _dataset(pytester.path)
    result = pytester.runpytest(
        "--dataset", str(data), "--model", "openai/m", "--base-url", "http://127.0.0.1:9/v1",
        option, value,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert says in result.stderr.str() and option in result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_a_run_id_in_use_by_a_live_run_is_refused_at_once(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    data = _dataset(pytester.path)
    with MockOpenAIServer(latency=30.0) as server:  # the first run waits on its only call
        args = [
            "--dataset", str(data), "--model", "openai/m", "--base-url", server.base_url,
            "--run-dir", "runs", "--run-id", "nightly", "--no-cache", "-p", "no:cacheprovider",
        ]  # fmt: skip
        first = subprocess.Popen(
            [sys.executable, "-m", "pytest", *args],
            cwd=pytester.path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while server.stats()["requests"] == 0:  # its call is out: its claim is held
                assert first.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
            second = pytester.runpytest(*args)
            assert second.ret == pytest.ExitCode.USAGE_ERROR
            assert f"process {first.pid}" in second.stderr.str()
            assert server.stats()["requests"] == 1  # the second run paid for nothing
        finally:
            first.terminate()
            first.wait(60)


def test_a_claim_is_released_and_a_dead_run_s_claim_taken_over(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    claim = claim_run_id(runs, "r1")
    with pytest.raises(ConfigError, match=f"process {os.getpid()}"):
        claim_run_id(runs, "r1")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)  # a refused claim removes nothing else
    assert (runs / ".r1.lock").exists()  # nor the live claim's lock
    claim.release()
    assert not runs.exists()  # nothing written, the folder the claim made is gone again
    runs.mkdir()
    (runs / ".r2.lock").write_text("999999999")  # a run that died without releasing
    claim_run_id(runs, "r2").release()
    (runs / "r3").mkdir()
    with pytest.raises(ConfigError, match="already exists"):
        claim_run_id(runs, "r3")


def test_an_alias_bomb_in_legaleval_yaml_is_refused_small(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 30):
        prev = f"*a{level - 1}"
        lines.append(f"a{level}: &a{level} [{', '.join([prev] * 9)}]")
    (tmp_path / "legaleval.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError, match=r"legaleval\.yaml"):
            resolve_settings({}, config_file=tmp_path / "legaleval.yaml", config_is_automatic=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024


@pytest.mark.parametrize("key", ["responses", "cache", "run_dir", "attachments_root"])
def test_an_automatic_legaleval_yaml_names_no_path_outside_its_project(
    tmp_path: Path, key: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    config = project / "legaleval.yaml"
    value = ["/etc"] if key == "attachments_root" else "../elsewhere/file"
    config.write_text(f"{key}: {json.dumps(value)}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="outside its folder"):
        resolve_settings({}, config_file=config, config_is_automatic=True)
    # The same file named by the user is trusted; inside the project is always fine.
    resolve_settings({}, config_file=config)
    config.write_text(f"{key}: {json.dumps(['sub'] if key == 'attachments_root' else 'sub/x')}\n")
    settings = resolve_settings({}, config_file=config, config_is_automatic=True)
    got = getattr(settings, key)
    assert str(project / "sub") in (got[0] if isinstance(got, tuple) else got)
