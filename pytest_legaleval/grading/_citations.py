"""The citation check of RAG QA answers: cited ``[n]`` markers against the numbered contexts.

Two rules, both required to pass:
- every marker the answer cites names one of the contexts (``[1]`` … ``[len(contexts)]``);
- every context the curated ``answer_citations`` point at is cited by the answer.

A pure function of its inputs; the grader decides when to apply it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_legaleval.records import Record

__all__ = ["CitationCheck", "check_citations", "cited_markers", "curated_targets", "rag_citations"]

# [3], [1, 2], [2-4], [1–3; 5]: a bracket holding only numbers, separators and ranges.
_BRACKET = re.compile(r"\[(\s*\d{1,4}(?:\s*(?:[,;]|[-–])\s*\d{1,4})*\s*)\]")
_PART = re.compile(r"(\d{1,4})(?:\s*[-–]\s*(\d{1,4}))?")
_MARKER = re.compile(r"\A\s*\[?\s*(\d{1,4})\s*\]?\s*\Z")
_MAX_RANGE = 50
"""A wider range ([1-9999]) is read as its two ends only, never expanded."""


@dataclass(frozen=True, slots=True)
class CitationCheck:
    """The verdict of :func:`check_citations`."""

    passed: bool
    """No unknown marker and no missing curated citation."""
    score: float
    """Coverage of the curated citations (1.0 when there are none) times the share of
    cited markers that exist (1.0 when nothing is cited); in [0, 1]."""
    cited: tuple[int, ...]
    """Context numbers the answer cites, sorted, each once."""
    unknown: tuple[int, ...]
    """Cited numbers that name no context."""
    missing: tuple[int, ...]
    """Context numbers of curated citations the answer does not cite."""
    required: tuple[int, ...]
    """Context numbers the curated ``answer_citations`` point at."""
    unresolved: int = 0
    """Curated citations that name no context (no usable ``marker``, ``number`` or
    ``source``); reported, never counted against the answer."""


def cited_markers(answer: str) -> tuple[int, ...]:
    """Every context number cited in ``answer`` (``[2]``, ``[1, 3]``, ``[2-4]``), sorted."""
    found: set[int] = set()
    for bracket in _BRACKET.finditer(answer):
        for part in _PART.finditer(bracket.group(1)):
            start = int(part.group(1))
            end = int(part.group(2)) if part.group(2) else start
            if start <= end and end - start <= _MAX_RANGE:
                found.update(range(start, end + 1))
            else:
                found.update((start, end))
    return tuple(sorted(found))


def _number(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        match = _MARKER.match(value)
        return int(match.group(1)) if match else None
    return None


def curated_targets(
    answer_citations: Sequence[Mapping[str, Any]], sources: Sequence[str] = ()
) -> tuple[tuple[int, ...], int]:
    """Resolve curated citations to context numbers.

    A citation names its context by ``marker`` (``"[2]"`` or ``2``), else ``number``
    (1-based), else ``source`` (equal to ``sources[i]``, giving ``i + 1``).

    Returns:
        ``(sorted context numbers, count of citations naming none)``.

    """
    targets: set[int] = set()
    unresolved = 0
    for citation in answer_citations:
        number = _number(citation.get("marker")) if isinstance(citation, Mapping) else None
        if number is None and isinstance(citation, Mapping):
            number = _number(citation.get("number"))
        if number is None and isinstance(citation, Mapping):
            source = citation.get("source")
            if isinstance(source, str) and source in sources:
                number = list(sources).index(source) + 1
        if number is None:
            unresolved += 1
        else:
            targets.add(number)
    return tuple(sorted(targets)), unresolved


def check_citations(
    answer: str,
    contexts: Sequence[str],
    answer_citations: Sequence[Mapping[str, Any]] = (),
    sources: Sequence[str] = (),
) -> CitationCheck:
    """Check an answer's ``[n]`` citations against the contexts and the curated targets.

    Args:
        answer: the model's answer.
        contexts: the numbered contexts the model saw (only their count matters).
        answer_citations: the record's curated ``answer_citations``.
        sources: the record's ``sources``, to resolve citations that name a source.

    """
    cited = cited_markers(answer)
    unknown = tuple(n for n in cited if not 1 <= n <= len(contexts))
    required, unresolved = curated_targets(answer_citations, sources)
    missing = tuple(n for n in required if n not in cited)
    coverage = (len(required) - len(missing)) / len(required) if required else 1.0
    precision = (len(cited) - len(unknown)) / len(cited) if cited else 1.0
    return CitationCheck(
        passed=not unknown and not missing,
        score=coverage * precision,
        cited=cited,
        unknown=unknown,
        missing=missing,
        required=required,
        unresolved=unresolved,
    )


def rag_citations(record: Record, answer: str) -> dict[str, Any] | None:
    """The citation check of a RAG QA answer, when it applies.

    It applies to QA records from the RAG splits whose answer cites ``[n]`` markers or whose
    curated ``answer_citations`` expect some; summaries are not checked.
    """
    rag = record.metadata.get("rag")
    if not isinstance(rag, dict) or rag.get("task_type") != "qa":
        return None
    contexts = rag.get("contexts") or []
    curated = rag.get("answer_citations") or []
    if not isinstance(contexts, list) or not isinstance(curated, list):
        return None
    if not curated and not cited_markers(answer):
        return None
    sources = rag.get("sources") or []
    check = check_citations(
        answer,
        [str(c) for c in contexts],
        [c for c in curated if isinstance(c, dict)],
        [str(s) for s in sources] if isinstance(sources, list) else [],
    )
    return {
        "passed": check.passed,
        "score": check.score,
        "cited": list(check.cited),
        "unknown": list(check.unknown),
        "missing": list(check.missing),
        "required": list(check.required),
    }
