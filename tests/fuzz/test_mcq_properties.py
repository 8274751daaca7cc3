"""Hypothesis properties of the multiple-choice extractor.

The prose around a rendered answer is drawn from a "safe" alphabet: words of two or more
lowercase letters (so no word is a standalone one-letter id), without Roman numerals such as
"ii" or "iv" (those switch the extractor into LEXam statement mode, where a formatted "i" is a
statement number), joined by spaces and sentence punctuation but never ``:``, ``*``, quotes or
brackets. The rendered answer is separated from the prose after it by a sentence end or a
newline: "Answer: A contract ..." is the article trap the extractor must not fall into.
"""

from __future__ import annotations

import re
import string
import unicodedata

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pytest_legaleval.grading.mcq import extract_choice_ids

# Each new id set compiles its patterns once (~15 ms); 100 examples keep the file well
# under 15 s.
SETTINGS = settings(max_examples=100, deadline=None)
_ROMAN = re.compile(r"(?:i{1,3}|iv|vi{0,3}|ix|xi{0,3})")

id_sets = st.lists(st.sampled_from(string.ascii_uppercase), min_size=2, max_size=16, unique=True)

words = st.text(alphabet="abcdefghijklmnopqrstuvwxyzäöüß", min_size=2, max_size=10).filter(
    lambda w: _ROMAN.fullmatch(w) is None
)
separators = st.sampled_from([" ", " ", " ", ", ", ". ", "\n", "; ", "? ", "! ", "\n\n"])


@st.composite
def prose(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(words, separators), max_size=25))
    return "".join(w + s for w, s in parts).strip()


TEMPLATES = ("answer_line", "json_list", "json_string", "statement", "bold")
JOINERS = (", ", " and ")


def render(template: str, ids: list[str], joiner: str) -> str:
    if template == "answer_line":
        return f"Answer: {joiner.join(ids)}"
    if template == "json_list":
        return '{"answer": [' + ", ".join(f'"{i}"' for i in ids) + "]}"
    if template == "json_string":
        return '{"answer": "' + joiner.join(ids) + '"}'
    if template == "statement":
        return f"The correct answer is {joiner.join(ids)}."
    assert template == "bold" and len(ids) == 1
    return f"**{ids[0]}**"


@st.composite
def rendered_replies(draw: st.DrawFn, lower: bool = False) -> tuple[str, list[str], set[str]]:
    ids = draw(id_sets)
    template = draw(st.sampled_from(TEMPLATES))
    size = 1 if template == "bold" else draw(st.integers(1, len(ids)))
    chosen = draw(st.permutations(ids))[:size]
    shown = [i.lower() for i in chosen] if lower else chosen
    body = render(template, shown, draw(st.sampled_from(JOINERS)))
    before = draw(prose())
    after = draw(prose())
    lead = draw(st.sampled_from(["\n", "\n\n", ". "])) if before else ""
    trail = draw(st.sampled_from(["\n", "\n\n", ".\n", ". "])) if after else ""
    return f"{before}{lead}{body}{trail}{after}", ids, set(chosen)


@SETTINGS
@given(rendered_replies())
def test_rendered_answer_is_extracted_exactly(case: tuple[str, list[str], set[str]]) -> None:
    text, ids, expected = case
    result = extract_choice_ids(text, ids)
    assert set(result.chosen) == expected, (text, result)
    assert result.method not in {"none", "ambiguous"}


@SETTINGS
@given(rendered_replies(lower=True))
def test_ids_match_case_insensitively(case: tuple[str, list[str], set[str]]) -> None:
    text, ids, expected = case
    result = extract_choice_ids(text, ids)
    # Returned in the record's spelling (upper case here), whatever the reply's case.
    assert set(result.chosen) == expected, (text, result)


@SETTINGS
@given(
    st.text(max_size=400),
    st.lists(st.text(max_size=3), max_size=20),
)
def test_never_raises_and_returns_a_subset(text: str, ids: list[str]) -> None:
    result = extract_choice_ids(text, ids)
    assert set(result.chosen) <= set(ids)
    assert len(set(result.chosen)) == len(result.chosen)
    positions = [ids.index(i) for i in result.chosen]
    assert positions == sorted(positions)
    assert bool(result.chosen) == (result.method not in {"none", "ambiguous"})


@SETTINGS
@given(
    st.lists(
        st.one_of(
            st.sampled_from(["Answer: ", "**", "(", ")", "{", '"answer": ', "\n", "<think>"]),
            st.text(alphabet=string.ascii_letters + " ,.:*()[]{}\"'\n", max_size=12),
        ),
        max_size=30,
    ).map("".join),
    id_sets,
)
def test_answer_like_noise_never_raises(text: str, ids: list[str]) -> None:
    result = extract_choice_ids(text, ids)
    assert set(result.chosen) <= set(ids)


@SETTINGS
@given(st.text(alphabet=st.characters(exclude_categories=["L"]), max_size=300), id_sets)
def test_text_without_letters_yields_nothing(text: str, ids: list[str]) -> None:
    # NFKC turns a few symbols into letters ("Ⓐ" -> "A"); those texts do contain letters.
    assume(not any(c.isalpha() for c in unicodedata.normalize("NFKC", text)))
    result = extract_choice_ids(text, ids)
    assert result.chosen == ()
    assert result.method == "none"
    assert result.evidence == ""


VERDICTS = ("This is correct.", "This is incorrect.", "Wrong.", "Right.", "Not applicable here.")
LABELS = ("{}. ", "{}) ", "{}: ", "{} - ", "({}) ", "**{}.** ")


@SETTINGS
@given(
    id_sets,
    st.data(),
    st.sampled_from(LABELS),
    st.sampled_from([" ", "\n", "\n\n"]),
)
def test_a_walk_through_of_the_options_never_yields_one_letter(
    ids: list[str], data: st.DataObject, label: str, joiner: str
) -> None:
    # The reply labels at least two different options in turn, each with a verdict or a
    # remark, and states no answer: whatever it endorses, one confident letter is wrong.
    walked = data.draw(st.lists(st.sampled_from(ids), min_size=2, max_size=6))
    assume(len(set(walked)) > 1)
    parts = [label.format(i) + data.draw(st.sampled_from(VERDICTS)) for i in walked]
    result = extract_choice_ids(joiner.join(parts), ids)
    assert result.chosen == () and result.method == "ambiguous", (joiner.join(parts), result)
