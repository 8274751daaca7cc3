"""An item's reason in one line (pytest's short summary, JUnit's message), details below."""

from __future__ import annotations

import json

from pytest_legaleval.run.reasons import (
    LINE_LIMIT,
    TITLE_LIMIT,
    invalid_text,
    one_line,
    reason_line,
    reason_text,
)

LONG = (
    "Cites Art. 109 of law 2011-525 of 17 May 2011 on the simplification of the law, as applicable"
)


def _rubric(**extra: object) -> dict:
    criteria = [
        {"id": "c1", "title": LONG, "weight": 10, "met": False, "rationale": "no citation"},
        {"id": "c2", "title": "Names the decree", "weight": 9, "met": False, "rationale": "-"},
        {"id": "c3", "weight": 5, "met": True, "rationale": "says so"},
        {"id": "c4", "title": "Asks for the date", "weight": 3, "met": False},
        {"id": "c5", "title": "States the default", "weight": 2, "met": False},
        {"id": "c6", "title": "Gives an example", "weight": 1, "met": 0.0},
        {"id": "c7", "title": "Suggests lobbying", "weight": -5, "met": True},
    ]
    row = {
        "reason": "below_threshold",
        "score": 0.1569,
        "explanation": "minmax score 0.1569, scored over all 7 criteria < threshold 0.7",
        "details": {"threshold": 0.7, "criteria": criteria},
    }
    row.update(extra)
    return row


def test_a_rubric_failure_names_the_missed_criteria_costliest_first() -> None:
    line = reason_line(_rubric(), {"c3": "Says it"})
    assert line == (
        f'below_threshold 0.16 < 0.70: missed "{LONG[:TITLE_LIMIT]}…", "Names the decree", +3; '
        'penalized "Suggests lobbying"'
    )
    assert "\n" not in line


def test_titles_are_whole_up_to_the_limit_and_ids_fall_back_to_the_record_s_titles() -> None:
    row = _rubric()
    for criterion in row["details"]["criteria"]:
        criterion.pop("title", None)
    titles = {"c1": "x" * TITLE_LIMIT, "c2": "Names the decree"}
    line = reason_line(row, titles)
    assert f'missed "{"x" * TITLE_LIMIT}", "Names the decree", +3' in line
    assert '"c7"' in line  # no title anywhere: the id


def test_the_numbers_get_the_digits_that_tell_them_apart() -> None:
    row = {"reason": "below_threshold", "score": 0.6999, "details": {"threshold": 0.7}}
    line = reason_line(row)
    assert line.startswith("below_threshold 0.6999 < 0.7000")


def test_a_criteria_item_names_its_lowest_ratings() -> None:
    criteria = [
        {"id": "accuracy", "rating": 2, "score": 0.25},
        {"id": "clarity", "rating": 5, "score": 1.0},
        {"id": "completeness", "rating": 3, "score": 0.5},
    ]
    details = {"threshold": 0.7, "criteria": criteria}
    row = {"reason": "below_threshold", "score": 0.58, "details": details}
    assert reason_line(row) == (
        'below_threshold 0.58 < 0.70: low "accuracy" 0.25, "completeness" 0.50'
    )


def test_a_reference_failure_gives_the_judge_s_reason() -> None:
    row = {
        "reason": "below_threshold",
        "score": 0.4,
        "explanation": "judge score 0.40 < threshold 0.70. The answer misses the\nexception.",
        "details": {"threshold": 0.7},
        "judge": {"verdicts": [{"rationale": "Misses the exception in Art. 2."}]},
    }
    assert reason_line(row) == "below_threshold 0.40 < 0.70: Misses the exception in Art. 2."
    assert reason_line({**row, "judge": None}).endswith("The answer misses the exception.")


def test_other_reasons_are_the_reason_and_the_explanation_on_one_line() -> None:
    row = {"reason": "judge_error", "explanation": "no usable verdict\n  raw reply: 'x'"}
    assert reason_line(row) == "judge_error: no usable verdict raw reply: 'x'"
    long = {"reason": "wrong_answer", "explanation": "y" * 1000}
    assert len(reason_line(long)) == LINE_LIMIT and reason_line(long).endswith("…")
    assert reason_line({"reason": "missing_response"}) == "missing_response"


def test_the_body_holds_the_explanation_and_every_criterion() -> None:
    text = reason_text(_rubric(), {"c3": "Says it"})
    line, _, body = text.partition("\n\n")
    assert line == reason_line(_rubric(), {"c3": "Says it"})
    assert "minmax score 0.1569" in body
    assert f"[missed] (w=10) {LONG}" in body  # the whole title
    assert "[met] (w=5) Says it" in body and "[penalty] (w=-5) Suggests lobbying" in body
    assert "criteria (1 of 6 met):" in body
    assert "no citation" in body
    # A one-line reason has no body.
    assert reason_text({"reason": "wrong_answer", "explanation": "chose C; correct is B"}) == (
        "wrong_answer: chose C; correct is B"
    )


def test_an_invalid_record_says_its_first_error_and_keeps_the_json_below() -> None:
    errors = [
        {"index": 0, "record_id": "b", "code": "missing_required_field",
         "message": "prompt is required (bad.jsonl line 1)", "path": "records[0].prompt",
         "severity": "error"},
        {"index": 0, "record_id": "b", "code": "invalid_field_type",
         "message": "choices must be an array", "path": "records[0].choices",
         "severity": "error"},
    ]  # fmt: skip
    text = invalid_text(errors)
    line, _, body = text.partition("\n\n")
    assert line == "invalid_record: prompt is required (bad.jsonl line 1) (+1 more)"
    assert json.loads(body) == {"record_errors": errors}
    assert invalid_text(errors[:1]).partition("\n")[0] == (
        "invalid_record: prompt is required (bad.jsonl line 1)"
    )
    # The same line from a recorded result (an attachment that cannot be read).
    row = {"reason": "invalid_record", "details": {"record_errors": errors[:1]}}
    assert reason_line(row) == "invalid_record: prompt is required (bad.jsonl line 1)"


def test_one_line_collapses_whitespace() -> None:
    assert one_line("  a\n\tb  c ") == "a b c"
    assert one_line("abcdef", 4) == "abc…"
