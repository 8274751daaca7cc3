"""``--shard auto``: each scheduler's variables, the shared run id prefix, finding shards."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.pipeline.converters import Shard, parse_shard
from pytest_legaleval.pipeline.shards import auto_shard, find_shards, shard_run_id


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        # Slurm --array=0-2: task 1 is the second of three
        ("auto", {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "0",
                  "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_JOB_ID": "77"},
         (2, 3, "slurm-77")),
        # --array=4-12:4 (tasks 4, 8, 12) without a count: from MAX and STEP
        ("auto", {"SLURM_ARRAY_TASK_ID": "12", "SLURM_ARRAY_TASK_MIN": "4",
                  "SLURM_ARRAY_TASK_MAX": "12", "SLURM_ARRAY_TASK_STEP": "4",
                  "SLURM_ARRAY_JOB_ID": "9"}, (3, 3, "slurm-9")),
        ("auto/4", {"JOB_COMPLETION_INDEX": "0"}, (1, 4, None)),
        ("auto", {"JOB_COMPLETION_INDEX": "3", "LEGALEVAL_SHARD_COUNT": "4"}, (4, 4, None)),
        ("auto", {"CI_NODE_INDEX": "2", "CI_NODE_TOTAL": "5", "CI_PIPELINE_ID": "31"},
         (2, 5, "gitlab-31")),
        ("auto", {"CIRCLE_NODE_INDEX": "0", "CIRCLE_NODE_TOTAL": "2",
                  "CIRCLE_WORKFLOW_ID": "w1"}, (1, 2, "circle-w1")),
        ("auto", {"BUILDKITE_PARALLEL_JOB": "1", "BUILDKITE_PARALLEL_JOB_COUNT": "2",
                  "BUILDKITE_BUILD_ID": "b"}, (2, 2, "buildkite-b")),
        ("auto", {"SYSTEM_JOBPOSITIONINPHASE": "1", "SYSTEM_TOTALJOBSINPHASE": "3",
                  "BUILD_BUILDID": "12"}, (1, 3, "azure-12")),
        # GitHub Actions: strategy.job-index / job-total, the prefix from the run
        ("AUTO", {"LEGALEVAL_SHARD_INDEX": "3", "LEGALEVAL_SHARD_COUNT": "4",
                  "GITHUB_RUN_ID": "555", "GITHUB_RUN_ATTEMPT": "2"}, (4, 4, "gha-555-2")),
    ],
)  # fmt: skip
def test_each_scheduler_says_which_shard_this_is(
    text: str, env: dict[str, str], expected: tuple[int, int, str | None]
) -> None:
    shard = auto_shard(text, env)
    assert (shard.index, shard.count, shard.prefix) == expected and shard.auto
    assert str(shard) == f"{expected[0]}/{expected[1]}"  # what the manifest records


@pytest.mark.parametrize(
    ("text", "env", "said"),
    [
        ("auto", {}, "no scheduler's shard variables"),
        ("auto", {"JOB_COMPLETION_INDEX": "1"}, "pass --shard auto/N"),
        ("auto/3", {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "0",
                    "SLURM_ARRAY_TASK_COUNT": "4"}, "says 4 shards, not 3"),
        ("auto/2", {"JOB_COMPLETION_INDEX": "2"}, "index 2 of 2"),
        ("auto", {"JOB_COMPLETION_INDEX": "x", "LEGALEVAL_SHARD_COUNT": "2"}, "not a whole"),
        ("auto", {"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "4",
                  "SLURM_ARRAY_TASK_STEP": "2", "SLURM_ARRAY_TASK_COUNT": "3"}, "steps"),
        ("auto/x", {"JOB_COMPLETION_INDEX": "0"}, "auto/N"),
        ("automatic", {"JOB_COMPLETION_INDEX": "0"}, "expects K/N, auto or auto/N"),
    ],
)  # fmt: skip
def test_a_wrong_or_missing_variable_is_named(text: str, env: dict[str, str], said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        auto_shard(text, env)


def test_the_option_reads_the_environment_and_k_n_is_unchanged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert parse_shard("2/3") == Shard(2, 3)
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "1")
    assert parse_shard("auto/3") == Shard(2, 3, auto=True, prefix=None,
                                          source="Kubernetes Indexed Job")  # fmt: skip


def test_shards_of_one_run_share_a_prefix(tmp_path: Path) -> None:
    slurm = Shard(2, 3, auto=True, prefix="slurm-77", source="Slurm job array")
    assert shard_run_id(None, slurm) == "slurm-77-shard-2-of-3"
    assert shard_run_id("nightly", slurm) == "nightly-shard-2-of-3"  # --run-id wins
    assert shard_run_id("s1", Shard(1, 3)) == "s1" and shard_run_id(None, None) is None
    with pytest.raises(ConfigError, match="pass --run-id NAME"):
        shard_run_id(None, Shard(1, 2, auto=True, source="Kubernetes Indexed Job"))
    with pytest.raises(ConfigError, match="not a plain name"):
        shard_run_id("../up", slurm)
    for name in ("n-shard-2-of-3", "n-shard-1-of-3", "n-shard-3-of-3", "other-shard-1-of-3",
                 "n-shard-1-of-3.tmp", "n"):  # fmt: skip
        (tmp_path / name).mkdir()
    assert [p.name for p in find_shards(tmp_path, "n")] == [
        "n-shard-1-of-3", "n-shard-2-of-3", "n-shard-3-of-3",
    ]  # fmt: skip
    with pytest.raises(ConfigError, match="no run directory"):
        find_shards(tmp_path, "missing")
    (tmp_path / "n-shard-1-of-2").mkdir()
    with pytest.raises(ConfigError, match="disagree on their count"):
        find_shards(tmp_path, "n")
