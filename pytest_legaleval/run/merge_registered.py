"""The registered artifacts of a merged run, each combined by its row's merge rule.

``legaleval merge`` writes the built-in files itself (:mod:`~pytest_legaleval.run.merge`);
an artifact added with :func:`~pytest_legaleval.metrics.artifacts.register_artifact` gets
what its row's ``merge`` says:

* ``recompute`` — a derived row (``derive``) computed again from the merged run, as the
  recorder computes it at the end of a run (a row without ``derive`` has nothing to compute
  from and is left out);
* ``concat`` — every shard's lines, shard after shard (a ``.json`` file has no lines: the
  first shard's is kept);
* ``first`` — the first shard's copy;
* ``none`` — not carried over.

Lines and documents that name a ``run_id`` are given the merged run's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics.artifacts import ARTIFACT_TABLE, Artifact, FinishedRun, artifacts
from pytest_legaleval.metrics.rundir_check import checked_json
from pytest_legaleval.metrics.runfiles import iter_jsonl
from pytest_legaleval.run.directory import RunDirectory

__all__ = ["merge_registered"]


def _retag(doc: Any, run_id: str) -> Any:
    if isinstance(doc, Mapping) and "run_id" in doc:
        return {**doc, "run_id": run_id}
    return doc


def _copy(directory: RunDirectory, row: Artifact, sources: Sequence[Path], run_id: str) -> None:
    present = [path / row.name for path in sources if (path / row.name).is_file()]
    if not present:
        return
    if not row.jsonl:
        directory.write_json(row.name, _retag(checked_json(present[0]), run_id))
        return
    for path in present:
        for line in iter_jsonl(path):
            directory.append(row.name, _retag(line, run_id), flush=False)
    directory.touch(row.name)


def merge_registered(
    directory: RunDirectory, shards: Sequence[Path], finished: FinishedRun
) -> None:
    """Write every registered artifact of the merged run into ``directory``.

    Args:
        directory: the merged run's directory, its built-in files written (the metrics too).
        shards: the shards' run directories, in merge order.
        finished: the merged run's figures and lines, for the derived rows.

    Raises:
        ConfigError: a derived row's function failed (naming the artifact).

    """
    built_in = {row.name for row in ARTIFACT_TABLE}
    for row in artifacts():
        if row.name in built_in or row.merge == "none":
            continue
        if row.merge == "recompute":
            if row.derive is None:
                continue
            directory.flush()  # the merged predictions are read back by the function
            try:
                lines = row.derive(finished)
                for line in lines or ():
                    directory.append(row.name, dict(line), flush=False)
            except Exception as exc:  # a user's function: any failure names the artifact
                raise ConfigError(f"cannot compute {row.name} for the merged run: {exc!r}") from exc
            if lines is not None:
                directory.touch(row.name)
        else:
            sources = shards if row.merge == "concat" and row.jsonl else shards[:1]
            _copy(directory, row, sources, finished.run_id)
