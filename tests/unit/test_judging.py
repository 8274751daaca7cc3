"""The judge panel against the real mock server, through the engine and the openai SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.engine import Engine, EngineSettings, RetryPolicy
from pytest_legaleval.grading._panel import JudgeOutcome, JudgePanel, judged_grade
from pytest_legaleval.grading._policies import PolicyBook
from pytest_legaleval.records import Criterion, Record
from pytest_legaleval.testing.mock_openai import MockConfig, MockOpenAIServer

BOOK = PolicyBook()
JUDGE = "openai/judge-a"
REFERENCE = Record(
    id="q1",
    dataset="lexam",
    task_type="reference_qa",
    prompt="What does culpa in contrahendo mean?",
    context="Swiss law of obligations.",
    reference_answers=("Liability for fault during contract negotiations.",),
)


def _rubric(n: int, negative: bool = True) -> Record:
    criteria = [Criterion(f"c{i}", f"CRITERION-{i}", weight=1.0) for i in range(1, n + 1)]
    if negative:
        criteria.append(Criterion("p1", "CRITERION-PENALTY", weight=-2.0))
    return Record(
        id="r1", dataset="prbench", task_type="rubric_qa", prompt="Advise.", rubric=tuple(criteria)
    )


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer(MockConfig(latency=0.0)) as srv:
        yield srv


def _engine(server: MockOpenAIServer, tmp_path: Path | None = None, **extra: Any) -> Engine:
    options: dict[str, Any] = {
        "base_url": server.base_url,
        "cache_path": str(tmp_path / "cache.sqlite") if tmp_path else None,
        "retry": RetryPolicy.scaled(0.001),
        "request_timeout_s": 60.0,  # a hang guard: no call here should time out
        "judge_concurrency": 50,
    }
    options.update(extra)
    return Engine(EngineSettings(**options))


def _judge(
    engine: Engine,
    record: Record,
    answer: str = "An answer.",
    models: tuple[str, ...] = (JUDGE,),
    policy: str = "default",
    reasks: int = 2,
) -> JudgeOutcome:
    panel = JudgePanel(engine, models, reasks=reasks)
    future = engine.run_coroutine(panel.judge(record, answer, BOOK.get(policy)))
    return future.result(timeout=30)


def _ref(score: float, rationale: str = "fine") -> str:
    return json.dumps({"score": score, "verdict": "correct", "rationale": rationale})


def test_reference_verdict_with_provenance(server: MockOpenAIServer) -> None:
    server.add_reply("culpa in contrahendo", _ref(0.84, "same conclusion"))
    with _engine(server) as engine:
        outcome = _judge(engine, REFERENCE, policy="lexam")
    assert outcome.error is None
    assert outcome.score == 0.8  # LEXam: tenths
    summary = outcome.summary
    assert summary.models == (JUDGE,) and summary.kind == "reference"
    assert len(summary.template_sha256) == 64
    assert summary.params["temperature"] == 0.0
    assert summary.params["structured_output"] == {JUDGE: "json_schema"}
    (verdict,) = summary.verdicts
    assert verdict.calls == 1 and verdict.rationale == "same conclusion"
    assert verdict.input_tokens and verdict.output_tokens
    body = server.last_request()
    assert body["temperature"] == 0.0
    assert body["response_format"]["type"] == "json_schema"
    assert "Liability for fault during contract negotiations." in json.dumps(body["messages"])


def test_garbage_twice_then_valid_json_is_re_asked_with_the_error(
    server: MockOpenAIServer,
) -> None:
    server.add_reply("culpa", "I would say it is mostly right.", times=2)
    server.add_reply("culpa", _ref(1.0))
    with _engine(server) as engine:
        outcome = _judge(engine, REFERENCE)
    assert outcome.error is None and outcome.score == 1.0
    assert outcome.summary.verdicts[0].calls == 3
    last = server.last_request()["messages"]
    assert last[-1]["role"] == "user" and "no JSON object found" in last[-1]["content"]
    assert last[-2] == {"role": "assistant", "content": "I would say it is mostly right."}


def test_a_judge_that_never_answers_validly_is_a_judge_error_not_a_zero(
    server: MockOpenAIServer,
) -> None:
    server.add_reply("culpa", '{"score": "excellent"}')
    with _engine(server) as engine:
        outcome = _judge(engine, REFERENCE, reasks=2)
    assert outcome.score is None
    assert outcome.error is not None and "no usable reply after 3 calls" in outcome.error
    verdict = outcome.summary.verdicts[0]
    assert verdict.raw == '{"score": "excellent"}' and verdict.score is None
    grade = judged_grade(outcome, BOOK.get("default"), {})
    assert grade.outcome == "error" and grade.reason == "judge_error"
    assert grade.passed is None and grade.score is None
    assert "excellent" in grade.explanation


def test_a_truncated_judge_reply_is_a_judge_error(server: MockOpenAIServer) -> None:
    server.add_reply("culpa", {"content": _ref(1.0), "finish_reason": "length"})
    with _engine(server) as engine:
        outcome = _judge(engine, REFERENCE, reasks=1)
    assert outcome.error is not None and "token limit" in outcome.error
    assert outcome.summary.verdicts[0].calls == 2


def test_a_failing_judge_endpoint_is_a_judge_error(server: MockOpenAIServer) -> None:
    server.add_fault("400", match="culpa")
    with _engine(server) as engine:
        outcome = _judge(engine, REFERENCE)
    assert outcome.error is not None and "judge call failed (bad_request)" in outcome.error


def test_two_judges_disagreeing_are_averaged_and_both_kept(server: MockOpenAIServer) -> None:
    def reply(request: dict[str, Any]) -> str | None:
        if request["model"] == "judge-a":
            return _ref(1.0, "A agrees")
        return _ref(0.2, "B disagrees")

    server.add_reply(reply)
    with _engine(server) as engine:
        outcome = _judge(engine, REFERENCE, models=(JUDGE, "openai/judge-b"))
    assert outcome.score == pytest.approx(0.6)
    scores = {v.model: v.score for v in outcome.summary.verdicts}
    assert scores == {JUDGE: 1.0, "openai/judge-b": 0.2}
    assert "A agrees" in outcome.rationale and "B disagrees" in outcome.rationale


def test_one_failed_judge_of_two_makes_the_item_a_judge_error(server: MockOpenAIServer) -> None:
    def reply(request: dict[str, Any]) -> str | None:
        return _ref(1.0) if request["model"] == "judge-a" else "no idea"

    server.add_reply(reply)
    with _engine(server) as engine:
        outcome = _judge(engine, REFERENCE, models=(JUDGE, "openai/judge-b"), reasks=0)
    assert outcome.score is None
    assert outcome.error is not None and outcome.error.startswith("openai/judge-b:")
    assert outcome.summary.verdicts[0].score == 1.0  # the good verdict is still kept


def test_rubric_with_a_penalty_scores_by_weight(server: MockOpenAIServer) -> None:
    met = json.dumps({"met": True, "rationale": "present"})
    unmet = json.dumps({"met": False, "rationale": "absent"})
    server.add_reply("CRITERION-1", met)
    server.add_reply("CRITERION-2", unmet)
    server.add_reply("CRITERION-PENALTY", met)
    record = _rubric(2)
    with _engine(server) as engine:
        outcome = _judge(engine, record)
    # (1 - 2) / 2 clipped to 0
    assert outcome.score == 0.0
    assert [c["met"] for c in outcome.criteria] == [1.0, 0.0, 1.0]
    assert [c["weight"] for c in outcome.criteria] == [1.0, 1.0, -2.0]
    grade = judged_grade(outcome, BOOK.get("default"), {})
    assert grade.reason == "below_threshold" and grade.passed is False
    assert "not met: c2" in grade.explanation and "penalties: p1" in grade.explanation


def test_a_rubric_is_judged_concurrently(server: MockOpenAIServer) -> None:
    server.add_reply("CRITERION", json.dumps({"met": True, "rationale": "ok"}))
    with _engine(server) as engine:
        panel = JudgePanel(engine, (JUDGE,), reasks=2)

        def judge(record: Record) -> JudgeOutcome:
            future = engine.run_coroutine(panel.judge(record, "An answer.", BOOK.get("default")))
            return future.result(timeout=60)

        judge(_rubric(1, negative=False))  # the panel's one-off structured-output probe
        server.reset()
        server.hold(until_in_flight=20)  # nothing is answered before all 20 are in flight
        outcome = judge(_rubric(20, negative=False))
    assert outcome.score == 1.0
    assert server.stats()["requests"] == 20
    assert server.stats()["peak_in_flight"] == 20


def test_criteria_ratings_on_the_scale(server: MockOpenAIServer) -> None:
    record = Record(
        id="c1",
        dataset="contract",
        task_type="criteria",
        prompt="Summarize.",
        required_criteria=("accuracy", "clarity"),
    )
    server.add_reply(
        "Rate each criterion",
        json.dumps(
            {
                "ratings": [
                    {"criterion": "accuracy", "rating": 5},
                    {"criterion": "clarity", "rating": 3},
                ]
            }
        ),
    )
    with _engine(server) as engine:
        outcome = _judge(engine, record)
    assert outcome.score == pytest.approx(0.75)
    assert [(c["id"], c["rating"]) for c in outcome.criteria] == [("accuracy", 5), ("clarity", 3)]


def test_structured_output_falls_back_to_what_the_endpoint_accepts(
    mock_openai_factory: Any,
) -> None:
    # like the llama.cpp server: json_schema is refused with a 500, json_object accepted
    server = mock_openai_factory(response_formats=["json_object"], response_format_status=500)
    server.add_reply("culpa", _ref(0.5))
    with _engine(server, retry=RetryPolicy.scaled(0.001)) as engine:
        outcome = _judge(engine, REFERENCE)
    assert outcome.error is None
    assert outcome.summary.params["structured_output"] == {JUDGE: "json_object_schema"}
    body = server.last_request()
    assert body["response_format"]["type"] == "json_object"
    assert body["response_format"]["schema"]["required"] == ["score", "rationale"]


def test_judging_again_pays_nothing_twice(server: MockOpenAIServer, tmp_path: Path) -> None:
    server.add_reply("culpa", "garbage", times=1)
    server.add_reply("culpa", _ref(0.9))
    with _engine(server, tmp_path) as engine:
        first = _judge(engine, REFERENCE)
    calls = server.stats()["requests"]
    with _engine(server, tmp_path) as engine:
        second = _judge(engine, REFERENCE)
    assert server.stats()["requests"] == calls  # probe, garbage and re-ask all cached
    assert second.score == first.score == 0.9
    assert second.summary.verdicts[0].cached is True


def _prbench_rubric() -> Record:
    criteria = (
        Criterion("c1", "CRITERION-ONE", weight=3.0),
        Criterion("c2", "CRITERION-TWO", weight=1.0),
        Criterion("p1", "CRITERION-PENALTY", weight=-2.0),
    )
    return Record(
        id="pr1",
        dataset="prbench",
        task_type="rubric_qa",
        prompt="Advise.",
        rubric=criteria,
        metadata={"policy_id": "prbench_v1"},
    )


def _grade(grade: int, criterion_id: str) -> str:
    return json.dumps({"grade": grade, "reasoning": "because", "criterion_id": criterion_id})


def test_an_lbr_rubric_is_scored_min_max_with_lbr_s_judge_prompt(server: MockOpenAIServer) -> None:
    server.add_reply("CRITERION-ONE", _grade(1, "c1"))
    server.add_reply("CRITERION-TWO", _grade(0, "c2"))
    server.add_reply("CRITERION-PENALTY", _grade(0, "p1"))
    with _engine(server) as engine:
        outcome = _judge(engine, _prbench_rubric(), policy="prbench_v1")
    # min-max: (3·1 + 1·0 − 2·0 − (−2)) / (3 + 1 − (−2)) = 5/6; clipped would give 3/4
    assert outcome.score == pytest.approx(5 / 6)
    grade = judged_grade(outcome, BOOK.get("prbench_v1"), {})
    assert grade.passed is True and grade.details["rubric"]["scoring"] == "minmax"
    system = server.last_request()["messages"][0]
    assert system["role"] == "system" and "strict LLM judge" in system["content"]


def test_a_failed_criterion_keeps_the_judged_ones_and_is_a_judge_error_by_default(
    server: MockOpenAIServer,
) -> None:
    server.add_reply("CRITERION-ONE", _grade(1, "c1"))
    server.add_reply("CRITERION-TWO", "no idea")  # never a usable verdict
    server.add_reply("CRITERION-PENALTY", _grade(0, "p1"))
    with _engine(server) as engine:
        outcome = _judge(engine, _prbench_rubric(), policy="prbench_v1", reasks=0)
    assert outcome.score is None and outcome.error is not None
    by_id = {c["id"]: c for c in outcome.criteria}
    assert by_id["c1"]["met"] == 1.0 and by_id["p1"]["met"] == 0.0
    assert by_id["c2"]["met"] is None and by_id["c2"]["error"]
    grade = judged_grade(outcome, BOOK.get("prbench_v1"), {})
    assert grade.reason == "judge_error" and grade.score is None
    assert [c["id"] for c in grade.details["criteria"]] == ["c1", "c2", "p1"]
    verdict = outcome.summary.verdicts[0]
    assert [c.get("grade") for c in verdict.criteria] == [1.0, None, 0.0]


def test_score_judged_scores_the_judged_criteria_and_shows_the_denominator(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    (tmp_path / "partial.yaml").write_text(
        "id: prbench_partial\nextends: prbench_v1\non_partial_judge_failure: score_judged\n"
    )
    book = PolicyBook(str(tmp_path))
    server.add_reply("CRITERION-ONE", _grade(1, "c1"))
    server.add_reply("CRITERION-TWO", "no idea")
    server.add_reply("CRITERION-PENALTY", _grade(0, "p1"))
    with _engine(server) as engine:
        panel = JudgePanel(engine, (JUDGE,), reasks=0)
        policy = book.get("prbench_partial")
        outcome = engine.run_coroutine(panel.judge(_prbench_rubric(), "x", policy)).result(30)
    # judged: c1 (w 3, met) and p1 (w -2, not met): (3 + 2) / (3 + 2) = 1
    assert outcome.error is None and outcome.score == pytest.approx(1.0)
    grade = judged_grade(outcome, policy, {})
    assert grade.outcome == "passed"
    assert grade.details["rubric"]["judged"] == 2 and grade.details["rubric"]["total"] == 3
    assert "2 judged of 3 criteria" in grade.explanation
