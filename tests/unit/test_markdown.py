"""The one Markdown escaping function, checked with a real CommonMark/GFM renderer.

``md_text`` must render as exactly its text: the Markdown, parsed by markdown-it-py (GFM
tables, strikethrough and linkify on), holds no link, image, raw HTML, code, emphasis or
extra table cell from data, and the rendered text gives GitHub's text filters (mentions,
issue references, autolinks) nothing to find.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from pytest_legaleval.run.console import printable
from pytest_legaleval.run.markdown import ZWSP, md_table, md_text
from pytest_legaleval.run.reasons import one_line

HOSTILE = [
    "![x](https://evil.example/pixel.png)",
    "[click](javascript:alert(1))",
    "<img src=x onerror=alert(1)>",
    "</details><script>alert(1)</script>",
    "@octocat please look",
    "fixes #12 and GH-3",
    "see https://evil.example/a?b=c and www.evil.example",
    "mail me: someone@evil.example",
    "a | b | c",
    "`code` and ```fence```",
    "line one\nline two\n\n# heading",
    "**bold** _it_ ~~gone~~ $x^2$",
    "&amp; &lt;b&gt; &#64;",
    "\\[not a link\\](x)",
    "<https://evil.example>",
    "\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\",
    "- item\n> quote\n1. one",
    "[ref]: https://evil.example",
]

FRAGMENTS = st.sampled_from(
    ["[", "]", "(", ")", "!", "<", ">", "/", "@", "#", ":", "|", "`", "*", "_", "~", "&", ";",
     "\\", "\n", " ", "www.", "http://", "https://", "x.example", "a@b.co", "details", "img",
     "script", "octocat", "12", "$", "{", "}", "=", '"', "'", "-", "+", ".", "\t", "\x1b"]
)  # fmt: skip
HOSTILE_TEXT = st.one_of(
    st.lists(FRAGMENTS, max_size=30).map("".join),
    st.sampled_from(HOSTILE),
    st.text(max_size=60),
)

GFM = MarkdownIt("gfm-like")
FORBIDDEN = {"link_open", "image", "html_inline", "html_block", "code_inline", "code_block",
             "fence", "em_open", "strong_open", "s_open", "heading_open", "blockquote_open",
             "bullet_list_open", "ordered_list_open", "hr"}  # fmt: skip
GITHUB_FINDS = re.compile(
    r"@[A-Za-z0-9]|#[0-9]|(?:https?|ftp)://|www\.|[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]"
)
"""What GitHub links in rendered text: mentions, issue references, URLs, e-mail addresses."""


def _tokens(tokens: list[Any]) -> list[Any]:
    out = []
    for token in tokens:
        out.append(token)
        out.extend(_tokens(token.children or []))
    return out


def _rendered_text(tokens: list[Any]) -> str:
    return "".join(t.content for t in _tokens(tokens) if t.type in ("text", "text_special"))


@given(HOSTILE_TEXT)
def test_escaped_text_renders_as_exactly_its_text(value: str) -> None:
    escaped = md_text(value, limit=10_000)
    tokens = GFM.parse(f"before {escaped} after")
    types = {t.type for t in _tokens(tokens)}
    assert not types & FORBIDDEN, (value, escaped, types & FORBIDDEN)
    text = _rendered_text(tokens)
    expected = f"before {printable(one_line(value, 10_000))} after"
    assert text.replace(ZWSP, "") == expected.replace(ZWSP, "")
    assert GITHUB_FINDS.search(text) is None, (value, text)


@given(st.lists(HOSTILE_TEXT, min_size=3, max_size=3))
def test_a_table_row_of_data_keeps_its_cells(cells: list[str]) -> None:
    lines = md_table(["a", "b", "c"], [[md_text(c) for c in cells]])
    document = "\n".join(["<details><summary>items</summary>", "", *lines, "", "</details>"])
    tokens = GFM.parse(document)
    all_tokens = _tokens(tokens)
    assert [t.type for t in all_tokens].count("td_open") == 3
    html = [t.content for t in all_tokens if t.type in ("html_block", "html_inline")]
    assert [h.strip() for h in html] == ["<details><summary>items</summary>", "</details>"]
    assert not {t.type for t in all_tokens} & (FORBIDDEN - {"html_block"})
    cell_texts = []
    inside = False
    for token in tokens:
        if token.type == "td_open":
            inside = True
        elif token.type == "inline" and inside:
            cell_texts.append(_rendered_text([token]).replace(ZWSP, ""))
            inside = False
    assert cell_texts == [printable(one_line(c)).replace(ZWSP, "") for c in cells]


def test_known_attacks_are_plain_text() -> None:
    for value in HOSTILE:
        html = GFM.render(md_text(value))
        assert "<a " not in html and "<img" not in html and "<script" not in html, value
        assert "<code>" not in html and "</details>" not in html, value


def test_cells_are_cut() -> None:
    assert md_text("x" * 500, limit=10) == "x" * 9 + "…"


def test_compare_markdown_escapes_every_string_from_the_runs(tmp_path: Path) -> None:
    """``legaleval compare --format markdown``: the PR comment holds no markup from data."""
    from pytest_legaleval.metrics._compare import comparison
    from pytest_legaleval.metrics._gates import METRICS
    from pytest_legaleval.metrics._runfiles import load_run
    from pytest_legaleval.run.compare_render import render

    from .test_compare import row, write_run

    ids = [f"{i}{text}" for i, text in enumerate(HOSTILE)]
    dataset = "ds</details>@octocat"
    a = write_run(tmp_path, "run_a![i](https://evil.example)",
                  [row(i, True, dataset=dataset) for i in ids])  # fmt: skip
    b = write_run(tmp_path, "b", [row(i, False, dataset=dataset) for i in ids])
    data = comparison(load_run(a), load_run(b))
    md = render(data, "markdown")
    tokens = _tokens(GFM.parse(md))
    kinds = {t.type for t in tokens}
    ours = {"html_block", "code_inline", "bullet_list_open", "heading_open"}
    assert not kinds & (FORBIDDEN - ours), kinds
    assert [t.type for t in tokens].count("heading_open") == 1  # the title
    blocks = {t.content.strip() for t in tokens if t.type == "html_block"}
    assert blocks == {"<details><summary>pass_to_fail (18)</summary>", "</details>"}
    assert {t.content for t in tokens if t.type == "code_inline"} <= set(METRICS)
    text = _rendered_text(tokens)
    assert GITHUB_FINDS.search(text) is None
    assert "evil.example" in text and "octocat" in text  # shown, as text
    # the text format: no control byte either
    plain = render(data, "text")
    assert "\x1b" not in plain and "\\x1b]8;;" in plain
