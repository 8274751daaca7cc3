"""The official benchmark figures of a run: ``metrics_summary.json``'s ``benchmarks`` block.

:func:`benchmark_figures` reads prediction lines (``predictions.jsonl`` rows, or the result
dicts they are made from) and computes, per benchmark run under its official protocol, the
figures its leaderboard reports — from the per-item facts the official graders put in
``details.official`` (``grading.official.graders``, ``grading.official.lexam_judge``):

- ``legalbench`` — per task and split, ``tasks[<task>][<split>] = {metric, value, n}``
  with LegalBench's own metric for the task (``grading.official.legalbench.task_score``);
  the headline ``score`` is the mean over tasks of their ``test`` split (one task, one
  vote, as the paper averages), with the same mean per reasoning ``categories``
  (``tasks.py``); tasks with a ``train`` split only are averaged apart (``train_only``);
  tasks graded by hand upstream (``rule_qa``) are listed in ``manual`` with
  ``needs_manual_evaluation`` and no value, never a 0 or a pass rate.
- ``lexam`` — ``mcq.accuracy`` (right answers / questions, and ``by_set`` per question
  set: ``mcq`` for ``MCQs_test.xlsx``, ``mcq4``/``mcq8``/``mcq16``/``mcq32`` for the
  perturbation file's option counts) and ``open.score`` (the mean of LEXam's judge grade
  × 100, an unusable judge reply counted 0 as LEXam counts it); beside it, ``open.ours``
  keeps our own accounting (graded items, their mean × 100, judge errors), never mixed
  into the official figure.

Items without an official verdict (no response, a generation or judge call that failed,
a task unknown upstream) are not in any figure and are counted in ``not_scored``. With
several models every figure is per model under ``models``; the top-level figures are
there only when the run has one model. With several epochs each figure is the mean of
its per-epoch values. Means are NumPy's (``grading.official.numeric``), over tasks in name
order and over open questions in record-id order, so a figure does not depend on the
order the items finished in.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_legaleval.grading.official import legalbench as lb
from pytest_legaleval.grading.official import lexam as lx
from pytest_legaleval.grading.official.legalbench_tasks import CATEGORIES, category_of, metric_of
from pytest_legaleval.grading.official.numeric import numpy_mean
from pytest_legaleval.records import Record

__all__ = ["BENCHMARK_PROTOCOLS", "benchmark_figures"]

BENCHMARK_PROTOCOLS: Mapping[str, str] = {"legalbench": lb.PROTOCOL, "lexam": lx.PROTOCOL}
"""Each benchmark's official protocol (its policy id)."""
_BENCHMARK_OF = {protocol: name for name, protocol in BENCHMARK_PROTOCOLS.items()}

Key = tuple[str, int]
"""(model, epoch)."""


@dataclass
class _Run:
    """The official facts of one model's items in one epoch."""

    legalbench: dict[tuple[str, str], list[Mapping[str, Any]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    metrics: dict[str, str] = field(default_factory=dict)
    manual: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    legalbench_not_scored: int = 0
    mcq: list[tuple[str, bool]] = field(default_factory=list)
    """(the question set: the id's second part, ``mcq``, ``mcq8`` …; right or not)."""
    open: list[tuple[str, float]] = field(default_factory=list)
    open_unusable: int = 0
    ours_open: list[float] = field(default_factory=list)
    ours_judge_errors: int = 0
    lexam_not_scored: int = 0


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _split_of(line: Mapping[str, Any], record: Record | None) -> str:
    for source in (_mapping(line.get("metadata")), record.metadata if record else {}):
        split = source.get("split")
        if isinstance(split, str) and split:
            return split
    parts = str(line.get("record_id", "")).split(":")
    return parts[2] if len(parts) >= 4 else "unknown"


def _legalbench_item(run: _Run, line: Mapping[str, Any], record: Record | None) -> None:
    official = _mapping(_mapping(line.get("details")).get("official"))
    task = official.get("task")
    if not isinstance(task, str) and record is not None:
        from pytest_legaleval.grading.official.graders import legalbench_task

        task = legalbench_task(record)
    if not isinstance(task, str) or not task:
        run.legalbench_not_scored += 1
        return
    split = _split_of(line, record)
    metric = official.get("metric", metric_of(task))
    if metric == "manual":
        run.manual[(task, split)] += 1
        return
    facts: Mapping[str, Any] | None = official if "score" in official else None
    answer = line.get("model_response", line.get("response"))
    if facts is None and record is not None and isinstance(answer, str):
        # Graded by another grader (a user's): recompute the official verdict.
        from pytest_legaleval.grading.official.graders import legalbench_gold

        try:
            facts = lb.item_verdict(task, answer, legalbench_gold(record)).facts
        except lb.OfficialScoringError:
            facts = None
    if facts is None or not isinstance(metric, str):
        run.legalbench_not_scored += 1
        return
    run.metrics[task] = metric
    run.legalbench[(task, split)].append(facts)


def _lexam_item(run: _Run, line: Mapping[str, Any]) -> None:
    official = _mapping(_mapping(line.get("details")).get("official"))
    kind = official.get("kind")
    if kind == "mcq" and isinstance(official.get("correct"), bool):
        parts = str(line.get("record_id", "")).split(":")
        run.mcq.append((parts[1] if len(parts) >= 3 else "mcq", official["correct"]))
        return
    if kind == "open":
        if line.get("reason") == "judge_error":
            run.ours_judge_errors += 1
        elif isinstance(line.get("score"), int | float):
            run.ours_open.append(float(line["score"]))
        score = official.get("score")
        if isinstance(score, int | float) and not isinstance(score, bool):
            run.open.append((str(line.get("record_id", "")), float(score)))
            run.open_unusable += int(bool(official.get("unusable_replies")))
            return
    run.lexam_not_scored += 1


def _mean(values: list[float]) -> float | None:
    return numpy_mean(values) if values else None


def _legalbench_block(runs: list[_Run]) -> dict[str, Any]:
    tasks: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    keys = sorted({key for run in runs for key in run.legalbench})
    for task, split in keys:
        metric = next(run.metrics[task] for run in runs if task in run.metrics)
        values: list[float] = []
        for run in runs:
            facts = run.legalbench.get((task, split))
            if facts:
                try:
                    values.append(lb.task_score(metric, facts))
                except (ValueError, KeyError, TypeError):
                    pass  # facts that are not the official graders' (a hand-edited file)
        n = len(runs[0].legalbench.get((task, split), ()))
        tasks[task][split] = {"metric": metric, "value": _mean(values), "n": n}
    manual = sorted({task for run in runs for task, _ in run.manual})
    for run in runs[:1]:
        for (task, split), n in sorted(run.manual.items()):
            tasks[task][split] = {
                "metric": "manual", "value": None, "n": n, "needs_manual_evaluation": True,
            }  # fmt: skip
    scored = {t: s for t, s in tasks.items() if t not in manual}
    test = {t: s["test"]["value"] for t, s in sorted(scored.items()) if "test" in s}
    train_only = {
        t: s["train"]["value"]
        for t, s in sorted(scored.items())
        if "train" in s and "test" not in s
    }
    categories = {}
    for name in CATEGORIES:
        inside = [value for task, value in test.items() if category_of(task) == name]
        if inside:
            categories[name] = {"score": numpy_mean(inside), "n_tasks": len(inside)}
    return {
        "score": _mean(list(test.values())),
        "n_tasks": len(test),
        "categories": categories,
        "train_only": {"score": _mean(list(train_only.values())), "n_tasks": len(train_only)},
        "manual": manual,
        "not_scored": runs[0].legalbench_not_scored,
        "tasks": {task: dict(sorted(splits.items())) for task, splits in sorted(tasks.items())},
    }


def _lexam_block(runs: list[_Run]) -> dict[str, Any]:
    first = runs[0]
    accuracies = [sum(c for _, c in run.mcq) / len(run.mcq) for run in runs if run.mcq]
    by_set: dict[str, dict[str, Any]] = {}
    for name in sorted({name for name, _ in first.mcq}):
        per = [[c for k, c in run.mcq if k == name] for run in runs]
        by_set[name] = {"accuracy": _mean([sum(p) / len(p) for p in per if p]), "n": len(per[0])}
    scores = [
        numpy_mean([value * 100 for _, value in sorted(run.open)]) for run in runs if run.open
    ]
    ours = [numpy_mean([v * 100 for v in run.ours_open]) for run in runs if run.ours_open]
    return {
        "mcq": {"accuracy": _mean(accuracies), "n": len(first.mcq), "by_set": by_set},
        "open": {
            "score": _mean(scores),
            "scale": "mean of the judge grade x 100",
            "n": len(first.open),
            "unusable_replies_scored_0": first.open_unusable,
            "ours": {
                "graded": len(first.ours_open),
                "mean_score_x100": _mean(ours),
                "judge_errors": first.ours_judge_errors,
            },
        },
        "not_scored": first.lexam_not_scored,
    }


def _block(name: str, runs: list[_Run]) -> dict[str, Any]:
    figures = _legalbench_block(runs) if name == "legalbench" else _lexam_block(runs)
    if len(runs) > 1:
        figures["epochs"] = len(runs)
    return figures


def benchmark_figures(
    lines: Iterable[Mapping[str, Any]], records: Mapping[str, Record] | None = None
) -> dict[str, Any]:
    """The ``benchmarks`` block of a run: each benchmark run under its official protocol.

    Args:
        lines: prediction lines (``predictions.jsonl`` rows or result dicts): ``record_id``,
            ``model``, ``epoch`` (optional), ``policy_id``, ``dataset``, ``reason``,
            ``score``, ``details`` (``details.official`` from the official graders),
            ``metadata`` (``task``, ``split``) and ``model_response``.
        records: the run's records by id, when at hand: a LegalBench item graded without
            ``details.official`` is then scored from its answer and the record's gold, and
            task and split come from the record when the line lacks them.

    Returns:
        ``{"legalbench": {...}, "lexam": {...}}`` (and ``prbench``, ``apex``:
        ``metrics.judged_benchmarks``) — only the benchmarks that have an item
        under their official protocol; each with ``protocol``, ``protocol_version``,
        ``upstream``, ``other_protocols`` (items of the same dataset graded under another
        policy, by policy), ``models`` (per model) and, for a one-model run, the model's
        figures at the top level. Never raises on a malformed line: it is skipped.

    """
    lines = list(lines)
    runs: dict[str, dict[Key, _Run]] = {name: {} for name in BENCHMARK_PROTOCOLS}
    others: dict[str, dict[str, int]] = {name: defaultdict(int) for name in BENCHMARK_PROTOCOLS}
    for line in lines:
        if not isinstance(line, Mapping):
            continue
        policy = line.get("policy_id")
        name = _BENCHMARK_OF.get(policy) if isinstance(policy, str) else None
        if name is None:
            dataset = line.get("dataset", line.get("dataset_id"))
            if dataset in others:
                others[str(dataset)][str(policy)] += 1
            continue
        epoch = line.get("epoch")
        key = (str(line.get("model", "")), epoch if isinstance(epoch, int) else 0)
        run = runs[name].setdefault(key, _Run())
        record = records.get(str(line.get("record_id"))) if records is not None else None
        if name == "legalbench":
            _legalbench_item(run, line, record)
        else:
            _lexam_item(run, line)
    out: dict[str, Any] = {}
    for name, by_key in runs.items():
        if not by_key:
            continue
        module = lb if name == "legalbench" else lx
        models: dict[str, dict[str, Any]] = {}
        for model in sorted({m for m, _ in by_key}):
            epochs = [by_key[k] for k in sorted(k for k in by_key if k[0] == model)]
            models[model] = _block(name, epochs)
        block: dict[str, Any] = {
            "protocol": BENCHMARK_PROTOCOLS[name],
            "protocol_version": module.PROTOCOL_VERSION,
            "upstream": {"repo": module.UPSTREAM_REPO, "commit": module.UPSTREAM_COMMIT},
        }
        if len(models) == 1:
            block.update(next(iter(models.values())))
        block["models"] = models
        block["other_protocols"] = dict(sorted(others[name].items()))
        out[name] = block
    from pytest_legaleval.metrics.judged_benchmarks import judged_figures

    out.update(judged_figures(lines))
    return out
