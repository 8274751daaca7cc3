"""``legaleval compare``'s output: a comparison (``metrics._compare``) as text, Markdown or JSON.

Text goes through the terminal's sanitizer (``run.console.printable``), Markdown through
``run.markdown``'s escaping, so no run id, slice value or record id from a run directory
can write a control sequence or markup.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.run.console import printable
from pytest_legaleval.run.markdown import md_table, md_text

__all__ = ["FORMATS", "LIST_LIMIT", "render"]

FORMATS = ("text", "markdown", "json")
LIST_LIMIT = 50
"""Flipped records listed per direction in text and markdown (JSON lists all)."""


def _f(value: Any, pct: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:.1%}" if pct else f"{value:.4g}"


def _d(value: Any, pct: bool) -> str:
    if value is None:
        return "–"
    return f"{value:+.1%}" if pct else f"{value:+.4g}"


def _with_ci(entry: Mapping[str, Any], pct: bool) -> str:
    text = _f(entry["value"], pct)
    if entry.get("interval"):
        low, high = entry["interval"]
        text += f" [{_f(low, pct)}, {_f(high, pct)}]"
    return text


_PCT = {"pass_rate", "pass_rate_ci_low", "judge_error_rate", "invalid_rate", "error_rate"}


def _difference_line(name: str, d: Mapping[str, Any]) -> str:
    text = (
        f"{name} (record means): {_f(d['baseline_mean'])} → {_f(d['current_mean'])} "
        f"({_d(d['delta'], False)}) over {d['n']} paired items"
    )
    if d.get("ci"):
        low, high = d["ci"]
        text += f", {d['level']:.0%} CI [{low:+.4g}, {high:+.4g}] ({d['method']}"
        text += f"; se {_f(d['se_clustered'])}, df {_f(d.get('df'))}, p {_f(d.get('p_value'))}"
        if d.get("cluster_by"):
            text += f"; {d['clusters']} clusters, naive se {_f(d['se'])}"
        text += ")"
    elif d.get("note"):
        text += f" (no interval: {d['note']})"
    boot = (d.get("bootstrap") or {}).get("ci")
    if boot:
        text += f"; cluster bootstrap [{boot[0]:+.4g}, {boot[1]:+.4g}]"
    return text


def _paired_lines(data: Mapping[str, Any]) -> list[str]:
    p = data["paired"]
    level = 1 - float(data["alpha"])
    ci = p["mean_score_delta_ci"]
    ci_text = f" [{ci[0]:+.4g}, {ci[1]:+.4g}] ({level:.0%} paired bootstrap)" if ci else ""
    lines = [
        f"paired items: {p['paired']} by {p.get('pairing', '(record, model, epoch)')} "
        f"(pass→fail {p['regressions']}, fail→pass {p['improvements']}, no verdict in one "
        f"run {p['unverdicted']})",
        f"pass rate on paired items: {_f(p['baseline_pass_rate'], True)} → "
        f"{_f(p['current_pass_rate'], True)} ({_d(p['pass_rate_delta'], True)}), "
        f"McNemar exact p = {p['mcnemar_p_value']:.4g}",
        f"mean score delta: {_d(p['mean_score_delta'], False)}{ci_text} over "
        f"{p['score_pairs']} pairs",
        f"only in A: {p['only_in_baseline']}, only in B: {p['only_in_current']}",
    ]
    if p.get("method") == "clustered":
        epochs = p["epochs"]
        lines.append(
            f"epochs: A {epochs['baseline']}, B {epochs['current']} (reducer "
            f"{p['epoch_reducer']}; flips and McNemar are on the reduced verdicts)"
        )
        for name, key in (("pass rate", "pass_difference"), ("mean score", "score_difference")):
            if p.get(key):
                lines.append(_difference_line(name, p[key]))
    return lines


def _change_line(change: Mapping[str, Any]) -> str:
    before, after = change.get("baseline") or {}, change.get("current") or {}
    return printable(
        f"{change['dataset']}/{change['record_id']} [{change['model']}]: "
        f"{before.get('reason', '–')} → {after.get('reason', '–')}"
    )


def _text(data: Mapping[str, Any]) -> str:
    a, b = printable(data["run_a"]["run_id"]), printable(data["run_b"]["run_id"])
    lines = [f"A: {a}  B: {b}", "", "metrics (B − A):"]
    for name, m in data["metrics"].items():
        pct = name in _PCT
        lines.append(
            f"  {name:<18} {_with_ci(m['a'], pct):<32} {_with_ci(m['b'], pct):<32} "
            f"{_d(m['delta'], pct)}"
        )
    lines += ["", *_paired_lines(data), "", "slices (pass rate A → B):"]
    for s in data["slices"]:
        pr = s["pass_rate"]
        lines.append(
            f"  {printable(s['dimension'])}={printable(s['value'])}: {_f(pr['a'], True)} → "
            f"{_f(pr['b'], True)} ({_d(pr['delta'], True)}; n {s['n']['a']} → {s['n']['b']})"
        )
    for name, items in data["changes"].items():
        if items:
            lines += ["", f"{name} ({len(items)}):"]
            lines += [f"  {_change_line(c)}" for c in items[:LIST_LIMIT]]
            if len(items) > LIST_LIMIT:
                lines.append(f"  … {len(items) - LIST_LIMIT} more (--format json lists all)")
    return "\n".join(lines) + "\n"


def _md_change(change: Mapping[str, Any]) -> list[str]:
    before, after = change.get("baseline") or {}, change.get("current") or {}
    return [
        md_text(change.get("dataset")),
        md_text(change.get("record_id")),
        md_text(change.get("model")),
        md_text(before.get("reason", "–")),
        md_text(after.get("reason", "–")),
    ]


def _markdown(data: Mapping[str, Any]) -> str:
    """The comparison as Markdown, meant to be posted as a pull-request comment.

    Every string from the runs goes through ``md_text``: a record id must not become an
    image, a link, a mention or HTML there.
    """
    out = [
        f"### legaleval: {md_text(data['run_b']['run_id'])} vs {md_text(data['run_a']['run_id'])}",
        "",
        *md_table(
            ["metric", "A", "B", "Δ (B − A)"],
            [
                [f"`{name}`", _with_ci(m["a"], name in _PCT), _with_ci(m["b"], name in _PCT),
                 _d(m["delta"], name in _PCT)]
                for name, m in data["metrics"].items()
            ],
        ),
    ]  # fmt: skip
    out += ["", *(f"- {line}" for line in _paired_lines(data)), ""]
    if data["slices"]:
        rows = [
            [f"{md_text(s['dimension'])}={md_text(s['value'])}", _f(s["pass_rate"]["a"], True),
             _f(s["pass_rate"]["b"], True), _d(s["pass_rate"]["delta"], True),
             f"{s['n']['a']} → {s['n']['b']}"]
            for s in data["slices"]
        ]  # fmt: skip
        out += [*md_table(["slice", "pass rate A", "pass rate B", "Δ", "n A → B"], rows), ""]
    for name, items in data["changes"].items():
        if not items:
            continue
        out += [f"<details><summary>{name} ({len(items)})</summary>", ""]
        header = ["dataset", "record", "model", "A", "B"]
        out += md_table(header, [_md_change(c) for c in items[:LIST_LIMIT]])
        if len(items) > LIST_LIMIT:
            out += ["", f"… {len(items) - LIST_LIMIT} more (--format json lists all)"]
        out += ["", "</details>", ""]
    return "\n".join(out).rstrip() + "\n"


def render(data: Mapping[str, Any], fmt: str = "text") -> str:
    """``data`` (from :func:`comparison`) as ``text``, ``markdown`` or ``json``."""
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if fmt == "markdown":
        return _markdown(data)
    if fmt == "text":
        return _text(data)
    raise ConfigError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
