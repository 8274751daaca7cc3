"""The item view's data, without a browser: questions, replayed rubrics, epochs, transcripts.

The run directories are written by hand (``report_runs.write_review_dir``): what the page
shows is read from them, so each test states the files' facts and checks the page's.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.cli import main
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._runfiles import load_run
from pytest_legaleval.report import render_comparison, render_report, write_comparison
from pytest_legaleval.report.compare import CHANGES, pair_items
from pytest_legaleval.report.data import ORDER, PAGE_BYTES, ReportData, collect
from pytest_legaleval.report.epochs import epoch_line, reduce_epochs
from pytest_legaleval.report.inputs import InputRecords, iter_json_records

from ..integration.report_runs import (
    GIP_RUBRIC,
    HOSTILE,
    LEASE_CHOICES,
    LEASE_PROMPT,
    REVIEW_MODELS,
    write_review_dir,
)

_DATA = re.compile(r'<script type="application/json" id="([^"]+)">(.*?)</script>', re.S)


def _payloads(page: str) -> dict[str, Any]:
    return {key: json.loads(value) for key, value in _DATA.findall(page)}


def _element(page: str, task: str) -> str:
    """The hidden element of the first record of ``task`` (up to the next record's)."""
    start = page.index(f'data-task="{task}"')
    ends = [page.find(mark, start) for mark in ('<div class="q" ', "</div></div><script")]
    return page[start : min(e for e in ends if e > 0)]


def _row(data: ReportData, record: str, model: str) -> int:
    found = [
        i
        for i, row in enumerate(data.rows)
        if data.records[row[0]] == record and data.models[row[2]] == model
    ]
    assert len(found) == 1, (record, model, found)
    return found[0]


@pytest.fixture
def review(tmp_path: Path) -> Path:
    return write_review_dir(tmp_path, "a")


def test_question_and_choices_are_escaped_text_in_the_markup(review: Path) -> None:
    page = render_report(load_run(review))
    markup = _DATA.sub("", page)  # what is left once the JSON data elements are gone
    assert html.escape(LEASE_PROMPT) in markup
    for choice in LEASE_CHOICES:
        assert html.escape(choice) in markup
    assert "<b>abusive</b>" not in page and HOSTILE not in page  # never as markup
    assert page.count("<script") == 2  # the data element and the script: nothing injected
    # the gold choice is marked on its element; the chosen ones travel with each item
    lease = _element(page, "mcq")
    assert html.escape(LEASE_PROMPT) in lease
    assert re.findall(r'<li data-id="(\w)"( data-gold="1")?', lease) == [
        ("A", ""), ("B", ' data-gold="1"'), ("C", ""), ("D", ""),
    ]  # fmt: skip
    data = collect(load_run(review))
    assert data.details[_row(data, "q-lease", REVIEW_MODELS[0])]["ch"] == ["C"]
    assert data.details[_row(data, "q-deposit", REVIEW_MODELS[1])]["ch"] == []


def test_context_turns_and_references_are_in_the_records_element(review: Path) -> None:
    page = render_report(load_run(review))
    element = _element(page, "reference_qa")
    assert '<div class="q-context">Swiss law of obligations, pre-contractual duties.' in element
    assert re.findall(r'<li data-role="(\w+)">([^<]*)</li>', element) == [
        ("user", "I negotiate a lease."), ("assistant", "Go on."),
    ]  # fmt: skip
    assert (
        '<ol class="q-references"><li>Liability for fault in contract negotiations.</li></ol>'
        in element
    )


def test_replayed_criteria_get_their_titles_and_honest_reasons(review: Path) -> None:
    """The lines name criteria by UUID only; the titles come from the record's rubric."""
    data = collect(load_run(review))
    page = render_report(load_run(review))
    for cid, title, weight in GIP_RUBRIC:
        assert [title, weight] in data.criteria
        assert cid not in json.dumps(data.criteria)
    replayed = data.details[_row(data, "r-gip", REVIEW_MODELS[0])]
    shown = [data.criteria[replayed["c"][0] + i] for i in range(replayed["c"][1])]
    assert shown == [[t, w] for _, t, w in GIP_RUBRIC]
    # an empty rationale is "none", not a pointer to a line whose field is empty
    assert replayed["cr"] == ["The answer cites Law 2011-525 in full.", None,
                              "No decision is invented."]  # fmt: skip
    judged = data.details[_row(data, "r-gip", REVIEW_MODELS[1])]
    assert judged["cr"][1] is None
    assert "no reason recorded" in page  # the view's words for it (view.js)
    # the record's rubric is on its element, for items without a verdict per criterion
    rubric = re.search(r'data-task="rubric_qa" data-rubric="([\d ]+)"', page)
    assert rubric is not None
    assert [data.criteria[int(i)][0] for i in rubric.group(1).split()] == [
        t for _, t, _ in GIP_RUBRIC
    ]


def test_a_reason_the_page_has_no_room_for_says_its_length(review: Path) -> None:
    data = collect(load_run(review), page_bytes=0)
    assert data.preview == 0
    replayed = data.details[_row(data, "r-gip", REVIEW_MODELS[0])]
    assert replayed["cr"] == [len("The answer cites Law 2011-525 in full."), None,
                              len("No decision is invented.")]  # fmt: skip
    assert replayed["rn"] == len(f"r-gip by {REVIEW_MODELS[0]}") and "r" not in replayed


_EPOCH_CASES = [
    [("passed", 1.0)],
    [("passed", 1.0), ("failed", 0.0), ("passed", 1.0)],
    [("failed", 0.0), ("failed", 0.0), ("passed", 1.0)],
    [("passed", 1.0), ("failed", 0.0)],
    [("error", None), ("failed", 0.2), ("passed", 0.9)],
    [("error", None), ("skipped", None)],
    [("failed", 0.6), ("failed", 0.6), ("passed", 0.6)],
]


@pytest.mark.parametrize("reducer", ["mean", "majority", "all", "any"])
@pytest.mark.parametrize("epochs", _EPOCH_CASES)
def test_the_epoch_verdict_is_the_metrics_reducers(
    epochs: list[tuple[str, float | None]], reducer: str
) -> None:
    """Against ``metrics._epochs.group_items`` over the whole lines: same verdict and line."""
    from pytest_legaleval.metrics._epochs import group_items
    from pytest_legaleval.metrics._summary import item_category

    rows = []
    for n, (outcome, score) in enumerate(epochs):
        row: dict[str, Any] = {"record_id": "r", "dataset": "d", "model": "m", "epoch": n,
                               "outcome": outcome, "score": score,
                               "reason": "judge_error" if outcome == "error" else "x",
                               "details": {"threshold": 0.6}}  # fmt: skip
        rows.append(row)
    lines = [epoch_line(row, item_category(row), n + 1) for n, row in enumerate(rows)]
    verdict = reduce_epochs(lines[::-1], reducer)  # the file's order does not matter
    (item,) = group_items(rows, reducer).values()
    expected = item.line()
    assert verdict.category == item_category(expected)
    assert verdict.line == rows.index(item.lines[item.representative]) + 1
    if item.passed is not None and len(rows) > 1:
        assert verdict.score == pytest.approx(item.score, abs=1e-4)


def test_an_item_with_epochs_is_one_row_with_its_epochs_listed(review: Path) -> None:
    data = collect(load_run(review))
    assert len(data.rows) == 10  # 5 records x 2 models, though q-epochs has 3 lines each
    one = data.details[_row(data, "q-epochs", REVIEW_MODELS[0])]
    assert [(e[0], ORDER[e[1]], e[2]) for e in one["ep"]] == [
        (0, "passed", 1.0), (1, "failed", 0.0), (2, "passed", 1.0),
    ]  # fmt: skip
    row = data.rows[_row(data, "q-epochs", REVIEW_MODELS[0])]
    assert (ORDER[row[3]], row[4]) == ("passed", pytest.approx(0.6667))
    at = _row(data, "q-epochs", REVIEW_MODELS[1])
    other = data.rows[at]
    # failed: its texts are those of its first failed epoch
    assert ORDER[other[3]] == "failed" and other[8] == data.details[at]["ep"][0][3]
    assert "ep" not in data.details[_row(data, "q-lease", REVIEW_MODELS[0])]
    # the counts are of items, with the reduced verdict
    assert data.summary["total_items"] == 10
    assert (data.summary["passed_items"], data.summary["failed_items"]) == (5, 4)


def test_transcripts_are_matched_cut_and_told_apart(review: Path) -> None:
    data = collect(load_run(review))
    lines = [json.loads(x) for x in (review / "transcripts.jsonl").read_text().splitlines()]
    answers = [json.loads(x) for x in (review / "predictions.jsonl").read_text().splitlines()]
    shown = {i: d["x"] for i, d in enumerate(data.details) if "x" in d}
    assert len(shown) == 9  # every item but ref-culpa x m2, which has no line
    assert data.without_transcript == [_row(data, "ref-culpa", REVIEW_MODELS[1])]
    for at, x in shown.items():
        line = lines[x["l"] - 1]
        row = data.rows[at]
        assert (line["record_id"], line["model"]) == (
            data.records[row[0]], data.models[row[2]],
        )  # fmt: skip
        assert x["m"] == [[m["role"], m["content"]] for m in line["request"]["messages"]]
        assert x["p"] == '{"temperature": 0.0, "seed": 7}'
        # a reply equal to the response is not written twice
        same = line["reply"] == answers[row[8] - 1]["model_response"]
        assert x["a"] is True if same else x["a"] == line["reply"]
        assert x.get("t", False) == (x["l"] == 1)
    gip = shown[_row(data, "r-gip", REVIEW_MODELS[1])]
    assert [call[1] for call in gip["j"]] == [t for _, t, _ in GIP_RUBRIC]  # titles, not ids
    assert [call[3] for call in gip["j"]] == ['{"met": true}', None, None]


def test_a_run_without_transcripts_or_records_says_so(tmp_path: Path) -> None:
    run = write_review_dir(tmp_path, "a", transcripts=False)
    (run / "input_dataset.json").unlink()
    data = collect(load_run(run))
    assert data.notes == {
        "questions": "input_dataset.json is not in the run directory",
        "transcripts": "this run directory has no transcripts.jsonl",
    }
    assert not any(data.questions) and not any("x" in d for d in data.details)
    page = render_report(load_run(run))
    assert "input_dataset.json is not in the run directory" in page


def test_a_broken_input_dataset_leaves_the_rest_of_the_report(review: Path) -> None:
    path = review / "input_dataset.json"
    path.write_text(path.read_text()[:1500])  # cut in the middle of a record
    data = collect(load_run(review))
    assert data.notes["questions"].startswith("input_dataset.json cannot be read")
    assert len(data.rows) == 10 and len(data.details) == 10


def test_the_records_array_streams_in_any_chunk_size(tmp_path: Path) -> None:
    doc = {
        "run_id": "r", "mode": "inline", "count": 123456,
        "records": [{"payload": {"id": f"x{i}", "prompt": "é\u2028" * i}} for i in range(9)],
        "after": [1.5e10, None, True],
    }  # fmt: skip
    for indent in (None, 2):
        path = tmp_path / f"doc{indent}.json"
        path.write_text(json.dumps(doc, indent=indent, ensure_ascii=False))
        for chunk in (1, 3, 7, 64, 1 << 20):
            head: dict[str, Any] = {}
            assert list(iter_json_records(path, head, chunk)) == doc["records"]
            assert head == {k: v for k, v in doc.items() if k != "records"}


def test_records_listed_by_reference_are_read_from_their_dataset(tmp_path: Path) -> None:
    dataset = tmp_path / "data.jsonl"
    rows = [
        {"schema_version": "legal_eval_v1", "id": f"m{i}", "dataset": "ds", "task_type": "mcq",
         "prompt": f"Question {i} <of the file>?", "correct_choice_ids": ["A"],
         "choices": [{"id": "A", "text": "yes"}, {"id": "B", "text": "no"}]}
        for i in range(3)
    ]  # fmt: skip
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    digest = hashlib.sha256(dataset.read_bytes()).hexdigest()
    run = tmp_path / "run"
    run.mkdir()
    info = {"dataset_id": "ds", "format": "legal_eval_v1", "path": str(dataset), "sha256": digest}
    index = {"mode": "reference", "datasets": [info],
             "records": [{"record_id": f"m{i}", "dataset_id": "ds"} for i in range(3)]}  # fmt: skip
    (run / "input_dataset.json").write_text(json.dumps(index))
    found = list(InputRecords(run))
    assert [(d, r, p["prompt"]) for d, r, p in found] == [
        ("ds", f"m{i}", f"Question {i} <of the file>?") for i in range(3)
    ]
    dataset.write_text(dataset.read_text() + "\n")  # changed since the run
    records = InputRecords(run)
    assert list(records) == []
    assert "changed since the run" in records.note


def test_the_page_keeps_its_budget_with_every_kind_of_text(tmp_path: Path) -> None:
    run = write_review_dir(tmp_path, "a")
    long = "word " * 3000
    lines = [json.loads(x) for x in (run / "predictions.jsonl").read_text().splitlines()]
    for line in lines:
        line["model_response"] = long
    (run / "predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    previews = []
    for budget in (PAGE_BYTES, 290_000, 270_000, 260_000):
        data = collect(load_run(run), page_bytes=budget)
        size = sum(
            len(json.dumps(part, ensure_ascii=False).encode())
            for part in (data.rows, data.details, data.criteria)
        ) + sum(len(q.encode()) for q in data.questions)
        assert size <= budget - 250_000 or data.preview == 0, budget  # 250 kB: the page's rest
        previews.append(data.preview)
    assert previews[0] == 4000 and previews[1] > previews[2] > previews[3] > 0, previews


def test_two_runs_pair_their_items_changed_verdicts_first(tmp_path: Path) -> None:
    a, b = write_review_dir(tmp_path, "a"), write_review_dir(tmp_path, "b")
    data_a, data_b = collect(load_run(a)), collect(load_run(b))
    pairs = pair_items(data_a, data_b)
    named = [
        (data_a.records[data_a.rows[p[0]][0]], data_a.models[data_a.rows[p[0]][2]], CHANGES[p[2]])
        for p in pairs
    ]
    m1, m2 = REVIEW_MODELS
    assert named[:3] == [("q-deposit", m1, "regressed"), ("q-lease", m1, "fixed"),
                         ("ref-culpa", m2, "fixed")]  # fmt: skip
    assert {c for *_, c in named[3:]} == {"same"} and len(named) == 10
    page = render_comparison(load_run(a), load_run(b))
    data = _payloads(page)
    assert set(data) == {"report-data-a", "report-data-b", "compare-data"}
    assert data["compare-data"]["pairs"] == pairs
    # both runs' questions, as escaped text, each under its own ids
    assert page.count(html.escape(LEASE_PROMPT)) == 2
    assert 'id="a-q0"' in page and 'id="b-q0"' in page
    assert page.count("<script") == 4 and len(page.encode()) < 10_000_000


def test_items_only_one_run_has_come_last(tmp_path: Path) -> None:
    a, b = write_review_dir(tmp_path, "a"), write_review_dir(tmp_path, "b")
    lines = (b / "predictions.jsonl").read_text().splitlines()
    (b / "predictions.jsonl").write_text("\n".join(lines[1:]) + "\n")  # q-lease x m1 gone
    pairs = pair_items(collect(load_run(a)), collect(load_run(b)))
    assert [CHANGES[p[2]] for p in pairs][-1] == "only in A"
    assert pairs[-1][1] == -1


def test_runs_of_one_model_each_pair_by_record(tmp_path: Path) -> None:
    a, b = write_review_dir(tmp_path, "a"), write_review_dir(tmp_path, "b")
    for run, model in ((a, REVIEW_MODELS[0]), (b, "openai/m1-next")):
        lines = [json.loads(x) for x in (run / "predictions.jsonl").read_text().splitlines()]
        kept = [{**x, "model": model} for x in lines if x["model"] == REVIEW_MODELS[0]]
        (run / "predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in kept))
    pairs = pair_items(collect(load_run(a)), collect(load_run(b)))
    assert len(pairs) == 5 and all(p[0] >= 0 and p[1] >= 0 for p in pairs)
    # several models on each side and none shared: no pairing that could be right
    c = write_review_dir(tmp_path / "c", "b")
    lines = [json.loads(x) for x in (c / "predictions.jsonl").read_text().splitlines()]
    renamed = [{**x, "model": x["model"] + "-x"} for x in lines]
    (c / "predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in renamed))
    with pytest.raises(ConfigError, match="share no model"):
        pair_items(collect(load_run(write_review_dir(tmp_path / "d", "a"))), collect(load_run(c)))


def test_the_report_command_takes_one_run_or_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = write_review_dir(tmp_path, "a"), write_review_dir(tmp_path, "b")
    assert main(["report", str(a), str(b)]) == 0
    written = tmp_path / "run_review_b-vs-run_review_a.html"
    assert capsys.readouterr().out.strip() == str(written)
    assert "compare-data" in written.read_text(encoding="utf-8")
    assert main(["report", str(a), str(b), str(a)]) == 2
    assert "give one run directory, or two" in capsys.readouterr().err
    assert main(["report", str(a), str(tmp_path / "nothing")]) == 2
    assert "not a run directory" in capsys.readouterr().err
    target = write_comparison(a, b, tmp_path / "out" / "c.html")
    assert target.is_file()
    shutil.rmtree(tmp_path / "out")


def test_hostile_record_fields_stay_text_in_every_attribute(review: Path) -> None:
    """Roles, choice ids, task types and titles land in attributes: all are escaped."""
    path = review / "input_dataset.json"
    doc = json.loads(path.read_text())
    payload = doc["records"][0]["payload"]
    payload["task_type"] = HOSTILE
    payload["messages"] = [{"role": HOSTILE, "content": HOSTILE}]
    payload["choices"][0]["id"] = HOSTILE
    payload["correct_choice_ids"] = [HOSTILE]
    payload["attachments"] = [{"path": HOSTILE}]
    doc["records"][3]["payload"]["rubric"][0]["title"] = HOSTILE
    path.write_text(json.dumps(doc))
    page = render_report(load_run(review))
    assert page.count("<script") == 2 and page.count("</script>") == 2
    assert "<img" not in page and HOSTILE not in page
    escaped = html.escape(HOSTILE, quote=True)
    assert f'data-role="{escaped}"' in page and f'data-id="{escaped}" data-gold="1"' in page
    assert f'data-task="{escaped}"' in page
    data = collect(load_run(review))
    assert [HOSTILE, 10.0] in data.criteria  # the JSON element's escaping keeps it inert
