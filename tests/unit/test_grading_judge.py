"""The judge's pure parts: reply parsing, scoring formulas, prompts, lexical metrics."""

from __future__ import annotations

import hashlib
import json

import pytest

from pytest_legaleval.grading._judge import (
    build_tasks,
    criteria_ratings,
    criteria_score,
    criterion_grade,
    judge_template_sha256,
    mcq_answer_schema,
    output_schema,
    parse_reply,
    round_to_step,
    rubric_score,
    semantic_problem,
)
from pytest_legaleval.grading._lexical import best_exact_match, best_token_f1, token_f1
from pytest_legaleval.grading._policies import PolicyBook, parse_policy
from pytest_legaleval.records import Choice, Criterion, Message, Record

from .. import lbr_run

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


@pytest.mark.parametrize(
    ("fmt", "reply", "grade", "why"),
    [
        ("met", '{"met": true, "rationale": "yes"}', 1.0, "yes"),
        ("result", '{"result": 0, "reason": "no"}', 0.0, "no"),
        ("grade", '{"grade": 1, "reasoning": "clear", "criterion_id": "c1"}', 1.0, "clear"),
        ("criteria_met", '{"explanation": "absent", "criteria_met": false}', 0.0, "absent"),
    ],
)
def test_every_criterion_format_validates_and_reads_the_same(
    fmt: str, reply: str, grade: float, why: str
) -> None:
    policy = parse_policy(
        {"id": "p", "judge": {"criterion_format": fmt}}, source="test", base=DEFAULT
    )
    schema = output_schema("criterion", policy)
    parsed = parse_reply(reply, schema)
    assert parsed.value is not None and criterion_grade(parsed.value) == (grade, why)
    # the common reading the judge panel uses today: met and rationale
    assert parsed.value["met"] is bool(grade)
    for other in ('{"result": 2, "reason": "x"}', '{"grade": "yes", "reasoning": "x"}'):
        assert parse_reply(other, schema).value is None
    with pytest.raises(ValueError, match="not a criterion reply"):
        criterion_grade({"score": 1})


def test_lbr_reference_format_takes_a_score_and_ignores_the_judges_pass() -> None:
    schema = output_schema("reference", BOOK.get("lexam_oq_v1"))
    reply = '{"score": 0.3, "pass": true, "rationale": "wrong", "criteria": {"overall": 0.3}}'
    parsed = parse_reply(reply, schema)
    assert parsed.value is not None and parsed.value["score"] == 0.3
    assert parse_reply('{"score": 3, "pass": true, "rationale": "x"}', schema).value is None


def test_mcq_answer_schemas() -> None:
    record = Record(
        id="m",
        dataset="d",
        task_type="mcq",
        prompt="?",
        choices=(Choice("A", "a"), Choice("B", "b")),
        correct_choice_ids=("B",),
    )
    ours = mcq_answer_schema(record)
    assert ours["properties"]["answer"]["items"] == {"enum": ["A", "B"]}
    lbr = mcq_answer_schema(record, "json_single")
    assert lbr["properties"]["answer"] == {"enum": ["A", "B"]}
    assert lbr["required"] == ["answer", "reasoning"]
    assert parse_reply('{"answer": "B", "reasoning": "void"}', lbr).value is not None
    assert parse_reply('{"answer": "E", "reasoning": "?"}', lbr).value is None


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
    (task,) = build_tasks(record, "Liability before a contract.", BOOK.get("lexam"))
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
        BOOK.get("ace"), "reference"
    )
    # a judge system prompt is part of the hash only where a policy sets one
    lbr = BOOK.get("lbr_default_v1")
    silent = parse_policy(
        {"id": "s", "judge": {"criterion_system_prompt": None}}, source="t", base=lbr
    )
    assert judge_template_sha256(silent, "rubric") != judge_template_sha256(lbr, "rubric")
    # the default policy's hashes are those of before system prompts existed (its judge
    # calls stay cached): template, schema, step
    payload = json.dumps(
        [DEFAULT.judge.reference_template, REF_SCHEMA, None], sort_keys=True
    ).encode()
    assert judge_template_sha256(DEFAULT, "reference") == hashlib.sha256(payload).hexdigest()
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

    schemas = [
        output_schema(kind, BOOK.get(policy_id))
        for policy_id in BOOK.ids
        for kind in ("reference", "criterion", "criteria")
    ]
    found = [b for schema in schemas for b in bounds(schema)]
    assert found and max(found) <= 1000


# ------------------------------------------------------------------ LBR's judge, byte for byte
def test_lbr_judge_prompts_are_lbrs_byte_for_byte() -> None:
    # Every judge request LBR completed is in its provider cache under a hash of its exact
    # system and user messages; the ones that are not are the calls that failed.
    keys, request = lbr_run.cache_keys(), lbr_run.settings()["judge"]
    records = lbr_run.records()
    failed = set()
    for line in lbr_run.gz_lines(lbr_run.JUDGMENTS):
        row = json.loads(line)
        for grade in row.get("criterion_grades") or []:
            if grade["judge_call_failed"]:
                failed.add((row["example_id"], row["candidate_name"], grade["criterion_id"]))
        if row["judge_mode"] == "reference" and row.get("judge_call_failed"):
            failed.add((row["example_id"], row["candidate_name"], "answer"))
    answers = lbr_run.responses()
    assert sum(not a["response"] for a in answers) == 3  # empty answers are judged too
    assert any(a["response"] != a["response"].rstrip() for a in answers)
    missing, checked = set(), 0
    for answer in answers:
        record = records[answer["record_id"]]
        for task in build_tasks(record, answer["response"], BOOK.for_record(record)):
            assert task.system is not None
            messages = [
                {"role": "system", "content": task.system},
                {"role": "user", "content": task.prompt},
            ]
            checked += 1
            if lbr_run.lbr_cache_key("judge", request, messages) not in keys:
                missing.add((record.id, answer["model"], task.key))
    assert checked == 747
    assert missing == {key for key in failed if key[1] == "magistral_medium_latest"}
    assert len(missing) == 18


def test_lbr_criterion_prompt_shows_id_title_weight_and_threshold() -> None:
    record = _rubric_record()
    policy = BOOK.get("prbench_v1")
    tasks = build_tasks(record, "An answer.", policy)
    assert "- c3: Invents case law (weight_hint=-2.0)" in tasks[2].prompt
    assert 'Set criterion_id exactly to "c3".' in tasks[2].prompt
    assert tasks[2].system == policy.judge.criterion_system_prompt
    reference = Record(
        id="q", dataset="lexam", task_type="reference_qa", prompt="Q?", reference_answers=("R",)
    )
    (task,) = build_tasks(reference, "", BOOK.get("lexam_oq_v1"))
    assert task.prompt.endswith("Set pass=true when score >= 0.700.")
    assert "Candidate answer:\n\n\n" in task.prompt  # LBR shows an empty answer as empty
    (ours,) = build_tasks(reference, "", DEFAULT)
    assert "(empty answer)" in ours.prompt and ours.system is None


def test_prbench_paper_judge_sees_the_whole_conversation_with_the_answer() -> None:
    tasks = build_tasks(_rubric_record(), "Yes.  \n", BOOK.get("prbench_paper_v1"))
    assert (
        "# Conversation\nuser: I rent a flat in Berlin.\nassistant: Understood. What is "
        "the issue?\nuser: Can the tenant withhold rent?\nassistant: Yes.  \n" in tasks[0].prompt
    )
    assert "# Rubric item\nNames § 536 BGB\n" in tasks[0].prompt
    parsed = parse_reply('{"explanation": "cited", "criteria_met": true}', tasks[0].schema)
    assert parsed.value is not None and parsed.value["met"] is True


def test_an_answer_without_reasoning_reaches_the_judge_as_given() -> None:
    record = _rubric_record()
    (task, *_) = build_tasks(record, "  Yes.\n\n", DEFAULT)
    assert "Answer to check:\n  Yes.\n\n\n" in task.prompt
    (task, *_) = build_tasks(record, "<think>plan</think>  Yes.\n\n", DEFAULT)
    assert "Answer to check:\nYes.\n" in task.prompt and "plan" not in task.prompt
