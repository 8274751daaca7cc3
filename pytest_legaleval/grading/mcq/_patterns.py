"""The regular expressions of the MCQ grammar that do not depend on a rule.

Id-independent pieces (token boundaries, decoration, list separators, Roman numerals) and
the guards shared by the rules (negation, condition, hedging, naming), then
:func:`_patterns`: everything compiled for one set of choice ids, cached, so that a
dataset's few id sets compile once.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

# A token boundary that treats "_" as punctuation, so "__B__" (markdown bold) still isolates B.
_NOT_AFTER_ALNUM = r"(?<![^\W_])"
_NOT_BEFORE_ALNUM = r"(?![^\W_])"
# Opening decoration before an id: markdown emphasis, quotes, brackets (same line only).
# Quantifiers here are possessive (``*+``): decoration never has to be given back, and
# backtracking through long runs of spaces or asterisks would be quadratic or worse.
_OPEN_CHARS = r"[ \t*_\"'`“”„‚‘’«»\[(]"
_OPEN = _OPEN_CHARS + "*+"
# Closing decoration after an id.
_CLOSE = r"[*_\"'`“”‘’»\])]*+"
# A noun that may introduce an id inside a list: "option B", "Antwort C", "letter (D)".
_NOUN_WORDS = (
    r"(?:options?|optionen|choices?|letters?|alternatives?|alternativen?|answers?"
    r"|antwort(?:en)?|antwortmöglichkeit(?:en)?|buchstaben?|lösung(?:en)?|varianten?|réponses?)"
)
_NOUN = (
    rf"(?:{_NOT_AFTER_ALNUM}{_NOUN_WORDS}(?:[ \t]+(?:no\.?|nr\.?|number|nummer))?"
    r"[ \t]*+[:#]?[ \t]*+)"
)
# Separators of an id list: "A, C", "A and C", "A und C", "A & C", "A/C", "A, B, and C".
_SEP = (
    r"[ \t]*+(?:[,;/&+]\s*+|(?<![^\W_])(?:and|und|et|sowie|as[ \t]+well[ \t]+as)(?![^\W_]))"
    r"(?:[ \t]*+(?:and|und|et)(?![^\W_]))?[ \t]*+"
)
_SEP_ONLY_RE = re.compile(rf"\s*(?:{_SEP})?\s*", re.IGNORECASE)
_CLOSE_RE = re.compile(_CLOSE)
_ROMAN = r"(?:i{1,3}|iv|vi{0,3}|ix|xi{0,3})"
_ROMAN_TOKEN_RE = re.compile(
    rf"(?=[ivx]){_NOT_AFTER_ALNUM}{_ROMAN}{_NOT_BEFORE_ALNUM}", re.IGNORECASE
)
_ROMAN_AFTER_RE = re.compile(rf"{_SEP}[(\[]?(?P<r>{_ROMAN}){_NOT_BEFORE_ALNUM}", re.IGNORECASE)
_ROMAN_BEFORE_RE = re.compile(
    rf"{_NOT_AFTER_ALNUM}(?P<r>{_ROMAN})[)\]]?{_SEP}[ \t*_\"'(\[]*\Z", re.IGNORECASE
)
# Ids that are also everyday words: the article "A"/"a" and the pronoun "I".
_WORDLIKE_IDS = frozenset({"a", "i"})
# Ids that double as Roman numerals in LEXam statement lists ("i", "v", "x").
_ROMAN_LETTER_IDS = frozenset({"i", "v", "x"})
# Words that may follow a word-like id without making it a word: "A is correct", "I and K".
_ID_FOLLOWERS = frozenset(
    {
        "is", "are", "and", "und", "ist", "sind", "because", "since", "as", "weil", "da",
        "denn", "est", "et", "car", "only", "nur", "too", "auch", "both", "beide", "seems",
        "appears", "scheint", "erscheint",
    }
)  # fmt: skip
_FOLLOWING_WORD_RE = re.compile(r"[ \t]+([^\W\d_]+)")
_NEGATION_AFTER_RE = re.compile(
    r"[ \t]*+(?:(?:is|are|ist|sind|est|was|wäre|seems|scheint)[ \t]+)?"
    r"(?:not|nicht|falsch|wrong|incorrect|false|unzutreffend|unrichtig|inkorrekt|faux|fausse"
    r"|ausgeschlossen)(?![^\W_])",
    re.IGNORECASE,
)
_CONDITIONAL_AFTER_RE = re.compile(
    r"[ \t]+(?:if|when|unless|wenn|falls|sofern|provided|assuming)(?![^\W_])", re.IGNORECASE
)
# A statement in a hedged or conditional clause is not a commitment: "if the answer is C, ...",
# "one could argue that the answer is C". A comma or sentence end closes the clause.
_HEDGED_BEFORE_RE = re.compile(
    r"(?<![^\W_])(?:if|whether|unless|might|could|may|perhaps|maybe|possibly|ob|wenn|falls"
    r"|vielleicht|eventuell|möglicherweise)(?![^\W_])[^.!?\n;:,]*\Z",
    re.IGNORECASE,
)
_LOOSE_FOLLOW_RE = re.compile(rf"{_CLOSE}[ \t]*(?:[.!]|\n|\Z)")
_LOOSE_NEGATION_RE = re.compile(
    r"(?<![^\W_])(?:not|nor|neither|never|nicht|weder|noch|kein\w*|nie|pas|or|oder|ou|bzw"
    r"|either|entweder)(?![^\W_])",
    re.IGNORECASE,
)
# Words after which a capital letter names a party, a provision or a class, not an option.
_NAMING_BEFORE_RE = re.compile(
    r"(?<![^\W_])(?:party|partei|person|section|article|art\.?|§|abs\.?|lit\.?|para\.?|mr\.?"
    r"|mrs\.?|ms\.?|herr|frau|company|firma|gesellschaft|class|klasse|type|typ|plan|annex"
    r"|anhang|appendix|schedule|exhibit|vitamin|grade|note)[ \t]*\Z",
    re.IGNORECASE,
)
# Predicates after an id list ("B is correct") start only where a run of blanks starts:
# matching from inside a long run would be quadratic.
_PRED_START = r"(?<![ \t])[ \t]++"
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))
_WHITESPACE_RE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class _Patterns:
    """Everything compiled for one set of choice ids (cached: LEXam has three id sets)."""

    canon: Mapping[str, str]
    """Normalised, case-folded id -> the id as spelled by the caller."""
    order: Mapping[str, int]
    """Caller's id -> its position in the choice order."""
    id_re: re.Pattern[str]
    list_re: re.Pattern[str]
    hedge_re: re.Pattern[str]
    value_full_re: re.Pattern[str]
    value_label_re: re.Pattern[str]
    id_end_re: re.Pattern[str]
    tail_list_re: re.Pattern[str]
    noun_tail_list_re: re.Pattern[str]
    option_re: re.Pattern[str]
    paren_re: re.Pattern[str]
    label_re: re.Pattern[str]
    leading_re: re.Pattern[str]
    walk_re: re.Pattern[str]


def _normalize(text: str) -> str:
    # NFKC folds full-width letters and colons ("Ａｎｔｗｏｒｔ：Ｂ") into ASCII.
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    return text.translate(_ZERO_WIDTH)


@functools.lru_cache(maxsize=256)
def _patterns(ids: tuple[str, ...]) -> _Patterns | None:
    canon: dict[str, str] = {}
    order: dict[str, int] = {}
    for raw in ids:
        key = _normalize(raw).strip().casefold()
        if key and key not in canon:
            canon[key] = raw
            order[raw] = len(order)
    if not canon:
        return None
    # Longest first, so "A1" is not read as "A" followed by junk.
    if all(len(k) == 1 for k in canon):
        # One-letter ids (the usual case): a character class compiles and matches faster.
        alternation = "[" + "".join(re.escape(k) for k in sorted(canon)) + "]"
    else:
        alternation = "|".join(re.escape(k) for k in sorted(canon, key=len, reverse=True))
    ident = (
        rf"{_NOT_AFTER_ALNUM}(?<![^\W_][-'’.])(?:{alternation}){_NOT_BEFORE_ALNUM}"
        r"(?![-'’.][^\W_])"
    )
    item = rf"{_OPEN}(?:{_NOUN}{_OPEN})?{ident}{_CLOSE}"
    # Atomic: once a list is read it is never re-split. Without it, the spaces a separator and
    # the next item's decoration could share make a failing match backtrack exponentially
    # on a long "A and B and C ..." run.
    # The item count is capped so that scanning a huge "A and B and C ..." run stays linear.
    cap = min(len(canon) + 4, 64)
    id_list = rf"(?P<list>(?>{item}(?:{_SEP}{item}){{0,{cap}}}))"
    # Patterns searched at every position start where a decoration run starts, not inside it.
    scan_start = rf"(?<!{_OPEN_CHARS})"
    flags = re.IGNORECASE
    return _Patterns(
        canon=canon,
        order=order,
        id_re=re.compile(ident, flags),
        list_re=re.compile(rf"\s*+{id_list}", flags),
        hedge_re=re.compile(
            rf"[ \t]*+,?[ \t]*+(?:or|oder|ou|bzw\.?|beziehungsweise)[ \t]+{item}", flags
        ),
        value_full_re=re.compile(rf"\s*+{id_list}[\s.!*_\"'`)\]]*", flags),
        value_label_re=re.compile(
            rf"[\s*_\"'`(\[]*(?:{_NOUN})?[\s*_\"'`(\[]*(?P<list>{ident})[*_\"'`]*[ \t]*"
            r"(?:[)\]:]|\.(?:\s|\Z)|[ \t][-–—](?:\s|\Z))",
            flags,
        ),
        id_end_re=re.compile(rf"{ident}{_CLOSE}\Z", flags),
        tail_list_re=re.compile(rf"{scan_start}{id_list}\Z", flags),
        noun_tail_list_re=re.compile(
            r"(?<![^\W_])(?:options?|answers?|choices?|antwort(?:en)?|alternatives?|lösung(?:en)?"
            rf"|varianten?)[ \t]+{id_list}\Z",
            flags,
        ),
        option_re=re.compile(
            rf"(?=[abclov]){_NOT_AFTER_ALNUM}(?:options?|optionen|choices?|alternatives?|alternativen?"
            r"|antwort(?:en)?|answers?|buchstaben?|letters?|varianten?)"
            rf"(?:[ \t]+(?:no\.?|nr\.?))?[ \t]*+{id_list}",
            flags,
        ),
        paren_re=re.compile(rf"{_NOT_AFTER_ALNUM}\([ \t]*(?P<list>{ident})[ \t]*\)", flags),
        # "A:" is left out: "Q: ... / A: ..." transcripts (LegalBench prompts) use it.
        label_re=re.compile(
            r"^[ \t>*#-]*+(?:\*\*|__)?[ \t]*+[(\[]?"
            rf"(?P<list>{ident})(?:[)\]]|[ \t]*\.(?=\s|\Z)|[ \t]+[-–—][ \t])",
            flags | re.MULTILINE,
        ),
        leading_re=re.compile(
            # "B, because ..." but not "A, the buyer, sold ..." (a party, not an option).
            rf"[\s>*#-]*+{id_list}[ \t]*+(?:\n|\Z|[-–—][ \t]"
            r"|,?[ \t]*+(?:because|since|as|given|weil|da|denn|car)(?![^\W_]))",
            flags,
        ),
        # An option label where a line or a sentence starts: "A. …", "B) …", "C: …",
        # "D – …", also inline ("A. wrong. B. right."). See _rule_walkthrough.
        walk_re=re.compile(
            r"(?:^[ \t>#-]*+(?:\*[ \t]++)?|(?<=[.!?;:,])[ \t]++)(?:\*\*|__)?[(\[]?"
            rf"(?P<list>{ident})(?:[)\]](?:\*\*|__)?(?=[ \t:.,\n]|\Z)"
            r"|(?:\*\*|__)?[ \t]*+[.:](?=[ \t\n]|\Z)|[ \t]++[-–—][ \t])",
            flags | re.MULTILINE,
        ),
    )
