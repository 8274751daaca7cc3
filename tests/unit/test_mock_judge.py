"""The mock server answers our judge questions with valid verdicts by default (issue 30).

Every shipped policy's judge questions (reference, each rubric criterion, criteria; with
the JSON schema the panel sends, and as plain prompts) get a reply our own parser accepts,
deterministic per prompt; LEXam's official judge gets its ``[[0.x]]`` grade; the probe its
``{"ok": true}``; anything else the plain default reply.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from pytest_legaleval.engine.capabilities import structured_params
from pytest_legaleval.grading._judge import build_tasks, parse_reply, semantic_problem
from pytest_legaleval.grading._panel import JUDGE_SYSTEM_PROMPT
from pytest_legaleval.grading._policies import PolicyBook
from pytest_legaleval.grading.official import lexam
from pytest_legaleval.grading.official.lexam_prompts import JUDGE_SYSTEM
from pytest_legaleval.records import Criterion, Record
from pytest_legaleval.testing.mock_openai import MockConfig, MockOpenAIServer, default_reply
from pytest_legaleval.testing.mock_openai.judge import judge_reply

BOOK = PolicyBook()
RECORDS = [
    Record(id="ref", dataset="d", task_type="reference_qa", prompt="What is a tort?",
           reference_answers=("A civil wrong.",)),
    Record(id="rub", dataset="d", task_type="rubric_qa", prompt="Can the tenant withhold rent?",
           rubric=(Criterion("c-1", "Names § 536 BGB", weight=3.0),
                   Criterion("c-2", 'Mentions "notice"', weight=2.0),
                   Criterion("c-3", "Invents case law", weight=-2.0))),
    Record(id="crit", dataset="d", task_type="criteria", prompt="Summarize the clause.",
           required_criteria=("accuracy", "legal reasoning", "clarity")),
]  # fmt: skip
ANSWER = "The tenant may reduce the rent under § 536 BGB.\n- a list item in the answer\n"


def _request(task: Any, *, schema: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "mock",
        "messages": [
            {"role": "system", "content": task.system or JUDGE_SYSTEM_PROMPT},
            {"role": "user", "content": task.prompt},
        ],
    }
    if schema:
        body.update(structured_params("json_schema", task.schema))
    return body


@pytest.mark.parametrize("schema", [True, False], ids=["json_schema", "prompt"])
@pytest.mark.parametrize("policy_id", BOOK.ids)
def test_every_policy_s_judge_questions_get_a_valid_verdict(policy_id: str, schema: bool) -> None:
    policy = BOOK.get(policy_id)
    if policy.judge.reference_format == "lexam":
        pytest.skip("LEXam's official judge is asked in plain text (below)")
    levels: Counter[str] = Counter()
    for record in RECORDS:
        for task in build_tasks(record, ANSWER, policy):
            reply = judge_reply(_request(task, schema=schema))
            assert reply is not None, (policy_id, task.kind)
            parsed = parse_reply(reply, task.schema)
            assert parsed.error is None, (policy_id, task.kind, reply, parsed.error)
            assert parsed.value is not None
            assert semantic_problem(task, parsed.value, record) is None, reply
            if "criterion_id" in parsed.value:
                assert parsed.value["criterion_id"] == task.key  # LBR's check
            assert judge_reply(_request(task, schema=schema)) == reply  # deterministic
            levels[json.dumps(parsed.value.get("met", parsed.value.get("score")))] += 1
    assert len(levels) > 1  # verdicts differ from prompt to prompt


def test_lexam_s_official_judge_gets_a_grade_in_its_format() -> None:
    grades = set()
    for answer in ("one", "two", "three", "four", "five", "six"):
        body = {
            "model": "mock",
            "messages": [
                {"role": "system", "content": JUDGE_SYSTEM},
                {"role": "user", "content": lexam.judge_prompt("Q?", "Ref.", answer)},
            ],
        }
        reply = judge_reply(body)
        assert reply is not None
        grade = lexam.judge_grade(reply)
        assert grade.problem is None and grade.value is not None, reply
        grades.add(grade.value)
    assert grades <= {0.0, 0.5, 1.0} and len(grades) > 1


def test_other_prompts_keep_the_plain_default_reply() -> None:
    mcq = {"model": "m", "messages": [{"role": "user", "content": "Q?\nA) yes\nB) no"}]}
    assert judge_reply(mcq) is None
    assert default_reply("Q?\nA) yes\nB) no", mcq).startswith("Answer: ")
    probe = {"model": "m", "messages": [
        {"role": "user", "content": 'Reply with the JSON object {"ok": true}.'}]}  # fmt: skip
    assert judge_reply(probe) == '{"ok": true}'


def test_the_server_answers_judges_unless_told_not_to() -> None:
    import openai

    (task,) = build_tasks(RECORDS[0], ANSWER, BOOK.get("default"))
    body = _request(task, schema=False)
    for config, valid in ((MockConfig(), True), (MockConfig(judge_replies=False), False)):
        with MockOpenAIServer(config) as server:
            client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
            reply = client.chat.completions.create(model="m", messages=body["messages"])
        text = reply.choices[0].message.content or ""
        assert (parse_reply(text, task.schema).error is None) is valid, text
