"""The report's section for the judged benchmarks' official figures: PRBench and APEX.

Read from ``metrics_summary.json``'s ``benchmarks.prbench`` / ``benchmarks.apex``
(:mod:`pytest_legaleval.metrics.judged_benchmarks`): the official figures under upstream's
names, the criteria the official rule scored unmet because the judge failed and our own
judge errors beside them (never in them), and a warning when the judge is not the one
the published numbers used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_legaleval.report.fmt import DASH, card, finite, num
from pytest_legaleval.report.page import e

__all__ = ["judged_cards", "judged_section"]

_SPLITS = ("finance", "legal", "finance_hard", "legal_hard")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _value(value: Any, digits: int = 3) -> str:
    found = finite(value)
    return DASH if found is None else f"{found:.{digits}f}"


def _per_model(block: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    models = _mapping(block.get("models"))
    found = [(str(m), f) for m, f in models.items() if isinstance(f, Mapping)]
    return found or [("", block)]


def _judge_note(block: Mapping[str, Any]) -> str:
    judge = _mapping(block.get("judge"))
    if not judge.get("differs"):
        return ""
    used = ", ".join(str(m) for m in judge.get("used") or []) or "an unknown judge"
    return (
        f'<p class="warn judge-differs">Judged by {e(used)}, not {e(judge.get("published"))} '
        "as the published figures were: the official method, but not comparable with the "
        "leaderboard.</p>"
    )


def _beside(figures: Mapping[str, Any]) -> str:
    ours = _mapping(figures.get("ours"))
    return (
        f'<td class="num">{num(figures.get("judge_failed_unmet"))}</td>'
        f'<td class="num ours">{num(ours.get("graded"))}</td>'
        f'<td class="num ours">{num(ours.get("judge_errors"))}</td>'
    )


_BESIDE_HEAD = (
    '<th title="criteria the official rule scored not met because the judge failed">'
    "judge failures (not met)</th><th>graded (ours)</th><th>judge errors (ours)</th>"
)


def _prbench(block: Mapping[str, Any], protocol_line: str) -> str:
    rows = []
    for model, figures in _per_model(block):
        splits = _mapping(figures.get("splits"))
        for name in [*_SPLITS, "all"]:
            split = _mapping(splits.get(name)) if name != "all" else figures
            if not split.get("n"):
                continue
            rows.append(
                f'<tr data-model="{e(model)}" data-split="{e(name)}"><td>{e(model or "this run")}'
                f"</td><td>{e(name)}</td>"
                f'<td class="num headline">{_value(split.get("mean_clipped"))}</td>'
                f'<td class="num">{_value(split.get("std_clipped"))}</td>'
                f'<td class="num">{_value(split.get("mean_normalized"))}</td>'
                f'<td class="num">{_value(split.get("std_normalized"))}</td>'
                f'<td class="num">{num(split.get("n"))}</td>'
                f'<td class="num">{num(split.get("negative_tasks"))}</td>'
                + (_beside(figures) if name == "all" else "<td></td><td></td><td></td>")
                + "</tr>"
            )
    return (
        '<div class="benchmark" data-benchmark="prbench"><h3>PRBench</h3>'
        f"{protocol_line}{_judge_note(block)}"
        '<p class="hint">A task scores Σ w·met / Σ w⁺ with its criteria\'s weights, negatives '
        "kept and never clipped (PRBench's <code>mean_clipped</code> is the mean of these); "
        "a judge reply PRBench cannot read, or a failed call, is not met there. Our own "
        "accounting keeps those items as judge errors, beside the figure.</p>"
        '<div class="scroll"><table class="official" id="prbench-splits"><thead><tr>'
        "<th>model</th><th>split</th><th>mean_clipped</th><th>std_clipped</th>"
        "<th>mean_normalized</th><th>std_normalized</th><th>n</th><th>negative tasks</th>"
        f"{_BESIDE_HEAD}</tr></thead><tbody>{''.join(rows)}</tbody></table></div></div>"
    )


def _apex(block: Mapping[str, Any], protocol_line: str) -> str:
    rows = []
    for model, figures in _per_model(block):
        domains = _mapping(figures.get("domains"))
        said = ", ".join(
            f"{e(d)} {_value(_mapping(v).get('score'), 2)} ({num(_mapping(v).get('n_tasks'))})"
            for d, v in domains.items()
        )
        rows.append(
            f'<tr data-model="{e(model)}"><td>{e(model or "this run")}</td>'
            f'<td class="num headline">{_value(figures.get("score"), 2)}</td>'
            f'<td class="num">{num(figures.get("n_tasks"))}</td>'
            f'<td class="num">{num(figures.get("skipped_tasks"))}</td><td>{said}</td>'
            f"{_beside(figures)}</tr>"
        )
    return (
        '<div class="benchmark" data-benchmark="apex"><h3>APEX-v1</h3>'
        f"{protocol_line}{_judge_note(block)}"
        '<p class="hint">Score 0–100: the mean over tasks of each task\'s median over epochs '
        "of the criteria met (unweighted). A task with an empty, blank or "
        "<code>error:</code> answer is left out, as upstream leaves it out.</p>"
        '<div class="scroll"><table class="official" id="apex-headline"><thead><tr>'
        "<th>model</th><th>score</th><th>tasks</th><th>left out</th><th>per domain</th>"
        f"{_BESIDE_HEAD}</tr></thead><tbody>{''.join(rows)}</tbody></table></div></div>"
    )


def judged_section(name: str, block: Mapping[str, Any], protocol_line: str) -> str | None:
    """The section of ``benchmarks.<name>``, or ``None`` for another benchmark."""
    if name == "prbench":
        return _prbench(block, protocol_line)
    if name == "apex":
        return _apex(block, protocol_line)
    return None


def judged_cards(
    name: str, block: Mapping[str, Any], protocol: Callable[[Mapping[str, Any]], str]
) -> list[str]:
    """The headline card of a one-model run (several models: the table)."""
    models = _per_model(block)
    if name not in ("prbench", "apex") or len(models) != 1:
        return []
    figures = models[0][1]
    if name == "prbench":
        return [card(
            "PRBench mean_clipped (official)", _value(figures.get("mean_clipped")),
            "benchmarks.prbench.mean_clipped",
            f"{e(protocol(block))} · mean over {num(figures.get('n'))} tasks",
        )]  # fmt: skip
    return [card(
        "APEX score (official)", _value(figures.get("score"), 2), "benchmarks.apex.score",
        f"{e(protocol(block))} · {num(figures.get('n_tasks'))} tasks, 0–100",
    )]  # fmt: skip
