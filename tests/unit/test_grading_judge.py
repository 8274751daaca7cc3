"""The judge's pure parts: reply parsing, scoring formulas, prompts, lexical metrics."""

from __future__ import annotations

import json

import pytest

from pytest_legaleval.grading.judge import (
    build_tasks,
    criteria_ratings,
    criteria_score,
    judge_template_sha256,
    output_schema,
    parse_reply,
    round_to_step,
    rubric_score,
    semantic_problem,
)
from pytest_legaleval.grading.lexical import best_exact_match, best_token_f1, token_f1
from pytest_legaleval.grading.policies import PolicyBook
from pytest_legaleval.records import Criterion, Message, Record

BOOK = PolicyBook()
DEFAULT = BOOK.get("default")
REF_SCHEMA = output_schema("reference", DEFAULT)


def _rubric_record() -> Record:
    return Record(
        id="r1",
        dataset="prbench",
        task_type="rubric_qa",
        prompt="Can the tenant withhold rent?",
        context="Lease clause 7: repairs within 14 days.",
        messages=(
            Message("user", "I rent a flat in Berlin."),
            Message("assistant", "Understood. What is the issue?"),
            Message("user", "Can the tenant withhold rent?"),
        ),
        rubric=(
            Criterion("c1", "Names § 536 BGB", weight=3.0),
            Criterion("c2", "Mentions notice to the landlord", "Notice is a precondition", 2.0),
            Criterion("c3", "Invents case law", weight=-2.0),
        ),
    )


# ------------------------------------------------------------------ parsing
@pytest.mark.parametrize(
    "reply",
    [
        '{"score": 0.8, "verdict": "correct", "rationale": "ok"}',
        'Sure!\n```json\n{"score": 0.8, "rationale": "ok"}\n```',
        '<think>{"score": 0.1}</think> Final: {"score": 0.8, "rationale": "nested {braces} ok"}',
        'The grade is {"score": 0.8, "rationale": "a \\"quoted\\" } brace"} as said.',
    ],
)
def test_tolerant_parsing_finds_the_valid_object(reply: str) -> None:
    parsed = parse_reply(reply, REF_SCHEMA)
    assert parsed.error is None
    assert parsed.value is not None and parsed.value["score"] == 0.8


@pytest.mark.parametrize(
    ("reply", "fragment"),
    [
        ("I think the answer is good.", "no JSON object"),
        ("", "empty"),
        ('{"score": 1.5, "rationale": "x"}', "score"),
        ('{"score": "high", "rationale": "x"}', "score"),
        ('{"rationale": "x"}', "'score' is a required property"),
        ('{"score": 0.5, "verdict": "maybe", "rationale": "x"}', "verdict"),
    ],
)
def test_unusable_replies_say_why(reply: str, fragment: str) -> None:
    parsed = parse_reply(reply, REF_SCHEMA)
    assert parsed.value is None
    assert parsed.error is not None and fragment in parsed.error


def test_a_reply_cut_at_the_token_limit_is_unusable_even_if_it_parses() -> None:
    parsed = parse_reply('{"score": 1, "rationale": "x"}', REF_SCHEMA, finish_reason="length")
    assert parsed.value is None and parsed.error is not None and "token limit" in parsed.error


def test_result_format_criterion_schema() -> None:
    apex = BOOK.get("apexv1_extended_v1")
    schema = output_schema("criterion", apex)
    assert parse_reply('{"result": 1, "reason": "yes"}', schema).value == {
        "result": 1,
        "reason": "yes",
    }
    assert parse_reply('{"result": 2, "reason": "yes"}', schema).value is None
    assert parse_reply('{"met": true, "rationale": "yes"}', schema).value is None


# ------------------------------------------------------------------ scoring
def test_rubric_score_with_penalties() -> None:
    # positives 3 + 2 = 5; c1 met (+3), c2 not met, penalty c3 met (-2) -> 1/5
    assert rubric_score([(3.0, 1.0), (2.0, 0.0), (-2.0, 1.0)]) == pytest.approx(0.2)
    assert rubric_score([(3.0, 1.0), (2.0, 1.0), (-2.0, 0.0)]) == 1.0
    # penalties cannot push below 0
    assert rubric_score([(1.0, 0.0), (-5.0, 1.0)]) == 0.0
    # partial agreement of judges enters as a share
    assert rubric_score([(2.0, 0.5), (2.0, 1.0)]) == pytest.approx(0.75)
    # only penalties: 1 minus the share of penalty weight incurred
    assert rubric_score([(-1.0, 1.0), (-3.0, 0.0)]) == pytest.approx(0.75)


def test_criteria_score_normalizes_the_scale() -> None:
    assert criteria_score([1, 5], 1, 5) == pytest.approx(0.5)
    assert criteria_score([5, 5, 5], 1, 5) == 1.0
    with pytest.raises(ValueError):
        criteria_score([], 1, 5)


@pytest.mark.parametrize(
    ("score", "expected"), [(0.84, 0.8), (0.85, 0.9), (0.0, 0.0), (1.0, 1.0), (0.349, 0.3)]
)
def test_lexam_scores_round_to_tenths(score: float, expected: float) -> None:
    assert round_to_step(score, 0.1) == expected
    assert round_to_step(score, None) == score


# ------------------------------------------------------------------ prompts
def test_rubric_tasks_carry_every_turn_the_context_and_each_criterion() -> None:
    record = _rubric_record()
    tasks = build_tasks(record, "<think>hidden plan</think>Yes, under § 536 BGB.", DEFAULT)
    assert [t.key for t in tasks] == ["c1", "c2", "c3"]
    for task in tasks:
        assert "I rent a flat in Berlin." in task.prompt
        assert "Understood. What is the issue?" in task.prompt
        assert "Can the tenant withhold rent?" in task.prompt
        assert "Lease clause 7" in task.prompt
        assert "Yes, under § 536 BGB." in task.prompt
        assert "hidden plan" not in task.prompt  # reasoning stripped before judging
    assert "Notice is a precondition" in tasks[1].prompt
    assert "Invents case law" in tasks[2].prompt


def test_reference_task_lists_all_references() -> None:
    record = Record(
        id="q",
        dataset="lexam",
        task_type="reference_qa",
        prompt="What is culpa in contrahendo?",
        reference_answers=("Pre-contractual liability.", "Liability for fault in negotiations."),
    )
    (task,) = build_tasks(record, "Liability before a contract.", BOOK.get("lexam_oq_v1"))
    assert "(1) Pre-contractual liability." in task.prompt
    assert "(2) Liability for fault in negotiations." in task.prompt
    assert "steps of 0.1" in task.prompt


def test_criteria_replies_must_rate_exactly_the_required_criteria() -> None:
    record = Record(
        id="c",
        dataset="contract",
        task_type="criteria",
        prompt="Summarize the clause.",
        required_criteria=("accuracy", "clarity"),
    )
    (task,) = build_tasks(record, "It limits liability.", DEFAULT)
    assert "- accuracy" in task.prompt and "- clarity" in task.prompt
    good = {
        "ratings": [{"criterion": "Clarity", "rating": 4}, {"criterion": "accuracy", "rating": 2}]
    }
    assert semantic_problem(task, good, record) is None
    assert [r["id"] for r in criteria_ratings(good, record)] == ["accuracy", "clarity"]
    missing = {"ratings": [{"criterion": "accuracy", "rating": 2}]}
    assert "no rating for clarity" in (semantic_problem(task, missing, record) or "")
    extra = {"ratings": [*good["ratings"], {"criterion": "style", "rating": 1}]}
    assert "not asked for" in (semantic_problem(task, extra, record) or "")


def test_template_hash_changes_with_the_template() -> None:
    apex = BOOK.get("apexv1_extended_v1")
    assert judge_template_sha256(DEFAULT, "rubric") != judge_template_sha256(apex, "rubric")
    assert judge_template_sha256(DEFAULT, "reference") == judge_template_sha256(
        BOOK.get("prbench_v1"), "reference"
    )
    json.dumps(output_schema("criteria", DEFAULT))  # schemas are plain JSON


# ------------------------------------------------------------------ lexical
def test_exact_match_and_token_f1() -> None:
    assert best_exact_match("The  Contract is VOID.", ["contract is void"]) == 1.0
    assert best_exact_match("void", ["contract is void"]) == 0.0
    assert token_f1("contract is void", "the contract is voidable") == pytest.approx(2 / 3)
    assert best_token_f1("x", ["a b", "x y"]) == pytest.approx(2 / 3)
    assert best_token_f1("anything", []) == 0.0
    assert token_f1("", "") == 1.0


def test_string_bounds_stay_within_what_llama_cpp_grammars_accept() -> None:
    def bounds(node: object) -> list[int]:
        if isinstance(node, dict):
            own = [node["maxLength"]] if "maxLength" in node else []
            return own + [b for value in node.values() for b in bounds(value)]
        if isinstance(node, list):
            return [b for value in node for b in bounds(value)]
        return []

    apex = BOOK.get("apexv1_extended_v1")
    schemas = [output_schema(k, DEFAULT) for k in ("reference", "criterion", "criteria")]
    found = [b for schema in [*schemas, output_schema("criterion", apex)] for b in bounds(schema)]
    assert found and max(found) <= 1000
