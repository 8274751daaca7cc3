"""Issue 41, LOW: GitHub's autolinked references in data survive no Markdown we write.

Before: ``GH-2`` was escaped to ``GH\\-2``; GitHub strips the backslash and then links the
issue. Now a zero-width space splits ``GH-123`` and every word of 7+ hex digits (a commit
SHA) is cut into pieces of 6, as ``#123`` and ``@user`` already were: the text, rendered by
a GFM parser (markdown-it-py with linkify), reads the same and holds nothing GitHub links.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from pytest_legaleval.run.console import printable
from pytest_legaleval.run.markdown import ZWSP, md_text
from pytest_legaleval.run.reasons import one_line

GFM = MarkdownIt("gfm-like")
GITHUB_LINKS = re.compile(
    r"(?i)(?<![0-9a-z])gh-[0-9]|#[0-9]|@[a-z0-9]"
    r"|(?<![0-9a-z])[0-9a-f]{7,40}(?![0-9a-z])"
)
"""What GitHub links in rendered text: GH-123, #123, @user, a commit SHA (7-40 hex)."""


def _text(markdown: str) -> str:
    def walk(tokens: list[Any]) -> list[Any]:
        return [x for t in tokens for x in (t, *walk(t.children or []))]

    tokens = walk(GFM.parse(markdown))
    assert not {t.type for t in tokens} & {"link_open", "code_inline", "html_inline"}
    return "".join(t.content for t in tokens if t.type in ("text", "text_special"))


@pytest.mark.parametrize(
    "value",
    [
        "GH-2", "gh-123 regressed", "fixes GH-3, #4 and @octocat",
        "fixed in a5c3785ed8d6a35868bc169f07e40e889087fd2e", "commit a5c3785",
        "owner/repo@a5c3785ed8 and owner/repo#12", "deadbeefcafe",
    ],
)  # fmt: skip
def test_github_references_in_data_are_not_linked(value: str) -> None:
    text = _text(f"| {md_text(value)} |")
    assert GITHUB_LINKS.search(text) is None, text
    assert text.replace(ZWSP, "").strip(" |") == value  # it reads the same


@given(
    st.lists(
        st.sampled_from(["GH", "gh", "-", "#", "@", "1", "2", "a5c3785e", "f", "0", " ", "x"]),
        max_size=20,
    ).map("".join)
)
def test_any_mix_of_reference_pieces_renders_as_its_text_unlinked(value: str) -> None:
    text = _text(f"before {md_text(value, limit=10_000)} after")
    assert text.replace(ZWSP, "") == f"before {printable(one_line(value, 10_000))} after"
    assert GITHUB_LINKS.search(text) is None, (value, text)
