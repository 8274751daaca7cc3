"""``prbench_official`` on the protocol registry: PRBench, as one object.

The figures of ``benchmarks.prbench`` (the per-item facts come from
:class:`~pytest_legaleval.grading.official.judged.PrbenchOfficialGrader`), as
``evals.py`` reports them for a file of tasks: per split
(``splits.<finance|legal|finance_hard|legal_hard>``; a Hard-subset task counts in its
field's split too, as it is in both files upstream) and over every task of the run:
``mean_clipped`` (``max(0, np.mean)`` of the tasks' Σ w·met / Σ w⁺ — the paper's
headline), ``mean`` (that mean before the floor), ``std_clipped`` (NumPy's population std
of the same scores), ``mean_normalized`` / ``std_normalized``, ``negative_tasks`` and
``n``. Tasks are averaged in file order, as upstream's data frame holds them (a float sum
depends on its order). With several epochs each figure is the mean of its per-epoch
values. Beside them: :mod:`.judged_figures` (judge failures scored not met, our judge
errors, the judge used against PRBench's o4-mini).
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
from pytest_legaleval.grading.official import prbench as pr
from pytest_legaleval.grading.official.judged import PrbenchOfficialGrader
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
from pytest_legaleval.grading.official.numeric import numpy_mean

if TYPE_CHECKING:
    from pytest_legaleval.grading._base import Grader

__all__ = ["PROTOCOL", "PrbenchProtocol"]

Entry = tuple[int, str, float, float | None]
"""(the record's place in its file, record id, task score, normalized score)."""
_FIGURES = ("mean_clipped", "std_clipped", "mean_normalized", "std_normalized", "mean")


def _split_figures(entries: list[Entry]) -> dict[str, Any]:
    entries = sorted(entries)
    clipped = [score for _, _, score, _ in entries]
    normalized = [n for _, _, _, n in entries if n is not None]
    return pr.split_figures(clipped, normalized if len(normalized) == len(clipped) else [])


def _epoch(tally: JudgedTally) -> dict[str, dict[str, Any]]:
    per_split: dict[str, list[Entry]] = defaultdict(list)
    every: list[Entry] = []
    for record_id, official in tally.items:
        score = number(official.get("score"))
        if score is None:
            continue
        order = official.get("order")
        place = order if isinstance(order, int) and not isinstance(order, bool) else 0
        normalized = number(official.get("normalized"))
        every.append((place, record_id, score, normalized))
        positions = mapping(official.get("positions"))
        for split in official.get("splits") or []:
            # its place in its split's file, where the importer recorded it
            at = positions.get(str(split))
            at = at if isinstance(at, int) and not isinstance(at, bool) else place
            per_split[str(split)].append((at, record_id, score, normalized))
    names = [s for s in pr.SPLITS if s in per_split]
    names += sorted(set(per_split) - set(pr.SPLITS))
    return {
        "all": _split_figures(every),
        **{f"split:{s}": _split_figures(per_split[s]) for s in names},
    }


def _mean_over_epochs(epochs: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    if len(epochs) == 1:
        return epochs[0]
    out: dict[str, dict[str, Any]] = {}
    for key, first in epochs[0].items():
        block = dict(first)
        for name in _FIGURES:
            values = [number(e.get(key, {}).get(name)) for e in epochs]
            if all(v is not None for v in values):
                block[name] = numpy_mean([v for v in values if v is not None])
        out[key] = block
    return out


class PrbenchProtocol(JudgedProtocol):
    """PRBench's own: ``GRADER_TEMPLATE`` per criterion, Σ w·met / Σ w⁺ per task."""

    id = pr.PROTOCOL
    benchmark = "prbench"
    title = "PRBench"
    version = pr.PROTOCOL_VERSION
    upstream = Upstream(pr.UPSTREAM_REPO, pr.UPSTREAM_COMMIT)
    source = "prbench"

    def figures(self, tallies: Sequence[Any]) -> dict[str, Any]:
        """The figures over all tasks, ``splits``, the judge and our accounting beside."""
        runs: list[JudgedTally] = list(tallies)
        merged = _mean_over_epochs([_epoch(t) for t in runs])
        splits = {k.split(":", 1)[1]: v for k, v in merged.items() if k.startswith("split:")}
        not_scored = sum(
            1 for _, official in runs[0].items if number(official.get("score")) is None
        )
        return {
            **merged["all"],
            "splits": splits,
            **beside(runs),
            "not_scored": not_scored,
            "judge": judge_block(runs, pr.PUBLISHED_JUDGE),
        }

    def terminal_line(self, figures: Mapping[str, Any]) -> str:
        """``mean_clipped`` overall and per split, with our accounting and the judge."""
        splits = mapping(figures.get("splits"))
        shown = ", ".join(
            f"{name} {figure(mapping(block).get('mean_clipped'), 4)} "
            f"(n={mapping(block).get('n', 0)})"
            for name, block in splits.items()
        )
        return (
            f"mean_clipped {figure(figures.get('mean_clipped'), 4)} over "
            f"{figures.get('n', 0)} tasks (max(0, mean of Σ w·met / Σ w⁺); mean "
            f"{figure(figures.get('mean'), 4)})"
            f"{'; ' + shown if shown else ''}; {accounting(figures)}{judge_note(figures)}"
        )

    def report_intro(self) -> str:
        """How each figure is read."""
        return (
            "A task scores Σ w·met / Σ w⁺ with the weight each criterion's `weight_class` "
            "names, penalties kept and never clipped; `mean` is the mean over tasks and "
            "PRBench's `mean_clipped` that mean floored at 0, the figure its paper reports "
            "(`mean_normalized` maps each task's range to 0–1 first). A judge reply "
            "PRBench cannot read, or a failed call, is not met there. Our own accounting "
            "keeps those items as judge errors, beside the figures and never in them."
        )

    def report_tables(self, models: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Table]:
        """One row per model and split (and all tasks), then ours beside them."""
        columns = Row((
            heading("model"), heading("split"), heading("mean_clipped"), heading("mean"),
            heading("std_clipped"), heading("mean_normalized"), heading("std_normalized"),
            heading("n"),
            heading("negative tasks"), *beside_heads(),
        ))  # fmt: skip
        rows = []
        for model, figures in models:
            splits = mapping(figures.get("splits"))
            for name, block in [*splits.items(), ("all", figures)]:
                block = mapping(block)
                if not block.get("n"):
                    continue
                extra = beside_cells(figures, count) if name == "all" else (Cell(""),) * 4
                rows.append(Row((
                    Cell(model or "this run", kind=""), Cell(name, kind=""),
                    Cell(figure(block.get("mean_clipped")), kind="num headline",
                         data=(("figure", "mean_clipped"),)),
                    Cell(figure(block.get("mean"))), Cell(figure(block.get("std_clipped"))),
                    Cell(figure(block.get("mean_normalized"))),
                    Cell(figure(block.get("std_normalized"))),
                    Cell(count(block.get("n"))), Cell(count(block.get("negative_tasks"))),
                    *extra,
                ), data=(("model", model), ("split", name))))  # fmt: skip
        return [Table("prbench-splits", (columns,), tuple(rows), scroll=True)]

    def cards(self, figures: Mapping[str, Any], protocol: str) -> list[Card]:
        """The headline ``mean_clipped``."""
        return [Card(
            "PRBench mean_clipped (official)", figure(figures.get("mean_clipped")),
            "benchmarks.prbench.mean_clipped",
            f"{protocol} · mean over {count(figures.get('n'))} tasks",
            "max(0, the mean of the tasks' Σ w·met / Σ w⁺), as PRBench reports it",
        )]  # fmt: skip

    def graders(self) -> list[tuple[Grader, str | None]]:
        """PRBench's judge for every record."""
        return [(PrbenchOfficialGrader(), None)]


PROTOCOL = register(PrbenchProtocol())
"""The registered instance."""
