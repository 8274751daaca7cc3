"""``lexam_official`` on the protocol registry: LEXam, as one object.

The figures of ``benchmarks.lexam`` (the per-item facts come from
:class:`~pytest_legaleval.grading.official.graders.LexamMcqOfficialGrader` and
:mod:`~pytest_legaleval.grading.official.lexam_judge`): ``mcq.accuracy`` (right answers /
questions, and ``by_set`` per question set: ``mcq`` for ``MCQs_test.xlsx``,
``mcq4``/``mcq8``/``mcq16``/``mcq32`` for the perturbation file's option counts) and
``open.score`` (the mean of LEXam's judge grade × 100, an unusable judge reply counted 0 as
LEXam counts it); beside it, ``open.ours`` keeps our own accounting (graded items, their
mean × 100, judge errors), never mixed into the official figure. Means are NumPy's, over
open questions in record-id order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_legaleval.grading._protocols import (
    DASH,
    BenchmarkProtocol,
    Card,
    Cell,
    ReferenceJudge,
    Row,
    Table,
    Upstream,
    count,
    figure,
    heading,
    mapping,
    register,
)
from pytest_legaleval.grading.official import lexam as lx
from pytest_legaleval.grading.official.graders import LexamMcqOfficialGrader
from pytest_legaleval.grading.official.numeric import numpy_mean
from pytest_legaleval.records import Record

if TYPE_CHECKING:
    from pytest_legaleval.grading._base import Grade, Grader, GradeRequest

__all__ = ["PROTOCOL", "LexamProtocol"]


def _plain(value: Any, digits: int) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "-"


def _mean(values: list[float]) -> float | None:
    return numpy_mean(values) if values else None


class _Tally:
    """The official facts of one model's LEXam items in one epoch."""

    def __init__(self) -> None:
        self.mcq: list[tuple[str, bool]] = []
        """(the question set: the id's second part, ``mcq``, ``mcq8`` …; right or not)."""
        self.open: list[tuple[str, float]] = []
        self.open_unusable = 0
        self.ours_open: list[float] = []
        self.ours_judge_errors = 0
        self.not_scored = 0

    def add(self, line: Mapping[str, Any], record: Record | None) -> None:
        official = mapping(mapping(line.get("details")).get("official"))
        kind = official.get("kind")
        if kind == "mcq" and isinstance(official.get("correct"), bool):
            parts = str(line.get("record_id", "")).split(":")
            self.mcq.append((parts[1] if len(parts) >= 3 else "mcq", official["correct"]))
            return
        if kind == "open":
            if line.get("reason") == "judge_error":
                self.ours_judge_errors += 1
            elif isinstance(line.get("score"), int | float):
                self.ours_open.append(float(line["score"]))
            score = official.get("score")
            if isinstance(score, int | float) and not isinstance(score, bool):
                self.open.append((str(line.get("record_id", "")), float(score)))
                self.open_unusable += int(bool(official.get("unusable_replies")))
                return
        self.not_scored += 1


class LexamProtocol(BenchmarkProtocol):
    """LEXam's own: the last ``###X###`` for MCQs, its judge's grade for open questions."""

    id = lx.PROTOCOL
    benchmark = "lexam"
    title = "LEXam"
    version = lx.PROTOCOL_VERSION
    upstream = Upstream(lx.UPSTREAM_REPO, lx.UPSTREAM_COMMIT)
    source = "lexam"

    def tally(self) -> _Tally:
        """A fresh tally of one model's items in one epoch."""
        return _Tally()

    def figures(self, tallies: Sequence[Any]) -> dict[str, Any]:
        """``mcq`` (``accuracy``, ``n``, ``by_set``), ``open`` (``score`` …), ``not_scored``."""
        runs: list[_Tally] = list(tallies)
        first = runs[0]
        accuracies = [sum(c for _, c in run.mcq) / len(run.mcq) for run in runs if run.mcq]
        by_set: dict[str, dict[str, Any]] = {}
        for name in sorted({name for name, _ in first.mcq}):
            per = [[c for k, c in run.mcq if k == name] for run in runs]
            by_set[name] = {
                "accuracy": _mean([sum(p) / len(p) for p in per if p]), "n": len(per[0]),
            }  # fmt: skip
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
            "not_scored": first.not_scored,
        }

    def terminal_line(self, figures: Mapping[str, Any]) -> str:
        """MCQ accuracy and the open questions' score, with our own accounting beside it."""
        mcq = mapping(figures.get("mcq"))
        opened = mapping(figures.get("open"))
        parts = []
        if mcq.get("n"):
            parts.append(f"MCQ accuracy {_plain(mcq.get('accuracy'), 4)} (n={mcq['n']})")
        if opened.get("n"):
            ours = mapping(opened.get("ours"))
            parts.append(
                f"open questions {_plain(opened.get('score'), 1)} (mean grade x 100, "
                f"n={opened['n']}; unusable judge replies scored 0 as LEXam does: "
                f"{opened.get('unusable_replies_scored_0', 0)}; ours: "
                f"{ours.get('judge_errors', 0)} judge errors, never a 0)"
            )
        return "; ".join(parts) or "no item scored"

    def report_intro(self) -> str:
        """How each figure is read."""
        return (
            "MCQ accuracy: right answers over questions, the answer read from the last "
            "`###X###`. Open questions: LEXam's judge grade averaged × 100; a judge reply "
            "LEXam cannot read counts 0 there, as in LEXam. Our own accounting keeps those "
            "items as judge errors, beside the official figure and never in it."
        )

    def report_tables(self, models: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Table]:
        """One row per model: the official figures, then ours beside them."""
        sets: list[str] = []
        for _, figures in models:
            by_set = mapping(mapping(figures.get("mcq")).get("by_set"))
            sets += [str(s) for s in by_set if str(s) not in sets]

        ours_head = heading("ours, beside it (not in the official figure)", span=3)
        official_head = heading("official", span=2 + len(sets) + 3)
        groups = Row((heading(""), official_head, ours_head, heading("")))
        columns = Row((
            heading("model"), heading("MCQ accuracy"), heading("MCQ n"),
            *(heading(s) for s in sets),
            heading("open score (mean judge grade × 100)"), heading("open n"),
            heading("unusable judge replies (scored 0)"), heading("graded"),
            heading("mean score × 100"), heading("judge errors"),
            heading("not scored", title="items without an official verdict"),
        ))  # fmt: skip
        rows = []
        for model, figures in models:
            mcq, open_ = mapping(figures.get("mcq")), mapping(figures.get("open"))
            ours, by_set = mapping(open_.get("ours")), mapping(mcq.get("by_set"))
            set_cells = [
                Cell(
                    figure(mapping(by_set[s]).get("accuracy")),
                    note=f"({count(mapping(by_set[s]).get('n'))})",
                )
                if s in by_set
                else Cell(DASH)
                for s in sets
            ]
            rows.append(Row((
                Cell(model or "this run", kind=""),
                Cell(figure(mcq.get("accuracy")), kind="num headline", data=(("figure", "mcq"),)),
                Cell(count(mcq.get("n"))), *set_cells,
                Cell(figure(open_.get("score"), 1), kind="num headline",
                     data=(("figure", "open"),)),
                Cell(count(open_.get("n"))), Cell(count(open_.get("unusable_replies_scored_0"))),
                Cell(count(ours.get("graded")), kind="num ours"),
                Cell(figure(ours.get("mean_score_x100"), 1), kind="num ours"),
                Cell(count(ours.get("judge_errors")), kind="num ours"),
                Cell(count(figures.get("not_scored"))),
            ), data=(("model", model),)))  # fmt: skip
        return [Table("lexam-headline", (groups, columns), tuple(rows), scroll=True)]

    def cards(self, figures: Mapping[str, Any], protocol: str) -> list[Card]:
        """MCQ accuracy and the open questions' score, when the run has them."""
        mcq, open_ = mapping(figures.get("mcq")), mapping(figures.get("open"))
        cards = []
        if figure(mcq.get("accuracy")) != DASH:
            cards.append(Card(
                "LEXam MCQ accuracy (official)", figure(mcq.get("accuracy")),
                "benchmarks.lexam.mcq.accuracy", f"{protocol} · {count(mcq.get('n'))} questions",
            ))  # fmt: skip
        if figure(open_.get("score")) != DASH:
            cards.append(Card(
                "LEXam open score (official)", figure(open_.get("score"), 1),
                "benchmarks.lexam.open.score",
                f"{protocol} · mean judge grade × 100 · {count(open_.get('n'))} questions",
            ))  # fmt: skip
        return cards

    def graders(self) -> list[tuple[Grader, str | None]]:
        """The MCQs: the last ``###X###`` (open questions go to the judge, LEXam's format)."""
        return [(LexamMcqOfficialGrader(), "mcq")]

    def reference_judges(self) -> Mapping[str, ReferenceJudge]:
        """``lexam``: LEXam's judge prompt and its ``[[0.x]]`` grade (``lexam_judge``)."""
        return {"lexam": _judge_open_question}


async def _judge_open_question(request: GradeRequest, details: Mapping[str, Any]) -> Grade:
    # Imported on first use: the judge needs the engine, the figures do not.
    from pytest_legaleval.grading.official.lexam_judge import judge_open_question

    return await judge_open_question(request, details)


PROTOCOL = register(LexamProtocol())
"""The registered instance."""
