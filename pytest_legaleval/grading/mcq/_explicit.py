"""The explicit-statement rules: every hit of every rule counts, the last one wins.

``json``, ``answer_tag``, ``boxed``, ``answer_line``, ``final_statement``, ``conclusion``
and ``postfix``, with the phrases they match (see the package docstring).
"""

from __future__ import annotations

import re

from pytest_legaleval.grading.mcq._matching import (
    _accept_list,
    _Context,
    _hedged,
    _Hit,
    _list_at,
    _list_before,
    _loose_at,
    _Rule,
    _value_ids,
)
from pytest_legaleval.grading.mcq._patterns import _NOT_AFTER_ALNUM, _NOT_BEFORE_ALNUM, _PRED_START

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
_STRICT_TAIL_RE = re.compile(
    r"[ \t]*(?:[.!;]|\n|\Z|(?:(?:is|are|ist|sind|est)[ \t]+)?(?:(?:the|die)[ \t]+)?"
    r"(?:(?:only[ \t]+)?(?:correct|right|richtig|korrekt|zutreffend|richtige|korrekte|correcte)"
    r"|answer)(?![^\W_]))",
    re.IGNORECASE,
)
# Predicates that follow an id list; the list itself is read backwards from the predicate
# (searching for "<ids> is correct" from every position of the reply would be slow).
_CORRECT_WORDS = (
    r"(?:(?:correct|right|best|true|richtige|korrekte|zutreffende|bonne)n?[ \t]+"
    r"(?:answer|option|choice|one|response|antwort|lösung|réponse)(?:s|en)?"
    r"|answer|antwort|lösung)"
)
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


_EXPLICIT_RULES: tuple[_Rule, ...] = (
    _rule_json,
    _rule_answer_tag,
    _rule_boxed,
    _rule_answer_line,
    _rule_final_statement,
    _rule_conclusion,
    _rule_postfix,
)
