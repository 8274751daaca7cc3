"""A judge that answers NaN, Infinity, -Infinity or 1e999: never a verdict, never a token.

Before this change a reference judge's ``{"score": NaN, ...}`` passed the reply's JSON
Schema (``minimum``/``maximum`` are comparisons, and every comparison with NaN is false),
became the item's score and was graded ``below_threshold``; ``predictions.jsonl`` then held
a bare ``NaN`` token that strict parsers reject. Now every judge reply format — our JSON
verdicts (reference, ``score_pass``, every criterion format, criteria ratings) and LEXam's
``[[x]]`` grade — refuses a non-finite number: the item is a ``judge_error`` with the raw
reply kept, and every file of the run directory parses as standard JSON.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_legaleval.grading._judge import output_schema, parse_reply
from pytest_legaleval.grading._panel import JudgeOutcome, judged_grade
from pytest_legaleval.grading._policies import PolicyBook
from pytest_legaleval.grading.official.lexam import judge_grade
from pytest_legaleval.records import JudgeSummary
from pytest_legaleval.testing.mock_openai import MockOpenAIServer
from pytest_legaleval.testing.mock_openai.rules import prompt_text

from ..strict_json import assert_strict_run_dir, strict_jsonl

TOKENS = ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"]
BOOK = PolicyBook()
DEFAULT = BOOK.get("default")

# Each reply format, its valid reply, and the fields a hostile judge can fill with a token.
FORMATS: dict[str, tuple[Any, dict[str, Any]]] = {
    "reference": (
        output_schema("reference", DEFAULT),
        {"score": 0.9, "verdict": "correct", "rationale": "r"},
    ),
    "score_pass": (
        output_schema("reference", BOOK.get("lbr_default_v1")),
        {"score": 0.9, "pass": True, "rationale": "r", "criteria": {"overall": 0.9}},
    ),
    "met": (output_schema("criterion", DEFAULT), {"met": True, "rationale": "r"}),
    "result": (
        output_schema(
            "criterion",
            dataclasses.replace(
                DEFAULT, judge=dataclasses.replace(DEFAULT.judge, criterion_format="result")
            ),
        ),
        {"result": 1, "reason": "r"},
    ),
    "grade": (
        output_schema("criterion", BOOK.get("lbr_default_v1")),
        {"grade": 1, "reasoning": "r", "criterion_id": "c1"},
    ),
    "criteria_met": (
        output_schema("criterion", BOOK.get("prbench_paper_v1")),
        {"explanation": "r", "criteria_met": True},
    ),
    "criteria": (
        output_schema("criteria", DEFAULT),
        {"ratings": [{"criterion": "clarity", "rating": 4, "rationale": "r"}]},
    ),
}


def _hostile(valid: dict[str, Any], token: str) -> Iterator[tuple[str, str]]:
    """The valid reply with ``token`` in each field in turn, and in an extra field."""
    marker = "__TOKEN__"
    for field in valid:
        if field == "ratings":
            shaped = {"ratings": [{**valid["ratings"][0], "rating": marker}]}
        else:
            shaped = {**valid, field: marker}
        yield field, json.dumps(shaped).replace(f'"{marker}"', token)
    extra = json.dumps({**valid, "confidence": marker}).replace(f'"{marker}"', token)
    yield "confidence (an extra field)", extra


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize("kind", sorted(FORMATS))
def test_no_judge_reply_format_reads_a_non_finite_number(kind: str, token: str) -> None:
    schema, valid = FORMATS[kind]
    assert parse_reply(json.dumps(valid), schema).value is not None  # the shape is right
    for field, reply in _hostile(valid, token):
        for text in (reply, f"Verdict:\n```json\n{reply}\n```", f"<think>x</think>{reply}"):
            parsed = parse_reply(text, schema)
            assert parsed.value is None, (field, text)
            assert parsed.error is not None
            assert parsed.error.startswith("the reply is not standard JSON: "), parsed.error
            assert "number JSON allows" in parsed.error or "beyond the range" in parsed.error


@pytest.mark.parametrize("token", ["NaN", "nan", "inf", "Infinity", "-inf", "1e999", "9e9"])
def test_lexams_grade_marker_holds_no_non_finite_grade(token: str) -> None:
    grade = judge_grade(f"The answer is partly right. [[{token}]]")
    assert grade.value is None and grade.problem is not None
    assert grade.official == 0.0  # LEXam's own figure counts an unusable reply 0


def test_a_non_finite_panel_score_is_a_judge_error_not_a_wrong_answer() -> None:
    """The pass rule never compares a NaN: whatever built the outcome, no verdict."""
    summary = JudgeSummary(
        models=("openai/judge",),
        params={},
        template_sha256="0" * 64,
        kind="reference",
        score=math.nan,
        verdicts=(),
    )
    for score in (math.nan, math.inf, -math.inf):
        grade = judged_grade(JudgeOutcome(summary, score, None, False), DEFAULT, {})
        assert (grade.outcome, grade.reason, grade.score, grade.passed) == (
            "error",
            "judge_error",
            None,
            None,
        )


# ------------------------------------------------------------------ a real session
def _row(record_id: str, task_type: str, policy: str, **fields: Any) -> dict[str, Any]:
    return {
        "schema_version": "legal_eval_v1",
        "id": record_id,
        "dataset": "hostile",
        "task_type": task_type,
        "prompt": f"FMT-{record_id}: advise the client.",
        "metadata": {"policy_id": policy},
        **fields,
    }


RUBRIC = [{"id": "c1", "title": "Names the statute", "weight": 2}]
ROWS = [
    _row("reference", "reference_qa", "default", reference_answers=["The statute."]),
    _row("score_pass", "reference_qa", "lbr_default_v1", reference_answers=["The statute."]),
    _row("lexam", "reference_qa", "lexam_official", reference_answers=["The statute."]),
    _row("met", "rubric_qa", "default", rubric=RUBRIC),
    _row("grade", "rubric_qa", "lbr_default_v1", rubric=RUBRIC),
    _row("criteria_met", "rubric_qa", "prbench_paper_v1", rubric=RUBRIC),
]
CRITERIA = {  # criteria records come from Dataset Contract documents
    "dataset_id": "hostile_contract",
    "dataset_version": "1",
    "schema_version": "1.0",
    "records": [
        {
            "record_id": "criteria",
            "input": {"prompt": "FMT-criteria: advise the client."},
            "expected": {"required_criteria": ["clarity", "accuracy"]},
        }
    ],
}


def _judge_reply(token: str) -> Any:
    def reply(body: dict[str, Any]) -> str | None:
        if body.get("model") != "judge":
            return None  # the candidate gets the default reply
        prompt = prompt_text(body.get("messages"))
        kind = next(k for k in [*FORMATS, "lexam"] if f"FMT-{k}:" in prompt)
        if kind == "lexam":
            return f"The answer names the statute. [[{token}]]"
        _, valid = FORMATS[kind]
        if kind == "criteria":
            valid = {"ratings": [{"criterion": c, "rating": 5} for c in ("clarity", "accuracy")]}
        # Every numeric or boolean field of the format carries the token.
        shaped = {
            key: (
                [{**r, "rating": "__T__"} for r in value]
                if key == "ratings"
                else "__T__"
                if isinstance(value, bool | int | float)
                else value
            )
            for key, value in valid.items()
        }
        return json.dumps(shaped).replace('"__T__"', token)

    return reply


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_hostile_judge_makes_judge_errors_and_strict_json_artifacts(
    pytester: pytest.Pytester, token: str
) -> None:
    pytester.makepyfile(test_suite="def test_record(record, evaluation):\n    evaluation.check()\n")
    data = pytester.path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    (pytester.path / "c.json").write_text(json.dumps(CRITERIA), encoding="utf-8")
    with MockOpenAIServer() as server:
        server.add_reply(_judge_reply(token))
        result = pytester.runpytest(
            "--dataset", str(data), "--dataset", "c.json",
            "--model", "openai/cand", "--judge-model", "openai/judge",
            "--base-url", server.base_url, "--run-dir", "runs", "--no-cache",
            "--retry-delays", "0.01,0.02", "-p", "no:cacheprovider",
        )  # fmt: skip
        asked = [prompt_text(r["messages"]) for r in server.requests() if r["model"] == "judge"]
    items = len(ROWS) + 1
    result.assert_outcomes(errors=items)
    (run,) = [p for p in (pytester.path / "runs").iterdir() if p.is_dir()]
    rows = {row["record_id"]: row for row in strict_jsonl(run / "predictions.jsonl")}
    assert sorted(rows) == sorted([*(r["id"] for r in ROWS), "criteria"])
    for record_id, row in rows.items():
        assert (row["outcome"], row["reason"]) == ("error", "judge_error"), record_id
        assert row["score"] is None and row["passed"] is None, record_id
        assert row["judge"]["score"] is None, record_id
        assert all(v["score"] is None for v in row["judge"]["verdicts"]), record_id
    # Our JSON formats re-ask (two re-asks by default); LEXam's judge is asked once.
    calls = {rid: sum(f"FMT-{rid}:" in text for text in asked) for rid in rows}
    assert calls == {rid: 1 if rid == "lexam" else 3 for rid in rows}
    lexam = rows["lexam"]["details"]["official"]
    assert lexam["score"] == 0.0 and lexam["unusable_replies"] == 1
    summary = json.loads((run / "metrics_summary.json").read_text(encoding="utf-8"))
    # Nothing was graded a wrong answer, and no score reached the figures.
    assert (summary["fail_count"], summary["scored_items"]) == (0, 0)
    assert summary["judge_error_count"] == items and summary["mean_score"] is None
    checked = assert_strict_run_dir(run)
    assert {"predictions.jsonl", "transcripts.jsonl", "metrics_summary.json"} <= set(checked)
