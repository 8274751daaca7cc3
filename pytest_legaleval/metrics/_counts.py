"""One count vocabulary for every place a run's numbers reach.

An *item* is one record asked of one model. Every item is exactly one of:

* ``passed`` — graded, at or above the pass rule;
* ``failed`` — graded wrong: a wrong answer, a score below the threshold, or a reply with no
  extractable answer (the model's fault);
* ``error`` — no verdict because of the engine or the judge (``missing_response``,
  ``generation_error:<code>``, ``timeout``, ``latency_exceeded``, ``judge_error``,
  ``cancelled``, ``evaluation_error``);
* ``skipped`` — not evaluated on purpose (a skip mark, ``needs_judge``);
* ``invalid`` — its record cannot be asked (failed validation, attachment file missing).

A *record* counts once however many models answered it, as the Dataset Contract §3.3 counts
it: it *failed* when any of its items is an error or invalid; otherwise it was *evaluated*
when any of its items got a verdict, else it was *skipped*. So ``total_records =
evaluated_records + failed_records + skipped_records``.

Metrics files written before this vocabulary used ``*_records`` names for item counts;
:func:`with_item_fields` and :func:`counts_of` read both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "CATEGORIES",
    "Counts",
    "RecordIndex",
    "RecordTally",
    "counts_of",
    "flag_of",
    "is_item_block",
    "nothing_evaluated",
    "with_item_fields",
]

CATEGORIES: Final = ("passed", "failed", "error", "skipped", "invalid")
"""The item categories, in the order every table shows them."""

# Record flags: what the items of one record were (several models, one record).
GRADED: Final = 1
SKIPPED: Final = 2
ERROR: Final = 4
INVALID: Final = 8
CANCELLED: Final = 16
SCORED: Final = 32
JUDGED: Final = 64
WARNED: Final = 128

_RECORD_FLAGS: Final = (("invalid", INVALID), ("error", ERROR), ("cancelled", CANCELLED),
                        ("scored", SCORED), ("judged", JUDGED), ("warned", WARNED))  # fmt: skip
_FLAG_OF: Final = {"passed": GRADED, "failed": GRADED, "skipped": SKIPPED, "error": ERROR,
                   "invalid": INVALID}  # fmt: skip


class RecordIndex:
    """Numbers the records of one run 0, 1, 2 …, shared by its accumulators.

    A record is known by the hash of its key, not the key: 50,000 records then cost about
    5 MiB here, once for the summary and all slices, instead of a copy of every dataset name
    and record id. Two records of one run share a hash with a chance of about n²/2⁶⁵ (10⁻¹⁰
    at 50,000 records); they would count as one.
    """

    __slots__ = ("_ids",)

    def __init__(self) -> None:
        self._ids: dict[int, int] = {}

    def __call__(self, key: Hashable) -> int:
        """The number of the record of ``key`` (the next one for a record not seen before)."""
        digest = hash(key)
        found = self._ids.get(digest)
        if found is None:
            found = self._ids[digest] = len(self._ids)
        return found

    def __len__(self) -> int:
        return len(self._ids)


_DENSE_FROM = 64
"""Records a tally holds in a dict before it may switch to one byte per record number."""


@dataclass
class RecordTally:
    """The flags of every record seen, OR-ed over its items (order does not matter).

    Flags are kept in a dict by record number while the tally is sparse (a tag that few
    records have), and in a bytearray indexed by record number once that is smaller (the
    whole run, a model, a dataset): one byte per record instead of a dict entry.
    """

    index: RecordIndex = field(default_factory=RecordIndex)
    flags: dict[int, int] | bytearray = field(default_factory=dict)
    anonymous_invalid: int = 0
    """Invalid items counted without a record key: each is its own record."""

    def mark(self, key: Hashable | None, flags: int) -> None:
        """Add ``flags`` to the record of ``key`` (``None``: an invalid record of its own)."""
        if key is None:
            self.anonymous_invalid += 1
            return
        rid = self.index(key)
        store = self.flags
        if isinstance(store, bytearray):
            if rid >= len(store):
                store.extend(bytes(max(rid + 1 - len(store), len(store) // 2)))
            store[rid] |= flags
            return
        store[rid] = store.get(rid, 0) | flags
        # A dict entry costs ~50 bytes, a byte per record number up to the largest: switch
        # when the bytearray is the smaller.
        if len(store) >= _DENSE_FROM and rid < 32 * len(store):
            dense = bytearray(max(store) + 1)
            for number, value in store.items():
                dense[number] = value
            self.flags = dense

    def _values(self) -> Counter[int]:
        """How many records carry each flag combination (0: no record, in a bytearray)."""
        store = self.flags
        found = Counter(store) if isinstance(store, bytearray) else Counter(store.values())
        found.pop(0, None)
        return found

    def to_dict(self) -> dict[str, int]:
        """The ``*_records`` fields of a metrics block."""
        counts = dict.fromkeys(
            ("total", "invalid", "failed", "error", "evaluated", "skipped", "cancelled",
             "scored", "judged", "warned"), 0,
        )  # fmt: skip
        for flags, number in self._values().items():
            counts["total"] += number
            if flags & (ERROR | INVALID):
                counts["failed"] += number
            elif flags & GRADED:
                counts["evaluated"] += number
            else:
                counts["skipped"] += number
            for name, bit in _RECORD_FLAGS:
                if flags & bit:
                    counts[name] += number
        extra = self.anonymous_invalid
        return {
            "total_records": counts["total"] + extra,
            "valid_records": counts["total"] - counts["invalid"],
            "invalid_records": counts["invalid"] + extra,
            "evaluated_records": counts["evaluated"],
            "failed_records": counts["failed"] + extra,
            "error_records": counts["error"],
            "skipped_records": counts["skipped"],
            "cancelled_records": counts["cancelled"],
            "scored_records": counts["scored"],
            "judged_records": counts["judged"],
            "attachment_warning_records": counts["warned"],
        }


def flag_of(category: str) -> int:
    """The record flag of an item category."""
    return _FLAG_OF[category]


# Old block field -> the item field it meant (metrics files written before this vocabulary).
_OLD_ITEM_FIELDS: Final = {
    "total_items": "total_records",
    "valid_items": "valid_records",
    "invalid_items": "invalid_records",
    "evaluated_items": "evaluated_records",
    "passed_items": "pass_count",
    "failed_items": "fail_count",
    "error_items": "error_records",
    "skipped_items": "skipped_records",
    "cancelled_items": "cancelled_records",
    "scored_items": "scored_records",
    "judged_items": "judged_records",
}


def is_item_block(block: Mapping[str, Any]) -> bool:
    """Whether ``block`` has this vocabulary's ``*_items`` fields."""
    return "total_items" in block


def with_item_fields(block: Mapping[str, Any]) -> Mapping[str, Any]:
    """``block`` with its ``*_items`` fields, read from an old block's names if need be.

    In an old block the ``*_records`` fields counted items, so they are the item counts;
    its record counts are unknown and are left out.
    """
    if is_item_block(block):
        return block
    out = {k: v for k, v in block.items() if not k.endswith("_records")}
    for new, old in _OLD_ITEM_FIELDS.items():
        if old in block:
            out[new] = block[old]
    return out


@dataclass(frozen=True, slots=True)
class Counts:
    """The vocabulary's numbers of one block, as every table shows them."""

    records: int | None
    """Distinct records; ``None`` for an old block, which did not count them."""
    items: int
    passed: int
    failed: int
    errors: int
    skipped: int
    invalid: int
    attachment_warnings: int | None
    """Items with an attachment warning; ``None`` for an old block."""


def _int(block: Mapping[str, Any], key: str) -> int:
    value = block.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def counts_of(block: Mapping[str, Any]) -> Counts:
    """The counts of a metrics block, whichever vocabulary wrote it."""
    new = is_item_block(block)
    items = with_item_fields(block)
    return Counts(
        records=_int(block, "total_records") if new else None,
        items=_int(items, "total_items"),
        passed=_int(items, "passed_items"),
        failed=_int(items, "failed_items"),
        errors=_int(items, "error_items"),
        skipped=_int(items, "skipped_items"),
        invalid=_int(items, "invalid_items"),
        attachment_warnings=(
            _int(block, "attachment_warning_items") if "attachment_warning_items" in block else None
        ),
    )


_WHY_NOT_EVALUATED: Final = {
    "needs_judge": ("needs", "need", "--judge-model (graded by an LLM judge)"),
    "missing_response": ("has", "have", "no answer in --responses"),
    "invalid_record": ("is", "are", "invalid"),
    "judge_error": ("got", "got", "no usable verdict from the judge"),
    "cancelled": ("was", "were", "cancelled"),
}


def _why(reason: str, n: int) -> str:
    one, many, rest = _WHY_NOT_EVALUATED.get(reason, ("ended", "ended", reason))
    return f"{n} item {one} {rest}" if n == 1 else f"{n} items {many} {rest}"


def nothing_evaluated(summary: Mapping[str, Any], *, generate_ungraded: bool = False) -> str | None:
    """Why a run that has items evaluated none of them; ``None`` when something was.

    "Nothing evaluated" is a failed run, not a success: a rubric set run without
    ``--judge-model`` skips every item and would otherwise exit 0. Answers asked for
    without grading (``--generate-ungraded``) count as evaluated: that run did its job.
    """
    counts = counts_of(summary)
    if not counts.items or counts.passed + counts.failed:
        return None
    if generate_ungraded and counts.skipped:
        return None
    reasons = summary.get("outcomes_by_reason")
    found = reasons if isinstance(reasons, Mapping) else {}
    counted = [
        (str(why), n)
        for why, n in found.items()
        if isinstance(n, int) and not isinstance(n, bool) and n > 0
    ]
    parts = [_why(why, n) for why, n in sorted(counted, key=lambda kv: (-kv[1], kv[0]))]
    return "; ".join(parts) or f"{counts.items} items, none with a verdict"
