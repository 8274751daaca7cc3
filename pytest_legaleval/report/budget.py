"""The page's byte budget: one preview length for every text, fitted to the room left.

Every free text the page shows (a response, an explanation, a judge's reason, a question, a
choice, a transcript's message) belongs to a *class* whose preview length is a function of
one number, the preview length ``P`` of a failure's texts: a failure's texts get ``P``, a
passed item's a quarter of it, a transcript half of its item's, a criterion's title at least
:data:`MIN_TITLE` characters. :func:`fit_preview` finds the largest ``P`` whose texts fit.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

__all__ = [
    "MAX_PREVIEW",
    "MAX_TITLE",
    "MIN_TITLE",
    "Budget",
    "Lengths",
    "fit_preview",
    "judge_cap",
    "other_cap",
    "title_cap",
    "transcript_cap",
]

MAX_PREVIEW = 4000
"""Longest preview of one text (a response, an explanation, a judge's reason, a question)."""
MAX_TITLE = 300
"""Longest criterion title shown."""
MIN_TITLE = 60
"""Shortest criterion title shown, whatever the page's room (a title cut to nothing says
nothing)."""
_OTHER_SHARE = 4
_OTHER_FROM = 400
"""Passed and skipped items get 1/4 of a failure's preview length, once that is at least
this long; below it, the page keeps its room for the failures and errors."""


def other_cap(cap: int) -> int:
    """The preview length of passed and skipped items when failures get ``cap``."""
    return cap // _OTHER_SHARE if cap >= _OTHER_FROM else 0


def transcript_cap(cap: int) -> int:
    """The preview length of a transcript's texts when the item's own texts get ``cap``.

    Half: a transcript mostly repeats what the item view shows already (the question inside
    the prompt, the response as the reply, the judge's reasons inside its replies).
    """
    return cap // 2


def judge_cap(cap: int) -> int:
    """The preview length of a judge's prompts and replies when the item's texts get ``cap``.

    A quarter: a judge's prompt repeats the question and the answer, its reply the reason
    the criteria table shows.
    """
    return transcript_cap(cap) // 2


def title_cap(cap: int) -> int:
    """The length of a criterion's title when failures get ``cap``."""
    return min(MAX_TITLE, max(cap, MIN_TITLE))


@dataclass
class Lengths:
    """Text lengths of one class, sorted with prefix sums once :meth:`freeze` ran."""

    values: array[int] = field(default_factory=lambda: array("q"))
    prefix: list[int] = field(default_factory=list)

    def freeze(self) -> None:
        """Sort the lengths and sum their prefixes (call once, after the last ``append``)."""
        ordered = sorted(self.values)
        self.values = array("q", ordered)
        self.prefix = [0]
        for value in ordered:
            self.prefix.append(self.prefix[-1] + value)

    def total(self, cap: int) -> int:
        """Characters shown when every text is cut to ``cap``."""
        below = bisect.bisect_left(self.values, cap)
        return self.prefix[below] + cap * (len(self.values) - below)


_CLASSES: dict[str, Callable[[int], int]] = {
    "urgent": lambda cap: cap,
    "other": other_cap,
    "transcript": transcript_cap,
    "transcript_other": lambda cap: transcript_cap(other_cap(cap)),
    "judge": judge_cap,
    "judge_other": lambda cap: judge_cap(other_cap(cap)),
    "title": title_cap,
}


@dataclass
class Budget:
    """The lengths of every text the page may show, by class (see :data:`CLASSES`)."""

    classes: dict[str, Lengths] = field(
        default_factory=lambda: {name: Lengths() for name in _CLASSES}
    )

    def add(self, kind: str, length: int) -> None:
        """Count one text of class ``kind`` (``urgent``, ``other``, ``transcript``, …)."""
        self.classes[kind].values.append(length)

    def add_all(self, kind: str, lengths: Iterable[int]) -> None:
        """Count several texts of one class."""
        self.classes[kind].values.extend(lengths)

    def freeze(self) -> None:
        """Sort every class (after the last text was counted)."""
        for lengths in self.classes.values():
            lengths.freeze()

    def total(self, cap: int) -> int:
        """Characters shown when failures' texts are cut to ``cap``."""
        return sum(lengths.total(_CLASSES[name](cap)) for name, lengths in self.classes.items())


def fit_preview(budget: Budget, room: int) -> int:
    """The longest preview of a failure's texts whose page texts fit ``room`` characters."""
    low, high = 0, MAX_PREVIEW
    while low < high:
        mid = (low + high + 1) // 2
        if budget.total(mid) <= room:
            low = mid
        else:
            high = mid - 1
    return low
