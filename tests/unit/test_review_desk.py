"""The review sample (seeded, stratified, written once), the blind view and the labels desk."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from pytest_legaleval.datasets.review import (
    ReviewDesk,
    ReviewRefused,
    draw_sample,
    open_sample,
    review_folder,
    size_for_half_width,
)
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._human_labels import read_human_labels
from pytest_legaleval.metrics._ppi import labels_needed

from ..review_run import JUDGE_MARK, MODELS, RUN_ID, predictions, write_run

VERDICT_KEYS = ("score", "passed", "outcome", "judge", "reason")


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_run(tmp_path)


def _keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_the_sample_is_stratified_proportionally_seeded_and_recorded(run: Path) -> None:
    doc = draw_sample(run, size=27, seed=4, double=1 / 3)
    assert doc["seed"] == 4 and doc["run_id"] == RUN_ID and doc["size"] == 27
    assert doc["population"]["items"] == 54 and doc["shared"] == 9
    # 6 strata (3 models × 2 policies): rubric ones hold 12 items, reference ones 6.
    counts = Counter(item["stratum"] for item in doc["items"])
    for stratum, size in doc["population"]["strata"].items():
        assert counts[stratum] in (27 * size // 54, 27 * size // 54 + 1)
    assert sum(counts.values()) == 27
    keys = {(i["record_id"], i["model"]) for i in doc["items"]}
    assert len(keys) == 27  # without replacement
    again = draw_sample(run, size=27, seed=4, double=1 / 3)
    assert [(i["record_id"], i["model"], i["shared"]) for i in again["items"]] == [
        (i["record_id"], i["model"], i["shared"]) for i in doc["items"]
    ]
    other = draw_sample(run, size=27, seed=5)
    assert {(i["record_id"], i["model"]) for i in other["items"]} != keys
    ids = [i["id"] for i in doc["items"]]
    assert len(set(ids)) == 27 and all(i.startswith("it_") and len(i) == 15 for i in ids)
    by_dataset = draw_sample(run, size=10, seed=1, strata=("task_type",))
    assert by_dataset["strata"] == ["task_type"]
    assert Counter(i["stratum"] for i in by_dataset["items"]) == {
        "task_type=rubric_qa": 7, "task_type=reference_qa": 3,
    }  # fmt: skip


def test_half_width_sizes_the_sample_with_labels_needed(run: Path) -> None:
    assert size_for_half_width(0.2, 1000) == labels_needed(0.2) == 25
    assert size_for_half_width(0.01, 54) == 54  # capped at the population
    assert draw_sample(run, half_width=0.2, seed=1)["requested"] == {
        "half_width": 0.2, "labels_needed": 25,
    }  # fmt: skip
    for bad in ({"size": 0}, {"size": 5, "half_width": 0.1}, {}, {"size": 5, "double": 1.5},
                {"half_width": 1.2}, {"size": 5, "strata": ("no such",)}):  # fmt: skip
        with pytest.raises(ConfigError):
            draw_sample(run, **bad)  # type: ignore[arg-type]


def test_the_sample_is_written_once_and_later_raters_join_it(run: Path, tmp_path: Path) -> None:
    folder = review_folder(run)
    assert folder == run.parent / f"{RUN_ID}.review"
    first, created = open_sample(folder, run, size=12, seed=3, double=0.5)
    text = (folder / "sample.json").read_text()
    second, again = open_sample(folder, run, size=40, seed=9)  # options of a later rater
    assert created and not again and second.items == first.items
    assert (folder / "sample.json").read_text() == text
    desk = ReviewDesk(folder, first, run)
    assert desk.progress("ann")["total"] == 12 and desk.progress("ann")["seat"] == 0
    assert desk.progress("bob")["total"] == 6 and desk.progress("bob")["seat"] == 1
    with pytest.raises(ConfigError, match="every seat"):
        desk.progress("cid")
    (folder / "seats.json").write_text("[1, 2")
    with pytest.raises(ConfigError, match="cannot read the raters' seats"):
        ReviewDesk(folder, first, run).progress("ann")
    (folder / "seats.json").write_text(json.dumps({"raters": {"ann": 0, "bob": 1}}))
    order = [i.id for i in first.order("ann", 0)]
    assert order == [i.id for i in first.order("ann", 0)] != [i.id for i in first.items]
    other = write_run(tmp_path / "other")
    other_manifest = other / "run_manifest.json"
    other_manifest.write_text(json.dumps({"run_id": "run_01OTHER000000000000000000"}))
    with pytest.raises(ConfigError, match="is the sample of run"):
        open_sample(folder, other, size=3)


def test_the_view_is_blind_and_opaque(run: Path) -> None:
    folder = review_folder(run)
    sample, _ = open_sample(folder, run, size=54, seed=2)
    desk = ReviewDesk(folder, sample, run)
    lines = predictions(run)
    secrets = {JUDGE_MARK, *MODELS, "below_threshold", "judge-model"}
    secrets |= {line["item_id"] for line in lines} | {line["record_id"] for line in lines}
    for _ in range(3):
        shown = desk.next_item("ann")
        assert shown is not None
        text = json.dumps(shown)
        assert not [s for s in secrets if s in text], text
        assert not [k for k in _keys(shown) if any(v in k for v in VERDICT_KEYS)]
        item = shown["item"]
        assert item["id"].startswith("it_") and item["response"].startswith("Answer number")
        desk.submit("ann", {"item": item["id"], "passed": True})
    rubric = next(i for i in sample.items if i.record_id == "rec-00")
    view = desk.item("ann", rubric.id)["item"]
    assert view["rubric"][0] == {"id": "c0-a", "title": "Names the statute 0",
                                 "description": "The main law.", "weight": 2.0}  # fmt: skip
    assert view["context"] == "Lease clause 7." and view["grade_allowed"] is True


def test_labels_are_appended_in_the_human_labels_format_and_resume(run: Path) -> None:
    folder = review_folder(run)
    sample, _ = open_sample(folder, run, size=6, seed=8)
    desk = ReviewDesk(folder, sample, run)
    first = desk.next_item("ann")
    assert first is not None
    item = first["item"]
    criteria = {c["id"]: i == 0 for i, c in enumerate(item["rubric"])}
    body = {"item": item["id"], "passed": False, "note": "misses the deadline", "seconds": 12.5,
            "criteria": criteria, **({"grade": 0.25} if item["grade_allowed"] else {})}  # fmt: skip
    answer = desk.submit("ann", body)
    assert answer["lines"] == 1 + len(criteria) and answer["progress"]["done"] == 1
    path = folder / "labels" / "ann.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows[0]["rater"] == "ann" and rows[0]["comment"] == "misses the deadline"
    assert rows[0]["seconds"] == 12.5 and rows[0]["review_item"] == item["id"]
    assert "criterion_id" not in rows[0] and [r.get("criterion_id") for r in rows[1:]] == list(
        criteria
    )
    read = read_human_labels(path)  # the audit reads the file as written
    assert read.errors == [] and len(read.labels) == len(rows)
    assert read.labels[0].passed is False and read.labels[0].rater == "ann"
    # a new desk (a restarted server) resumes where the rater stopped
    again = ReviewDesk(folder, sample, run)
    progress = again.progress("ann")
    assert progress["done"] == 1 and progress["submitted"] == [item["id"]]
    assert progress["seconds_median"] == 12.5
    following = again.next_item("ann")
    assert following is not None and following["item"]["id"] != item["id"]
    assert again.item("ann", item["id"])["submitted"]["note"] == "misses the deadline"


def test_bad_submissions_are_refused_and_change_nothing(run: Path) -> None:
    folder = review_folder(run)
    sample, _ = open_sample(folder, run, size=54, seed=8)
    desk = ReviewDesk(folder, sample, run)
    shown = desk.next_item("ann")
    assert shown is not None
    opaque = shown["item"]["id"]
    reference = next(i.id for i in sample.items if i.record_id == "rec-15")
    desk.submit("ann", {"item": opaque, "passed": True})
    path = folder / "labels" / "ann.jsonl"
    before = path.read_bytes()
    cases = [
        ({"item": opaque, "passed": False}, 409, "already submitted"),
        ({"item": "it_000000000000", "passed": True}, 404, "unknown item"),
        ({"item": rubric_id(sample), "passed": "yes"}, 422, "passed must be true or false"),
        ({"item": rubric_id(sample), "note": "no verdict"}, 422, "a verdict is required"),
        ({"item": rubric_id(sample), "passed": True, "grade": 2}, 422, "grade must be"),
        ({"item": rubric_id(sample), "passed": True, "criteria": {"zz": True}}, 422, "criterion"),
        ({"item": rubric_id(sample), "passed": True, "verdict": "pass"}, 422, "unknown field"),
        ({"item": rubric_id(sample), "passed": True, "note": "x" * 5000}, 422, "note"),
        ({"item": reference, "passed": True, "seconds": -1}, 422, "seconds"),
        ([1, 2], 422, "JSON object"),
    ]
    for body, status, text in cases:
        with pytest.raises(ReviewRefused, match=text) as caught:
            desk.submit("ann", body)
        assert caught.value.status == status
    assert path.read_bytes() == before
    assert desk.progress("ann")["done"] == 1


def rubric_id(sample: object) -> str:
    items = sample.items  # type: ignore[attr-defined]
    return next(i.id for i in items if i.record_id == "rec-01" and i.model == MODELS[1])


def test_an_item_whose_judge_scores_takes_a_grade_alone(run: Path) -> None:
    folder = review_folder(run)
    sample, _ = open_sample(folder, run, size=3, seed=8)
    desk = ReviewDesk(folder, sample, run)
    shown = desk.next_item("ann")
    assert shown is not None and shown["item"]["grade_allowed"]
    desk.submit("ann", {"item": shown["item"]["id"], "grade": 0.75})
    read = read_human_labels(folder / "labels" / "ann.jsonl")
    assert read.errors == [] and read.labels[0].score == 0.75 and read.labels[0].passed is None


def test_a_torn_last_line_is_left_out_and_the_next_label_starts_a_new_line(run: Path) -> None:
    folder = review_folder(run)
    sample, _ = open_sample(folder, run, size=4, seed=8)
    desk = ReviewDesk(folder, sample, run)
    shown = desk.next_item("ann")
    assert shown is not None
    desk.submit("ann", {"item": shown["item"]["id"], "passed": True})
    path = folder / "labels" / "ann.jsonl"
    with path.open("a") as handle:
        handle.write('{"record_id": "rec-0')  # a crash in the middle of the next write
    again = ReviewDesk(folder, sample, run)
    assert again.progress("ann")["done"] == 1
    following = again.next_item("ann")
    assert following is not None
    again.submit("ann", {"item": following["item"]["id"], "passed": False})
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["passed"] is False  # the torn line is cut
    assert ReviewDesk(folder, sample, run).progress("ann")["done"] == 2
    path.write_text("not json\n" + path.read_text())
    with pytest.raises(ConfigError, match=r"ann\.jsonl:1: not a label row"):
        ReviewDesk(folder, sample, run).progress("ann")


def test_attachments_are_shown_as_text_from_the_dataset_s_folder_only(
    run: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    (data / "docs").mkdir(parents=True)
    (data / "dataset.jsonl").write_text("")
    (data / "docs" / "lease.txt").write_text("Clause 7: no subletting without consent.")
    (tmp_path / "secret.txt").write_text("outside the dataset's folder")
    path = run / "input_dataset.json"
    document = json.loads(path.read_text())
    document["datasets"] = [{"path": str(data / "dataset.jsonl")}]
    document["records"][2]["payload"]["attachments"] = [
        {"path": "docs/lease.txt", "title": "The lease", "kind": "text"},
        {"path": "../secret.txt"},
        {"path": "docs/missing.txt"},
    ]
    path.write_text(json.dumps(document))
    folder = review_folder(run)
    sample, _ = open_sample(folder, run, size=54, seed=1)
    desk = ReviewDesk(folder, sample, run)
    item = next(i for i in sample.items if i.record_id == "rec-02")
    shown = desk.item("ann", item.id)["item"]["attachments"]
    assert shown[0] == {"title": "The lease", "text": "Clause 7: no subletting without consent.",
                        "note": ""}  # fmt: skip
    assert shown[1]["text"] == "" and "not shown" in shown[1]["note"]
    assert shown[2]["text"] == "" and "not next to" in shown[2]["note"]


def test_two_desks_on_one_labels_file_never_take_an_item_twice(run: Path) -> None:
    # Two replicas of the service (or two review processes) each hold a desk; the labels
    # file, read again under its lock, is the one truth.
    folder = review_folder(run)
    sample, _ = open_sample(folder, run, size=4, seed=8)
    first, second = ReviewDesk(folder, sample, run), ReviewDesk(folder, sample, run)
    shown = second.next_item("ann")
    assert shown is not None
    first.submit("ann", {"item": shown["item"]["id"], "passed": True})
    with pytest.raises(ReviewRefused, match="already submitted") as caught:
        second.submit("ann", {"item": shown["item"]["id"], "passed": False})
    assert caught.value.status == 409
    rows = (folder / "labels" / "ann.jsonl").read_text().splitlines()
    assert len(rows) == 1 and json.loads(rows[0])["passed"] is True
    assert second.progress("ann")["done"] == 1
