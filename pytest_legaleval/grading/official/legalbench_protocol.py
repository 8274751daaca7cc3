"""``legalbench_official`` on the protocol registry: LegalBench, as one object.

The figures of ``benchmarks.legalbench`` (the per-item facts come from
:class:`~pytest_legaleval.grading.official.graders.LegalbenchOfficialGrader`):
per task and split, ``tasks[<task>][<split>] = {metric, value, n}`` with LegalBench's own
metric for the task (:func:`~pytest_legaleval.grading.official.legalbench.task_score`); the
headline ``score`` is the mean over tasks of their ``test`` split (one task, one vote, as
the paper averages), with the same mean per reasoning ``categories``; tasks with a
``train`` split only are averaged apart (``train_only``); tasks graded by hand upstream
(``rule_qa``) are listed in ``manual`` with ``needs_manual_evaluation`` and no value, never
a 0 or a pass rate. Means are NumPy's (``numeric``), over tasks in name order, so a figure
does not depend on the order the items finished in.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_legaleval.grading._protocols import (
    DASH,
    BenchmarkProtocol,
    Card,
    Cell,
    Row,
    Table,
    Upstream,
    count,
    figure,
    heading,
    mapping,
    register,
)
from pytest_legaleval.grading.official import legalbench as lb
from pytest_legaleval.grading.official.graders import (
    LegalbenchOfficialGrader,
    legalbench_gold,
    legalbench_task,
)
from pytest_legaleval.grading.official.legalbench_tasks import CATEGORIES, category_of, metric_of
from pytest_legaleval.grading.official.numeric import numpy_mean
from pytest_legaleval.records import Record

if TYPE_CHECKING:
    from pytest_legaleval.grading._base import Grader

__all__ = ["MAX_TASK_ROWS", "PROTOCOL", "LegalbenchProtocol"]

MAX_TASK_ROWS = 1000
"""Task × split rows the report shows (LegalBench has 162 tasks; a hand-edited file more)."""
_MANUAL = "needs manual evaluation"


def _mean(values: list[float]) -> float | None:
    return numpy_mean(values) if values else None


def _split_of(line: Mapping[str, Any], record: Record | None) -> str:
    for source in (mapping(line.get("metadata")), record.metadata if record else {}):
        split = source.get("split")
        if isinstance(split, str) and split:
            return split
    parts = str(line.get("record_id", "")).split(":")
    return parts[2] if len(parts) >= 4 else "unknown"


class _Tally:
    """The official facts of one model's LegalBench items in one epoch."""

    def __init__(self) -> None:
        self.facts: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
        self.metrics: dict[str, str] = {}
        self.manual: dict[tuple[str, str], int] = defaultdict(int)
        self.not_scored = 0

    def add(self, line: Mapping[str, Any], record: Record | None) -> None:
        official = mapping(mapping(line.get("details")).get("official"))
        task = official.get("task")
        if not isinstance(task, str) and record is not None:
            task = legalbench_task(record)
        if not isinstance(task, str) or not task:
            self.not_scored += 1
            return
        split = _split_of(line, record)
        metric = official.get("metric", metric_of(task))
        if metric == "manual":
            self.manual[(task, split)] += 1
            return
        facts: Mapping[str, Any] | None = official if "score" in official else None
        answer = line.get("model_response", line.get("response"))
        if facts is None and record is not None and isinstance(answer, str):
            # Graded by another grader (a user's): recompute the official verdict.
            try:
                facts = lb.item_verdict(task, answer, legalbench_gold(record)).facts
            except lb.OfficialScoringError:
                facts = None
        if facts is None or not isinstance(metric, str):
            self.not_scored += 1
            return
        self.metrics[task] = metric
        self.facts[(task, split)].append(facts)


def _categories(models: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    names: list[str] = []
    for _, figures in models:
        names += [str(c) for c in mapping(figures.get("categories")) if str(c) not in names]
    return names


def _model_cell(model: str) -> Cell:
    return Cell(model or "this run", kind="")


def _task_rows(models: Sequence[tuple[str, Mapping[str, Any]]]) -> list[tuple[str, str]]:
    keys: set[tuple[str, str]] = set()
    for _, figures in models:
        for task, splits in mapping(figures.get("tasks")).items():
            keys.update((str(task), str(split)) for split in mapping(splits))
    # test first: the headline's split
    return sorted(keys, key=lambda k: (k[0], k[1] != "test", k[1]))


def _heads(*names: str | tuple[str, str]) -> Row:
    cells = []
    for name in names:
        text, title = name if isinstance(name, tuple) else (name, None)
        cells.append(heading(text, title=title))
    return Row(tuple(cells))


class LegalbenchProtocol(BenchmarkProtocol):
    """LegalBench's ``evaluation.py``: each task's own metric, the mean over test tasks."""

    id = lb.PROTOCOL
    benchmark = "legalbench"
    title = "LegalBench"
    version = lb.PROTOCOL_VERSION
    upstream = Upstream(lb.UPSTREAM_REPO, lb.UPSTREAM_COMMIT)
    source = "legalbench"

    def tally(self) -> _Tally:
        """A fresh tally of one model's items in one epoch."""
        return _Tally()

    def figures(self, tallies: Sequence[Any]) -> dict[str, Any]:
        """``score``, ``n_tasks``, ``categories``, ``train_only``, ``manual``, ``tasks``."""
        runs: list[_Tally] = list(tallies)
        tasks: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
        keys = sorted({key for run in runs for key in run.facts})
        for task, split in keys:
            metric = next(run.metrics[task] for run in runs if task in run.metrics)
            values: list[float] = []
            for run in runs:
                facts = run.facts.get((task, split))
                if facts:
                    try:
                        values.append(lb.task_score(metric, facts))
                    except (ValueError, KeyError, TypeError):
                        pass  # facts that are not the official graders' (a hand-edited file)
            n = len(runs[0].facts.get((task, split), ()))
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
            "not_scored": runs[0].not_scored,
            "tasks": {task: dict(sorted(splits.items())) for task, splits in sorted(tasks.items())},
        }

    def terminal_line(self, figures: Mapping[str, Any]) -> str:
        """``score … = mean over N test-split tasks …``, and the tasks graded by hand."""
        manual = figures.get("manual") or []
        note = f"; graded by hand upstream, not scored: {', '.join(manual)}" if manual else ""
        score = figures.get("score")
        shown = f"{score:.4f}" if isinstance(score, int | float) else "-"
        return (
            f"score {shown} = mean over {figures.get('n_tasks', 0)} "
            f"test-split tasks (balanced accuracy and LegalBench's own metrics){note}"
        )

    def report_intro(self) -> str:
        """How the score averages."""
        return (
            "The score is the mean over tasks of each task's test split, each scored by its "
            "own metric (balanced accuracy for most): one task, one vote, as the paper "
            "averages. Tasks with a train split only are averaged apart; tasks LegalBench "
            "grades by hand have no value here."
        )

    def report_tables(self, models: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Table]:
        """The headline per model, then every task and split."""
        return [self._headline(models), self._tasks(models)]

    def _headline(self, models: Sequence[tuple[str, Mapping[str, Any]]]) -> Table:
        categories = _categories(models)
        head = _heads(
            "model", "score (mean over test tasks)", "test tasks", *categories,
            "train-only tasks (mean, apart)", "manual evaluation",
            ("not scored", "items without an official verdict"),
        )  # fmt: skip
        rows = []
        for model, figures in models:
            cats = mapping(figures.get("categories"))
            train = mapping(figures.get("train_only"))
            manual = [str(t) for t in figures.get("manual") or [] if isinstance(t, str)]
            cells = [
                _model_cell(model),
                Cell(figure(figures.get("score")), kind="num headline"),
                Cell(count(figures.get("n_tasks"))),
            ]
            for c in categories:
                inside = mapping(cats.get(c))
                cells.append(
                    Cell(figure(inside.get("score")), note=f"({count(inside.get('n_tasks'))})")
                    if c in cats
                    else Cell(DASH)
                )
            cells += [
                Cell(figure(train.get("score")), note=f"({count(train.get('n_tasks'))})"),
                Cell(", ".join(manual) + " — " + _MANUAL if manual else DASH, kind=""),
                Cell(count(figures.get("not_scored"))),
            ]
            rows.append(Row(tuple(cells), data=(("model", model),)))
        return Table("legalbench-headline", (head,), tuple(rows))

    def _tasks(self, models: Sequence[tuple[str, Mapping[str, Any]]]) -> Table:
        keys = _task_rows(models)
        with_test = {task for task, split in keys if split == "test"}
        head = _heads("task", "split", "metric", "n", *(m or "value" for m, _ in models))
        rows = []
        for task, split in keys[:MAX_TASK_ROWS]:
            entries = [
                mapping(mapping(mapping(figures.get("tasks")).get(task)).get(split))
                for _, figures in models
            ]
            metric = next((str(x.get("metric")) for x in entries if x.get("metric")), DASH)
            ns = {count(x.get("n")) for x in entries if x}
            manual = any(x.get("needs_manual_evaluation") or x.get("metric") == "manual"
                         for x in entries)  # fmt: skip
            if split == "train":
                where = "train (not in the headline)" if task in with_test else "train only"
            else:
                where = split
            cells = [Cell(task, kind=""), Cell(where, kind=""), Cell(metric, kind=""),
                     Cell(" / ".join(sorted(ns)) or DASH)]  # fmt: skip
            if manual:
                cells.append(Cell(
                    f"{_MANUAL} (graded by hand upstream; no value)", kind="manual",
                    data=(("manual", "1"),), span=len(models),
                ))  # fmt: skip
            else:
                cells += [
                    Cell(DASH, title="no item of this task and split has an official verdict")
                    if figure(x.get("value")) == DASH
                    else Cell(figure(x.get("value")))
                    for x in entries
                ]
            rows.append(Row(tuple(cells), data=(("task", task), ("split", split)),
                            kind="manual" if manual else ""))  # fmt: skip
        more = (
            f"{len(keys) - MAX_TASK_ROWS:,} more task rows are in metrics_summary.json."
            if len(keys) > MAX_TASK_ROWS
            else None
        )
        return Table(
            "legalbench-tasks", (head,), tuple(rows), scroll=True, after=more,
            heading="per task and split (LegalBench's own metric for each task)",
        )  # fmt: skip

    def cards(self, figures: Mapping[str, Any], protocol: str) -> list[Card]:
        """The score, named as the official metric."""
        return [Card(
            "LegalBench score (official)", figure(figures.get("score")),
            "benchmarks.legalbench.score",
            f"{protocol} · mean over {count(figures.get('n_tasks'))} test tasks",
            "the official metric: the mean over tasks of each task's own metric",
        )]  # fmt: skip

    def graders(self) -> list[tuple[Grader, str | None]]:
        """Every record of the protocol: LegalBench's metric for its task."""
        return [(LegalbenchOfficialGrader(), None)]


PROTOCOL = register(LegalbenchProtocol())
"""The registered instance."""
