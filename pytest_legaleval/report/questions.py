"""The records' texts as escaped HTML: the question, context, turns, choices, references.

Each record the page shows gets one hidden element, ``<div class="q" id="q12">``, that the
item view copies when an item of that record opens. The texts are in the markup as escaped
text, not inside the page's JSON: the page stays searchable (the search box reads them) and
testable, and each record's texts are written once however many models answered it.
Texts longer than the preview length are cut; ``data-n`` keeps their full length.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from pytest_legaleval.report.inputs import RecordTexts
from pytest_legaleval.report.texts import cut

__all__ = ["record_markup", "record_structure"]


def _e(value: str) -> str:
    return escape(value, quote=True)


def _text(tag: str, value: str, cap: int, attrs: str = "") -> str:
    full = f' data-n="{len(value)}"' if len(value) > cap else ""
    return f"<{tag}{attrs}{full}>{_e(cut(value, cap))}</{tag}>"


def _list(tag: str, cls: str, items: Sequence[str]) -> str:
    return f'<{tag} class="{cls}">{"".join(items)}</{tag}>' if items else ""


def record_markup(texts: RecordTexts, element_id: str, cap: int, rubric: Sequence[int] = ()) -> str:
    """The hidden element of one record, every text cut to ``cap`` characters.

    ``rubric`` holds the indexes of the record's rubric criteria in the page's criteria
    table (written as ``data-rubric``; the item view shows them when the item has no
    verdict per criterion).
    """
    gold = set(texts.gold)
    attrs = f' data-task="{_e(texts.task_type)}"'
    if rubric:
        attrs += f' data-rubric="{" ".join(str(i) for i in rubric)}"'
    parts = [f'<div class="q" id="{_e(element_id)}"{attrs}>']
    parts.append(_text("p", texts.prompt, cap, ' class="q-prompt"'))
    if texts.context:
        parts.append(_text("div", texts.context, cap, ' class="q-context"'))
    parts.append(
        _list("ol", "q-messages", [
            _text("li", content, cap, f' data-role="{_e(role)}"')
            for role, content in texts.messages
        ])
    )  # fmt: skip
    parts.append(
        _list("ol", "q-choices", [
            _text("li", choice, cap,
                  f' data-id="{_e(cid)}"' + (' data-gold="1"' if cid in gold else ""))
            for cid, choice in texts.choices
        ])
    )  # fmt: skip
    parts.append(_list("ol", "q-references", [_text("li", ref, cap) for ref in texts.references]))
    parts.append(_list("ul", "q-criteria", [_text("li", c, cap) for c in texts.criteria]))
    parts.append(
        _list("ul", "q-attachments", [f"<li>{_e(cut(a, 200))}</li>" for a in texts.attachments])
    )
    parts.append("</div>")
    return "".join(parts)


def record_structure(texts: RecordTexts) -> int:
    """Bytes of a record's element besides its free texts (at most, about)."""
    fake_rubric = [99_999] * len(texts.rubric)
    return len(record_markup(texts, "q999999", 0, fake_rubric).encode("utf-8")) + 8 * (
        2 + len(texts.messages) + len(texts.choices) + len(texts.references)
    )
