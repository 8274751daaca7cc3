"""The official figures of the judged benchmarks: ``benchmarks.prbench`` and ``benchmarks.apex``.

Computed from the per-item facts the official graders put in ``details.official``
(``grading.official.judged``), as the upstream code computes its figures:

- ``prbench`` — per split (``splits.<finance|legal|finance_hard|legal_hard>``; a task of a
  Hard subset counts in its field's split too, as it is in both files upstream) and over
  every task (``all``): ``mean_clipped``, ``std_clipped``, ``mean_normalized``,
  ``std_normalized`` (``evals.py``: NumPy's mean and population std over the tasks'
  Σ w·met / Σ w⁺ and normalized scores), ``mean`` (the same mean under a plain name),
  ``negative_tasks`` and ``n``. With several epochs each figure is the mean of its
  per-epoch values.
- ``apex`` — ``score`` (0–100: the mean over tasks of each task's median over epochs),
  ``n_tasks``, ``skipped_tasks`` (tasks left out because an answer of any model in any
  epoch was empty, blank or ``error:``, or got no official grade — upstream keeps no row
  for such a task) and ``domains.<Domain>.{score, n_tasks}``.

Beside the figures, never in them: ``judge_failed_unmet`` (criteria the official rule
scored unmet because the judge failed), ``ours`` (items graded and ``judge_errors`` in our
accounting, DESIGN §7), ``not_scored`` (items without an official grade), and ``judge``:
the judge models used, the one the published numbers used, and ``differs`` — a figure
judged by another model follows the official method but is not leaderboard-comparable.
With several models every figure is per model under ``models``; the top-level figures are
there only when the run has one model.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from pytest_legaleval.grading.official import apex as ax
from pytest_legaleval.grading.official import prbench as pr
from pytest_legaleval.grading.official.numeric import numpy_mean

__all__ = ["JUDGED_BENCHMARKS", "judged_figures"]

JUDGED_BENCHMARKS: Mapping[str, str] = {"prbench": pr.PROTOCOL, "apex": ax.PROTOCOL}
"""Each judged benchmark's official protocol (its policy id)."""
_BENCHMARK_OF = {protocol: name for name, protocol in JUDGED_BENCHMARKS.items()}
_SPLIT_ORDER = ("finance", "legal", "finance_hard", "legal_hard")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _judge_block(used: set[str], published: str) -> dict[str, Any]:
    names = sorted(used)
    differs = not names or any(name.split("/")[-1] != published for name in names)
    return {"used": names, "published": published, "differs": differs}


Entry = tuple[int, str, float, float | None]
"""(the record's place in its file, record id, task score, normalized score)."""


def _prbench_epoch(items: list[Mapping[str, Any]]) -> dict[str, Any]:
    per_split: dict[str, list[Entry]] = defaultdict(list)
    every: list[Entry] = []
    for official in items:
        score = _number(official.get("score"))
        if score is None:
            continue
        normalized = _number(official.get("normalized"))
        order = official.get("order")
        place = order if isinstance(order, int) and not isinstance(order, bool) else 0
        entry = (place, str(official.get("_record_id")), score, normalized)
        every.append(entry)
        for split in official.get("splits") or []:
            per_split[str(split)].append(entry)
    return {
        "all": _prbench_figures(every),
        "splits": {
            name: _prbench_figures(per_split[name])
            for name in [*_SPLIT_ORDER, *sorted(set(per_split) - set(_SPLIT_ORDER))]
            if per_split.get(name)
        },
    }


def _prbench_figures(entries: list[Entry]) -> dict[str, Any]:
    # File order, as upstream's data frame: a figure must not depend on finish order.
    entries = sorted(entries)
    clipped = [score for _, _, score, _ in entries]
    normalized = [n for _, _, _, n in entries if n is not None]
    return pr.split_figures(clipped, normalized if len(normalized) == len(clipped) else [])


def _mean_figures(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """The mean over epochs of each number of the per-epoch figures (``n`` kept)."""
    if len(blocks) == 1:
        return blocks[0]
    out: dict[str, Any] = {}
    for key, first in blocks[0].items():
        values = [b.get(key) for b in blocks]
        if isinstance(first, dict):
            out[key] = _mean_figures([v for v in values if isinstance(v, dict)])
        elif key == "n" or not all(_number(v) is not None for v in values):
            out[key] = first
        else:
            out[key] = numpy_mean([float(v) for v in values if v is not None])
    return out


def _common(lines: list[Mapping[str, Any]]) -> dict[str, Any]:
    failed = sum(
        int(_number(_mapping(_mapping(line.get("details")).get("official")).get(
            "judge_failed_unmet")) or 0)
        for line in lines
    )  # fmt: skip
    return {
        "judge_failed_unmet": failed,
        "ours": {
            "graded": sum(1 for line in lines if line.get("outcome") in ("passed", "failed")),
            "judge_errors": sum(1 for line in lines if line.get("reason") == "judge_error"),
        },
        "not_scored": sum(
            1
            for line in lines
            if _number(_mapping(_mapping(line.get("details")).get("official")).get("score")) is None
            and not _mapping(_mapping(line.get("details")).get("official")).get("skipped")
        ),
    }


def _prbench_model(lines: list[Mapping[str, Any]]) -> dict[str, Any]:
    epochs: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for line in lines:
        official = dict(_mapping(_mapping(line.get("details")).get("official")))
        official["_record_id"] = str(line.get("record_id", ""))
        epoch = line.get("epoch")
        epochs[epoch if isinstance(epoch, int) else 0].append(official)
    figures = _mean_figures([_prbench_epoch(epochs[k]) for k in sorted(epochs)])
    block: dict[str, Any] = {**figures["all"], "splits": figures["splits"]}
    if len(epochs) > 1:
        block["epochs"] = len(epochs)
    return {**block, **_common(lines)}


def _apex_task(line: Mapping[str, Any]) -> str:
    return str(line.get("record_id", ""))


def _apex_left_out(lines: list[Mapping[str, Any]]) -> set[str]:
    """Tasks upstream keeps no row for: any answer skipped or without an official grade."""
    out = set()
    for line in lines:
        official = _mapping(_mapping(line.get("details")).get("official"))
        if official.get("skipped") or _number(official.get("percent")) is None:
            out.add(_apex_task(line))
    return out


def _apex_model(lines: list[Mapping[str, Any]], left_out: set[str]) -> dict[str, Any]:
    runs: dict[str, dict[int, float]] = defaultdict(dict)
    domains: dict[str, str] = {}
    for line in lines:
        task = _apex_task(line)
        official = _mapping(_mapping(line.get("details")).get("official"))
        percent = _number(official.get("percent"))
        domain = official.get("domain")
        domains.setdefault(task, domain if isinstance(domain, str) else "")
        if task in left_out or percent is None:
            continue
        epoch = line.get("epoch")
        runs[task][epoch if isinstance(epoch, int) else 0] = percent
    tasks = {
        task: (domains[task], [by_epoch[k] for k in sorted(by_epoch)])
        for task, by_epoch in runs.items()
    }
    figures = ax.headline(tasks)
    figures["skipped_tasks"] = len({_apex_task(line) for line in lines} & left_out)
    figures["scale"] = "0-100: mean over tasks of the median over epochs of percent met"
    return {**figures, **_common(lines)}


def judged_figures(lines: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``prbench`` and ``apex`` blocks of a run (only those with an item).

    Args:
        lines: prediction lines (``predictions.jsonl`` rows or result dicts): ``record_id``,
            ``model``, ``epoch``, ``policy_id``, ``outcome``, ``reason`` and
            ``details.official``. A malformed line is skipped, never raised on.

    """
    by_name: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for line in lines:
        if not isinstance(line, Mapping):
            continue
        policy = line.get("policy_id")
        name = _BENCHMARK_OF.get(policy) if isinstance(policy, str) else None
        if name is not None:
            by_name[name].append(line)
    out: dict[str, Any] = {}
    for name in ("prbench", "apex"):
        found = by_name.get(name)
        if not found:
            continue
        module = pr if name == "prbench" else ax
        used: set[str] = set()
        per_model: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for line in found:
            per_model[str(line.get("model", ""))].append(line)
            official = _mapping(_mapping(line.get("details")).get("official"))
            used.update(str(m) for m in official.get("judge_models") or [])
        left_out = _apex_left_out(found) if name == "apex" else set()
        models = {
            model: _prbench_model(lines_) if name == "prbench" else _apex_model(lines_, left_out)
            for model, lines_ in sorted(per_model.items())
        }
        block: dict[str, Any] = {
            "protocol": module.PROTOCOL,
            "protocol_version": module.PROTOCOL_VERSION,
            "upstream": {"repo": module.UPSTREAM_REPO, "commit": module.UPSTREAM_COMMIT},
            "judge": _judge_block(used, module.PUBLISHED_JUDGE),
        }
        if len(models) == 1:
            block.update(next(iter(models.values())))
        block["models"] = models
        out[name] = block
    return out
