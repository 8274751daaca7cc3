"""The Porter stemmer as LegalBench's ``normalize(text, stem=True)`` applies it.

LegalBench's ``evaluation.py`` stems with NLTK's ``PorterStemmer()`` in its default mode
(``NLTK_EXTENSIONS``) and calls ``stem`` on the *whole* normalized string, not word by word:
``"hawkers and peddlers"`` loses the suffix of its last word only. This module is our own
implementation of that stemmer's behaviour — Porter's 1980 algorithm (Program 14.3,
pp. 130-137) with Martin Porter's published refinements and NLTK's extensions — so that
the official figure needs no NLTK. The tests compare it with NLTK on many strings.

The NLTK extensions, beyond the paper: a dictionary of irregular forms (``dying`` → ``die``);
strings of at most two characters are not stemmed; ``ies``/``ied`` on a four-letter word
become ``ie``; ``ied`` otherwise ``i``; a two-letter vowel-consonant stem counts as *o*
(ends cvc); ``y`` → ``i`` only after a consonant that is not the stem's only letter;
``alli`` → ``al`` is tried first and step 2 run again; ``bli`` → ``ble``, ``fulli`` →
``ful`` and ``logi`` → ``log`` (the ``l`` kept with the stem) in step 2.

Rule lists follow Porter's convention: the first rule whose suffix matches decides — if
its condition fails the word is left as it is, later rules are not tried.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = ["porter_stem"]

_VOWELS = frozenset("aeiou")
_IRREGULAR = {
    "sky": "sky", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie",
    "news": "news", "innings": "inning", "inning": "inning", "outings": "outing",
    "outing": "outing", "cannings": "canning", "canning": "canning", "howe": "howe",
    "proceed": "proceed", "exceed": "exceed", "succeed": "succeed",
}  # fmt: skip

Condition = Callable[[str], bool] | None
Rule = tuple[str, str, Condition]


def _consonant_flags(word: str) -> list[bool]:
    """Per character: a consonant? ``y`` is one at the start or after a vowel."""
    flags: list[bool] = []
    for i, char in enumerate(word):
        if char in _VOWELS:
            flags.append(False)
        elif char == "y":
            flags.append(i == 0 or not flags[i - 1])
        else:
            flags.append(True)
    return flags


def _measure(stem: str) -> int:
    """Porter's *m*: the number of vowel-to-consonant transitions."""
    flags = _consonant_flags(stem)
    return sum(1 for i in range(1, len(flags)) if flags[i] and not flags[i - 1])


def _positive(stem: str) -> bool:
    return _measure(stem) > 0


def _above_one(stem: str) -> bool:
    return _measure(stem) > 1


def _has_vowel(stem: str) -> bool:
    return not all(_consonant_flags(stem))


def _double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _consonant_flags(word)[-1]


def _ends_cvc(word: str) -> bool:
    """Porter's *o*, with NLTK's two-letter vowel-consonant case."""
    flags = _consonant_flags(word)
    if len(word) >= 3 and flags[-3] and not flags[-2] and flags[-1] and word[-1] not in "wxy":
        return True
    return len(word) == 2 and not flags[0] and flags[1]


def _apply(word: str, rules: Sequence[Rule]) -> str:
    for suffix, replacement, condition in rules:
        if suffix == "*d" and _double_consonant(word):
            stem = word[:-2]
            return stem + replacement if condition is None or condition(stem) else word
        if word.endswith(suffix):
            stem = word[: -len(suffix)] if suffix else word
            return stem + replacement if condition is None or condition(stem) else word
    return word


def _step1a(word: str) -> str:
    if word.endswith("ies") and len(word) == 4:
        return word[:-3] + "ie"
    return _apply(word, (("sses", "ss", None), ("ies", "i", None), ("ss", "ss", None),
                         ("s", "", None)))  # fmt: skip


def _step1b(word: str) -> str:
    if word.endswith("ied"):
        return word[:-3] + ("ie" if len(word) == 4 else "i")
    if word.endswith("eed"):
        stem = word[:-3]
        return stem + "ee" if _measure(stem) > 0 else word
    for suffix in ("ed", "ing"):
        if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
            stem = word[: -len(suffix)]
            break
    else:
        return word
    last = stem[-1]
    return _apply(
        stem,
        (
            ("at", "ate", None),
            ("bl", "ble", None),
            ("iz", "ize", None),
            ("*d", last, lambda _: last not in "lsz"),
            ("", "e", lambda s: _measure(s) == 1 and _ends_cvc(s)),
        ),
    )


def _step1c(word: str) -> str:
    return _apply(word, (("y", "i", lambda s: len(s) > 1 and _consonant_flags(s)[-1]),))


def _step2(word: str) -> str:
    if word.endswith("alli") and _positive(word[:-4]):
        return _step2(word[:-4] + "al")
    rules: list[Rule] = [
        (suffix, replacement, _positive)
        for suffix, replacement in (
            ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"),
            ("izer", "ize"), ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"),
            ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"), ("ator", "ate"),
            ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous"),
            ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"), ("fulli", "ful"),
        )
    ]  # fmt: skip
    rules.append(("logi", "log", lambda _: _positive(word[:-3])))
    return _apply(word, rules)


def _step3(word: str) -> str:
    return _apply(
        word,
        [
            (suffix, replacement, _positive)
            for suffix, replacement in (
                ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"),
                ("ical", "ic"), ("ful", ""), ("ness", ""),
            )
        ],
    )  # fmt: skip


_STEP4 = ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent")
_STEP4_AFTER_ION = ("ou", "ism", "ate", "iti", "ous", "ive", "ize")


def _step4(word: str) -> str:
    rules: list[Rule] = [(suffix, "", _above_one) for suffix in _STEP4]
    rules.append(("ion", "", lambda s: _measure(s) > 1 and s[-1] in "st"))
    rules.extend((suffix, "", _above_one) for suffix in _STEP4_AFTER_ION)
    return _apply(word, rules)


def _step5a(word: str) -> str:
    if word.endswith("e"):
        stem = word[:-1]
        measure = _measure(stem)
        if measure > 1 or (measure == 1 and not _ends_cvc(stem)):
            return stem
    return word


def _step5b(word: str) -> str:
    return _apply(word, (("ll", "l", lambda _: _measure(word[:-1]) > 1),))


def porter_stem(word: str) -> str:
    """``nltk.stem.porter.PorterStemmer().stem(word)`` in its default mode."""
    stem = word.lower()
    if stem in _IRREGULAR:
        return _IRREGULAR[stem]
    if len(word) <= 2:
        return stem
    for step in (_step1a, _step1b, _step1c, _step2, _step3, _step4, _step5a, _step5b):
        stem = step(stem)
    return stem
