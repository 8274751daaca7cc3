r"""Multiple-choice answer extraction and grading.

A model's reply is free text; the grader needs the set of choice ids it committed to. The
extractor applies an ordered list of small rules to the reply, after NFKC normalisation
(full-width letters) and after dropping ``<think>``/``<reasoning>`` blocks when an answer part
follows them.

**Explicit statements** — every match of every explicit rule is collected and the one that starts
*last* in the reply wins, because models revise ("Answer: A ... wait, Answer: C"). Prose inside a
JSON object that has an answer key ("explanation": "... the answer is D ...") does not count.

1. ``json`` — ``{"answer": "B"}``, ``{"answers": ["A", "C"]}``, ``{"final_answer": "A, C"}``;
   keys ``answer(s)``, ``choice(s)``, ``final_answer``, ``correct_answer`` … in any case, also
   inside prose, code fences or escaped JSON.
2. ``answer_tag`` — ``<answer>B</answer>``.
3. ``boxed`` — ``\boxed{B}``.
4. ``answer_line`` — ``Answer: B``, ``Final answer: (C)``, ``**Answer:** D``, ``Antwort: B``,
   ``Lösung: A und C``, ``Réponse : B``, ``Correct options: A, C``, or an ``Answer`` heading
   with the id on the next line. When the text after the colon does not start with an id
   ("Answer: I think it is B."), the first id on that line that ends a sentence is taken,
   unless the line negates or hedges ("not", "or").
5. ``final_statement`` — ``The correct answer is B``, ``The answer is option B``,
   ``I choose B``, ``Die richtige Antwort lautet B``, ``Richtig ist B``,
   ``La bonne réponse est B``, ``The answer is not A but C``; not inside a hedged clause
   ("if the answer is C", "one might think the answer is C").
6. ``conclusion`` — ``Therefore, B.``, ``Daher ist B richtig`` (only when the sentence ends right
   after the ids or calls them correct, so "Hence B must pay" is not an answer).
7. ``postfix`` — ``C is the correct answer``, ``Option C is correct.``,
   ``Antwort B ist richtig.``

**Formatting** — tried only when no explicit statement exists, in this order; the first rule that
finds anything decides. When its hits name different id sets (the model formatted every option
while discussing it), the result is ``ambiguous`` and nothing is chosen — a wrong guess would be
worse than an honest "no answer":

8. ``bare`` — the whole reply is ids: ``B``, ``b``, ``(B)``, ``B.``, ``A, C``, ``Option B``.
9. ``walkthrough`` — labels of two or more different options where lines or sentences start
   ("A. This is incorrect. B. This is incorrect. C. This is correct."): a discussion of the
   options, so ``ambiguous``, never the first label.
10. ``leading`` — the reply opens with ids and goes on: ``B, because ...``, ``B – ...``.
11. ``bold`` — ``**B**``, ``__B__``, ``**(B)**``, ``**B) The contract is void**``.
12. ``verdict`` — ``B is correct.``, only if no option is called wrong anywhere in the reply
    ("A is wrong, B is wrong, C is right" is a walk-through: ``ambiguous``).
13. ``option_mention`` — ``Option B``, ``Antwort B``, ``choice (C)``.
14. ``parenthesized`` — a standalone ``(B)`` (not a citation such as ``§ 3 (b)``).
15. ``label_line`` — a line starting ``B)``, ``B.`` or ``B -`` (not ``A:``, which is the
    answer line of "Q: ... A: ..." transcripts).

Guards shared by the rules keep words out: ids only count as whole tokens (not in "U.S.A.",
"A's", "B-Plan"); ``A``/``I`` followed by a word ("Answer: A contract is ...", "Answer: I think
...") are the article or the pronoun, not ids; "A or C" (hedging), "A is wrong" (negation) and
"A if ..." (conditional) are not answers; ids next to Roman numerals of LEXam statements
("i und ii") are statement numbers, and with such numerals in the reply a formatted ``i``/``v``/
``x`` is ignored by the formatting rules.

Regexes are compiled once per choice-id set (``functools.lru_cache``); all of them run in linear
time (possessive decoration, atomic and capped id lists), so 50,000 replies grade in seconds.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pytest_legaleval.grading.text import REASONING_TAG_RE, split_reasoning
from pytest_legaleval.records import Record

__all__ = ["Extraction", "MCQGrade", "extract_choice_ids", "grade_mcq"]


@dataclass(frozen=True, slots=True)
class Extraction:
    """The choice ids found in a reply and how they were found."""

    chosen: tuple[str, ...]
    """Choice ids as spelled in the record, in the record's choice order, without duplicates;
    empty when nothing could be extracted."""
    method: str
    """The rule that matched (``json``, ``answer_line``, ``final_statement``, ``bold`` …);
    ``ambiguous`` when formatting named several different options; ``none`` when nothing
    was found."""
    evidence: str
    """The short text span that was matched (``""`` when nothing was found)."""


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


_NONE = Extraction(chosen=(), method="none", evidence="")

# --------------------------------------------------------------------------------------------
# Shared regex pieces (id-independent)
# --------------------------------------------------------------------------------------------

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
_STRICT_TAIL_RE = re.compile(
    r"[ \t]*(?:[.!;]|\n|\Z|(?:(?:is|are|ist|sind|est)[ \t]+)?(?:(?:the|die)[ \t]+)?"
    r"(?:(?:only[ \t]+)?(?:correct|right|richtig|korrekt|zutreffend|richtige|korrekte|correcte)"
    r"|answer)(?![^\W_]))",
    re.IGNORECASE,
)
# A statement in a hedged or conditional clause is not a commitment: "if the answer is C, ...",
# "one could argue that the answer is C". A comma or sentence end closes the clause.
_POSITIVE_VERDICTS = frozenset(
    {"correct", "right", "true", "richtig", "korrekt", "zutreffend", "wahr"}
)
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
# Words right before "(b)" that make it a citation ("§ 3 (b)", "Art. 5 lit. (a)").
_CITATION_BEFORE_RE = re.compile(
    r"(?:§|\d|(?<![^\W_])(?:art|abs|lit|para|ziff|sec|section|subsection|clause|rule|let|no"
    r"|nr|bst|paragraph|absatz|artikel|litera|buchstabe)\.?)[ \t]*\Z",
    re.IGNORECASE,
)

# --- explicit-statement phrases (the id list is parsed right after the match) ---------------

_JSON_KEY_RE = re.compile(
    r"\\?[\"'](?:final[ _-]?)?(?:correct[ _-]?|selected[ _-]?|chosen[ _-]?|best[ _-]?)?"
    r"(?:answers?|choices?|antwort(?:en)?|lösung(?:en)?|réponses?)"
    r"(?:[ _-]?(?:ids?|letters?|labels?|keys?))?\\?[\"'][ \t]*:[ \t]*",
    re.IGNORECASE,
)
_JSON_STRING_RE = re.compile(r"\\?(?P<q>[\"'])(?P<s>[^\n]{0,300}?)\\?(?P=q)")
_JSON_ARRAY_RE = re.compile(r"\[(?P<items>[^\[\]]{0,500})\]")
_JSON_ITEM_RE = re.compile(r"\\?(?P<q>[\"'])(?P<s>[^\n]{0,300}?)\\?(?P=q)|(?P<b>[^\s,\"'\]]+)")
_JSON_BARE_RE = re.compile(r"(?P<b>[^\s,}\]\"']{1,20})")
_TAG_RE = re.compile(r"<(?:answer|final_answer|antwort)>", re.IGNORECASE)
_BOXED_RE = re.compile(r"\\boxed\s*\{\s*(?:\\[a-z]+\s*\{\s*)?", re.IGNORECASE)
# Speed: patterns searched over whole replies start with a lookahead on the keywords' initial
# letters, which lets the regex engine skip most positions without trying every alternative.
_ANSWER_KEY_RE = re.compile(
    r"(?=[abcefgklrsvé])(?<![^\W_])"
    r"(?:answers?|antwort(?:en)?|lösung(?:en)?|réponses?|risposta|respuesta|choice|selection"
    r"|auswahl|conclusion|fazit|ergebnis|résultat|verdict"
    r"|(?:correct|right|selected|chosen|best)[ \t]+(?:options?|choices?|letters?)"
    r"|(?:richtige|korrekte|gewählte)n?[ \t]+(?:optionen?|antwortmöglichkeit(?:en)?))"
    r"(?:[ \t]*\([^()\n]{0,40}\))?[*_ \t]*(?:[:：=]|[ \t][-–—](?=[ \t]))[*_ \t]*",
    re.IGNORECASE,
)
_ANSWER_HEADING_RE = re.compile(
    r"(?:\A|\n)[ \t#>*_]*(?:final[ \t]+|finale[ \t]+)?(?:answer|antwort|lösung|réponse)"
    r"[ \t*_:]*\n",
    re.IGNORECASE,
)
_ADVERBS = (
    r"(?:[ \t]+(?:therefore|thus|hence|then|clearly|definitely|obviously|certainly|daher|somit"
    r"|also|folglich|demnach|eindeutig|nur|only|donc))*"
)
_FINAL_PHRASES = (
    # English
    r"(?:correct|right|best|final|true|proper|appropriate|accurate|valid|applicable)[ \t]+"
    r"(?:answer|option|choice|response|alternative|selection)s?[ \t]+(?:here[ \t]+)?"
    r"(?:is|are|would[ \t]+be|should[ \t]+be|must[ \t]+be|will[ \t]+be|=)",
    r"answers?[ \t]+(?:is|are|would[ \t]+be|should[ \t]+be|must[ \t]+be|will[ \t]+be)",
    r"i(?:[ \t]+would|[ \t]+will|'d|’d|'ll|’ll|[ \t]+am[ \t]+going[ \t]+to)?[ \t]+"
    r"(?:choose|chose|select|selected|pick|picked|go[ \t]+with|opt[ \t]+for|go[ \t]+for"
    r"|vote[ \t]+for|answer)",
    r"(?:i'm|i’m|i[ \t]+am)[ \t]+going[ \t]+with",
    r"my[ \t]+(?:final[ \t]+)?(?:answer|choice|selection|pick)[ \t]+(?:is|would[ \t]+be)",
    # German
    r"(?:richtige|korrekte|zutreffende|beste|finale|endgültige|gesuchte)n?[ \t]+"
    r"(?:antwort|lösung|option|auswahl|alternative|antwortmöglichkeit|variante)(?:en)?[ \t]+"
    r"(?:ist|sind|lautet|lauten|wäre|wären)",
    r"antwort(?:en)?[ \t]+(?:ist|sind|lautet|lauten)",
    r"(?:richtig|korrekt|zutreffend)[ \t]+(?:ist|sind)",
    r"ich[ \t]+(?:wähle|nehme|tippe[ \t]+auf|entscheide[ \t]+mich[ \t]+für"
    r"|würde[ \t]+mich[ \t]+für|kreuze)",
    # French
    r"(?:bonne|correcte|meilleure)[ \t]+réponse[ \t]+(?:est|sont|serait)",
    r"réponse[ \t]+(?:correcte[ \t]+)?(?:est|sont)",
    r"je[ \t]+(?:choisis|choisirais|sélectionne)",
    # "The answer is not A but C" / "Richtig ist nicht A, sondern C"
    r"(?:is|are|ist|sind)[ \t]+(?:not|nicht)[ \t]+[^\n.]{1,40}?[ \t]*,?[ \t]*(?:but|sondern)"
    r"(?:[ \t]+rather)?",
)
_FINAL_RE = re.compile(
    # Atomic: the "not" check must see the word after the spaces ("answer is not A").
    rf"(?=[abcefgijkmoprstvz]){_NOT_AFTER_ALNUM}(?:{'|'.join(_FINAL_PHRASES)})"
    rf"(?>{_ADVERBS}[ \t]*:?[ \t]*)"
    r"(?!(?:not|nicht|kein|keine|pas)(?![^\W_]))",
    re.IGNORECASE,
)
_CONCLUSION_RE = re.compile(
    rf"(?=[acdefhst]){_NOT_AFTER_ALNUM}(?:therefore|thus|hence|consequently|accordingly|so|daher|somit"
    r"|folglich|demnach|deshalb|also|donc|ergo)(?:[ \t]*,)?"
    r"(?:[ \t]+(?:the[ \t]+(?:correct[ \t]+)?answer[ \t]+is|die[ \t]+(?:richtige[ \t]+)?"
    r"antwort[ \t]+(?:ist|lautet)|ist|sind|it[ \t]+is|it's|it’s|we[ \t]+(?:choose|get|have)))?"
    r"[ \t]*:?[ \t]*",
    re.IGNORECASE,
)
# Predicates that follow an id list; the list itself is read backwards from the predicate
# (searching for "<ids> is correct" from every position of the reply would be slow).
_CORRECT_WORDS = (
    r"(?:(?:correct|right|best|true|richtige|korrekte|zutreffende|bonne)n?[ \t]+"
    r"(?:answer|option|choice|one|response|antwort|lösung|réponse)(?:s|en)?"
    r"|answer|antwort|lösung)"
)
# Each starts only where a run of blanks starts: matching from inside a long run would be
# quadratic.
_PRED_START = r"(?<![ \t])[ \t]++"
_POSTFIX_PRED_RE = re.compile(
    rf"{_PRED_START}(?:is|are|ist|sind|est|sont)[ \t]+"
    r"(?:(?:therefore|thus|hence|clearly|daher|somit|also|eindeutig|folglich|demnach"
    r"|donc)[ \t]+)?(?:(?:the|die|la)[ \t]+)?(?:only[ \t]+|einzig[ \t]+)?"
    rf"{_CORRECT_WORDS}{_NOT_BEFORE_ALNUM}"
    r"(?![ \t]+(?:only|if|when|unless|nur|wenn|falls|sofern))",
    re.IGNORECASE,
)
# "Option C is correct." needs the noun and the sentence end; see _rule_postfix.
_POSTFIX_NOUN_PRED_RE = re.compile(
    rf"{_PRED_START}(?:is|are|ist|sind)[ \t]+"
    r"(?:(?:therefore|thus|hence|clearly|daher|somit|also|eindeutig)[ \t]+)?"
    r"(?:correct|right|richtig|korrekt|zutreffend)(?=[ \t]*(?:[.!;]|\n|\Z))",
    re.IGNORECASE,
)
_VERDICT_PRED_RE = re.compile(
    rf"{_PRED_START}(?:is|are|ist|sind|est)[ \t]+(?:also[ \t]+|auch[ \t]+)?"
    r"(?P<verdict>correct|right|true|richtig|korrekt|zutreffend|wahr"
    r"|(?:not|nicht)[ \t]+\w+|wrong|incorrect|false|falsch|unzutreffend|unrichtig"
    r"|inkorrekt)(?![^\W_])",
    re.IGNORECASE,
)
_BOLD_RE = re.compile(r"(?:\*\*|__)[ \t]*(?P<inner>[^*_\n]{1,200}?)[ \t]*(?:\*\*|__)")
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))
_WHITESPACE_RE = re.compile(r"\s+")


# --------------------------------------------------------------------------------------------
# Per-id-set compiled patterns
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Matching helpers
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Hit:
    start: int
    end: int
    ids: tuple[str, ...]
    method: str


@dataclass(frozen=True, slots=True)
class _Context:
    text: str
    pats: _Patterns


def _used_as_word(text: str, end: int) -> bool:
    """Whether a word-like id ending at ``end`` reads as the article/pronoun ("A contract")."""
    follow = _FOLLOWING_WORD_RE.match(text, end)
    return follow is not None and follow.group(1).casefold() not in _ID_FOLLOWERS


def _is_roman_statement(token: str, pats: _Patterns) -> bool:
    # "ii" is never a letter id; a lone "i" is a statement only when "I" is not an id.
    return len(token) >= 2 or token.casefold() not in pats.canon


def _accept_list(ctx: _Context, start: int, end: int, method: str, hit_start: int) -> _Hit | None:
    """Validate the id list in ``text[start:end]`` and turn it into a hit (or reject it)."""
    text, pats = ctx.text, ctx.pats
    ids: list[str] = []
    first = -1
    last = end
    for token in pats.id_re.finditer(text, start, end):
        key = token.group().casefold()
        if key in _WORDLIKE_IDS and _used_as_word(text, token.end()):
            break  # "Answer: C and I think ..." keeps C, drops the pronoun
        canonical = pats.canon.get(key)
        if canonical is None:
            continue
        if first < 0:
            first = token.start()
        ids.append(canonical)
        last = token.end()
    if not ids:
        return None
    closed = _CLOSE_RE.match(text, last)
    after = closed.end() if closed else last
    if (
        _NEGATION_AFTER_RE.match(text, after)
        or _CONDITIONAL_AFTER_RE.match(text, after)
        or pats.hedge_re.match(text, after)
    ):
        return None
    roman_after = _ROMAN_AFTER_RE.match(text, after)
    if roman_after and _is_roman_statement(roman_after.group("r"), pats):
        return None
    roman_before = _ROMAN_BEFORE_RE.search(text, max(0, first - 24), first)
    if roman_before and _is_roman_statement(roman_before.group("r"), pats):
        return None
    return _Hit(start=hit_start, end=after, ids=tuple(ids), method=method)


def _list_at(ctx: _Context, pos: int, method: str, hit_start: int) -> _Hit | None:
    """Parse an id list starting at ``pos`` (leading whitespace allowed)."""
    found = ctx.pats.list_re.match(ctx.text, pos)
    if found is None:
        return None
    return _accept_list(ctx, found.start("list"), found.end("list"), method, hit_start)


def _loose_at(ctx: _Context, pos: int, method: str, hit_start: int) -> _Hit | None:
    """Take the first sentence-ending id on the keyword's line ("Answer: I think it is B.").

    Used when the text after an explicit keyword does not start with an id; a line that
    negates or hedges ("not", "or") gives nothing.
    """
    text = ctx.text
    newline = text.find("\n", pos)
    stop = min(len(text) if newline < 0 else newline, pos + 160)
    if _LOOSE_NEGATION_RE.search(text, pos, stop):
        return None
    for token in ctx.pats.id_re.finditer(text, pos, stop):
        key = token.group().casefold()
        if key in _WORDLIKE_IDS and _used_as_word(text, token.end()):
            continue
        if not _LOOSE_FOLLOW_RE.match(text, token.end()):
            continue
        if _NAMING_BEFORE_RE.search(text, max(pos, token.start() - 24), token.start()):
            continue
        return _list_at(ctx, token.start(), method, hit_start)
    return None


def _value_ids(ctx: _Context, value: str) -> tuple[str, ...]:
    """Ids in a JSON value or bold span: the whole value is ids, or it starts with a label."""
    pats = ctx.pats
    sub = _Context(value, pats)
    found = pats.value_full_re.fullmatch(value) or pats.value_label_re.match(value)
    if found is None:
        return ()
    hit = _accept_list(sub, found.start("list"), found.end("list"), "", 0)
    return hit.ids if hit else ()


# --------------------------------------------------------------------------------------------
# Explicit rules: all hits are collected, the last one in the text wins
# --------------------------------------------------------------------------------------------


def _rule_json(ctx: _Context) -> list[_Hit]:
    text = ctx.text
    hits: list[_Hit] = []
    for key in _JSON_KEY_RE.finditer(text):
        pos = key.end()
        ids: tuple[str, ...] = ()
        end = pos
        if string := _JSON_STRING_RE.match(text, pos):
            ids, end = _value_ids(ctx, string.group("s")), string.end()
        elif array := _JSON_ARRAY_RE.match(text, pos):
            collected: list[str] = []
            for item in _JSON_ITEM_RE.finditer(array.group("items")):
                collected.extend(_value_ids(ctx, item.group("s") or item.group("b") or ""))
            ids, end = tuple(collected), array.end()
        elif bare := _JSON_BARE_RE.match(text, pos):
            ids, end = _value_ids(ctx, bare.group("b")), bare.end()
        if ids:
            hits.append(_Hit(start=key.start(), end=end, ids=ids, method="json"))
    return hits


def _rule_answer_tag(ctx: _Context) -> list[_Hit]:
    hits = (_list_at(ctx, m.end(), "answer_tag", m.start()) for m in _TAG_RE.finditer(ctx.text))
    return [h for h in hits if h]


def _rule_boxed(ctx: _Context) -> list[_Hit]:
    hits = (_list_at(ctx, m.end(), "boxed", m.start()) for m in _BOXED_RE.finditer(ctx.text))
    return [h for h in hits if h]


def _rule_answer_line(ctx: _Context) -> list[_Hit]:
    hits: list[_Hit] = []
    for pattern in (_ANSWER_KEY_RE, _ANSWER_HEADING_RE):
        for m in pattern.finditer(ctx.text):
            hit = _list_at(ctx, m.end(), "answer_line", m.start()) or _loose_at(
                ctx, m.end(), "answer_line", m.start()
            )
            if hit:
                hits.append(hit)
    return hits


def _hedged(text: str, start: int) -> bool:
    return _HEDGED_BEFORE_RE.search(text, max(0, start - 48), start) is not None


def _rule_final_statement(ctx: _Context) -> list[_Hit]:
    hits: list[_Hit] = []
    for m in _FINAL_RE.finditer(ctx.text):
        if _hedged(ctx.text, m.start()):
            continue
        hit = _list_at(ctx, m.end(), "final_statement", m.start()) or _loose_at(
            ctx, m.end(), "final_statement", m.start()
        )
        if hit:
            hits.append(hit)
    return hits


def _rule_conclusion(ctx: _Context) -> list[_Hit]:
    hits: list[_Hit] = []
    for m in _CONCLUSION_RE.finditer(ctx.text):
        hit = _list_at(ctx, m.end(), "conclusion", m.start())
        # "Hence B must pay" is about party B: the sentence has to end (or call B correct).
        if hit and _STRICT_TAIL_RE.match(ctx.text, hit.end):
            hits.append(hit)
    return hits


def _list_before(ctx: _Context, end: int, tail_re: re.Pattern[str]) -> tuple[int, int, int] | None:
    """Find the id list that ends right before ``end``: (match start, list start, list end)."""
    if ctx.pats.id_end_re.search(ctx.text, max(0, end - 8), end) is None:
        return None  # cheap pre-check: no id right before the predicate
    found = tail_re.search(ctx.text, max(0, end - 160), end)
    if found is None:
        return None
    return found.start(), found.start("list"), found.end("list")


def _rule_postfix(ctx: _Context) -> list[_Hit]:
    hits: list[_Hit] = []
    pats = ctx.pats
    for pred_re, tail_re in (
        (_POSTFIX_PRED_RE, pats.tail_list_re),
        (_POSTFIX_NOUN_PRED_RE, pats.noun_tail_list_re),
    ):
        for m in pred_re.finditer(ctx.text):
            before = _list_before(ctx, m.start(), tail_re)
            if before is None:
                continue
            start, list_start, list_end = before
            hit = _accept_list(ctx, list_start, list_end, "postfix", start)
            if hit and not _hedged(ctx.text, start):
                hits.append(_Hit(hit.start, m.end(), hit.ids, hit.method))
    return hits


# --------------------------------------------------------------------------------------------
# Formatting rules: tried in order when no explicit statement exists
# --------------------------------------------------------------------------------------------


def _rule_bare(ctx: _Context) -> list[_Hit]:
    stripped = ctx.text.strip()
    if len(stripped) > 120:
        return []
    found = ctx.pats.value_full_re.fullmatch(stripped)
    if found is None:
        return []
    offset = ctx.text.find(stripped)
    hit = _accept_list(ctx, offset + found.start("list"), offset + found.end("list"), "bare", 0)
    return [hit] if hit else []


def _rule_walkthrough(ctx: _Context) -> list[_Hit]:
    """Find a reply that labels several options in turn: "A. Incorrect. B. … C. Correct.".

    Such a reply walks through the options; taking its first label (as ``leading`` or
    ``label_line`` would) turns a discussion into a confident, usually wrong, answer. With
    labels of two or more different options, every label comes back as a conflicting hit,
    so the driver reports ``ambiguous``: the same stance as for verdict walk-throughs
    (``_rule_verdict``). An explicit statement ("So the answer is C.") still decides, since
    explicit rules run first.
    """
    hits = []
    for m in ctx.pats.walk_re.finditer(ctx.text):
        canonical = ctx.pats.canon.get(m.group("list").casefold())
        if canonical is not None:
            hits.append(_Hit(m.start("list"), m.end(), (canonical,), "walkthrough"))
    return hits if len({hit.ids for hit in hits}) > 1 else []


def _rule_leading(ctx: _Context) -> list[_Hit]:
    """Find ids that open the reply and go on: "B, because ...", "A and C – both ..."."""
    found = ctx.pats.leading_re.match(ctx.text)
    if found is None:
        return []
    hit = _accept_list(ctx, found.start("list"), found.end("list"), "leading", 0)
    return [hit] if hit else []


def _rule_verdict(ctx: _Context) -> list[_Hit]:
    """Find "B is correct." — used only when no other option gets a verdict.

    A reply that goes through the options ("A is wrong, B is wrong, C is right") gets no
    answer: its negative verdicts are returned as conflicting hits, so the driver reports
    ``ambiguous``. Such walk-throughs often contradict themselves, and a wrong guess is worse
    than an honest "no answer".
    """
    positive: list[_Hit] = []
    negative: list[_Hit] = []
    for m in _VERDICT_PRED_RE.finditer(ctx.text):
        before = _list_before(ctx, m.start(), ctx.pats.tail_list_re)
        if before is None:
            continue
        start, list_start, list_end = before
        if m.group("verdict").casefold() in _POSITIVE_VERDICTS:
            hit = _accept_list(ctx, list_start, list_end, "verdict", list_start)
            if hit and not _hedged(ctx.text, start):
                positive.append(_Hit(hit.start, m.end(), hit.ids, hit.method))
        else:
            found = (
                ctx.pats.canon.get(t.group().casefold())
                for t in ctx.pats.id_re.finditer(ctx.text, list_start, list_end)
            )
            ids = tuple(i for i in found if i is not None)
            if ids:
                negative.append(_Hit(list_start, m.end(), ids, "verdict"))
    return positive + negative if positive else []


def _rule_bold(ctx: _Context) -> list[_Hit]:
    hits: list[_Hit] = []
    for m in _BOLD_RE.finditer(ctx.text):
        ids = _value_ids(ctx, m.group("inner"))
        if ids:
            hits.append(_Hit(start=m.start(), end=m.end(), ids=ids, method="bold"))
    return hits


def _rule_option_mention(ctx: _Context) -> list[_Hit]:
    hits = (
        _accept_list(ctx, m.start("list"), m.end("list"), "option_mention", m.start())
        for m in ctx.pats.option_re.finditer(ctx.text)
    )
    return [h for h in hits if h]


def _rule_parenthesized(ctx: _Context) -> list[_Hit]:
    hits: list[_Hit] = []
    text = ctx.text
    for m in ctx.pats.paren_re.finditer(text):
        if _CITATION_BEFORE_RE.search(text, max(0, m.start() - 24), m.start()):
            continue  # "§ 3 (b)", "Art. 5 lit. (a)": a provision, not an option
        hit = _accept_list(ctx, m.start("list"), m.end("list"), "parenthesized", m.start())
        if hit:
            hits.append(_Hit(hit.start, max(hit.end, m.end()), hit.ids, hit.method))
    return hits


def _rule_label_line(ctx: _Context) -> list[_Hit]:
    hits: list[_Hit] = []
    for m in ctx.pats.label_re.finditer(ctx.text):
        key = m.group("list").casefold()
        canonical = ctx.pats.canon.get(key)
        if canonical is not None:
            hits.append(_Hit(start=m.start(), end=m.end(), ids=(canonical,), method="label_line"))
    return hits


_Rule = Callable[[_Context], list[_Hit]]

_EXPLICIT_RULES: tuple[_Rule, ...] = (
    _rule_json,
    _rule_answer_tag,
    _rule_boxed,
    _rule_answer_line,
    _rule_final_statement,
    _rule_conclusion,
    _rule_postfix,
)
_FORMAT_RULES: tuple[_Rule, ...] = (
    _rule_bare,
    _rule_walkthrough,
    _rule_leading,
    _rule_bold,
    _rule_verdict,
    _rule_option_mention,
    _rule_parenthesized,
    _rule_label_line,
)


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def _strip_reasoning(text: str) -> str:
    """Drop ``<think>…</think>``-style reasoning when an answer part follows it.

    When there is nothing outside the reasoning, the reasoning is all there is: its text is
    kept (tags removed) so that an answer stated inside it can still be found.
    """
    answer, tagged = split_reasoning(text)
    if not tagged or answer.strip():
        return answer
    return REASONING_TAG_RE.sub(" ", text)


def _evidence(text: str, start: int, end: int) -> str:
    span = _WHITESPACE_RE.sub(" ", text[start:end]).strip()
    return span if len(span) <= 80 else span[:79] + "…"


def _ordered(ids: Sequence[str], pats: _Patterns) -> tuple[str, ...]:
    return tuple(sorted(set(ids), key=pats.order.__getitem__))


# Rules whose hits are bare id mentions; verdicts and labels are sentences and never merge.
_MERGEABLE = frozenset({"bold", "parenthesized", "option_mention"})


def _clusters(text: str, hits: list[_Hit]) -> list[_Hit]:
    """Merge hits separated only by list separators ("**A** and **C**") into one hit."""
    merged: list[_Hit] = []
    for hit in sorted(hits, key=lambda h: h.start):
        if merged and hit.method in _MERGEABLE and hit.start >= merged[-1].end:
            prev = merged[-1]
            gap = text[prev.end : hit.start]
            if len(gap) <= 12 and _SEP_ONLY_RE.fullmatch(gap):
                merged[-1] = _Hit(prev.start, hit.end, prev.ids + hit.ids, prev.method)
                continue
        merged.append(hit)
    return merged


_JSON_DECODER = json.JSONDecoder()


def _json_object_spans(text: str, hits: list[_Hit]) -> list[tuple[int, int]]:
    """Spans of the outermost parseable JSON objects that contain a JSON answer key."""
    spans: list[tuple[int, int]] = []
    # Bounded work: the last few answer keys, objects up to 20,000 characters, 4 levels up.
    for hit in hits[-8:]:
        pos, best = hit.start, None
        for _ in range(4):
            brace = text.rfind("{", 0, pos)
            if brace < 0:
                break
            try:
                _, length = _JSON_DECODER.raw_decode(text[brace : brace + 20_000])
            except (ValueError, RecursionError):  # deeply nested junk recurses in the decoder
                length = -1
            if brace + length > hit.start:
                best = (brace, brace + length)
            pos = brace
        if best:
            spans.append(best)
    return spans


def extract_choice_ids(text: str, choice_ids: Sequence[str]) -> Extraction:
    """Extract the choice ids a reply commits to.

    Ids are matched case-insensitively as whole tokens and returned in the caller's spelling and
    order. Explicit answer statements win over formatting, and among explicit statements the last
    one in the reply wins; see the module docstring for the ordered rules and the guards.

    Args:
        text: The model's reply.
        choice_ids: The record's choice ids (``A``, ``B`` …), in choice order.

    Returns:
        The extraction; ``chosen`` is empty (method ``none`` or ``ambiguous``) when the reply
        does not commit to an answer.

    """
    pats = _patterns(tuple(choice_ids))
    if pats is None or not text:
        return _NONE
    body = _strip_reasoning(_normalize(text))
    ctx = _Context(text=body, pats=pats)

    explicit = [hit for rule in _EXPLICIT_RULES for hit in rule(ctx)]
    json_hits = [hit for hit in explicit if hit.method == "json"]
    if json_hits:
        # Prose inside a JSON answer object ("explanation": "... the answer is D ...") is
        # commentary; the object's answer key speaks for it.
        spans = _json_object_spans(body, json_hits)
        explicit = [
            hit
            for hit in explicit
            if hit.method == "json" or not any(a <= hit.start < b for a, b in spans)
        ]
    best: _Hit | None = None
    for hit in explicit:
        if best is None or hit.start > best.start:
            best = hit
    if best is not None:
        evidence = _evidence(body, best.start, best.end)
        return Extraction(_ordered(best.ids, pats), best.method, evidence)

    roman_mode = any(_is_roman_statement(t.group(), pats) for t in _ROMAN_TOKEN_RE.finditer(body))
    for format_rule in _FORMAT_RULES:
        hits = format_rule(ctx)
        if roman_mode:
            # Next to LEXam statements "ii", "iv", a formatted "i"/"v" is a statement number.
            kept = [
                _Hit(h.start, h.end, ids, h.method)
                for h in hits
                if (ids := tuple(i for i in h.ids if i.casefold() not in _ROMAN_LETTER_IDS))
            ]
            hits = kept
        if not hits:
            continue
        clusters = _clusters(body, hits)
        if len({frozenset(c.ids) for c in clusters}) == 1:
            last = clusters[-1]
            return Extraction(
                _ordered(last.ids, pats), last.method, _evidence(body, last.start, last.end)
            )
        shown = " | ".join(_evidence(body, c.start, c.end) for c in clusters[:6])
        return Extraction((), "ambiguous", shown if len(shown) <= 120 else shown[:119] + "…")
    return _NONE


# --------------------------------------------------------------------------------------------
# Grading
# --------------------------------------------------------------------------------------------

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
