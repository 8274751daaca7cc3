"""Lexical overlap with reference answers: normalized exact match and token F1.

Extra numbers next to the judge's score for every reference record; they never decide a
pass. Normalization: Unicode NFKC, case folding, punctuation removed, English articles
dropped, whitespace collapsed. Against several references the best match counts.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

__all__ = ["best_exact_match", "best_token_f1", "normalize_answer", "token_f1"]

_ARTICLES = frozenset({"a", "an", "the"})
_WORD = re.compile(r"\w+", re.UNICODE)


def normalize_answer(text: str) -> list[str]:
    """Tokens of ``text`` after normalization (see the module docstring)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return [token for token in _WORD.findall(folded) if token not in _ARTICLES]


def token_f1(prediction: str, reference: str) -> float:
    """Harmonic mean of token precision and recall (multiset overlap); 1.0 if both empty."""
    pred, ref = normalize_answer(prediction), normalize_answer(reference)
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def best_exact_match(prediction: str, references: Sequence[str]) -> float:
    """1.0 when the normalized prediction equals some normalized reference, else 0.0."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(ref) for ref in references))


def best_token_f1(prediction: str, references: Sequence[str]) -> float:
    """The highest token F1 over the references (0.0 without references)."""
    return max((token_f1(prediction, ref) for ref in references), default=0.0)
