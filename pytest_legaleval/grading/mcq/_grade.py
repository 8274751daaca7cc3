"""The grade of a multiple-choice reply: the extracted set against the correct set."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_legaleval.grading.mcq._extract import _evidence, _strip_reasoning, extract_choice_ids
from pytest_legaleval.grading.mcq._patterns import _WHITESPACE_RE, _normalize, _patterns
from pytest_legaleval.records import Record


@dataclass(frozen=True, slots=True)
class MCQGrade:
    """The grade of one multiple-choice reply."""

    passed: bool
    """Whether the chosen set equals the correct set."""
    score: float
    """``1.0`` when passed, else ``0.0``."""
    chosen: tuple[str, ...]
    """The extracted choice ids (empty when none)."""
    correct: tuple[str, ...]
    """The record's correct choice ids, in choice order."""
    reason: str
    """``correct``, ``wrong_answer`` or ``no_answer_extracted``."""
    explanation: str
    """Human-readable account of the grade."""
    method: str
    """The extraction rule that produced ``chosen`` (see :class:`Extraction`)."""


_ANSWER_PREFIX_RE = re.compile(
    r"^\s*(?:(?:final|correct|richtige)[ \t]+)?(?:answer|antwort|lösung|réponse)[*_ \t]*[:：]"
    r"[*_ \t]*",
    re.IGNORECASE,
)
_TEXT_TRIM = " \t\r\n.!*_\"'`“”„«»"


def _choice_text_match(record: Record, response: str) -> str | None:
    """Return the choice whose full text is the whole reply ("No." for Yes/No), if any."""
    body = _strip_reasoning(_normalize(response)).strip()
    if len(body) > 200:
        return None
    body = _ANSWER_PREFIX_RE.sub("", body).strip(_TEXT_TRIM).casefold()
    if not body:
        return None
    matches = [
        c.id for c in record.choices if _normalize(c.text).strip(_TEXT_TRIM).casefold() == body
    ]
    return matches[0] if len(matches) == 1 else None


def _format_ids(ids: Sequence[str]) -> str:
    return ", ".join(ids) if ids else "nothing"


def _snippet(response: str) -> str:
    flat = _WHITESPACE_RE.sub(" ", response).strip()
    if not flat:
        return "empty response"
    return f"'{flat[:200]}…'" if len(flat) > 200 else f"'{flat}'"


def grade_mcq(record: Record, response: str) -> MCQGrade:
    """Grade a multiple-choice reply against the record's correct choice ids.

    The reply passes iff the extracted set of ids equals the correct set. A reply from which no
    id can be extracted fails with reason ``no_answer_extracted``, distinct from
    ``wrong_answer``. When no id is found but the whole reply is exactly one option's text
    ("No." for a Yes/No question), that option is taken (method ``choice_text``).

    Args:
        record: An ``mcq`` record with ``choices`` and ``correct_choice_ids``.
        response: The model's reply.

    Returns:
        The grade.

    """
    choice_ids = tuple(c.id for c in record.choices) or tuple(record.correct_choice_ids)
    extraction = extract_choice_ids(response, choice_ids)
    pats = _patterns(choice_ids)

    correct_list: list[str] = []
    for raw in record.correct_choice_ids:
        key = _normalize(raw).strip().casefold()
        canonical = pats.canon.get(key, raw) if pats else raw
        if canonical not in correct_list:
            correct_list.append(canonical)
    if pats:
        correct_list.sort(key=lambda i: pats.order.get(i, len(pats.order)))
    correct = tuple(correct_list)

    chosen, method, evidence = extraction.chosen, extraction.method, extraction.evidence
    if not chosen and (by_text := _choice_text_match(record, response)) is not None:
        chosen, method, evidence = (by_text,), "choice_text", _evidence(response, 0, len(response))

    if not chosen:
        why = (
            f"the response names several options without an explicit answer ({evidence}); "
            if method == "ambiguous"
            else ""
        )
        return MCQGrade(
            passed=False,
            score=0.0,
            chosen=(),
            correct=correct,
            reason="no_answer_extracted",
            explanation=f"no choice id could be extracted from the response: {why}"
            f"({_snippet(response)}); correct is {_format_ids(correct)}",
            method=method,
        )
    passed = set(chosen) == set(correct)
    source = f"chose {_format_ids(chosen)} (from '{evidence}')"
    return MCQGrade(
        passed=passed,
        score=1.0 if passed else 0.0,
        chosen=chosen,
        correct=correct,
        reason="correct" if passed else "wrong_answer",
        explanation=f"{source}; correct is {_format_ids(correct)}",
        method=method,
    )
