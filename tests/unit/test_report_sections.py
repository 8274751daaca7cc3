"""The report's figure sections, without a browser: official figures, epochs, calibration.

The run directories are written by hand (``report_sections.write_figures_run``) with the
figures the metrics code writes; each test reads the page's tables back (an HTML parser)
and checks them against the files, or against its own count of the lines.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.cli import main
from pytest_legaleval.cli.audit import audit_body
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics.artifacts import FLAKY_RECORDS
from pytest_legaleval.metrics.runfiles import load_run
from pytest_legaleval.report import render_report, write_report
from pytest_legaleval.report.audit import find_labels
from pytest_legaleval.report.uncertainty import MAX_EPOCHS, epochs_of, which_interval

from ..integration.report_sections import (
    HOSTILE,
    LEGALBENCH,
    MODELS,
    label_rows,
    prediction_lines,
    write_figures_run,
)

_DATA = re.compile(r'<script type="application/json" id="([^"]+)">(.*?)</script>', re.S)


class _Tables(HTMLParser):
    """The body rows of every table of a page by id (or class): (attributes, cell texts)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[tuple[dict[str, str], list[str]]]] = {}
        self.heads: dict[str, list[list[str]]] = {}
        self._stack: list[str] = []
        self._in_body = False
        self._row: tuple[dict[str, str], list[str]] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "table":
            self._stack.append(found.get("id") or found.get("class") or "")
            self.tables.setdefault(self._stack[-1], [])
            self.heads.setdefault(self._stack[-1], [])
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._stack:
            self._row = (found, [])
            if self._in_body:
                self.tables[self._stack[-1]].append(self._row)
            else:
                self.heads[self._stack[-1]].append(self._row[1])
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self._stack:
            self._stack.pop()
        elif tag == "tbody":
            self._in_body = False
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row[1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _markup(page: str) -> str:
    """The page without its scripts (data elements and code)."""
    return re.sub(r"<(script|style)\b.*?</\1>", "", page, flags=re.S)


def _parsed(page: str) -> _Tables:
    parser = _Tables()
    parser.feed(_markup(page))
    return parser


def _body(page: str, table: str) -> list[tuple[dict[str, str], list[str]]]:
    """The body rows of ``table``."""
    return _parsed(page).tables[table]


def _payload(page: str) -> dict[str, Any]:
    return json.loads(dict(_DATA.findall(page))["report-data"])


def _section(page: str, section: str) -> str:
    start = re.search(rf'<section id="?{section}"?>', page)
    assert start is not None, f"no section {section}"
    return page[start.start() : page.index("</section>", start.start())]


# ---- official benchmark figures (#26) ----------------------------------------------------


def test_one_models_official_figures_are_labelled_with_their_protocol(tmp_path: Path) -> None:
    run = write_figures_run(tmp_path, models=MODELS[:1], labels=None, epochs=1)
    page = render_report(load_run(run))
    official = _section(page, "official")
    assert "legalbench_official</code> version <b>1</b>" in official
    assert "lexam_official</code> version <b>1</b>" in official
    assert "HazyResearch/legalbench</code> at commit <code>ce482446b8ea" in official
    # the headline cards sit right after the pass rate (one epoch: one card, with the run's
    # interval), named as the official metric
    cards = re.findall(r'data-metric="([^"]+)"', _section(page, "summary"))
    assert cards[:4] == [
        "pass_rate", "benchmarks.legalbench.score",
        "benchmarks.lexam.mcq.accuracy", "benchmarks.lexam.open.score",
    ]  # fmt: skip
    card = re.search(r'data-metric="benchmarks.legalbench.score".*?</div></div>', page, re.S)
    assert card and "LegalBench score (official)" in card.group(0) and ">0.688<" in card.group(0)
    assert "legalbench_official v1 · mean over 2 test tasks" in card.group(0)
    (headline,) = _body(page, "legalbench-headline")
    assert headline[1] == ["m/alpha", "0.688", "2", "0.625 (1)", "0.750 (1)", "0.400 (1)",
                           "rule_qa — needs manual evaluation", "1"]  # fmt: skip


def test_the_per_task_table_marks_manual_tasks_and_never_gives_them_a_value(
    tmp_path: Path,
) -> None:
    run = write_figures_run(tmp_path, models=MODELS[:1], labels=None, epochs=1)
    page = render_report(load_run(run))
    rows = {
        (a["data-task"], a["data-split"]): cells for a, cells in _body(page, "legalbench-tasks")
    }
    expected = {
        (task, split): entry
        for task, splits in LEGALBENCH["tasks"].items()  # type: ignore[attr-defined]
        for split, entry in splits.items()
    }
    assert set(rows) == set(expected)
    for key, entry in expected.items():
        cells = rows[key]
        assert cells[2] == entry["metric"] and cells[3] == str(entry["n"])
        if entry.get("needs_manual_evaluation"):
            assert cells[4].startswith("needs manual evaluation")
            assert not any(re.fullmatch(r"[\d.]+", c) for c in cells[4:])  # no value, no 0
        else:
            assert cells[4] == f"{entry['value']:.3f}"
    assert rows[("hearsay", "train")][1] == "train (not in the headline)"
    assert rows[("sara_numeric", "train")][1] == "train only"
    # the test split comes first within a task
    order = [(a["data-task"], a["data-split"]) for a, _ in _body(page, "legalbench-tasks")]
    assert order.index(("hearsay", "test")) < order.index(("hearsay", "train"))


def test_several_models_get_a_column_each_and_no_cards(tmp_path: Path) -> None:
    run = write_figures_run(tmp_path, labels=None, epochs=1)
    page = render_report(load_run(run))
    assert "benchmarks.legalbench.score" not in _section(page, "summary")
    (heads,) = _parsed(page).heads["legalbench-tasks"]
    assert heads[-2:] == list(MODELS)
    rows = {(a["data-task"], a["data-split"]): c for a, c in _body(page, "legalbench-tasks")}
    assert rows[("hearsay", "test")][4:] == ["0.625", "0.250"]
    assert [a["data-model"] for a, _ in _body(page, "legalbench-headline")] == list(MODELS)
    assert [c[1] for _, c in _body(page, "legalbench-headline")] == ["0.688", "0.500"]
    lexam = {a["data-model"]: c for a, c in _body(page, "lexam-headline") if a}
    # official columns, then ours beside them: graded, mean × 100, judge errors
    assert lexam[MODELS[0]][1:3] == ["0.280", "25"] and lexam[MODELS[0]][5:8] == ["41.2", "8", "2"]
    assert lexam[MODELS[0]][8:11] == ["6", "55.0", "2"]
    assert "3 under <code>legalbench</code>" in page  # items graded under another policy


def test_a_run_without_the_blocks_shows_nothing_new(tmp_path: Path) -> None:
    run = write_figures_run(tmp_path, labels=None, epochs=1, benchmarks=False)
    summary = json.loads((run / "metrics_summary.json").read_text())
    del summary["uncertainty"]
    (run / "metrics_summary.json").write_text(json.dumps(summary))
    page = _markup(render_report(load_run(run)))
    for marker in ('id="official"', 'id="uncertainty"', 'id="calibration"', "flaky-filter",
                   'data-metric="uncertainty"', "official"):  # fmt: skip
        assert marker not in page
    assert "Wilson 95% CI" in page  # the pass rate's own interval stays, named


def test_hostile_figures_are_text_and_bad_values_a_dash(tmp_path: Path) -> None:
    run = write_figures_run(tmp_path, models=MODELS[:1], labels=None, epochs=1)
    summary = json.loads((run / "metrics_summary.json").read_text())
    block = summary["benchmarks"]["legalbench"]
    block["protocol"] = HOSTILE
    figures = block["models"][MODELS[0]]  # what the tables read, one model or several
    figures["score"] = "NaN"
    figures["tasks"][HOSTILE] = {"test": {"metric": HOSTILE, "value": True, "n": "x"}}
    figures["categories"] = [1, 2]
    summary["benchmarks"]["other"] = {"protocol": HOSTILE}
    summary["benchmarks"]["lexam"]["mcq"] = None
    (run / "metrics_summary.json").write_text(json.dumps(summary))
    page = render_report(load_run(run))
    assert HOSTILE not in page and html.escape(HOSTILE) in page
    assert page.count("<script") == 2
    rows = {a["data-task"]: c for a, c in _body(page, "legalbench-tasks")}
    assert rows[HOSTILE][4] == "–"
    headline = _body(page, "legalbench-headline")[0][1]
    assert headline[1] == "–"


# ---- epochs and uncertainty (#27) ---------------------------------------------------------


def _flaky_by_hand(lines: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """Items whose epochs disagree on pass, counted from the lines themselves."""
    seen: dict[tuple[str, str], set[bool]] = {}
    for line in lines:
        seen.setdefault((line["record_id"], line["model"]), set()).add(line["passed"])
    return {key for key, passes in seen.items() if len(passes) == 2}


def _row_keys(payload: dict[str, Any], rows: list[int]) -> set[tuple[str, str]]:
    return {
        (payload["records"][payload["rows"][i][0]], payload["models"][payload["rows"][i][2]])
        for i in rows
    }


def test_epochs_table_flaky_rows_and_both_intervals(tmp_path: Path) -> None:
    run = write_figures_run(tmp_path, labels=None)
    summary = json.loads((run / "metrics_summary.json").read_text())
    page = render_report(load_run(run))
    section = _section(page, "uncertainty")
    assert "<h2>epochs and uncertainty</h2>" in section
    pass_at_k = {a["data-k"]: c for a, c in _body(page, "pass-at-k") if "data-k" in a}
    assert sorted(pass_at_k) == ["1", "2", "3"]
    complete = summary["pass_at_k_records"]
    assert f"Every k is over the same {complete:,} items" in section
    for k, cells in pass_at_k.items():
        scopes = [summary, *(summary["by_model"][m] for m in MODELS)]
        expected = [f"{s[name][k]:.3f}" for s in scopes for name in ("pass_at_k", "pass_hat_k")]
        assert cells[1:] == expected
    flaky_row = next(c for a, c in _body(page, "pass-at-k") if a.get("class") == "flaky-row")
    assert flaky_row[1:] == [str(summary["flaky_records"])] + [
        str(summary["by_model"][m]["flaky_records"]) for m in MODELS
    ]
    # the flaky rows are the items whose epochs disagree, counted here from the lines
    payload = _payload(page)
    by_hand = _flaky_by_hand(prediction_lines(3))
    assert len(by_hand) == summary["flaky_records"] == 12
    assert _row_keys(payload, payload["flaky"]) == by_hand
    assert f'data-count="{len(by_hand)}"' in section and "only flaky items (12)" in page
    # two numbers (items' verdicts; records' epochs), one interval each, each named
    u = summary["uncertainty"]
    assert "Wilson 95% CI" in _section(page, "summary")
    assert "pass rate (items&#x27; verdicts)" in _section(page, "summary")
    card = re.search(r'data-metric="uncertainty".*?</div></div>', page, re.S)
    assert card is not None
    assert "mean pass over epochs (items)" in card.group(0)
    assert f"95% CI [{u['ci95'][0]:.1%}, {u['ci95'][1]:.1%}]" in card.group(0)
    which = f"CR2 t interval clustered by metadata.exam (4 clusters, df {u['df']:.1f})"
    assert which in card.group(0)
    table = {a.get("data-model", "run"): c for a, c in _body(page, "uncertainty-table") if a}
    assert table["run"][1:8] == [
        "26 items", f"{u['mean']:.1%}", f"{u['se']:.4f}", f"{u['se_clustered']:.4f}",
        f"{u['se_clustered'] / u['se']:.2f}×", f"[{u['ci95'][0]:.1%}, {u['ci95'][1]:.1%}]",
        f"CR2 t interval clustered by metadata.exam (4 clusters, df {u['df']:.1f})",
    ]  # fmt: skip
    assert table[MODELS[1]][1] == "13 records"


def test_without_clusters_the_interval_says_records_independent(tmp_path: Path) -> None:
    run = write_figures_run(tmp_path, labels=None, epochs=1, cluster_by=None, models=MODELS[:1])
    page = render_report(load_run(run))
    section = _section(page, "uncertainty")
    assert "<h2>uncertainty</h2>" in section and 'id="pass-at-k"' not in section
    assert "records independent" in section and "clustered by" not in section
    assert "flaky" not in _markup(page) and _payload(page)["flaky"] is None
    # one epoch: the run's interval is the pass rate's, and the only one shown for it
    summary = _section(page, "summary")
    assert "Wilson" not in summary and 'data-metric="uncertainty"' not in summary
    card = re.search(r'data-metric="pass_rate".*?</div></div>', page, re.S)
    assert card is not None and "t interval, records independent, df 12.0" in card.group(0)
    assert which_interval({"ci95": None}) == "no interval"
    assert which_interval({"ci95": None, "note": "one unit"}) == "no interval: one unit"


def test_several_models_cluster_the_run_interval_by_record(tmp_path: Path) -> None:
    run = write_figures_run(tmp_path, labels=None, epochs=1, cluster_by=None)
    section = _section(render_report(load_run(run)), "uncertainty")
    assert "CR2 t interval clustered by record (13 clusters, df 12.0)" in section
    assert "26 items" in section
    # a hand-edited K beyond --epochs' bound (or not a number) is no table of a billion rows
    assert [epochs_of({"epochs": k}) for k in (3, MAX_EPOCHS + 1, True, "3", -2)] == [3, 1, 1, 1, 1]
    lonely = {"ci95": [0, 1], "cluster_by": "metadata.exam", "clusters": 5, "unclustered": 2}
    assert which_interval(lonely).endswith("2 without the field, each a cluster of its own)")


def test_flaky_items_come_from_the_epochs_when_the_file_is_gone(tmp_path: Path) -> None:
    run = write_figures_run(tmp_path, labels=None, flaky_file=False)
    page = render_report(load_run(run))
    payload = _payload(page)
    assert _row_keys(payload, payload["flaky"]) == _flaky_by_hand(prediction_lines(3))
    assert f"{FLAKY_RECORDS} is not in the run directory" in _section(page, "uncertainty")


def test_bad_lines_of_the_flaky_file_are_left_out_and_said(tmp_path: Path) -> None:
    run = write_figures_run(tmp_path, labels=None)
    path = run / FLAKY_RECORDS
    kept = path.read_text().splitlines()[:2]
    path.write_text("\n".join([*kept, json.dumps({"record_id": "nope", "model": "m/alpha"})]))
    page = render_report(load_run(run))
    assert len(_payload(page)["flaky"]) == 2
    note = _section(page, "uncertainty")
    assert "1 items of flaky_records.jsonl are not in" in note


def test_a_line_of_the_flaky_file_that_is_no_object_refuses_the_run(tmp_path: Path) -> None:
    # Issue 41: every line of a run directory is checked before it is trusted.
    from pytest_legaleval.metrics.rundir_check import RunDirectoryError

    run = write_figures_run(tmp_path, labels=None)
    path = run / FLAKY_RECORDS
    path.write_text(path.read_text() + json.dumps([1, 2]) + "\n")
    with pytest.raises(RunDirectoryError, match=r"flaky_records\.jsonl:[0-9]+: not a JSON object"):
        render_report(load_run(run))


# ---- judge calibration (#28) --------------------------------------------------------------


def _confusion_by_hand(run: Path, labels: list[dict[str, Any]]) -> Counter[tuple[bool, bool]]:
    """Judge (the epochs' mean against the threshold) by human, for item labels."""
    scores: dict[tuple[str, str], list[float]] = {}
    for line in prediction_lines(3):
        scores.setdefault((line["record_id"], line["model"]), []).append(line["score"])
    cells: Counter[tuple[bool, bool]] = Counter()
    for label in labels:
        if "criterion_id" not in label:
            found = scores[(label["record_id"], label["model"])]
            cells[(sum(found) / len(found) >= 0.5, label["passed"])] += 1
    return cells


def test_the_calibration_view_equals_legaleval_audit(tmp_path: Path) -> None:
    run = write_figures_run(tmp_path)
    page = render_report(load_run(run))
    body = audit_body(run, tmp_path / "labels.jsonl", seed=7, resamples=300)
    audit = body["judge_audit"]
    side = {a.get("data-scope") or a.get("data-policy") or a.get("data-model"): c
            for a, c in _body(page, "audit-side-by-side") if a}  # fmt: skip
    ppi = audit["ppi_pass_rate"]
    assert side["all"][1:6] == [
        str(audit["labelled"]), str(audit["unlabelled"]), f"{audit['judge_pass_rate']:.1%}",
        f"{audit['human_pass_rate']:.1%} [{audit['human_pass_rate_ci95'][0]:.1%}, "
        f"{audit['human_pass_rate_ci95'][1]:.1%}]",
        f"{ppi['estimate']:.1%} [{ppi['ci95'][0]:.1%}, {ppi['ci95'][1]:.1%}]",
    ]  # fmt: skip
    assert side["all"][7].startswith(f"{audit['cohen_kappa']:.3f} [")
    assert set(side) == {"all", *MODELS, "reference_v1", "rubric_v1", "criteria"}
    # the pooled confusion table, against a count of the files made here
    cells = _confusion_by_hand(run, label_rows())
    pooled = _body(page, "confusion")[:2]  # the first table: every labelled item
    assert [c[1:] for _, c in pooled] == [
        [str(cells[(True, True)]), str(cells[(True, False)])],
        [str(cells[(False, True)]), str(cells[(False, False)])],
    ]
    tables = re.findall(r'<table class="confusion" data-level="(\w+)" data-policy="([^"]*)" '
                        r'data-criterion="([^"]*)"', page)  # fmt: skip
    expected = [(t["level"], t["policy_id"] or "", t["criterion_id"] or "")
                for t in body["calibration"]["tables"]]  # fmt: skip
    assert tables == expected
    assert "criterion Invents no fact <code>c-facts</code>" in page  # its title, from the record
    # the disagreeing items: both verdicts, the judge's reason, escaped
    shown = [(a["data-record"], a["data-model"], c[4], c[5].split(" 1 rater")[0], c[6])
             for a, c in _body(page, "disagreements")]  # fmt: skip
    listed = body["calibration"]["disagreements"]
    assert [(s[0], s[1]) for s in shown] == [(d["record_id"], d["model"]) for d in listed]
    item_disagreements = cells[(True, False)] + cells[(False, True)]
    assert len(listed) == item_disagreements + 1  # and the one criterion (c-facts × m/beta)
    for row, d in zip(shown, listed, strict=True):
        assert row[2].startswith("✓ pass" if d["judge_passed"] else "✗ fail")
        assert row[3].startswith("✓ pass" if d["human_passed"] else "✗ fail")
        assert row[4] == " ".join(d["judge_reason"].split())
    assert html.escape(HOSTILE) in _section(page, "calibration")
    assert html.escape("the run's own --human-labels") in _section(page, "calibration")
    # the written judge_audit was made with the same labels: no note that they differ
    assert "differs" not in _section(page, "calibration")


def test_labels_given_to_the_report_win_and_a_difference_is_said(tmp_path: Path) -> None:
    run = write_figures_run(tmp_path)
    other = tmp_path / "other.jsonl"
    flipped = [{**row, "passed": not row["passed"]} for row in label_rows()]
    other.write_text("".join(json.dumps(r) + "\n" for r in flipped))
    page = render_report(load_run(run), other)
    section = _section(page, "calibration")
    assert f"<code>{html.escape(str(other))}</code>, given to this report" in section
    assert "metrics_summary.json&#x27;s judge_audit differs" in section
    body = audit_body(run, other, seed=7, resamples=300)
    assert f'data-total="{body["calibration"]["disagreements_total"]}"' in section


def test_where_the_labels_are_found(tmp_path: Path) -> None:
    relative = write_figures_run(tmp_path / "a", labels="relative")
    found = find_labels(load_run(relative), None)
    assert found.path == tmp_path / "a" / "labels.jsonl"
    gone = write_figures_run(tmp_path / "b", labels="gone")
    page = render_report(load_run(gone))
    section = _section(page, "calibration")  # the written audit, and why no tables
    assert "which are not there any more: pass --human-labels FILE" in section
    assert 'id="disagreements"' not in section and 'id="audit-side-by-side"' in section
    (pooled,) = re.findall(r'<table class="confusion"', section)
    assert pooled
    none = write_figures_run(tmp_path / "c", labels=None)
    assert 'id="calibration"' not in render_report(load_run(none))
    page = render_report(load_run(none), tmp_path / "b" / "../a/labels.jsonl")
    assert 'id="disagreements"' in page  # labels given to a run that had none


def test_unreadable_labels_are_an_error_of_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_figures_run(tmp_path)
    with pytest.raises(ConfigError, match="no such file"):
        render_report(load_run(run), tmp_path / "missing.jsonl")
    assert main(["report", str(run), "--human-labels", str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["report", str(run), str(run), "--human-labels", "x.jsonl"]) == 2
    assert "--human-labels takes one run directory" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"record_id": "nope", "model": "m/alpha", "passed": true}\n{"x": \n')
    out = tmp_path / "page.html"
    assert main(["report", str(run), "--human-labels", str(bad), "--out", str(out)]) == 0
    section = _section(out.read_text(), "calibration")
    assert "rejected 2" in section  # both rows counted, the page written


def test_the_sections_take_their_room_from_the_previews(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page keeps to its budget: the items' previews shrink by what the sections take."""
    from pytest_legaleval.report import html as report_html

    run = write_figures_run(tmp_path)
    lines = [
        {**line, "model_response": line["model_response"] + " word" * 5000}
        for line in prediction_lines(3)
    ]
    (run / "predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    budget = 290_000
    monkeypatch.setattr(report_html, "PAGE_BYTES", budget)
    with_sections = render_report(load_run(run))
    summary = json.loads((run / "metrics_summary.json").read_text())
    for key in ("benchmarks", "judge_audit"):
        del summary[key]
    (run / "metrics_summary.json").write_text(json.dumps(summary))
    (run / "run_manifest.json").write_text(
        (run / "run_manifest.json").read_text().replace('"human_labels"', '"unused"')
    )
    without = render_report(load_run(run))
    assert len(with_sections.encode()) <= budget and len(without.encode()) <= budget
    assert _payload(with_sections)["preview"] < _payload(without)["preview"]


def test_write_report_passes_the_labels_on(tmp_path: Path) -> None:
    run = write_figures_run(tmp_path, labels=None)
    out = write_report(run, tmp_path / "page.html", human_labels=tmp_path / "labels.jsonl")
    assert 'id="disagreements"' in out.read_text()
