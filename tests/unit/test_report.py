"""The HTML report's page, without a browser: escaping, one count vocabulary, previews."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from pytest_legaleval.metrics._runfiles import load_run
from pytest_legaleval.report import render_report, write_report
from pytest_legaleval.report.budget import (
    MAX_PREVIEW,
    MAX_TITLE,
    MIN_TITLE,
    Budget,
    fit_preview,
    judge_cap,
    other_cap,
    title_cap,
    transcript_cap,
)
from pytest_legaleval.report.data import ORDER, collect
from pytest_legaleval.report.texts import cut_texts, item_texts

HOSTILE = "</td></tr></table></script><script>alert(1)</script><!--\"'&"
OLD_RUN = Path(__file__).resolve().parents[1] / "data" / "report" / "run_v0"


def _line(i: int, **extra: Any) -> dict[str, Any]:
    row = {
        "item_id": f"t.py::test_record[d/r{i}]",
        "record_id": f"r{i}",
        "dataset": "d",
        "model": "m<b>",
        "outcome": "passed" if i % 2 else "failed",
        "passed": bool(i % 2),
        "score": float(i % 2),
        "reason": "correct" if i % 2 else "wrong_answer",
        "explanation": "x" * 50,
        "model_response": "an answer",
        "latency_ms": 10.0 * i,
    }
    row.update(extra)
    return row


def _run(tmp_path: Path, rows: list[dict[str, Any]], **files: Any) -> Path:
    run = tmp_path / "run_x"
    run.mkdir(parents=True)
    manifest = {"run_id": "run_x", "status": "completed", "models": ["m<b>"], "datasets": []}
    (run / "run_manifest.json").write_text(json.dumps(manifest))
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name, content in files.items():
        target = run / name.replace("__", ".")
        if isinstance(content, list):
            target.write_text("".join(json.dumps(r) + "\n" for r in content))
        else:
            target.write_text(json.dumps(content))
    return run


def _payload(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page)
    assert found, "no data element"
    return json.loads(found.group(1))


def _cards(page: str) -> dict[str, str]:
    return {
        key: html.unescape(value)
        for key, value in re.findall(
            r'data-metric="([^"]+)"[^>]*><div class="label">[^<]*</div>'
            r'<div class="value">([^<]*)</div>',
            page,
        )
    }


def test_every_value_is_escaped_and_data_cannot_end_its_element(tmp_path: Path) -> None:
    criteria = [{"id": "c1", "title": HOSTILE, "weight": 1, "met": 0.0, "rationale": HOSTILE}]
    rows = [
        _line(0, record_id=HOSTILE, explanation=HOSTILE, model_response=HOSTILE,
              details={"attachment_warnings": [HOSTILE], "criteria": criteria}),
        _line(1, dataset=HOSTILE, reason=HOSTILE),
    ]  # fmt: skip
    page = render_report(load_run(_run(tmp_path, rows)))
    # ours only: the data element and the script; no text closes or opens an element
    assert page.count("<script") == 2 and page.count("</script>") == 2
    assert "<script>alert" not in page and "<!--" not in page
    assert "m<b>" not in page and "m&lt;b&gt;" in page  # escaped in the markup
    data = _payload(page)
    assert HOSTILE in data["records"] and HOSTILE in data["datasets"]
    detail = data["details"][0]
    assert detail["r"] == HOSTILE and detail["e"] == HOSTILE and detail["w"] == [HOSTILE]
    assert data["criteria"][detail["c"][0]] == [HOSTILE, 1] and detail["cr"] == [HOSTILE]
    script = page[page.index("<script>") :]
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script


def test_page_is_self_contained(tmp_path: Path) -> None:
    page = render_report(load_run(_run(tmp_path, [_line(i) for i in range(4)])))
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r'(?:src|href)\s*=\s*["\']?(?:https?:|//)', page)
    assert "<style>" in page and 'id="latency-histogram"' in page
    # without a summary file the cards are computed from the rows
    assert _cards(page)["pass_rate"] == "50.0%"


def test_no_latency_no_latency_chart_and_no_caption(tmp_path: Path) -> None:
    rows = [_line(i, latency_ms=None) for i in range(4)]
    page = render_report(load_run(_run(tmp_path, rows)))
    markup = page.split("<script", 1)[0].replace(str(tmp_path), "TMP")  # the path says it
    assert "latency" not in markup.lower() and "p95" not in markup
    assert 'id="score-histogram"' in page and "scores of graded items" in page
    rows = [_line(i, latency_ms=None, outcome="skipped", score=None) for i in range(2)]
    page = render_report(load_run(_run(tmp_path / "skipped", rows)))
    assert "<figcaption>" not in page and 'id="distributions"' not in page


def test_write_report_defaults_beside_the_run(tmp_path: Path) -> None:
    run = _run(tmp_path, [_line(1)])
    target = write_report(run)
    assert target == tmp_path / "run_x.html"
    assert sorted(p.name for p in run.iterdir()) == ["predictions.jsonl", "run_manifest.json"]


def test_an_old_run_directory_reads_with_the_new_counts() -> None:
    """run_v0 was written before the vocabulary: its metrics counted items as records."""
    old = json.loads((OLD_RUN / "metrics_summary.json").read_text())
    assert old["total_records"] == 39 and "total_items" not in old
    page = render_report(load_run(OLD_RUN))
    cards = _cards(page)
    assert (cards["records"], cards["items"]) == ("13", "39")
    assert [cards[k] for k in ("failed", "errors", "invalid", "passed", "skipped")] == [
        "10", "2", "3", "21", "3",
    ]  # fmt: skip
    assert cards["attachment_warnings"] == "3"
    assert "3 failed" in page  # records: mq6, ref3 (an error each) and the invalid one
    data = _payload(page)
    by_category = {c: 0 for c in ORDER}
    for row in data["rows"]:
        by_category[ORDER[row[3]]] += 1
    assert by_category == {"failed": 10, "error": 2, "invalid": 3, "passed": 21, "skipped": 3}
    # the slices were recomputed in the new vocabulary (the file's are old)
    model_rows = re.findall(r'<tr data-slice="model"><td>model</td><td>([^<]+)</td>'
                            r"<td class=num>(\d+)</td><td class=num>(\d+)</td>", page)  # fmt: skip
    assert model_rows == [(f"openai/{m}", "13", "13") for m in ("alpha", "beta", "gamma")]
    assert 'id="count-mismatch"' not in page


def test_a_summary_that_disagrees_with_the_items_is_said(tmp_path: Path) -> None:
    from pytest_legaleval.metrics._gates import block_from_rows

    rows = [_line(i) for i in range(4)]
    summary = block_from_rows(rows[:3])  # one line more in predictions.jsonl than counted
    page = render_report(load_run(_run(tmp_path, rows, metrics_summary__json=summary)))
    assert 'id="count-mismatch"' in page and "items 3" in page
    assert _cards(page)["items"] == "4"


def test_an_item_that_cannot_be_asked_counts_once(tmp_path: Path) -> None:
    """A missing attachment: a prediction line and a failure line for the same item."""
    row = _line(0, outcome="error", reason="invalid_record", score=None, passed=None)
    failure = {"item_id": row["item_id"], "record_id": "r0", "dataset_id": "d",
               "model": "m<b>", "reason": "invalid_record", "message": "gone"}  # fmt: skip
    rejected = {"item_id": "t.py::test_record[d/bad]", "record_id": "bad", "dataset_id": "d",
                "model": "m<b>", "reason": "invalid_record", "message": "choices: 1 < 2",
                "index": 5}  # fmt: skip
    run = _run(tmp_path, [row, _line(1)], failures__jsonl=[failure, rejected])
    data = collect(load_run(run, with_predictions=False))
    assert data.summary["invalid_items"] == 2 and data.summary["total_items"] == 3
    invalid = [r for r in data.rows if ORDER[r[3]] == "invalid"]
    assert [r[8] for r in invalid] == [1, -2]  # predictions.jsonl line 1, failures.jsonl line 2
    assert data.details[2]["e"] == "choices: 1 < 2"


def test_rubric_criteria_are_a_table_not_a_wall_of_text() -> None:
    criteria = [
        {"id": "a", "title": "Cites the statute", "weight": 3, "met": 0.0, "rationale": "r-a"},
        {"id": "b", "title": "Invents a case", "weight": -2, "met": 1.0, "rationale": "r-b"},
    ]
    judge = {"verdicts": [
        {"model": "j1", "criteria": [{"id": "a", "met": False, "rationale": "j1 on a"},
                                     {"id": "b", "met": True, "rationale": "j1 on b"}]},
        {"model": "j2", "criteria": [{"id": "a", "met": False, "rationale": "j2 on a"},
                                     {"id": "b", "met": True, "rationale": "j2 on b"}]},
    ]}  # fmt: skip
    row = _line(0, reason="below_threshold", explanation="judge score 0.00. not met: a …",
                details={"criteria": criteria, "threshold": 0.5}, judge=judge)  # fmt: skip
    texts = item_texts(row)
    assert texts["explanation"] == ""  # the table says it, criterion by criterion
    assert [c["reasons"] for c in texts["criteria"]] == [
        [("j1", "j1 on a"), ("j2", "j2 on a")],
        [("j1", "j1 on b"), ("j2", "j2 on b")],
    ]
    assert [c["key"] for c in texts["criteria"]] == [True, True]  # unmet, penalty
    out = cut_texts(texts, 4)
    assert out["c"] == [0, 2, "01"] and out["t"] == 0.5
    assert out["cr"] == [[[0, "j1…"], [1, "j2…"]], [[0, "j1…"], [1, "j2…"]]]
    # a judge error keeps its explanation
    error = item_texts({**row, "reason": "judge_error", "outcome": "error"})
    assert error["explanation"].startswith("judge score")


def test_texts_are_cut_and_keep_their_full_length() -> None:
    texts = item_texts(_line(0, model_response="y" * 100, explanation="short"))
    out = cut_texts(texts, 10)
    assert out["r"] == "y" * 9 + "…" and out["rn"] == 100
    assert out["e"] == "short" and "en" not in out  # shown whole
    assert cut_texts(texts, 0) == {"rn": 100, "en": 5}


def test_the_preview_length_fits_the_budget() -> None:
    budget = Budget()
    budget.add_all("urgent", [3000] * 100)
    budget.add_all("other", [3000] * 300)
    budget.freeze()
    assert fit_preview(budget, 10**9) == 4000  # everything fits: the maximum
    cap = fit_preview(budget, 100 * 500 + 300 * 125)
    assert cap == 500  # others get a quarter from 400 characters on
    cap = fit_preview(budget, 100 * 300)
    assert cap == 300 and budget.classes["other"].total(0) == 0  # below 400: failures only
    assert fit_preview(budget, 0) == 0


def test_every_class_of_text_shrinks_with_the_one_preview_length() -> None:
    """Brute force: the fitted length is the largest whose cut texts fit, none larger."""
    import random

    rng = random.Random(7)
    budget = Budget()
    texts = {kind: [rng.randrange(0, 5000) for _ in range(40)] for kind in budget.classes}
    for kind, lengths in texts.items():
        budget.add_all(kind, lengths)
    budget.freeze()
    caps = {"urgent": lambda p: p, "other": other_cap, "transcript": transcript_cap,
            "transcript_other": lambda p: transcript_cap(other_cap(p)), "judge": judge_cap,
            "judge_other": lambda p: judge_cap(other_cap(p)), "title": title_cap}  # fmt: skip
    assert set(caps) == set(budget.classes)

    def shown(p: int) -> int:
        return sum(min(n, caps[kind](p)) for kind, lengths in texts.items() for n in lengths)

    for room in (0, 5_000, 60_000, 250_000, 10**7):
        fitted = fit_preview(budget, room)
        assert budget.total(fitted) == shown(fitted)
        best = max((p for p in range(MAX_PREVIEW + 1) if shown(p) <= room), default=0)
        assert fitted == best, room
    assert title_cap(0) == MIN_TITLE and title_cap(10_000) == MAX_TITLE


def test_a_dimension_with_many_values_shows_the_first_hundred(tmp_path: Path) -> None:
    from pytest_legaleval.report.html import MAX_SLICE_ROWS

    rows = [_line(i, tags=[f"tag{i:03d}"]) for i in range(MAX_SLICE_ROWS + 20)]
    page = render_report(load_run(_run(tmp_path, rows)))
    assert page.count('<tr data-slice="tag">') == MAX_SLICE_ROWS
    assert "20 more slice values are in metrics_by_slice.json" in page


def test_a_run_without_items_renders(tmp_path: Path) -> None:
    page = render_report(load_run(_run(tmp_path, [])))
    assert _cards(page)["items"] == "0" and _cards(page)["pass_rate"] == "–"
    assert _payload(page)["rows"] == [] and 'id="distributions"' not in page
