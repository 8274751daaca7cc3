"""The cheap repeated-key test is exact: hypothesis writes JSON text with and without repeats.

The text is written by hand, not by ``json.dumps``, so it can repeat keys, escape a colon as
``\\u003a``/``\\u003A`` (the one way to hide a colon from a raw count), escape quotes and
backslashes, and put blanks around separators.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_legaleval.validation.checks import canonicalize
from pytest_legaleval.validation.duplicates import duplicate_key_issues, find_duplicate_keys

SETTINGS = settings(max_examples=300, deadline=None)


@dataclass(frozen=True)
class Text:
    """JSON text and whether some object in it repeats a key."""

    text: str
    repeats: bool


blanks = st.sampled_from(["", "", " ", "\t", "\n ", "  "])


@st.composite
def strings(draw: st.DrawFn, alphabet: str = 'ab:\\"é') -> tuple[str, str]:
    """``(decoded, encoded)`` of a short string, colons sometimes escaped."""
    chars = draw(st.lists(st.sampled_from(list(alphabet)), max_size=5))
    out = []
    for char in chars:
        if char == ":":
            out.append(draw(st.sampled_from([":", ":", "\\u003a", "\\u003A"])))
        elif char in '"\\':
            out.append("\\" + char)
        elif char == "é":
            out.append(draw(st.sampled_from(["é", "\\u00e9"])))
        else:
            out.append(char)
    return "".join(chars), '"' + "".join(out) + '"'


def values(depth: int) -> st.SearchStrategy[Text]:
    scalars = st.one_of(
        st.sampled_from(["1", "-2.5e3", "true", "false", "null"]).map(lambda t: Text(t, False)),
        strings().map(lambda s: Text(s[1], False)),
    )
    if depth == 0:
        return scalars
    return st.one_of(scalars, arrays(depth - 1), objects(depth - 1))


@st.composite
def arrays(draw: st.DrawFn, depth: int) -> Text:
    items = draw(st.lists(values(depth), max_size=3))
    gap = draw(blanks)
    return Text(
        "[" + f"{gap},{gap}".join(i.text for i in items) + "]", any(i.repeats for i in items)
    )


@st.composite
def objects(draw: st.DrawFn, depth: int) -> Text:
    members = draw(st.lists(st.tuples(strings("ab:"), values(depth)), max_size=4))
    keys = [key for (key, _), _ in members]
    repeats = len(set(keys)) != len(keys) or any(v.repeats for _, v in members)
    parts = [f"{draw(blanks)}{enc}{draw(blanks)}:{draw(blanks)}{v.text}" for (_, enc), v in members]
    return Text("{" + ",".join(parts) + "}", repeats)


def _kept_repeats(text: str) -> bool:
    # A repeat inside a value that a later repeat replaced is gone from the parsed value;
    # the object that dropped it is reported, so "some repeat" is what must be exact.
    return bool(find_duplicate_keys(text))


@SETTINGS
@given(objects(3))
def test_the_cheap_test_never_misses_a_repeat_and_never_invents_one(case: Text) -> None:
    value = json.loads(case.text)
    colons = canonicalize(value).colons
    issues = duplicate_key_issues(case.text, colons)
    assert bool(issues) == case.repeats == _kept_repeats(case.text), case.text
    assert bool(duplicate_key_issues(case.text.encode(), colons)) == case.repeats
    for issue in issues:
        assert issue.code == "invalid_encoding"
