"""``apex_official`` on the protocol registry: APEX-v1, as one object.

The figures of ``benchmarks.apex`` (the per-item facts come from
:class:`~pytest_legaleval.grading.official.judged.ApexOfficialGrader`), as
``run_with_hf.py``'s ``calculate_stats`` reports them: ``score`` on its 0–100 scale (the
mean over tasks of each task's median over epochs of percent met), ``n_tasks``,
``skipped_tasks`` (tasks left out because an answer in some epoch was empty, blank or
``error:``, or got no official grade — upstream keeps no row for such a task) and
``domains.<Domain>.{score, n_tasks}``. Upstream's script runs every model in one pass and
drops a task for all of them when one model's answer is skipped; here a task is dropped
for the model whose answer it was (a model's figure does not depend on which others ran;
with one model the two are the same). Beside them: :mod:`.judged_figures` (judge failures
scored not met, our judge errors, the judge used against APEX's gemini-2.5-flash).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_legaleval.grading._protocols import (
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
from pytest_legaleval.grading.official import apex as ax
from pytest_legaleval.grading.official.judged import ApexOfficialGrader
from pytest_legaleval.grading.official.judged_figures import (
    JudgedProtocol,
    JudgedTally,
    accounting,
    beside,
    beside_cells,
    beside_heads,
    judge_block,
    judge_note,
    number,
)

if TYPE_CHECKING:
    from pytest_legaleval.grading._base import Grader

__all__ = ["PROTOCOL", "ApexProtocol"]


class ApexProtocol(JudgedProtocol):
    """APEX's own: ``grading_prompt.txt`` per criterion, percent met, runs-median."""

    id = ax.PROTOCOL
    benchmark = "apex"
    title = "APEX-v1"
    version = ax.PROTOCOL_VERSION
    upstream = Upstream(ax.UPSTREAM_REPO, ax.UPSTREAM_COMMIT)
    source = "apex"

    def figures(self, tallies: Sequence[Any]) -> dict[str, Any]:
        """``score``, ``n_tasks``, ``skipped_tasks``, ``domains``, the judge, ours beside."""
        runs: list[JudgedTally] = list(tallies)
        percents: dict[str, list[float]] = defaultdict(list)
        domains: dict[str, str] = {}
        left_out: set[str] = set()
        for tally in runs:
            for task, official in tally.items:
                domain = official.get("domain")
                domains.setdefault(task, domain if isinstance(domain, str) else "")
                percent = number(official.get("percent"))
                if official.get("skipped") or percent is None:
                    left_out.add(task)
                else:
                    percents[task].append(percent)
        tasks = {t: (domains[t], runs_) for t, runs_ in percents.items() if t not in left_out}
        figures = ax.headline(tasks)
        return {
            **figures,
            "skipped_tasks": len(left_out),
            "scale": "0-100: mean over tasks of the median over epochs of percent met",
            **beside(runs),
            "not_scored": sum(
                1
                for _, official in runs[0].items
                if number(official.get("percent")) is None and not official.get("skipped")
            ),
            "judge": judge_block(runs, ax.PUBLISHED_JUDGE),
        }

    def terminal_line(self, figures: Mapping[str, Any]) -> str:
        """The score, tasks scored and left out, our accounting and the judge."""
        return (
            f"score {figure(figures.get('score'), 2)} (0-100, mean over "
            f"{figures.get('n_tasks', 0)} tasks of the median over epochs of percent met; "
            f"{figures.get('skipped_tasks', 0)} tasks left out; {accounting(figures)})"
            f"{judge_note(figures)}"
        )

    def report_intro(self) -> str:
        """How each figure is read."""
        return (
            "Score 0–100: the mean over tasks of each task's median over epochs of the "
            "share of criteria met (unweighted, rounded to 2 places per task as APEX rounds "
            "it). A task with an empty, blank or `error:` answer is left out, as APEX leaves "
            "it out; a judge reply APEX cannot read, or a failed call, is not met there. Our "
            "own accounting keeps those items as judge errors, beside the figure."
        )

    def report_tables(self, models: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Table]:
        """One row per model: the score, per domain, then ours beside it."""
        columns = Row((
            heading("model"), heading("score"), heading("tasks"), heading("left out"),
            heading("per domain"), *beside_heads(),
        ))  # fmt: skip
        rows = []
        for model, figures in models:
            domains = mapping(figures.get("domains"))
            said = ", ".join(
                f"{name} {figure(mapping(v).get('score'), 2)} ({count(mapping(v).get('n_tasks'))})"
                for name, v in domains.items()
            )
            rows.append(Row((
                Cell(model or "this run", kind=""),
                Cell(figure(figures.get("score"), 2), kind="num headline",
                     data=(("figure", "score"),)),
                Cell(count(figures.get("n_tasks"))), Cell(count(figures.get("skipped_tasks"))),
                Cell(said, kind=""), *beside_cells(figures, count),
            ), data=(("model", model),)))  # fmt: skip
        return [Table("apex-headline", (columns,), tuple(rows), scroll=True)]

    def cards(self, figures: Mapping[str, Any], protocol: str) -> list[Card]:
        """The headline score."""
        return [Card(
            "APEX score (official)", figure(figures.get("score"), 2), "benchmarks.apex.score",
            f"{protocol} · {count(figures.get('n_tasks'))} tasks, 0–100",
            "the mean over tasks of each task's median over epochs of percent met",
        )]  # fmt: skip

    def graders(self) -> list[tuple[Grader, str | None]]:
        """APEX's judge for every record."""
        return [(ApexOfficialGrader(), None)]


PROTOCOL = register(ApexProtocol())
"""The registered instance."""
