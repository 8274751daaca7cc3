"""``lexam_official``: LEXam's prompts, MCQ extraction and open-question judge.

Expected values in ``tests/data/official/lexam_expected.json`` come from LEXam's own code
(commit 487f729: ``evaluation.py``'s extraction, ``customized_judge_async.py``'s grade) on
answer forms written for these tests (``tests/data/official/make_expected.py``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.engine import Engine, EngineSettings, RetryPolicy
from pytest_legaleval.grading._base import Grade, GradeRequest, run_inline
from pytest_legaleval.grading._graders import JudgeGrader
from pytest_legaleval.grading._panel import JudgePanel
from pytest_legaleval.grading._policies import PolicyBook
from pytest_legaleval.grading._registry import default_registry
from pytest_legaleval.grading.official import lexam as lx
from pytest_legaleval.grading.official import lexam_prompts as prompts
from pytest_legaleval.grading.official.graders import LexamMcqOfficialGrader
from pytest_legaleval.importers import ImportOptions, run_import
from pytest_legaleval.metrics._benchmarks import benchmark_figures
from pytest_legaleval.records import Choice, Record
from pytest_legaleval.testing.mock_openai import MockConfig, MockOpenAIServer

from ..extras import needs_import

DATA = Path(__file__).resolve().parents[1] / "data"
EXPECTED = json.loads((DATA / "official" / "lexam_expected.json").read_text("utf-8"))
LEXAM = DATA / "importers" / "lexam"
POLICY = PolicyBook().get("lexam_official")
JUDGE = "openai/judge-a"


def _mcq(n: int, gold: int) -> Record:
    choices = tuple(Choice(f"C{i}", f"option {i}") for i in range(n))
    return Record(
        id=f"lexam:mcq:{n}-{gold}", dataset="lexam", task_type="mcq", prompt="Q?",
        choices=choices, correct_choice_ids=(f"C{gold}",),
        metadata={"policy_id": "lexam_official", "gold_index": gold},
    )  # fmt: skip


@pytest.mark.parametrize("case", EXPECTED["mcq"], ids=lambda c: repr(c["response"])[:40])
def test_mcq_verdicts_equal_evaluation_py(case: dict[str, Any]) -> None:
    verdict = lx.mcq_verdict(case["response"], case["gold_index"], case["n_choices"])
    assert (verdict.extracted, verdict.correct) == (case["extracted"], case["correct"])
    assert verdict.format == ("letters" if case["n_choices"] <= 26 else "numbers")
    grade = run_inline(
        LexamMcqOfficialGrader().grade(
            GradeRequest(_mcq(case["n_choices"], case["gold_index"]), "m", case["response"], POLICY)
        )
    )
    assert grade.passed is case["correct"] and grade.score == float(case["correct"])
    assert grade.details["official"]["correct"] is case["correct"]


def test_the_mcq_fixture_has_right_and_wrong_answers_of_both_formats() -> None:
    formats = {(c["n_choices"] > 26, c["correct"]) for c in EXPECTED["mcq"]}
    assert formats == {(False, True), (False, False), (True, True), (True, False)}


@pytest.mark.parametrize("case", EXPECTED["judge"], ids=lambda c: repr(c["reply"])[:30])
def test_judge_grades_equal_customized_judge_async(case: dict[str, Any]) -> None:
    grade = lx.judge_grade(case["reply"])
    if case["raises"] is not None:  # upstream's float() raises: an unusable reply, 0 here
        assert (grade.official, grade.value) == (0.0, None) and grade.problem
        return
    assert grade.official == case["grade"]
    # our own reading: the same value, or an unusable reply (a judge error), never a 0
    if grade.problem is None:
        assert grade.value == case["grade"]
    else:
        assert grade.value is None and case["grade"] == 0


def test_replies_without_a_usable_grade_are_told_apart_from_a_grade_of_0() -> None:
    assert lx.judge_grade("[[0.0]]").problem is None and lx.judge_grade("[[0.0]]").value == 0.0
    for reply in ("[[1]]", "no grade", "[[1.5]]", "[[0,5]]", "[[-0.5]]"):
        assert lx.judge_grade(reply).problem is not None, reply


def test_prompts_are_lexams_byte_for_byte() -> None:
    texts = {
        "open": prompts.OPEN_QUESTION_PROMPT, "letters": prompts.MCQ_PROMPT_LETTERS,
        "numbers": prompts.MCQ_PROMPT_NUMBERS, "judge_system": prompts.JUDGE_SYSTEM,
        "judge_prompt": prompts.JUDGE_PROMPT,
    }  # fmt: skip
    digests = {k: hashlib.sha256(v.encode()).hexdigest() for k, v in texts.items()}
    assert digests == EXPECTED["texts_sha256"]
    assert (
        lx.judge_prompt("Frage {1}?", "Antwort", "Mein [Ansatz]")
        == (EXPECTED["judge_prompt_example"])
    )
    assert prompts.mcq_prompt("Q?", ["a", "b"], "Steuerrecht") == EXPECTED["mcq_prompt_example"]


def test_32_choices_are_listed_and_answered_by_number() -> None:
    listed = prompts.mcq_prompt("Q?", [f"c{i}" for i in range(32)], "Strafrecht")
    assert "\n1. c0\n" in listed and listed.count("\n32. c31") == 1
    assert "Correct Answer: ###3###" in listed and "A. c0" not in listed
    assert lx.mcq_verdict("###27###", 26, 32).correct is True
    assert lx.mcq_verdict("###Z###", 25, 32).correct is False  # no letters past 26 choices


def test_the_answer_the_judge_sees() -> None:
    assert lx.answer_for_judge("<think>draft</think>\n Final. \n") == "Final."
    assert lx.answer_for_judge("a</think>b</think>c") == "b"  # upstream takes the second part
    question = "Was gilt?\n\n(Sachverhalt)"
    assert prompts.question_of(prompts.open_prompt(question, "OR AT"), "OR AT") == question
    assert prompts.question_of("a bare question", "OR AT") == "a bare question"


# -- imported records ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for protocol in ("lexam_official", "lbr"):
        path = tmp_path_factory.mktemp(protocol) / "lexam.jsonl"
        summary = run_import("lexam", [LEXAM], path, options=ImportOptions(protocol=protocol))
        assert summary.failed == 0
        lines = path.read_text(encoding="utf-8").split("\n")[:-1]
        out[protocol] = {json.loads(line)["id"]: json.loads(line) for line in lines}
    return out


@needs_import
def test_official_records_differ_from_ours_in_prompt_and_policy_only(
    imported: dict[str, dict[str, dict[str, Any]]],
) -> None:
    official, ours = imported["lexam_official"], imported["lbr"]
    assert official.keys() == ours.keys()
    for record_id, record in official.items():
        other = ours[record_id]
        assert record["metadata"]["policy_id"] == "lexam_official"
        same = {k: v for k, v in record.items() if k not in ("prompt", "metadata")}
        assert same == {k: v for k, v in other.items() if k not in ("prompt", "metadata")}
        meta = {k: v for k, v in record["metadata"].items() if k != "policy_id"}
        assert meta == {k: v for k, v in other["metadata"].items() if k != "policy_id"}
        course = record["metadata"]["course"]
        assert record["prompt"].startswith(f"You are an expert in {course} and")
        assert other["prompt"] in record["prompt"]  # the bare question, inside LEXam's prompt
        if record["task_type"] == "mcq":
            n = len(record["choices"])
            first = "1." if n > 26 else "A."
            assert f"\n{first} {record['choices'][0]['text']}\n" in record["prompt"]
        else:
            assert prompts.question_of(record["prompt"], course) == other["prompt"]


def _engine(server: MockOpenAIServer) -> Engine:
    return Engine(
        EngineSettings(
            base_url=server.base_url,
            cache_path=None,
            retry=RetryPolicy.scaled(0.001),
            request_timeout_s=5.0,
            judge_concurrency=10,
        )
    )


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer(MockConfig(latency=0.0)) as srv:
        yield srv


OPEN = Record(
    id="lexam:oq:1", dataset="lexam", task_type="reference_qa",
    prompt=prompts.open_prompt("Ist der Vertrag gültig?", "Obligationenrecht"),
    reference_answers=("Ja, Art. 1 OR.",),
    metadata={"policy_id": "lexam_official", "course": "Obligationenrecht"},
)  # fmt: skip


def _grade(server: MockOpenAIServer, answer: str, models: tuple[str, ...] = (JUDGE,)) -> Grade:
    grader = default_registry().for_record(OPEN)
    assert isinstance(grader, JudgeGrader) and grader.needs_judge
    with _engine(server) as engine:
        panel = JudgePanel(engine, models, max_tokens=512)
        request = GradeRequest(OPEN, "m", answer, POLICY, panel)
        return engine.run_coroutine(grader.grade(request)).result(timeout=30)


def test_an_open_question_is_judged_with_lexams_prompt_and_grade(
    server: MockOpenAIServer,
) -> None:
    server.add_reply("Ist der Vertrag", "1. Explanation ... 3. The correctness score: [[0.7]]")
    grade = _grade(server, "<think>hm</think>Ja, gemäss Art. 1 OR.")
    assert (grade.outcome, grade.score, grade.passed) == ("passed", 0.7, True)
    assert grade.details["official"]["score"] == 0.7
    body = server.last_request()
    assert body is not None and "response_format" not in body
    assert body["max_tokens"] == 4096 or body.get("max_completion_tokens") == 4096
    system, user = body["messages"]
    assert system == {"role": "system", "content": prompts.JUDGE_SYSTEM}
    assert user["content"] == lx.judge_prompt(
        "Ist der Vertrag gültig?", "Ja, Art. 1 OR.", "Ja, gemäss Art. 1 OR."
    )
    assert grade.judge is not None and grade.judge.verdicts[0].rationale.endswith("[[0.7]]")


def test_an_unusable_judge_reply_is_lexams_0_and_our_judge_error(
    server: MockOpenAIServer,
) -> None:
    server.add_reply("Ist der Vertrag", "The answer is quite good; I give it 0.8 points.")
    grade = _grade(server, "Ja.")
    assert (grade.outcome, grade.reason, grade.score) == ("error", "judge_error", None)
    assert grade.details["official"] == {
        "benchmark": "lexam", "protocol": "lexam_official", "protocol_version": 1,
        "kind": "open", "grades": [0.0], "unusable_replies": 1, "score": 0.0,
    }  # fmt: skip
    assert grade.judge is not None and "0.8 points" in (grade.judge.verdicts[0].raw or "")
    assert len(server.requests()) == 1  # one call, as LEXam makes: no re-ask
    line = {"record_id": OPEN.id, "model": "m", "policy_id": "lexam_official"}
    line.update(reason=grade.reason, score=grade.score, details=dict(grade.details))
    figures = benchmark_figures([line])["lexam"]["open"]
    assert figures["score"] == 0.0 and figures["unusable_replies_scored_0"] == 1
    assert figures["ours"] == {"graded": 0, "mean_score_x100": None, "judge_errors": 1}


def test_a_failed_judge_call_has_no_official_grade(server: MockOpenAIServer) -> None:
    server.add_fault("400", match="Ist der Vertrag")
    grade = _grade(server, "Ja.")
    assert (grade.outcome, grade.reason) == ("error", "judge_error")
    assert grade.details["official"]["score"] is None
    line = {"record_id": OPEN.id, "model": "m", "policy_id": "lexam_official"}
    line.update(reason=grade.reason, score=None, details=dict(grade.details))
    figures = benchmark_figures([line])["lexam"]
    assert figures["open"]["n"] == 0 and figures["not_scored"] == 1


def test_two_judges_are_averaged_in_both_figures(server: MockOpenAIServer) -> None:
    def reply(body: dict[str, Any]) -> str:
        return "[[1.0]]" if body["model"] == "judge-a" else "[[0.4]] [[0.9]]"

    server.add_reply(reply)
    grade = _grade(server, "Ja.", models=(JUDGE, "openai/judge-b"))
    assert grade.score == pytest.approx(0.7) and grade.details["official"]["grades"] == [1.0, 0.4]
