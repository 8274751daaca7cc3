"""Epochs and the run's own error bars: pass@k, pass^k, flaky items, the clustered interval.

``metrics_summary.json`` of a run of ``--epochs K`` has ``epochs``, ``pass_at_k`` and
``pass_hat_k`` (keyed ``"1"`` … ``"K"``) and ``flaky_records`` (a count; the items are
listed in ``flaky_records.jsonl``); every recent run has ``uncertainty`` (the mean pass over
units with a CR2 standard error and a t interval at Bell–McCaffrey degrees of freedom,
clustered by ``cluster_by`` when the run names a field, or by record when several models
answered), the same per model in ``by_model``. The page shows them as written, one interval
per number, each named: where the run's mean equals the pass rate (one epoch) the pass-rate
card shows the run's interval and no other; where they differ (epochs), the two cards say
which is over items' verdicts and which over records' epochs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_legaleval.metrics.artifacts import (
    FAILURES,
    FLAKY_RECORDS,
    INCOMPLETE_RECORDS,
    METRICS_SUMMARY,
    PREDICTIONS,
)
from pytest_legaleval.metrics.rundir_check import RunDirectoryError
from pytest_legaleval.metrics.runfiles import iter_jsonl
from pytest_legaleval.report.data import ReportData
from pytest_legaleval.report.fmt import DASH, card, finite, interval, num, pct
from pytest_legaleval.report.items import DS, M, R
from pytest_legaleval.report.page import e

__all__ = [
    "MAX_EPOCHS",
    "FlakyItems",
    "epochs_of",
    "flaky_rows",
    "read_flaky",
    "same_number",
    "uncertainty_card",
    "uncertainty_section",
    "which_interval",
]

FlakyKey = tuple[str, str, str]
"""``(dataset, record_id, model)`` of an item."""


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


MAX_EPOCHS = 100
"""The most epochs a run takes (``--epochs`` is 1-100): the rows of the pass@k table."""


def epochs_of(block: Mapping[str, Any] | None) -> int:
    """The block's ``epochs`` (1 when absent or not an integer in 1…:data:`MAX_EPOCHS`)."""
    value = (block or {}).get("epochs")
    return value if type(value) is int and 0 < value <= MAX_EPOCHS else 1


def _df(block: Mapping[str, Any]) -> str:
    df = finite(block.get("df"))
    return f", df {df:.1f}" if df is not None else ""


def which_interval(block: Mapping[str, Any], *, short: bool = False) -> str:
    """What kind of interval an ``uncertainty`` block's ``ci95`` is, in words."""
    if block.get("ci95") is None:
        note = block.get("note")
        return f"no interval: {note}" if isinstance(note, str) and note else "no interval"
    clipped = " (clipped to [0, 1])" if block.get("clipped") is True else ""
    field = block.get("cluster_by")
    units = "items" if block.get("unit") == "item" else "records"
    if not isinstance(field, str) or not field:
        if short:
            return f"t interval, {units} independent{_df(block)}{clipped}"
        if finite(block.get("df")) is None:  # a run written before round 4
            return f"normal interval of the naive standard error: {units} independent"
        return f"t interval of the naive standard error: {units} independent{_df(block)}{clipped}"
    if short:
        return (
            f"CR2 t interval clustered by {field} ({num(block.get('clusters'))} clusters"
            f"{_df(block)}){clipped}"
        )
    unclustered = block.get("unclustered")
    lonely = (
        f"; {num(unclustered)} without the field, each a cluster of its own"
        if isinstance(unclustered, int) and unclustered > 0
        else ""
    )
    return (
        f"CR2 t interval clustered by {field} ({num(block.get('clusters'))} clusters{lonely}"
        f"{_df(block)}){clipped}"
    )


def same_number(summary: Mapping[str, Any] | None) -> bool:
    """The run's interval is of the pass rate itself (one epoch: the same mean)."""
    block = _mapping((summary or {}).get("uncertainty"))
    mean, rate = finite(block.get("mean")), finite((summary or {}).get("pass_rate"))
    return mean is not None and rate is not None and abs(mean - rate) <= 1e-12


def uncertainty_card(
    summary: Mapping[str, Any] | None, *, value: Any = None, metric: str = "uncertainty"
) -> str:
    """The card of the run's own interval (empty without one).

    With one epoch its mean is the pass rate: the page then shows this card as the pass
    rate's (``metric="pass_rate"``, ``value`` the pass rate) instead of a second interval.
    """
    block = _mapping((summary or {}).get("uncertainty"))
    if finite(block.get("mean")) is None:
        return ""
    units = "items" if block.get("unit") == "item" else "records"
    label = "pass rate" if same_number(summary) else f"mean pass over epochs ({units})"
    ci = interval(block.get("ci95"), as_pct=True)
    note = (f"95% CI {ci} · " if ci else "") + e(which_interval(block, short=True))
    shown = pct(value if value is not None else block.get("mean"))
    return card(
        label, shown, metric, note,
        f"{METRICS_SUMMARY}'s uncertainty: x̄ ± t × the CR2 standard error over units, "
        "at Bell–McCaffrey degrees of freedom, clustered by --cluster-by (or by record when "
        "several models answered), clipped to [0, 1]",
    )  # fmt: skip


def _ratio(block: Mapping[str, Any]) -> str:
    se, clustered = finite(block.get("se")), finite(block.get("se_clustered"))
    if se is None or clustered is None or se == 0:
        return DASH
    return f"{clustered / se:.2f}×"


def _uncertainty_row(scope: str, units: str, block: Mapping[str, Any], model: str = "") -> str:
    attr = f' data-model="{e(model)}"' if model else ' data-scope="run"'
    return (
        f"<tr{attr}><td>{e(scope)}</td><td class=num>{num(block.get('n'))} {e(units)}</td>"
        f"<td class=num>{pct(block.get('mean'))}</td>"
        f"<td class=num>{num(block.get('se'), 4)}</td>"
        f"<td class=num>{num(block.get('se_clustered'), 4)}</td>"
        f"<td class=num>{_ratio(block)}</td>"
        f"<td>{interval(block.get('ci95'), as_pct=True) or DASH}</td>"
        f'<td class="which">{e(which_interval(block))}</td></tr>'
    )


def _models(summary: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    found = _mapping(summary.get("by_model"))
    return [(str(m), b) for m, b in found.items() if isinstance(b, Mapping)]


def _uncertainty_table(summary: Mapping[str, Any]) -> str:
    models = _models(summary)
    run = _mapping(summary.get("uncertainty"))
    units = "items" if run.get("unit") == "item" or len(models) > 1 else "records"
    rows = [_uncertainty_row("all items", units, run)]
    if len(models) > 1:
        rows += [
            _uncertainty_row(m, "records", _mapping(b.get("uncertainty")), m)
            for m, b in models
            if isinstance(b.get("uncertainty"), Mapping)
        ]
    return (
        '<table id="uncertainty-table"><thead><tr><th></th><th>units</th><th>mean pass</th>'
        "<th>se (naive)</th><th>se (clustered)</th><th>ratio</th><th>95% CI</th>"
        f"<th>interval</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _k_value(block: Mapping[str, Any], name: str, k: int) -> str:
    value = _mapping(block.get(name)).get(str(k))
    return f"<td class=num>{num(finite(value)) if finite(value) is not None else DASH}</td>"


def _pass_at_k(summary: Mapping[str, Any], flaky: int | None) -> str:
    k_max = epochs_of(summary)
    scopes = [("all items", summary)]
    models = _models(summary)
    if len(models) > 1:
        scopes += models
    heads = "".join(f'<th colspan="2">{e(name)}</th>' for name, _ in scopes)
    sub = "<th>pass@k</th><th>pass^k</th>" * len(scopes)
    rows = [
        f'<tr data-k="{k}"><th>{k}</th>'
        + "".join(_k_value(b, "pass_at_k", k) + _k_value(b, "pass_hat_k", k) for _, b in scopes)
        + "</tr>"
        for k in range(1, k_max + 1)
    ]
    counts = "".join(f'<td colspan="2" class=num>{num(b.get("flaky_records"))}</td>'
                     for _, b in scopes)  # fmt: skip
    rows.append(f'<tr class="flaky-row"><th>flaky records</th>{counts}</tr>')
    link = ""
    if flaky:
        link = (
            f'<p class="flaky"><a href="#items" id="flaky-link" data-count="{flaky}">show the '
            f"{flaky:,} flaky items</a> in the item table, each with every epoch's verdict "
            "(or tick <i>only flaky items</i> there).</p>"
        )
    elif flaky == 0:
        link = '<p class="flaky">No item has epochs that disagree.</p>'
    complete, incomplete = summary.get("pass_at_k_records"), summary.get("incomplete_records")
    over = ""
    if isinstance(complete, int) and not isinstance(complete, bool):
        over = (
            f" Every k is over the same {complete:,} items: those with a verdict in all "
            f"{k_max} epochs"
        )
        if isinstance(incomplete, int) and incomplete:
            over += (
                f"; {incomplete:,} items lack a verdict in some epoch (listed in "
                f"{INCOMPLETE_RECORDS}) and are left out"
            )
        over += "."
    errored = summary.get("errored_epochs")
    if isinstance(errored, int) and errored:
        over += (
            f" {errored:,} of {num(summary.get('epoch_lines'))} epoch lines have no verdict "
            f"(counted in error_rate and {FAILURES})."
        )
    return (
        f'<h3>{k_max} epochs</h3><p class="hint">pass@k: the chance that at least one of k '
        "samples of a record passes; pass^k: that all k pass (unbiased estimators)."
        f"{e(over)} A flaky record is an item whose epochs disagree on pass "
        f"(listed in {FLAKY_RECORDS}).</p>"
        '<div class="scroll"><table id="pass-at-k"><thead>'
        f"<tr><th>k</th>{heads}</tr><tr><th></th>{sub}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>{link}"
    )


def uncertainty_section(
    summary: Mapping[str, Any] | None, flaky: int | None, note: str = ""
) -> str:
    """The section (empty when the run reports neither epochs nor an interval).

    ``flaky`` is the number of flaky items the page can show (``None``: not known).
    """
    if not summary:
        return ""
    has_interval = finite(_mapping(summary.get("uncertainty")).get("mean")) is not None
    several = epochs_of(summary) > 1
    if not has_interval and not several:
        return ""
    parts = []
    if has_interval:
        parts.append(
            f'<p class="hint">The run\'s own interval ({METRICS_SUMMARY} '
            "<code>uncertainty</code>) is x̄ ± t × se over units — each unit's mean pass over "
            "its epochs — with the CR2 standard error (Bell &amp; McCaffrey 2002) and the t "
            "at Bell–McCaffrey degrees of freedom, clustered when the run was given "
            "<code>--cluster-by FIELD</code> (questions that share an exam or a task are not "
            "independent) and by record when several models answered the same records; "
            "bounds past 0 or 1 are clipped. With one epoch its mean is the pass rate and it "
            "is the pass rate's only interval; with several, the pass rate counts items' "
            f"reduced verdicts and has its own Wilson interval.</p>{_uncertainty_table(summary)}"
        )
    if several:
        parts.append(_pass_at_k(summary, flaky))
    if note:
        parts.append(f'<p class="hint note">{e(note)}</p>')
    title = "epochs and uncertainty" if several else "uncertainty"
    return f'<section id="uncertainty"><h2>{title}</h2>{"".join(parts)}</section>'


class FlakyItems:
    """The flaky items of a run: ``flaky_records.jsonl``'s, or found from the epochs."""

    def __init__(self, keys: set[FlakyKey] | None, note: str = "") -> None:
        self.keys = keys
        """``None`` when the file is not there (the items' epochs then tell)."""
        self.note = note


def read_flaky(run_path: Path) -> FlakyItems:
    """Read ``flaky_records.jsonl`` (lines that are not items are skipped and counted)."""
    path = run_path / FLAKY_RECORDS
    if not path.is_file():
        return FlakyItems(None)
    keys: set[FlakyKey] = set()
    bad = 0
    try:
        for line in iter_jsonl(path):
            if isinstance(line, Mapping) and isinstance(line.get("record_id"), str):
                keys.add(
                    (str(line.get("dataset", "")), line["record_id"], str(line.get("model", "")))
                )
            else:
                bad += 1
    except RunDirectoryError:
        raise  # a corrupt line is a corrupt run: refused, never read around
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return FlakyItems(None, f"{FLAKY_RECORDS} cannot be read ({exc})")
    note = f"{FLAKY_RECORDS}: {bad:,} lines are not items and were left out" if bad else ""
    return FlakyItems(keys, note)


def flaky_rows(data: ReportData, flaky: FlakyItems) -> tuple[list[int], str]:
    """The rows of the flaky items, and a note when some could not be placed.

    Without the file, an item is flaky when its epochs include a pass and a fail (the
    metrics' definition: the verdict epochs disagree on pass).
    """
    if flaky.keys is None:
        found = [i for i, detail in enumerate(data.details) if _disagree(detail.get("ep"))]
        note = flaky.note or (
            f"{FLAKY_RECORDS} is not in the run directory: the flaky items are found "
            "from their epochs' verdicts here"
        )
        return found, note
    where: dict[FlakyKey, int] = {}
    for i, row in enumerate(data.rows):
        key = (data.datasets[row[DS]], data.records[row[R]], data.models[row[M]])
        where.setdefault(key, i)
    found = sorted(where[k] for k in flaky.keys if k in where)
    missing = len(flaky.keys) - len(found)
    notes = [flaky.note] if flaky.note else []
    if missing:
        notes.append(f"{missing:,} items of {FLAKY_RECORDS} are not in {PREDICTIONS}")
    return found, "; ".join(notes)


def _disagree(epochs: Sequence[Any] | None) -> bool:
    from pytest_legaleval.report.items import ORDER

    cats = {ORDER[e[1]] for e in epochs or () if isinstance(e, list) and len(e) > 1
            and isinstance(e[1], int) and 0 <= e[1] < len(ORDER)}  # fmt: skip
    return {"passed", "failed"} <= cats
