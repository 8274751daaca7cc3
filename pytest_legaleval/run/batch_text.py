"""The terminal's lines about a ``--batch`` run: what went through batches, what waits.

A batch may take up to 24 h, so a run stopped before its batches ended must say how many
are still pending and for how long, and how to collect them (the same command with the
same ``--cache``; ``legaleval batches`` lists them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_legaleval.engine.batch_store import format_age

__all__ = ["batch_lines"]


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 'es' if word.endswith('ch') else 's'}"


def batch_lines(stats: Mapping[str, Any], cost: Mapping[str, Any]) -> list[str]:
    """Lines for the engine's batch counters and the summary's cost block.

    ``stats`` is empty where this process ran no engine (an xdist controller): only the
    cost is said then, if any of it went through a batch.
    """
    lines = _counter_lines(stats) if stats else []
    batch_usd, saved = cost.get("batch_usd"), cost.get("saved_usd")
    if (
        isinstance(batch_usd, int | float)
        and isinstance(saved, int | float)
        and (batch_usd or stats)
    ):
        lines.append(f"batches: ${batch_usd:.4f} at the batch price, ${saved:.4f} saved")
    return lines


def _counter_lines(stats: Mapping[str, Any]) -> list[str]:
    created = int(stats.get("batches_created") or 0)
    resumed = int(stats.get("batches_resumed") or 0)
    parts = [f"{_plural(created, 'batch')} submitted"]
    if resumed:
        parts.append(f"resumed {_plural(resumed, 'batch')} from the cache (not paid again)")
    answers = int(stats.get("batch_answers") or 0)
    parts.append(f"{answers} answers")
    retries = int(stats.get("batch_retries") or 0)
    if retries:
        parts.append(f"{retries} requests retried in a new batch")
    live = int(stats.get("batch_live_fallbacks") or 0)
    if live:
        parts.append(f"{live} sent live")
    lines = ["batches: " + ", ".join(parts)]
    if stats.get("batch_unsupported_endpoints"):
        lines.append("batches: an endpoint has no Batch API; its calls went live")
    no_api = int(stats.get("batch_no_api_calls") or 0)
    if no_api:
        lines.append(
            f"batches: {no_api} calls went live: their provider has no Batch API "
            "(--batch serves openai/, together/ and groq/)"
        )
    pending = int(stats.get("batches_pending") or 0)
    if pending:
        oldest = stats.get("batch_oldest_pending_s")
        age = f", the oldest {format_age(float(oldest))} old" if oldest is not None else ""
        lines.append(
            f"batches: {_plural(pending, 'batch')} still pending{age}: run the same command "
            "with the same --cache to collect them (legaleval batches --cache PATH lists them)"
        )
    return lines
