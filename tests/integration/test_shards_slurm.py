"""``--shard auto`` on a real Slurm job array, and the same variable contract without Slurm.

The Slurm test starts a single-node Slurm (``tests/slurm_cluster.py``), queues the shipped
recipe (``examples/shards/slurm/submit.sh``): a 3-task array of pytest runs and the merge
job that waits for it; the merged run must equal an unsharded run of the same data. The
contract test sets the array's variables itself for three in-process sessions and merges
by prefix: it runs everywhere.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.cli import main

from ..extras import require_extras
from ..processes import wait_until
from ..slurm_cluster import SlurmCluster, slurm_missing
from .conftest import EXAMPLES, REPO, SUITE, copy_in, read_jsonl, run_eval

VOLATILE = {"run_id", "computed_at"}
KEY = ("record_id", "outcome", "reason", "score")


def _same_run(merged: Path, full: Path) -> None:
    """``merged`` has the unsharded run's figures and items, in its order."""
    for name in ("metrics_summary.json", "metrics_by_slice.json"):
        ours = {k: v for k, v in json.loads((merged / name).read_text()).items()
                if k not in VOLATILE}  # fmt: skip
        theirs = {k: v for k, v in json.loads((full / name).read_text()).items()
                  if k not in VOLATILE}  # fmt: skip
        assert ours == theirs, name
    rows = [tuple(r[k] for k in KEY) for r in read_jsonl(merged / "predictions.jsonl")]
    assert rows == [tuple(r[k] for k in KEY) for r in read_jsonl(full / "predictions.jsonl")]
    assert len(rows) == 20


def test_slurm_variables_shard_a_run_and_merge_finds_it_by_prefix(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, responses = copy_in(
        pytester, EXAMPLES / "legal_mcq.jsonl", EXAMPLES / "legal_mcq.responses.jsonl"
    )
    for name in ("JOB_COMPLETION_INDEX", "LEGALEVAL_SHARD_INDEX", "LEGALEVAL_SHARD_COUNT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "4242")
    monkeypatch.setenv("SLURM_ARRAY_TASK_MIN", "0")
    monkeypatch.setenv("SLURM_ARRAY_TASK_COUNT", "3")
    for task in range(3):
        monkeypatch.setenv("SLURM_ARRAY_TASK_ID", str(task))
        result = run_eval(pytester, data, responses, "--shard", "auto")
        assert result.ret in (0, 1), result.stdout.str()
    runs = pytester.path / "runs"
    assert sorted(p.name for p in runs.iterdir()) == [
        f"slurm-4242-shard-{k}-of-3" for k in (1, 2, 3)
    ]
    monkeypatch.delenv("SLURM_ARRAY_TASK_ID")
    run_eval(pytester, data, responses, "--run-id", "full")
    out = pytester.path / "merged"
    assert main(["merge", "--prefix", "slurm-4242", "--runs", str(runs), "--out", str(out)]) == 0
    _same_run(out, runs / "full")
    manifest = json.loads((out / "run_manifest.json").read_text())
    assert [m["shard"] for m in manifest["merged_from"]] == ["1/3", "2/3", "3/3"]
    assert main(["merge", "--prefix", "nope", "--runs", str(runs), "--out", str(out) + "2"]) == 2


@pytest.fixture(scope="module")
def slurm() -> Iterator[SlurmCluster]:
    why = slurm_missing()
    if why is not None:
        if require_extras():
            pytest.fail(why)
        pytest.skip(why)
    cluster = SlurmCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.mark.slow
def test_a_slurm_array_and_its_merge_job_equal_the_unsharded_run(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    tmp_path.chmod(0o755)
    (tmp_path / "test_suite.py").write_text(SUITE, encoding="utf-8")
    runs = tmp_path / "runs"
    env: dict[str, Any] = {
        **slurm.env,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "DATASET": str(EXAMPLES / "legal_mcq.jsonl"),
        "RUN_DIR": str(runs),
        "SUITE": str(tmp_path / "test_suite.py"),
        "LEGALEVAL_ARGS": f"--responses {EXAMPLES / 'legal_mcq.responses.jsonl'}",
    }
    queued = subprocess.run(
        ["bash", str(REPO / "examples" / "shards" / "slurm" / "submit.sh"), "3"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert queued.returncode == 0, queued.stderr
    array = re.search(r"array job (\d+)", queued.stdout)
    assert array, queued.stdout
    merged = runs / f"slurm-{array.group(1)}"
    done = wait_until(lambda: (merged / "run_manifest.json").is_file(), 180)
    logs = "\n".join(p.read_text(errors="replace")[-1500:] for p in tmp_path.glob("*.out"))
    assert done, f"no merged run after 3 minutes:\n{logs}"
    shards = sorted(p.name for p in runs.iterdir() if "-shard-" in p.name)
    assert shards == [f"slurm-{array.group(1)}-shard-{k}-of-3" for k in (1, 2, 3)], logs
    full = subprocess.run(
        [sys.executable, "-m", "pytest", env["SUITE"], "-p", "no:cacheprovider", "-q",
         "--dataset", env["DATASET"], "--responses", str(EXAMPLES / "legal_mcq.responses.jsonl"),
         "--run-dir", str(runs), "--run-id", "full"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert full.returncode == 1, full.stdout[-2000:]  # 7 wrong example answers
    _same_run(merged, runs / "full")


def test_shard_auto_without_what_it_needs_is_a_usage_error(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, responses = copy_in(
        pytester, EXAMPLES / "legal_mcq.jsonl", EXAMPLES / "legal_mcq.responses.jsonl"
    )
    schedulers = ("SLURM_ARRAY", "JOB_COMPLETION", "LEGALEVAL_SHARD", "CI_NODE", "CIRCLE_NODE",
                  "BUILDKITE_PARALLEL", "SYSTEM_JOBPOSITION")  # fmt: skip
    for name in [n for n in os.environ if n.startswith(schedulers)]:
        monkeypatch.delenv(name)
    nothing = run_eval(pytester, data, responses, "--shard", "auto")
    assert nothing.ret == pytest.ExitCode.USAGE_ERROR
    nothing.stderr.fnmatch_lines(["*--shard auto: no scheduler's shard variables are set*"])
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "1")
    unnamed = run_eval(pytester, data, responses, "--shard", "auto/2")  # Kubernetes: no job id
    assert unnamed.ret == pytest.ExitCode.USAGE_ERROR
    unnamed.stderr.fnmatch_lines(["*pass --run-id NAME, the prefix the shards share*"])
    named = run_eval(pytester, data, responses, "--shard", "auto/2", "--run-id", "nightly")
    assert named.ret in (0, 1) and (pytester.path / "runs" / "nightly-shard-2-of-2").is_dir()
