from __future__ import annotations

import fcntl
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ..strict_json import strict_jsonl

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
DATA = REPO / "tests" / "data"

SUITE = """
def test_record(record, evaluation):
    evaluation.check()
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Path:
    """A pytester directory holding the default suite."""
    pytester.makepyfile(test_suite=SUITE)
    return pytester.path


@pytest.fixture(autouse=True)
def _quiet_asyncio(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def copy_in(pytester: pytest.Pytester, *paths: Path) -> list[Path]:
    out = []
    for path in paths:
        target = pytester.path / path.name
        shutil.copyfile(path, target)
        out.append(target)
    return out


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The lines of an artifact, parsed strictly: a NaN or Infinity token fails the test."""
    return strict_jsonl(path)


def run_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []


def run_eval(
    pytester: pytest.Pytester, data: Path, responses: Path, *extra: str
) -> pytest.RunResult:
    """Run the suite in-process on ``data`` with pre-computed ``responses`` into ``runs/``."""
    return pytester.runpytest(
        "--dataset", str(data), "--responses", str(responses), "--run-dir", "runs", *extra
    )


def mcq_row(record_id: str, correct: str = "B", dataset: str = "t", **extra: Any) -> dict:
    row = {
        "schema_version": "legal_eval_v1",
        "id": record_id,
        "dataset": dataset,
        "task_type": "mcq",
        "prompt": f"Question {record_id}?",
        "choices": [{"id": c, "text": f"option {c}"} for c in "ABCD"],
        "correct_choice_ids": [correct],
    }
    row.update(extra)
    return row


@pytest.fixture(scope="session")
def lbr_replayed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """LBR's real run replayed offline (``--responses`` and ``--judgments``, no call).

    Replayed once per test session, even under xdist (the workers share the folder and
    take turns through a lock): a replay costs about 30 s of CPU, 17 s of it reading the
    APEX record's PDF. Returns the run directory; the replay's folder (``parents[1]``)
    holds the unpacked files. Read-only for its users.
    """
    from ..lbr_run import DATA as LBR

    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent  # this session's, common to workers
    else:
        shared = tmp_path_factory.mktemp("lbr_shared")
    root = shared / "lbr_replay"
    with (shared / "lbr_replay.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "replayed").exists():
            shutil.rmtree(root, ignore_errors=True)  # a worker that failed half-way
            root.mkdir()
            shutil.copytree(LBR / "documents", root / "documents")  # the APEX attachment
            for name in ("merged_legal_eval_v1", "responses_prefilled", "judgments"):
                with gzip.open(LBR / f"{name}.jsonl.gz", "rb") as handle:
                    (root / f"{name}.jsonl").write_bytes(handle.read())
            (root / "test_suite.py").write_text(SUITE, encoding="utf-8")
            (root / "pytest.ini").write_text(
                "[pytest]\nasyncio_default_fixture_loop_scope = function\n", encoding="utf-8"
            )
            env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
            env.pop("PYTEST_XDIST_WORKER", None)
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "--dataset", "merged_legal_eval_v1.jsonl",
                 "--responses", "responses_prefilled.jsonl", "--judgments", "judgments.jsonl",
                 "--run-dir", "runs", "--no-cache", "-p", "no:randomly", "-p",
                 "no:cacheprovider", "-q"],
                cwd=root, env=env, capture_output=True, text=True, timeout=1200,
            )  # fmt: skip
            assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
            (root / "replayed").write_text("", encoding="utf-8")
    (run,) = run_dirs(root / "runs")
    return run
