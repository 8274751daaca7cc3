"""The formatting rules, tried in order when a reply states no answer explicitly.

``bare``, ``walkthrough``, ``leading``, ``bold``, ``verdict``, ``option_mention``,
``parenthesized`` and ``label_line`` (see the package docstring); the first rule that finds
anything decides, and conflicting hits make the extraction ``ambiguous``.
"""

from __future__ import annotations

import re

from pytest_legaleval.grading.mcq._matching import (
    _accept_list,
    _Context,
    _hedged,
    _Hit,
    _list_before,
    _Rule,
    _value_ids,
)
from pytest_legaleval.grading.mcq._patterns import _PRED_START

_POSITIVE_VERDICTS = frozenset(
    {"correct", "right", "true", "richtig", "korrekt", "zutreffend", "wahr"}
)
_VERDICT_PRED_RE = re.compile(
    rf"{_PRED_START}(?:is|are|ist|sind|est)[ \t]+(?:also[ \t]+|auch[ \t]+)?"
    r"(?P<verdict>correct|right|true|richtig|korrekt|zutreffend|wahr"
    r"|(?:not|nicht)[ \t]+\w+|wrong|incorrect|false|falsch|unzutreffend|unrichtig"
    r"|inkorrekt)(?![^\W_])",
    re.IGNORECASE,
)
_BOLD_RE = re.compile(r"(?:\*\*|__)[ \t]*(?P<inner>[^*_\n]{1,200}?)[ \t]*(?:\*\*|__)")
# Words right before "(b)" that make it a citation ("§ 3 (b)", "Art. 5 lit. (a)").
_CITATION_BEFORE_RE = re.compile(
    r"(?:§|\d|(?<![^\W_])(?:art|abs|lit|para|ziff|sec|section|subsection|clause|rule|let|no"
    r"|nr|bst|paragraph|absatz|artikel|litera|buchstabe)\.?)[ \t]*\Z",
    re.IGNORECASE,
)


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
