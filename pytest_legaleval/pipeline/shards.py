"""``--shard auto``: the shard index and count from the scheduler running this process.

One copy of the same command runs on every node of a Kubernetes Indexed Job, a Slurm job
array or a CI matrix; each reads which part it is from its environment:

- explicit (any CI): ``LEGALEVAL_SHARD_INDEX`` (0-based) and ``LEGALEVAL_SHARD_COUNT``;
- Slurm job array: ``SLURM_ARRAY_TASK_ID`` − ``SLURM_ARRAY_TASK_MIN`` (÷ ``…_STEP``), of
  ``SLURM_ARRAY_TASK_COUNT`` (or from ``…_MAX``); prefix ``slurm-<SLURM_ARRAY_JOB_ID>``;
- Kubernetes Indexed Job: ``JOB_COMPLETION_INDEX`` (0-based) of the count you pass
  (``--shard auto/N``, the Job's ``completions``); prefix: ``--run-id``;
- GitLab ``parallel:``: ``CI_NODE_INDEX`` (1-based) of ``CI_NODE_TOTAL``; prefix
  ``gitlab-<CI_PIPELINE_ID>``;
- CircleCI: ``CIRCLE_NODE_INDEX`` (0-based) of ``CIRCLE_NODE_TOTAL``; prefix
  ``circle-<CIRCLE_WORKFLOW_ID>``;
- Buildkite: ``BUILDKITE_PARALLEL_JOB`` (0-based) of ``BUILDKITE_PARALLEL_JOB_COUNT``; prefix
  ``buildkite-<BUILDKITE_BUILD_ID>``;
- Azure Pipelines: ``SYSTEM_JOBPOSITIONINPHASE`` (1-based) of ``SYSTEM_TOTALJOBSINPHASE``;
  prefix ``azure-<BUILD_BUILDID>``.

GitHub Actions has no such variable: its matrix sets ``LEGALEVAL_SHARD_INDEX: ${{
strategy.job-index }}`` and ``LEGALEVAL_SHARD_COUNT: ${{ strategy.job-total }}``, and the
prefix is ``gha-<GITHUB_RUN_ID>-<GITHUB_RUN_ATTEMPT>``. A count passed as ``--shard auto/N``
(or ``LEGALEVAL_SHARD_COUNT``) must agree with the scheduler's when it has one.

The shards of one run share a run id prefix — ``--run-id`` if given, else the scheduler's
job id — and each is ``<prefix>-shard-<K>-of-<N>``, so ``legaleval merge --prefix PREFIX``
finds them all (:func:`find_shards`) without a list of directories.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.pipeline.converters import Shard

__all__ = ["SHARD_ID", "auto_shard", "find_shards", "shard_run_id"]

SHARD_ID = re.compile(r"^(?P<prefix>.+)-shard-(?P<index>[0-9]+)-of-(?P<count>[0-9]+)$")
"""The run id of one shard of an ``auto`` run."""
_PREFIX_OK = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,100}")


def _int(env: Mapping[str, str], name: str) -> int:
    text = env.get(name, "").strip()
    if not re.fullmatch(r"-?[0-9]{1,9}", text):
        raise ConfigError(f"--shard auto: ${name} is {text!r}, not a whole number")
    return int(text)


def _from_scheduler(env: Mapping[str, str]) -> tuple[str, int, int | None, str | None]:
    """(source, 0-based index, count or ``None``, run prefix or ``None``) from ``env``."""
    if "LEGALEVAL_SHARD_INDEX" in env:
        prefix = None
        if env.get("GITHUB_RUN_ID"):
            prefix = f"gha-{env['GITHUB_RUN_ID']}-{env.get('GITHUB_RUN_ATTEMPT', '1')}"
        count = _int(env, "LEGALEVAL_SHARD_COUNT") if "LEGALEVAL_SHARD_COUNT" in env else None
        return "LEGALEVAL_SHARD_INDEX", _int(env, "LEGALEVAL_SHARD_INDEX"), count, prefix
    if "SLURM_ARRAY_TASK_ID" in env:
        task, low = _int(env, "SLURM_ARRAY_TASK_ID"), _int(env, "SLURM_ARRAY_TASK_MIN")
        step = _int(env, "SLURM_ARRAY_TASK_STEP") if "SLURM_ARRAY_TASK_STEP" in env else 1
        if step < 1 or (task - low) % step:
            raise ConfigError(f"--shard auto: Slurm task {task} is not on the array's steps")
        if "SLURM_ARRAY_TASK_COUNT" in env:
            count = _int(env, "SLURM_ARRAY_TASK_COUNT")
        else:
            count = (_int(env, "SLURM_ARRAY_TASK_MAX") - low) // step + 1
        job = env.get("SLURM_ARRAY_JOB_ID", "").strip()
        return "Slurm job array", (task - low) // step, count, f"slurm-{job}" if job else None
    if "JOB_COMPLETION_INDEX" in env:
        return "Kubernetes Indexed Job", _int(env, "JOB_COMPLETION_INDEX"), None, None
    one_based = (
        ("CI_NODE_INDEX", "CI_NODE_TOTAL", "gitlab", "CI_PIPELINE_ID"),
        ("SYSTEM_JOBPOSITIONINPHASE", "SYSTEM_TOTALJOBSINPHASE", "azure", "BUILD_BUILDID"),
    )
    for index, total, name, job in one_based:
        if index in env and total in env:
            prefix = f"{name}-{env[job]}" if env.get(job) else None
            return index, _int(env, index) - 1, _int(env, total), prefix
    zero_based = (
        ("CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", "circle", "CIRCLE_WORKFLOW_ID"),
        ("BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", "buildkite",
         "BUILDKITE_BUILD_ID"),
    )  # fmt: skip
    for index, total, name, job in zero_based:
        if index in env and total in env:
            prefix = f"{name}-{env[job]}" if env.get(job) else None
            return index, _int(env, index), _int(env, total), prefix
    raise ConfigError(
        "--shard auto: no scheduler's shard variables are set: JOB_COMPLETION_INDEX "
        "(Kubernetes Indexed Job, with --shard auto/N), SLURM_ARRAY_TASK_ID (Slurm array), "
        "CI_NODE_INDEX (GitLab), CIRCLE_NODE_INDEX, BUILDKITE_PARALLEL_JOB, "
        "SYSTEM_JOBPOSITIONINPHASE (Azure), or LEGALEVAL_SHARD_INDEX and "
        "LEGALEVAL_SHARD_COUNT (0-based; GitHub Actions: strategy.job-index and job-total)"
    )


def auto_shard(text: str, env: Mapping[str, str]) -> Shard:
    """``--shard auto`` (or ``auto/N``) resolved from the environment ``env``.

    Raises:
        ConfigError: no scheduler variables, a count missing or disagreeing with ``N``, an
            index outside ``0 … N-1``, or a malformed value — each message names the variable.

    """
    head, _, given = text.strip().partition("/")
    if head.strip().lower() != "auto":
        raise ConfigError(f"--shard expects K/N, auto or auto/N, got {text!r}")
    wanted = None
    if given:
        if not re.fullmatch(r"\s*[0-9]{1,9}\s*", given):
            raise ConfigError(f"--shard {text}: expects auto or auto/N with N a whole number")
        wanted = int(given)
    elif "LEGALEVAL_SHARD_COUNT" in env:
        wanted = _int(env, "LEGALEVAL_SHARD_COUNT")
    source, index, count, prefix = _from_scheduler(env)
    if count is None:
        count = wanted
    if count is None:
        raise ConfigError(
            f"--shard auto: the {source} gives the index but not the count: pass "
            "--shard auto/N (N = the job's completions) or set LEGALEVAL_SHARD_COUNT"
        )
    if wanted is not None and wanted != count:
        raise ConfigError(f"--shard {text}: the {source} says {count} shards, not {wanted}")
    if count < 1 or not 0 <= index < count:
        raise ConfigError(f"--shard auto: the {source} gives index {index} of {count} shards")
    return Shard(index + 1, count, auto=True, prefix=prefix, source=source)


def shard_run_id(run_id: str | None, shard: Shard | None) -> str | None:
    """The run id of this process: ``<prefix>-shard-K-of-N`` for an ``auto`` shard.

    The prefix is ``run_id`` (``--run-id``) if given, else the scheduler's job id; any other
    run keeps ``run_id`` (``None``: one is generated).

    Raises:
        ConfigError: an ``auto`` shard with neither ``--run-id`` nor a scheduler's job id.

    """
    if shard is None or not shard.auto:
        return run_id
    prefix = run_id or shard.prefix
    if prefix is None:
        raise ConfigError(
            f"--shard auto ({shard.source}): pass --run-id NAME, the prefix the shards share "
            "(legaleval merge --prefix NAME finds them by it)"
        )
    if not _PREFIX_OK.fullmatch(prefix):
        raise ConfigError(f"--shard auto: the run id prefix {prefix[:60]!r} is not a plain name")
    return f"{prefix}-shard-{shard.index}-of-{shard.count}"


def find_shards(run_dir: Path, prefix: str) -> list[Path]:
    """The run directories of ``prefix``'s shards under ``run_dir``, in shard order.

    Raises:
        ConfigError: none found, or shards of different counts (two runs under one prefix).

    """
    found: list[tuple[int, int, Path]] = []
    for path in run_dir.iterdir() if run_dir.is_dir() else ():
        match = SHARD_ID.match(path.name)
        if match and match.group("prefix") == prefix and path.is_dir():
            found.append((int(match.group("index")), int(match.group("count")), path))
    if not found:
        raise ConfigError(f"no run directory {prefix}-shard-K-of-N in {run_dir}")
    counts = sorted({count for _, count, _ in found})
    if len(counts) > 1:
        raise ConfigError(
            f"the shards of {prefix} in {run_dir} disagree on their count ({counts}): "
            "pass the run directories themselves"
        )
    return [path for _, _, path in sorted(found)]
