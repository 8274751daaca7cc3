"""Which records a run evaluates: ``--shard``, ``--sample`` and ``--limit``."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

from pytest_legaleval.formats import RejectedRecord
from pytest_legaleval.pipeline.settings import Shard
from pytest_legaleval.records import Record

__all__ = ["entry_key", "in_shard", "select", "selected_count"]


def entry_key(entry: Record | RejectedRecord) -> str:
    """The stable key that places an entry in a shard: its id, else its file position."""
    record_id = entry.id if isinstance(entry, Record) else entry.record_id
    if record_id:
        return record_id
    return f"{entry.source.path}#{entry.source.index}"


def in_shard(key: str, shard: Shard) -> bool:
    """Whether ``key`` belongs to ``shard`` (sha256, so stable across runs and machines)."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % shard.count == shard.index - 1


def select(
    entries: Sequence[Record | RejectedRecord],
    *,
    shard: Shard | None = None,
    sample: int | None = None,
    seed: int | None = None,
    limit: int | None = None,
) -> list[Record | RejectedRecord]:
    """Apply shard, then a seeded sample, then a limit; file order is kept throughout."""
    chosen = list(entries)
    if shard is not None:
        chosen = [entry for entry in chosen if in_shard(entry_key(entry), shard)]
    if sample is not None and sample < len(chosen):
        keep = set(
            random.Random(seed if seed is not None else 0).sample(range(len(chosen)), sample)
        )
        chosen = [entry for i, entry in enumerate(chosen) if i in keep]
    if limit is not None:
        chosen = chosen[:limit]
    return chosen


def selected_count(in_shard: int, *, sample: int | None, limit: int | None) -> int:
    """How many entries :func:`select` keeps out of ``in_shard`` entries of its shard.

    The count needs no entries: a process that only counts (the xdist controller, which
    streams the dataset instead of holding it) gets the same number as ``select``.
    """
    count = in_shard
    if sample is not None and sample < count:
        count = sample
    if limit is not None:
        count = min(count, limit)
    return count
