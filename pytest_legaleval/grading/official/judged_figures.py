"""What the PRBench and APEX protocols share: their tallies and the judge block.

Both read the per-item facts :mod:`.judged` puts in ``details.official``: the official
score (failed or unreadable judging counted not met), ``judge_failed_unmet``, the judge
models asked. Beside the official figures every model's block has ``judge_failed_unmet``
(criteria the official rule scored unmet because the judge failed), ``ours`` (items
graded, our ``judge_errors`` — DESIGN §7) and ``judge``: the models used, the one the
published figures used and ``differs``, a plain flag for a figure that follows the
official method but is not comparable with the leaderboard.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_legaleval.grading._protocols import BenchmarkProtocol, Cell, heading, mapping
from pytest_legaleval.records import Record

__all__ = [
    "JudgedProtocol",
    "JudgedTally",
    "accounting",
    "beside",
    "beside_cells",
    "beside_heads",
    "judge_block",
    "judge_note",
    "number",
]


def number(value: Any) -> float | None:
    """``value`` as a float when a number (not a bool), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


class JudgedTally:
    """One model's items of one epoch: their official facts and our accounting."""

    def __init__(self) -> None:
        self.items: list[tuple[str, Mapping[str, Any]]] = []
        """(record id, ``details.official``) of every line."""
        self.judges: set[str] = set()
        self.failed_unmet = 0
        self.graded = 0
        self.judge_errors = 0

    def add(self, line: Mapping[str, Any], record: Record | None) -> None:
        """Read one prediction line graded under the protocol."""
        official = mapping(mapping(line.get("details")).get("official"))
        self.items.append((str(line.get("record_id", "")), official))
        self.judges.update(str(m) for m in official.get("judge_models") or [])
        self.failed_unmet += int(number(official.get("judge_failed_unmet")) or 0)
        self.graded += line.get("outcome") in ("passed", "failed")
        self.judge_errors += line.get("reason") == "judge_error"


class JudgedProtocol(BenchmarkProtocol):
    """What the judged protocols (PRBench, APEX) share: one :class:`JudgedTally` per epoch."""

    def tally(self) -> JudgedTally:
        """A fresh tally of one model's items in one epoch."""
        return JudgedTally()


def judge_block(tallies: Sequence[JudgedTally], published: str) -> dict[str, Any]:
    """The judges used against the published one; ``differs`` unless every one is it."""
    used = sorted({m for t in tallies for m in t.judges})
    differs = not used or any(name.split("/")[-1] != published for name in used)
    return {"used": used, "published": published, "differs": differs}


def beside(tallies: Sequence[JudgedTally]) -> dict[str, Any]:
    """Our own accounting over every epoch's items, beside the official figures."""
    return {
        "judge_failed_unmet": sum(t.failed_unmet for t in tallies),
        "ours": {
            "graded": sum(t.graded for t in tallies),
            "judge_errors": sum(t.judge_errors for t in tallies),
        },
    }


def judge_note(figures: Mapping[str, Any]) -> str:
    """The terminal's warning when the judge is not the published one, else ``""``."""
    judge = mapping(figures.get("judge"))
    if not judge.get("differs"):
        return ""
    used = ", ".join(str(m) for m in judge.get("used") or []) or "an unrecorded judge"
    return (
        f"; judged by {used}, not {judge.get('published')} as published: official method, "
        "not comparable with the leaderboard"
    )


def accounting(figures: Mapping[str, Any]) -> str:
    """The terminal line's account of judge failures: the official rule's count and ours."""
    ours = mapping(figures.get("ours"))
    return (
        f"judge failures scored not met as upstream does: "
        f"{figures.get('judge_failed_unmet', 0)}; ours: {ours.get('judge_errors', 0)} judge "
        "errors, never a 0"
    )


def beside_heads() -> tuple[Cell, ...]:
    """The report's headings of our own accounting."""
    return (
        heading("judge failures (not met)",
                title="criteria the official rule scored not met because the judge failed"),
        heading("graded (ours)"),
        heading("judge errors (ours)"),
        heading("judge"),
    )  # fmt: skip


def beside_cells(figures: Mapping[str, Any], count: Any) -> tuple[Cell, ...]:
    """The report's cells of our own accounting and the judge."""
    ours, judge = mapping(figures.get("ours")), mapping(figures.get("judge"))
    used = ", ".join(str(m) for m in judge.get("used") or []) or "unrecorded"
    shown = f"{used} (published: {judge.get('published')})"
    return (
        Cell(count(figures.get("judge_failed_unmet"))),
        Cell(count(ours.get("graded")), kind="num ours"),
        Cell(count(ours.get("judge_errors")), kind="num ours"),
        Cell(shown, kind="judge-differs" if judge.get("differs") else "",
             title="not comparable with the leaderboard" if judge.get("differs") else None),
    )  # fmt: skip
