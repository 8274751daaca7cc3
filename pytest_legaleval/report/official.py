"""The official benchmark figures of a run (``metrics_summary.json``'s ``benchmarks``).

A benchmark run under its official protocol has figures its leaderboard can be compared
with — computed as the benchmark's own code computes them
(:mod:`pytest_legaleval.metrics.benchmarks`). The page shows them apart from our pass rate
and names the protocol and its version. Each benchmark's section is its registered
protocol's (:mod:`pytest_legaleval.grading.protocols`): an intro, tables and headline cards
returned as data, which this module escapes and lays out; it names no benchmark. The
figures are read as written; a run without the block shows nothing of this, and a block
no registered protocol knows is named with a pointer to the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_legaleval.grading.protocols import (
    BenchmarkProtocol,
    Cell,
    Row,
    Table,
    protocol_for_benchmark,
)
from pytest_legaleval.metrics.artifacts import METRICS_SUMMARY
from pytest_legaleval.report.fmt import card, num
from pytest_legaleval.report.page import e

__all__ = ["official_cards", "official_section"]


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _blocks(summary: Mapping[str, Any] | None) -> list[tuple[str, Mapping[str, Any]]]:
    found = _mapping((summary or {}).get("benchmarks"))
    return [(str(name), block) for name, block in found.items() if isinstance(block, Mapping)]


def _per_model(block: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Each model's figures; a block without ``models`` is one unnamed model's."""
    models = _mapping(block.get("models"))
    found = [(str(m), figures) for m, figures in models.items() if isinstance(figures, Mapping)]
    return found or [("", block)]


def _protocol(block: Mapping[str, Any]) -> str:
    """``name vVERSION`` of the block's protocol."""
    name, version = block.get("protocol"), block.get("protocol_version")
    shown = str(name) if name is not None else "an unnamed protocol"
    return f"{shown} v{version}" if version is not None else shown


def _protocol_line(title: str, block: Mapping[str, Any]) -> str:
    upstream = _mapping(block.get("upstream"))
    commit = upstream.get("commit")
    source = (
        f", as <code>{e(upstream.get('repo'))}</code> at commit "
        f"<code>{e(str(commit)[:12])}</code> scores it"
        if upstream.get("repo")
        else ""
    )
    return (
        f'<p class="protocol" data-protocol="{e(block.get("protocol"))}">Official metric: '
        f"{e(title)} scored by the protocol <code>{e(block.get('protocol'))}"
        f"</code> version <b>{e(block.get('protocol_version'))}</b>{source}.</p>"
    )


def _epochs_note(models: list[tuple[str, Mapping[str, Any]]]) -> str:
    epochs = {figures.get("epochs") for _, figures in models} - {None}
    if not epochs:
        return ""
    shown = ", ".join(sorted(str(k) for k in epochs))
    return f'<p class="hint">Each figure is the mean of its value in each of {e(shown)} epochs.</p>'


def _others(title: str, block: Mapping[str, Any]) -> str:
    others = {str(k): v for k, v in _mapping(block.get("other_protocols")).items()}
    counted = [(p, v) for p, v in sorted(others.items()) if isinstance(v, int) and v > 0]
    if not counted:
        return ""
    said = ", ".join(f"{num(v)} under <code>{e(p)}</code>" for p, v in counted)
    return (
        f'<p class="hint other-protocols">Items of {e(title)} graded under '
        f"another protocol are in none of these figures: {said}.</p>"
    )


def _attrs(pairs: tuple[tuple[str, str], ...]) -> str:
    return "".join(f' data-{e(k)}="{e(v)}"' for k, v in pairs)


def _code(text: str) -> str:
    """``text`` escaped, its backquoted spans as ``<code>``."""
    parts = text.split("`")
    return "".join(f"<code>{e(p)}</code>" if i % 2 else e(p) for i, p in enumerate(parts))


def _cell(cell: Cell) -> str:
    tag = "th" if cell.header else "td"
    kind = cell.kind
    cls = "" if not kind else f" class={kind}" if " " not in kind else f' class="{e(kind)}"'
    title = f' title="{e(cell.title)}"' if cell.title else ""
    span = f' colspan="{cell.span}"' if cell.span != 1 else ""
    note = f" <span class=ci>{e(cell.note)}</span>" if cell.note else ""
    return f"<{tag}{cls}{span}{title}{_attrs(cell.data)}>{e(cell.text)}{note}</{tag}>"


def _row(row: Row) -> str:
    kind = f" class={e(row.kind)}" if row.kind else ""
    return f"<tr{_attrs(row.data)}{kind}>{''.join(_cell(c) for c in row.cells)}</tr>"


def _table(table: Table) -> str:
    heading = f"<h4>{e(table.heading)}</h4>" if table.heading else ""
    body = (
        f'<table class="official" id="{e(table.id)}"><thead>'
        f"{''.join(_row(r) for r in table.head)}</thead>"
        f"<tbody>{''.join(_row(r) for r in table.rows)}</tbody></table>"
    )
    if table.scroll:
        body = f'<div class="scroll">{body}</div>'
    after = f'<p class="hint">{e(table.after)}</p>' if table.after else ""
    return f"{heading}{body}{after}"


def _benchmark(protocol: BenchmarkProtocol, name: str, block: Mapping[str, Any]) -> str:
    models = _per_model(block)
    intro = protocol.report_intro()
    shown = f'<p class="hint">{_code(intro)}</p>' if intro else ""
    return (
        f'<div class="benchmark" data-benchmark="{e(name)}"><h3>{e(protocol.title)}</h3>'
        f"{_protocol_line(protocol.title, block)}"
        f"{shown}"
        f"{_epochs_note(models)}"
        f"{''.join(_table(t) for t in protocol.report_tables(models))}"
        f"{_others(protocol.title, block)}</div>"
    )


def official_section(summary: Mapping[str, Any] | None) -> str:
    """The section of the official figures (empty when the run has none)."""
    parts = []
    for name, block in _blocks(summary):
        protocol = protocol_for_benchmark(name)
        if protocol is not None:
            parts.append(_benchmark(protocol, name, block))
        else:
            parts.append(
                f'<p class="hint" data-benchmark="{e(name)}">{METRICS_SUMMARY} has figures '
                f"of a benchmark this report does not know, <code>{e(name)}</code> (protocol "
                f"<code>{e(_protocol(block))}</code>); they are in the file.</p>"
            )
    if not parts:
        return ""
    return (
        '<section id="official"><h2>official benchmark figures</h2><p class="hint">'
        "Scored by each benchmark's official protocol, as its own code scores the same "
        "answers: these are the figures its leaderboard reports, and they differ from our "
        "pass rate above by design (a mean over tasks of each task's metric, not a share of "
        f"items). From {METRICS_SUMMARY}.</p>{''.join(parts)}</section>"
    )


def official_cards(summary: Mapping[str, Any] | None) -> list[str]:
    """Headline cards beside the pass rate, for a run of one model (several: the table)."""
    cards = []
    for name, block in _blocks(summary):
        models = _per_model(block)
        protocol = protocol_for_benchmark(name)
        if len(models) != 1 or protocol is None:
            continue
        for found in protocol.cards(models[0][1], _protocol(block)):
            cards.append(card(found.label, e(found.value), found.path, e(found.note), found.help))
    return cards
