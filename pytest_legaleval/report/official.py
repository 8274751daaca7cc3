"""The official benchmark figures of a run (``metrics_summary.json``'s ``benchmarks``).

A benchmark run under its official protocol (``legalbench_official``, ``lexam_official``)
has figures its leaderboard can be compared with — computed as the benchmark's own code
computes them (:mod:`pytest_legaleval.metrics.benchmarks`). The page shows them apart from
our pass rate and names the protocol and its version: LegalBench's score is a mean over
tasks of each task's own metric, not a share of items. A task LegalBench grades by hand is
marked *needs manual evaluation*, never given a value. The figures are read as written; a
run without the block shows nothing of this.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_legaleval.report.fmt import DASH, card, finite, num
from pytest_legaleval.report.official_judged import judged_cards, judged_section
from pytest_legaleval.report.page import e

__all__ = ["MAX_TASK_ROWS", "NAMES", "official_cards", "official_section"]

NAMES = {"legalbench": "LegalBench", "lexam": "LEXam", "prbench": "PRBench", "apex": "APEX-v1"}
"""The benchmarks the page knows, by their key in ``benchmarks``."""
MAX_TASK_ROWS = 1000
"""Task × split rows shown (LegalBench has 162 tasks; a hand-edited file may have more)."""
_MANUAL = "needs manual evaluation"


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


def _protocol_line(name: str, block: Mapping[str, Any]) -> str:
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
        f"{e(NAMES.get(name, name))} scored by the protocol <code>{e(block.get('protocol'))}"
        f"</code> version <b>{e(block.get('protocol_version'))}</b>{source}.</p>"
    )


def _epochs_note(models: list[tuple[str, Mapping[str, Any]]]) -> str:
    epochs = {figures.get("epochs") for _, figures in models} - {None}
    if not epochs:
        return ""
    shown = ", ".join(sorted(str(k) for k in epochs))
    return f'<p class="hint">Each figure is the mean of its value in each of {e(shown)} epochs.</p>'


def _others(name: str, block: Mapping[str, Any]) -> str:
    others = {str(k): v for k, v in _mapping(block.get("other_protocols")).items()}
    counted = [(p, v) for p, v in sorted(others.items()) if isinstance(v, int) and v > 0]
    if not counted:
        return ""
    said = ", ".join(f"{num(v)} under <code>{e(p)}</code>" for p, v in counted)
    return (
        f'<p class="hint other-protocols">Items of {e(NAMES.get(name, name))} graded under '
        f"another protocol are in none of these figures: {said}.</p>"
    )


def _model_cell(model: str) -> str:
    return f"<td>{e(model)}</td>" if model else "<td>this run</td>"


def _value(value: Any, digits: int = 3) -> str:
    found = finite(value)
    return DASH if found is None else f"{found:.{digits}f}"


def _categories(models: list[tuple[str, Mapping[str, Any]]]) -> list[str]:
    names: list[str] = []
    for _, figures in models:
        names += [str(c) for c in _mapping(figures.get("categories")) if str(c) not in names]
    return names


def _legalbench_headline(models: list[tuple[str, Mapping[str, Any]]]) -> str:
    categories = _categories(models)
    head = (
        "<tr><th>model</th><th>score (mean over test tasks)</th><th>test tasks</th>"
        + "".join(f"<th>{e(c)}</th>" for c in categories)
        + "<th>train-only tasks (mean, apart)</th><th>manual evaluation</th>"
        '<th title="items without an official verdict">not scored</th></tr>'
    )
    rows = []
    for model, figures in models:
        cats = _mapping(figures.get("categories"))
        train = _mapping(figures.get("train_only"))
        manual = [str(t) for t in figures.get("manual") or [] if isinstance(t, str)]
        cells = "".join(
            f"<td class=num>{_value(_mapping(cats.get(c)).get('score'))} "
            f'<span class="ci">({num(_mapping(cats.get(c)).get("n_tasks"))})</span></td>'
            if c in cats
            else f"<td class=num>{DASH}</td>"
            for c in categories
        )
        rows.append(
            f'<tr data-model="{e(model)}">{_model_cell(model)}'
            f'<td class="num headline">{_value(figures.get("score"))}</td>'
            f"<td class=num>{num(figures.get('n_tasks'))}</td>{cells}"
            f"<td class=num>{_value(train.get('score'))} <span class=ci>"
            f"({num(train.get('n_tasks'))})</span></td>"
            f"<td>{e(', '.join(manual)) + ' — ' + _MANUAL if manual else DASH}</td>"
            f"<td class=num>{num(figures.get('not_scored'))}</td></tr>"
        )
    return (
        '<table class="official" id="legalbench-headline"><thead>'
        f"{head}</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _task_rows(models: list[tuple[str, Mapping[str, Any]]]) -> list[tuple[str, str]]:
    keys: set[tuple[str, str]] = set()
    for _, figures in models:
        for task, splits in _mapping(figures.get("tasks")).items():
            keys.update((str(task), str(split)) for split in _mapping(splits))
    # test first: the headline's split
    return sorted(keys, key=lambda k: (k[0], k[1] != "test", k[1]))


def _task_entry(figures: Mapping[str, Any], task: str, split: str) -> Mapping[str, Any]:
    return _mapping(_mapping(_mapping(figures.get("tasks")).get(task)).get(split))


def _legalbench_tasks(models: list[tuple[str, Mapping[str, Any]]]) -> str:
    keys = _task_rows(models)
    tasks_with_test = {task for task, split in keys if split == "test"}
    heads = "".join(f"<th>{e(m) if m else 'value'}</th>" for m, _ in models)
    rows = []
    for task, split in keys[:MAX_TASK_ROWS]:
        entries = [_task_entry(figures, task, split) for _, figures in models]
        metric = next((str(x.get("metric")) for x in entries if x.get("metric")), DASH)
        ns = {num(x.get("n")) for x in entries if x}
        manual = any(x.get("needs_manual_evaluation") or x.get("metric") == "manual"
                     for x in entries)  # fmt: skip
        if split == "train":
            where = "train (not in the headline)" if task in tasks_with_test else "train only"
        else:
            where = split
        if manual:
            values = (
                f'<td class="manual" colspan="{len(models)}" data-manual="1">{_MANUAL} '
                "(graded by hand upstream; no value)</td>"
            )
        else:
            values = "".join(
                f'<td class=num title="no item of this task and split has an official '
                f'verdict">{DASH}</td>'
                if finite(x.get("value")) is None
                else f"<td class=num>{_value(x.get('value'))}</td>"
                for x in entries
            )
        rows.append(
            f'<tr data-task="{e(task)}" data-split="{e(split)}"'
            f"{' class=manual' if manual else ''}><td>{e(task)}</td><td>{e(where)}</td>"
            f"<td>{e(metric)}</td><td class=num>{' / '.join(sorted(ns)) or DASH}</td>"
            f"{values}</tr>"
        )
    more = (
        f'<p class="hint">{len(keys) - MAX_TASK_ROWS:,} more task rows are in '
        "metrics_summary.json.</p>"
        if len(keys) > MAX_TASK_ROWS
        else ""
    )
    return (
        "<h4>per task and split (LegalBench's own metric for each task)</h4>"
        '<div class="scroll"><table class="official" id="legalbench-tasks"><thead><tr>'
        f"<th>task</th><th>split</th><th>metric</th><th>n</th>{heads}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>{more}"
    )


def _legalbench(block: Mapping[str, Any]) -> str:
    models = _per_model(block)
    return (
        '<div class="benchmark" data-benchmark="legalbench"><h3>LegalBench</h3>'
        f"{_protocol_line('legalbench', block)}"
        '<p class="hint">The score is the mean over tasks of each task\'s test split, each '
        "scored by its own metric (balanced accuracy for most): one task, one vote, as the "
        "paper averages. Tasks with a train split only are averaged apart; tasks LegalBench "
        "grades by hand have no value here.</p>"
        f"{_epochs_note(models)}{_legalbench_headline(models)}{_legalbench_tasks(models)}"
        f"{_others('legalbench', block)}</div>"
    )


def _lexam(block: Mapping[str, Any]) -> str:
    models = _per_model(block)
    sets: list[str] = []
    for _, figures in models:
        by_set = _mapping(_mapping(figures.get("mcq")).get("by_set"))
        sets += [str(s) for s in by_set if str(s) not in sets]
    official = 2 + len(sets) + 3
    head = (
        f'<tr><th></th><th colspan="{official}">official</th>'
        '<th colspan="3">ours, beside it (not in the official figure)</th><th></th></tr>'
        "<tr><th>model</th><th>MCQ accuracy</th><th>MCQ n</th>"
        + "".join(f"<th>{e(s)}</th>" for s in sets)
        + "<th>open score (mean judge grade × 100)</th><th>open n</th>"
        "<th>unusable judge replies (scored 0)</th><th>graded</th><th>mean score × 100</th>"
        '<th>judge errors</th><th title="items without an official verdict">not scored</th>'
        "</tr>"
    )
    rows = []
    for model, figures in models:
        mcq, open_ = _mapping(figures.get("mcq")), _mapping(figures.get("open"))
        ours, by_set = _mapping(open_.get("ours")), _mapping(mcq.get("by_set"))
        set_cells = "".join(
            f"<td class=num>{_value(_mapping(by_set.get(s)).get('accuracy'))} <span class=ci>"
            f"({num(_mapping(by_set.get(s)).get('n'))})</span></td>"
            if s in by_set
            else f"<td class=num>{DASH}</td>"
            for s in sets
        )
        rows.append(
            f'<tr data-model="{e(model)}">{_model_cell(model)}'
            f'<td class="num headline" data-figure="mcq">{_value(mcq.get("accuracy"))}</td>'
            f"<td class=num>{num(mcq.get('n'))}</td>{set_cells}"
            f'<td class="num headline" data-figure="open">{_value(open_.get("score"), 1)}</td>'
            f"<td class=num>{num(open_.get('n'))}</td>"
            f"<td class=num>{num(open_.get('unusable_replies_scored_0'))}</td>"
            f'<td class="num ours">{num(ours.get("graded"))}</td>'
            f'<td class="num ours">{_value(ours.get("mean_score_x100"), 1)}</td>'
            f'<td class="num ours">{num(ours.get("judge_errors"))}</td>'
            f"<td class=num>{num(figures.get('not_scored'))}</td></tr>"
        )
    return (
        '<div class="benchmark" data-benchmark="lexam"><h3>LEXam</h3>'
        f"{_protocol_line('lexam', block)}"
        '<p class="hint">MCQ accuracy: right answers over questions, the answer read from '
        "the last <code>###X###</code>. Open questions: LEXam's judge grade averaged × 100; "
        "a judge reply LEXam cannot read counts 0 there, as in LEXam. Our own accounting "
        "keeps those items as judge errors, beside the official figure and never in it.</p>"
        f"{_epochs_note(models)}"
        '<div class="scroll"><table class="official" id="lexam-headline"><thead>'
        f"{head}</thead><tbody>{''.join(rows)}</tbody></table></div>"
        f"{_others('lexam', block)}</div>"
    )


def official_section(summary: Mapping[str, Any] | None) -> str:
    """The section of the official figures (empty when the run has none)."""
    parts = []
    for name, block in _blocks(summary):
        if name == "legalbench":
            parts.append(_legalbench(block))
        elif name == "lexam":
            parts.append(_lexam(block))
        elif (judged := judged_section(name, block, _protocol_line(name, block))) is not None:
            parts.append(judged)
        else:
            parts.append(
                f'<p class="hint" data-benchmark="{e(name)}">metrics_summary.json has figures '
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
        f"items). From metrics_summary.json.</p>{''.join(parts)}</section>"
    )


def official_cards(summary: Mapping[str, Any] | None) -> list[str]:
    """Headline cards beside the pass rate, for a run of one model (several: the table)."""
    cards = []
    for name, block in _blocks(summary):
        models = _per_model(block)
        if len(models) != 1:
            continue
        figures, protocol = models[0][1], e(_protocol(block))
        cards += judged_cards(name, block, _protocol)
        if name == "legalbench":
            cards.append(card(
                "LegalBench score (official)", _value(figures.get("score")),
                "benchmarks.legalbench.score",
                f"{protocol} · mean over {num(figures.get('n_tasks'))} test tasks",
                "the official metric: the mean over tasks of each task's own metric",
            ))  # fmt: skip
        elif name == "lexam":
            mcq, open_ = _mapping(figures.get("mcq")), _mapping(figures.get("open"))
            if finite(mcq.get("accuracy")) is not None:
                cards.append(card(
                    "LEXam MCQ accuracy (official)", _value(mcq.get("accuracy")),
                    "benchmarks.lexam.mcq.accuracy",
                    f"{protocol} · {num(mcq.get('n'))} questions",
                ))  # fmt: skip
            if finite(open_.get("score")) is not None:
                cards.append(card(
                    "LEXam open score (official)", _value(open_.get("score"), 1),
                    "benchmarks.lexam.open.score",
                    f"{protocol} · mean judge grade × 100 · {num(open_.get('n'))} questions",
                ))  # fmt: skip
    return cards
