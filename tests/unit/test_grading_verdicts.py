"""Recorded verdicts: LBR's real run replayed and re-scored, our predictions, hostile rows."""

from __future__ import annotations

import json
import socket
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_legaleval.grading._policies import PolicyBook, parse_policy
from pytest_legaleval.grading._scoring import clipped_score, minmax_score
from pytest_legaleval.grading._verdicts import (
    RecordedVerdict,
    VerdictFile,
    read_verdicts,
    score_verdict,
)
from pytest_legaleval.records import Criterion, Record

from .. import lbr_run

BOOK = PolicyBook()


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any connection attempt fails the test: replaying verdicts pays for nothing."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    yield


@pytest.fixture(scope="module")
def lbr() -> tuple[VerdictFile, list[dict[str, Any]]]:
    rows = [json.loads(line) for line in lbr_run.gz_lines(lbr_run.JUDGMENTS)]
    table = read_verdicts(lbr_run.gz_lines(lbr_run.JUDGMENTS), records=lbr_run.records())
    return table, rows


# ------------------------------------------------------------------ LBR's real run
def test_lbrs_run_reads_without_a_problem(lbr: tuple[VerdictFile, list[dict[str, Any]]]) -> None:
    table, rows = lbr
    assert table.problems == []
    assert len(rows) == 999 and table.not_judged == 615  # MCQ: graded without a judge
    kinds = Counter(v.kind for v in table.verdicts.values())
    assert kinds == {"rubric": 304, "reference": 80}
    failed = [v for v in table.verdicts.values() if v.error or v.failed_criteria]
    assert len(failed) == sum(r["parse_error"] for r in rows if r["judge_mode"] != "mcq") == 44


def test_replay_reproduces_lbrs_score_and_pass_where_its_judge_calls_succeeded(
    lbr: tuple[VerdictFile, list[dict[str, Any]]], no_network: None
) -> None:
    table, rows = lbr
    records = lbr_run.records()
    by_key = {(r["example_id"], r["candidate_name"]): r for r in rows}
    matched = errors = 0
    for key, verdict in table.verdicts.items():
        row = by_key[key[:2]]
        policy = BOOK.for_record(records[verdict.record_id])
        scored = score_verdict(verdict, policy)
        if row["parse_error"]:
            # failed or unparseable: a judge error, never LBR's 0
            assert scored.reason == "judge_error" and scored.score is None, key
            assert row["score"] < 1.0
            errors += 1
            continue
        assert scored.score is not None
        assert scored.score == pytest.approx(row["score"], abs=1e-9), key
        assert scored.passed is row["pass"], key
        matched += 1
    assert (matched, errors) == (340, 44)


def _our_pass_counts(table: VerdictFile, rows: list[dict[str, Any]]) -> Counter[str]:
    """Per model: judged items re-scored under their policy, plus the MCQ items re-graded
    from the answer LBR extracted (LBR's programmatic grade; our extractor is tested
    elsewhere)."""
    records = lbr_run.records()
    passes: Counter[str] = Counter()
    for row in rows:
        model, record = row["candidate_name"], records[row["example_id"]]
        if row["judge_mode"] == "mcq":
            passes[model] += row["mcq"]["selected_answer"] in record.correct_choice_ids
            continue
        verdict = table.verdicts[(record.id, model, 0)]
        passes[model] += score_verdict(verdict, BOOK.for_record(record)).passed is True
    return passes


def test_per_model_pass_counts_differ_from_lbrs_summary_only_by_judge_errors(
    lbr: tuple[VerdictFile, list[dict[str, Any]]],
) -> None:
    table, rows = lbr
    ours = _our_pass_counts(table, rows)
    summary = lbr_run.summary()["models"]
    lbr_passes_on_errors: Counter[str] = Counter(
        r["candidate_name"] for r in rows if r["judge_mode"] != "mcq" and r["parse_error"]
        and r["pass"]
    )  # fmt: skip
    for model, numbers in summary.items():
        assert ours[model] == numbers["pass_count"] - lbr_passes_on_errors[model], model
    assert sum(lbr_passes_on_errors.values()) == 2


def test_rescoring_the_run_under_clipped_and_minmax_makes_no_request(
    lbr: tuple[VerdictFile, list[dict[str, Any]]], no_network: None
) -> None:
    table, _ = lbr
    records = lbr_run.records()
    base = BOOK.get("prbench_v1")
    variants = {
        scoring: parse_policy(
            {"id": f"prbench_{scoring}", "scoring": scoring}, source="t", base=base
        )
        for scoring in ("minmax", "clipped")
    }
    passed: Counter[str] = Counter()
    rubric = [v for v in table.verdicts.values() if v.kind == "rubric" and not v.failed_criteria]
    assert len(rubric) == 269
    for verdict in rubric:
        assert records[verdict.record_id].rubric
        for scoring, policy in variants.items():
            scored = score_verdict(verdict, policy)
            passed[scoring] += bool(scored.passed)
            assert scoring in scored.explanation
    # minmax is never below clipped, so clipped passes are a subset; at 0.7 the same 17
    assert passed == {"minmax": 17, "clipped": 17}


def test_the_issues_figure_on_lbrs_criterion_grades(
    lbr: tuple[VerdictFile, list[dict[str, Any]]],
) -> None:
    # Issue 19: 73 of 304 rubric items pass under our old rule (clipped, 0.5) against 19
    # under LBR's (minmax, 0.7), failed criteria counted 0 as LBR did. Most of the gap is
    # the threshold: at one threshold the formulas give 83 vs 73 (0.5) and 19 vs 19 (0.7).
    _, rows = lbr
    items = [
        [(g["weight"], g["grade"]) for g in r["criterion_grades"]]
        for r in rows
        if r["judge_mode"] == "rubric"
    ]
    assert len(items) == 304
    count = Counter()
    gaps = []
    for grades in items:
        minmax, clipped = minmax_score(grades), clipped_score(grades)
        gaps.append(minmax - clipped)
        for threshold in (0.5, 0.7):
            count["minmax", threshold] += minmax >= threshold
            count["clipped", threshold] += clipped >= threshold
    assert count["clipped", 0.5] == 73 and count["minmax", 0.7] == 19
    assert count["minmax", 0.5] == 83 and count["clipped", 0.7] == 19
    assert sum(gaps) / len(gaps) == pytest.approx(0.0406, abs=1e-4)
    assert max(gaps) == pytest.approx(0.2794, abs=1e-4)


# ------------------------------------------------------------------ LBR's row shapes
RECORD = Record(
    id="r1",
    dataset="prbench",
    task_type="rubric_qa",
    prompt="Advise.",
    rubric=(Criterion("c1", "A", weight=3.0), Criterion("c2", "B"), Criterion("p", "C", weight=-2)),
)
REFERENCE = Record(
    id="q1", dataset="lexam", task_type="reference_qa", prompt="Q?", reference_answers=("R",)
)
RECORDS = {RECORD.id: RECORD, REFERENCE.id: REFERENCE}


def _lbr_rubric(**extra: Any) -> dict[str, Any]:
    grades = [
        {"criterion_id": "c1", "weight": 3.0, "grade": 1.0, "judge_rationale": "cited"},
        {"criterion_id": "c2", "weight": 1.0, "grade": 0.0, "judge_rationale": "absent"},
        {"criterion_id": "p", "weight": -2.0, "grade": 0.0, "judge_rationale": "none"},
    ]
    row = {
        "example_id": "r1",
        "candidate_name": "m",
        "judge_mode": "rubric",
        "score": 5 / 6,
        "pass": True,
        "parse_error": False,
        "criterion_grades": grades,
    }
    row.update(extra)
    return row


def _read(*rows: object, records: dict[str, Record] | None = RECORDS) -> VerdictFile:
    lines = [row if isinstance(row, str | bytes) else json.dumps(row) for row in rows]
    return read_verdicts(lines, records=records)


def test_an_lbr_rubric_row_becomes_typed_criterion_verdicts() -> None:
    table = _read(_lbr_rubric())
    verdict = table.verdicts["r1", "m", 0]
    assert (verdict.kind, verdict.source, verdict.line, verdict.error) == ("rubric", "lbr", 1, None)
    assert [(c.criterion_id, c.weight, c.grade, c.rationale) for c in verdict.criteria] == [
        ("c1", 3.0, 1.0, "cited"),
        ("c2", 1.0, 0.0, "absent"),
        ("p", -2.0, 0.0, "none"),
    ]
    scored = score_verdict(verdict, BOOK.get("prbench_v1"))
    assert scored.score == pytest.approx(5 / 6) and scored.passed is True
    # a fractional grade (LBR took a judge's "score" as the grade) counts as it is
    half = _lbr_rubric()
    half["criterion_grades"][1]["grade"] = 0.5
    split = _read(half).verdicts["r1", "m", 0]
    assert score_verdict(split, BOOK.get("prbench_v1")).score == pytest.approx(5.5 / 6)
    # recomputed, not copied: a wrong recorded score does not leak in
    lying = _read(_lbr_rubric(score=0.0, **{"pass": False})).verdicts["r1", "m", 0]
    assert score_verdict(lying, BOOK.get("prbench_v1")).score == pytest.approx(5 / 6)
    assert (lying.recorded_score, lying.recorded_pass) == (0.0, False)


def test_a_failed_criterion_is_a_judge_error_or_scored_over_the_judged_ones() -> None:
    row = _lbr_rubric(parse_error=True)
    row["criterion_grades"][1].update(grade=0.0, judge_call_failed=True)
    verdict = _read(row).verdicts["r1", "m", 0]
    (failed,) = verdict.failed_criteria
    assert failed.criterion_id == "c2" and failed.error == "LBR: the judge call failed"
    strict = score_verdict(verdict, BOOK.get("prbench_v1"))
    assert (strict.score, strict.passed, strict.reason) == (None, None, "judge_error")
    assert strict.explanation == "1 of 3 criterion verdicts failed"
    lenient = parse_policy(
        {"id": "l", "on_partial_judge_failure": "score_judged"},
        source="t",
        base=BOOK.get("prbench_v1"),
    )
    partial = score_verdict(verdict, lenient)
    assert partial.score == pytest.approx(5 / 5)  # c1 and p judged: (3 + 2) / (3 + 2)
    assert "2 judged of 3 criteria (denominator 5 of 6)" in partial.explanation


def test_lbr_native_rows_and_criteria_only_rows() -> None:
    native = _lbr_rubric(criterion_grades=None)
    del native["criterion_grades"]
    native["raw_judge"] = {
        "calls": [
            {"criterion_id": "c1", "score": 1.0, "parse_error": False, "error": None},
            {"criterion_id": "c2", "score": 0.0, "parse_error": True, "error": None},
            {"criterion_id": "p", "score": 0.0, "parse_error": False, "error": None},
        ]
    }
    verdict = _read(native).verdicts["r1", "m", 0]
    assert [c.grade for c in verdict.criteria] == [1.0, None, 0.0]
    only = {k: v for k, v in _lbr_rubric().items() if k != "criterion_grades"}
    only["criteria"] = {"c1": 1.0, "c2": 0.0, "p": 0.0}
    assert [c.grade for c in _read(only).verdicts["r1", "m", 0].criteria] == [1.0, 0.0, 0.0]
    # failed, but LBR did not record which criterion: the whole item is a judge error
    unknown = _read({**only, "parse_error": True}).verdicts["r1", "m", 0]
    assert unknown.error is not None and "which criterion is not recorded" in unknown.error


def test_lbr_reference_rows() -> None:
    good = {
        "example_id": "q1", "candidate_name": "m", "judge_mode": "reference", "score": 0.3,
        "criteria": {"overall": 0.3},
    }  # fmt: skip
    failed = {**good, "candidate_name": "n", "score": 0.0, "parse_error": True}
    down = {**good, "candidate_name": "o", "score": 0.0, "judge_call_failed": True}
    table = _read(good, failed, down)
    policy = BOOK.get("lexam_oq_v1")
    assert score_verdict(table.verdicts["q1", "m", 0], policy).score == 0.3
    assert score_verdict(table.verdicts["q1", "m", 0], policy).passed is False
    assert score_verdict(table.verdicts["q1", "m", 0], BOOK.get("lexam")).score == 0.3
    for model, why in (("n", "could not be parsed"), ("o", "call failed")):
        scored = score_verdict(table.verdicts["q1", model, 0], policy)
        assert scored.reason == "judge_error" and why in scored.explanation


def test_an_lbr_reference_score_comes_from_its_verdict_never_from_the_recorded_total() -> None:
    base = {"example_id": "q1", "judge_mode": "reference", "criteria": {"overall": 0.8}}
    stripped = {**base, "candidate_name": "a"}  # no score, pass or aggregation at all
    disagreeing = {**base, "candidate_name": "b", "score": 0.1, "pass": False}
    total_only = {"example_id": "q1", "candidate_name": "c", "judge_mode": "reference",
                  "score": 0.9, "pass": True}  # fmt: skip
    table = _read(stripped, disagreeing, total_only)
    policy = BOOK.get("lexam_oq_v1")
    for model in ("a", "b"):
        scored = score_verdict(table.verdicts["q1", model, 0], policy)
        assert (scored.score, scored.passed) == (0.8, True), model
    assert table.verdicts["q1", "b", 0].recorded_score == 0.1  # kept for comparison only
    assert [(p.line, p.code) for p in table.problems] == [
        (2, "score_mismatch"),
        (3, "missing_field"),
    ]
    no_verdict = score_verdict(table.verdicts["q1", "c", 0], policy)
    assert no_verdict.reason == "judge_error" and "criteria.overall" in no_verdict.explanation


def test_lbrs_run_replays_the_same_without_its_recorded_totals(
    lbr: tuple[VerdictFile, list[dict[str, Any]]], no_network: None
) -> None:
    table, rows = lbr
    records = lbr_run.records()
    stripped = [
        json.dumps({k: v for k, v in row.items() if k not in ("score", "pass", "aggregation")})
        for row in rows
    ]
    bare = read_verdicts(stripped, records=records)
    assert bare.problems == [] and bare.verdicts.keys() == table.verdicts.keys()
    by_key = {(r["example_id"], r["candidate_name"]): r for r in rows}
    outcomes = Counter()
    for key, verdict in bare.verdicts.items():
        scored = score_verdict(verdict, BOOK.for_record(records[verdict.record_id]))
        row = by_key[key[:2]]
        if row["parse_error"] or row.get("judge_call_failed"):
            assert scored.reason == "judge_error", key
            outcomes["judge_error"] += 1
            continue
        assert scored.score == pytest.approx(row["score"], abs=1e-9), key
        assert scored.passed is row["pass"], key
        outcomes[verdict.kind] += 1
    # before verdicts were read for reference rows, their 71 became judge errors here
    assert outcomes == {"rubric": 269, "reference": 71, "judge_error": 44}


# ------------------------------------------------------------------ hostile rows
def test_hostile_rows_are_reported_with_line_numbers_and_never_crash() -> None:
    duplicate = _lbr_rubric()
    unknown_criterion = _lbr_rubric(candidate_name="u")
    unknown_criterion["criterion_grades"].append({"criterion_id": "zz", "grade": 1.0})
    missing = _lbr_rubric(candidate_name="v")
    missing["criterion_grades"].pop(1)
    wrong_grade = _lbr_rubric(candidate_name="w")
    wrong_grade["criterion_grades"][0]["grade"] = "yes"
    wrong_weight = _lbr_rubric(candidate_name="x")
    wrong_weight["criterion_grades"][0]["weight"] = 5.0
    table = _read(
        _lbr_rubric(),  # 1: good
        "{not json",  # 2
        "[1, 2]",  # 3
        {"example_id": 7, "candidate_name": "m"},  # 4
        duplicate,  # 5
        unknown_criterion,  # 6
        missing,  # 7
        wrong_grade,  # 8
        wrong_weight,  # 9
        {**_lbr_rubric(), "example_id": "nope"},  # 10
        {**_lbr_rubric(), "judge_mode": "essay"},  # 11
        {**_lbr_rubric(candidate_name="y"), "criterion_grades": "all met"},  # 12
        b"\xff\xfe{",  # 13
        "",  # blank lines are skipped
        {**_lbr_rubric(candidate_name="z"), "example_id": "q1"},  # 15
        "[" * 100_000,  # 16: nested too deep for the parser
        {"example_id": "r1", "candidate_name": "mcq", "task_type": "mcq"},  # not judged
    )
    codes = [(p.line, p.code) for p in table.problems]
    assert codes == [
        (2, "invalid_json"),
        (3, "wrong_type"),
        (4, "missing_field"),
        (5, "duplicate"),
        (6, "unknown_criterion"),
        (7, "missing_criterion"),
        (8, "wrong_type"),
        (9, "weight_mismatch"),
        (10, "unknown_record"),
        (11, "wrong_type"),
        (12, "wrong_type"),
        (13, "invalid_json"),
        (15, "kind_mismatch"),
        (16, "invalid_json"),
    ]
    assert table.not_judged == 1
    assert "line 5 (r1, m): a second verdict" in str(table.problems[3])
    assert set(table.verdicts) == {("r1", model, 0) for model in "muvwxy"}
    # what survived is usable: unknown criteria dropped, missing or bad ones failed
    assert [c.criterion_id for c in table.verdicts["r1", "u", 0].criteria] == ["c1", "c2", "p"]
    assert table.verdicts["r1", "v", 0].failed_criteria[0].criterion_id == "c2"
    assert table.verdicts["r1", "w", 0].failed_criteria[0].criterion_id == "c1"
    assert table.verdicts["r1", "x", 0].criteria[0].weight == 3.0  # the record's weight
    assert table.verdicts["r1", "y", 0].error is not None
    for verdict in table.verdicts.values():
        score_verdict(verdict, BOOK.get("prbench_v1"))  # never raises


def test_without_records_the_files_own_ids_and_weights_are_used() -> None:
    row = _lbr_rubric()
    del row["criterion_grades"][1]["weight"]
    verdict = _read(row, records=None).verdicts["r1", "m", 0]
    assert [(c.criterion_id, c.weight) for c in verdict.criteria] == [
        ("c1", 3.0),
        ("c2", 1.0),
        ("p", -2.0),
    ]


# ------------------------------------------------------------------ our predictions.jsonl
def _prediction(record_id: str, model: str, judge: dict[str, Any] | None, **extra: Any) -> str:
    line = {
        "run_id": "run_1",
        "item_id": f"{record_id}::{model}",
        "record_id": record_id,
        "model": model,
        "score": extra.pop("score", None),
        "passed": extra.pop("passed", None),
        "judge": judge,
        **extra,
    }
    return json.dumps(line)


def _verdict(model: str, criteria: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "model": model,
        "score": None,
        "rationale": "",
        "criteria": criteria,
        "error": None,
        **extra,
    }


def test_our_prediction_lines_are_read_and_rescored() -> None:
    rubric = {
        "kind": "rubric",
        "verdicts": [
            _verdict(
                "judge-a",
                [
                    {"id": "c1", "met": True, "score": 1.0, "rationale": "cited"},
                    {"id": "c2", "met": False, "score": 0.0, "rationale": "absent"},
                    {"id": "p", "met": False, "score": 0.0, "rationale": "no"},
                ],
            ),
            _verdict(
                "judge-b",
                [
                    {"id": "c1", "met": True, "score": 1.0, "rationale": "yes"},
                    {"id": "c2", "met": True, "score": 1.0, "rationale": "present"},
                    {"id": "p", "met": False, "score": 0.0, "rationale": "no"},
                ],
            ),
        ],
    }
    # written by today's panel after one criterion call failed: only the failed one listed
    failed = {
        "kind": "rubric",
        "verdicts": [
            _verdict("judge-a", [{"id": "c2", "error": "no usable reply", "raw": "?"}], error="x")
        ],
    }
    reference = {"kind": "reference", "verdicts": [_verdict("judge-a", [], score=0.8)]}
    table = read_verdicts(
        [
            _prediction("r1", "m", rubric, score=0.875, passed=True),
            _prediction("r1", "n", failed),
            _prediction("q1", "m", reference, score=0.8, passed=True),
            _prediction("q1", "x", None, reason="missing_response"),
        ],
        records=RECORDS,
    )
    assert table.problems == [] and table.not_judged == 1
    shared = table.verdicts["r1", "m", 0]
    assert shared.source == "predictions"
    assert [c.grade for c in shared.criteria] == [1.0, 0.5, 0.0]  # judges split on c2
    assert score_verdict(shared, BOOK.get("default")).score == pytest.approx(3.5 / 4)
    assert score_verdict(shared, BOOK.get("prbench_v1")).score == pytest.approx(5.5 / 6)
    lost = table.verdicts["r1", "n", 0]
    assert [c.error for c in lost.criteria] == [
        "no verdict recorded for this criterion",
        "no usable reply",
        "no verdict recorded for this criterion",
    ]
    assert score_verdict(lost, BOOK.get("default")).reason == "judge_error"
    assert score_verdict(table.verdicts["q1", "m", 0], BOOK.get("default")).score == 0.8


def test_a_criteria_prediction_is_scored_as_the_mean_rating() -> None:
    record = Record(
        id="c1",
        dataset="contract",
        task_type="criteria",
        prompt="Summarize.",
        required_criteria=("accuracy", "clarity"),
    )
    judge = {
        "kind": "criteria",
        "verdicts": [
            _verdict(
                "judge-a",
                [
                    {"id": "accuracy", "rating": 5, "score": 1.0},
                    {"id": "clarity", "rating": 3, "score": 0.5},
                ],
            )
        ],
    }
    table = read_verdicts([_prediction("c1", "m", judge)], records={"c1": record})
    verdict: RecordedVerdict = table.verdicts["c1", "m", 0]
    for scoring_policy in ("default", "prbench_v1"):
        assert score_verdict(verdict, BOOK.get(scoring_policy)).score == pytest.approx(0.75)
