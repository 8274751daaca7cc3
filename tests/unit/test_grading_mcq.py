"""Unit tests of the multiple-choice extractor and grader on realistic replies."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pytest_legaleval.grading.mcq import Extraction, MCQGrade, extract_choice_ids, grade_mcq
from pytest_legaleval.records import Choice, Record

ABCD = ("A", "B", "C", "D")
A_H = tuple("ABCDEFGH")
A_P = tuple("ABCDEFGHIJKLMNOP")

# (reply, choice ids, expected chosen ids). Replies are English and German, short and long,
# single- and multi-answer, with ids up to P, and traps (articles, the pronoun "I", Roman
# numerals of LEXam statements, citations, hedges, option-by-option discussions).
CASES: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    # --- JSON ---------------------------------------------------------------------------------
    ('{"answer": "B"}', ABCD, ("B",)),
    ('{"answer": ["A", "C"]}', ABCD, ("A", "C")),
    ('{"answer": "A, C"}', ABCD, ("A", "C")),
    (
        'Here is my reply:\n```json\n{\n  "answer": "D",\n  "reasoning": "Art. 97 OR applies"\n}'
        "\n```",
        ABCD,
        ("D",),
    ),
    ('{"Final_Answer": "c"}', ABCD, ("C",)),
    ('{"choices": ["D", "B"]}', ABCD, ("B", "D")),
    (
        '{"reasoning": "Option A is wrong because the term is implied.", "answer": "C"}',
        ABCD,
        ("C",),
    ),
    ("{'answer': 'B'}", ABCD, ("B",)),
    ('{\\"answer\\": \\"D\\"}', ABCD, ("D",)),
    ('{"answer": "B) The contract is void."}', ABCD, ("B",)),
    (
        '{"answer": "B", "explanation": "Some would say the answer is D, but the statute '
        'says otherwise."}',
        ABCD,
        ("B",),
    ),
    (
        '{"answer": "B"}\n\nExplanation: Option D would only apply if the buyer had consented.',
        ABCD,
        ("B",),
    ),
    # --- answer lines -------------------------------------------------------------------------
    ("Answer: B", ABCD, ("B",)),
    ("Final answer: (C)", ABCD, ("C",)),
    ("**Answer:** D", ABCD, ("D",)),
    ("Antwort: B", ABCD, ("B",)),
    ("Lösung: A und C", ABCD, ("A", "C")),
    ("Réponse : B", ABCD, ("B",)),
    ("Answers: A, C", ABCD, ("A", "C")),
    ("Answers: A, B, and D", ABCD, ("A", "B", "D")),
    ("answer: c", ABCD, ("C",)),
    ("Answer:\n\nC", ABCD, ("C",)),
    ("## Final Answer\n\nB", ABCD, ("B",)),
    ("Answer: **E** – the claim is time-barred.", A_H, ("E",)),
    ("Answer: Option B is correct, since the offer was accepted in time.", ABCD, ("B",)),
    ("Answer: I think it is B.", A_P, ("B",)),
    ("Ａｎｔｗｏｒｔ：Ｂ", ABCD, ("B",)),
    ("Antwort: (N)", A_P, ("N",)),
    ("Answer: P", A_P, ("P",)),
    ("Answer: O", A_P, ("O",)),
    # --- statements ---------------------------------------------------------------------------
    ("The correct answer is B.", ABCD, ("B",)),
    ("The answer is option B.", ABCD, ("B",)),
    ("The correct answers are A and C.", ABCD, ("A", "C")),
    ("Looking at each statement in turn, the correct option is **A**.", ABCD, ("A",)),
    ("The best answer here is D, because the limitation period had run.", ABCD, ("D",)),
    ("My final answer is: B", ABCD, ("B",)),
    ("I choose B.", ABCD, ("B",)),
    ("I'd go with C.", ABCD, ("C",)),
    ("I believe I would go with I.", A_P, ("I",)),
    ("The answer is I.", A_P, ("I",)),
    ("Die richtige Antwort lautet C.", ABCD, ("C",)),
    ("Richtig ist nur Antwort B.", ABCD, ("B",)),
    ("Ich wähle B.", ABCD, ("B",)),
    ("Die Antworten A und C sind korrekt.", ABCD, ("A", "C")),
    ("Daher ist B richtig.", ABCD, ("B",)),
    ("Die korrekte Antwort ist J.", A_P, ("J",)),
    ("La bonne réponse est D.", ABCD, ("D",)),
    ("The answer is not A but C.", ABCD, ("C",)),
    ("C is the correct answer.", ABCD, ("C",)),
    ("Option A is incorrect. Option D is also incorrect. Option C is correct.", ABCD, ("C",)),
    ("Therefore, B.", ABCD, ("B",)),
    ("Statements ii and iii are correct, so the answer is B.", ABCD, ("B",)),
    ("\\boxed{D}", ABCD, ("D",)),
    ("<answer>C</answer>", ABCD, ("C",)),
    # --- revisions: the last explicit statement wins -------------------------------------------
    ("Answer: A ... wait, actually Answer: C", ABCD, ("C",)),
    (
        "Answer: A\n\nOn reflection, the limitation period had not expired.\n\nFinal answer: D",
        ABCD,
        ("D",),
    ),
    (
        "The answer would be A if the contract were valid; since it is not, the answer is C.",
        ABCD,
        ("C",),
    ),
    ("Both A and C are plausible. Answer: A, C", ABCD, ("A", "C")),
    # --- reasoning tags ------------------------------------------------------------------------
    ("<think>The options... maybe A? Answer: A</think>\nAnswer: C", ABCD, ("C",)),
    ("<think>Let me think. The correct answer is B.</think>", ABCD, ("B",)),
    ("The buyer bears the risk ... so A?</think>\n\n**Final answer: D**", ABCD, ("D",)),
    ("<reasoning>Answer: B seems right</reasoning>The correct answer is A.", ABCD, ("A",)),
    # --- formatting only -----------------------------------------------------------------------
    ("Option B", ABCD, ("B",)),
    ("(b)", ABCD, ("B",)),
    ("**B**", ABCD, ("B",)),
    ("B)", ABCD, ("B",)),
    ("B.", ABCD, ("B",)),
    ("b", ABCD, ("B",)),
    ("A and C", ABCD, ("A", "C")),
    ("A, C", ABCD, ("A", "C")),
    ("A & C", ABCD, ("A", "C")),
    ("A und C", ABCD, ("A", "C")),
    ("A/C", ABCD, ("A", "C")),
    ("B and D", A_H, ("B", "D")),
    ("B) The contract is void because the seller lacked capacity.", ABCD, ("B",)),
    ("The seller lacked capacity, so the contract is void (B).", ABCD, ("B",)),
    ("After weighing the arguments I settle on **G**.", A_H, ("G",)),
    ("Both **A** and **C** describe the law correctly.", ABCD, ("A", "C")),
    ("B is correct.", ABCD, ("B",)),
    ("B, because the offer lapsed before it was accepted.", ABCD, ("B",)),
    ("B – the offer lapsed before it was accepted.", ABCD, ("B",)),
    # --- German LEXam-style with Roman numerals ------------------------------------------------
    (
        "Aussage i ist falsch, da die Frist nicht gewahrt wurde. Aussage ii ist korrekt. "
        "Somit sind die Aussagen ii und iii zutreffend.\n\nAntwort: F",
        A_P,
        ("F",),
    ),
    ("Die Aussagen i, ii und iv sind falsch; daher ist Antwort M richtig.", A_P, ("M",)),
    ("Antwort: B\n\nBegründung: Aussage i ist falsch, Aussage ii ist richtig.", A_P, ("B",)),
    # --- traps: nothing (or only the real answer) must be extracted ----------------------------
    ("Die Aussagen i und ii sind richtig.", A_P, ()),
    ("Antwort: i und ii", A_P, ()),
    ("A contract is void if it violates mandatory law.", ABCD, ()),
    ("Answer: A contract concluded under duress is voidable, so the answer is C.", ABCD, ("C",)),
    ("I think the seller is liable. The correct answer is K.", A_P, ("K",)),
    ("The answer is a breach of contract by the seller.", ABCD, ()),
    ("A is wrong, B is wrong, C is right, D is wrong.", ABCD, ()),
    # option-by-option walk-throughs: never the first label (issue 18), unless stated
    (
        "A. This is incorrect. B. This is incorrect. C. This is correct. D. This is incorrect.",
        ABCD,
        (),
    ),
    ("A - incorrect, B - incorrect, C - correct, D - incorrect", ABCD, ()),
    ("A: incorrect. B: incorrect. C: correct. D: incorrect.", ABCD, ()),
    ("A) The seller is liable.\nB) The buyer is liable.", ABCD, ()),
    ("* A. wrong\n* B. right", ABCD, ()),
    ("A. Incorrect. B. Incorrect. C. Correct.\n\nAnswer: C", ABCD, ("C",)),
    ("C. The contract is void, since the seller lacked capacity.", ABCD, ("C",)),
    (
        "**A**: incorrect, the term is not implied.\n**B**: incorrect.\n**C**: correct.\n"
        "**D**: incorrect.",
        ABCD,
        (),
    ),
    (
        "**A**: incorrect, the term is not implied.\n**B**: incorrect.\n**C**: correct.\n"
        "**D**: incorrect.\n\nSo the answer is C.",
        ABCD,
        ("C",),
    ),
    ("The answer is either A or C.", ABCD, ()),
    ("Answer: B or C", ABCD, ()),
    ("Hence B must pay damages to A.", ABCD, ()),
    ("Under § 3 (b) the seller must deliver on time.", ABCD, ()),
    ("I am not able to determine which statements are correct.", ABCD, ()),
    ("I.  Sachverhalt\nII. Rechtliche Würdigung\nIII. Ergebnis: Der Vertrag ist gültig.", A_P, ()),
    ("Q: Is there hearsay?\nA: No, the statement is not offered for its truth.", ("A", "B"), ()),
    ("A, a merchant, sold goods to B, who refused to pay.", ABCD, ()),
    ("If the answer is C, the seller would be liable; I am not sure it is.", ABCD, ()),
    (
        "Answer: B\n\nOne might think the answer is C, but the limitation period had run.",
        ABCD,
        ("B",),
    ),
    ("", ABCD, ()),
    ("   \n\t", ABCD, ()),
    ("¯\\_(ツ)_/¯", ABCD, ()),
    ("A.B.C. Ltd. sued the U.S.A. in 2021.", ABCD, ()),
    # --- other id sets -------------------------------------------------------------------------
    ("Answer: 2", ("1", "2", "3"), ("2",)),
    ("The correct answer is A2.", ("A1", "A2", "B1"), ("A2",)),
    ("Answer: B", ("a", "b", "c"), ("b",)),
]


@pytest.mark.parametrize(("reply", "ids", "expected"), CASES)
def test_extraction_table(reply: str, ids: tuple[str, ...], expected: tuple[str, ...]) -> None:
    result = extract_choice_ids(reply, ids)
    assert result.chosen == expected, result
    if expected:
        assert result.method not in {"none", "ambiguous"}
        assert result.evidence
    else:
        assert result.method in {"none", "ambiguous"}


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize(
    ("reply", "method"),
    [
        ('{"answer": "B"}', "json"),
        ("<answer>B</answer>", "answer_tag"),
        ("\\boxed{B}", "boxed"),
        ("Answer: B", "answer_line"),
        ("The correct answer is B.", "final_statement"),
        ("Therefore, B.", "conclusion"),
        ("B is the correct answer.", "postfix"),
        ("B", "bare"),
        ("I lean towards **B** here.", "bold"),
        ("I lean towards option B here.", "option_mention"),
        ("I lean towards (B) here.", "parenthesized"),
        ("Some analysis first.\nB) The contract is void.", "label_line"),
        ("Nothing to see here.", "none"),
        ("**A** looks fine. **B** looks fine too.", "ambiguous"),
        ("A. Not this one. B. This one.", "ambiguous"),
    ],
)
def test_methods(reply: str, method: str) -> None:
    assert extract_choice_ids(reply, ABCD).method == method


def test_evidence_is_the_matched_span() -> None:
    result = extract_choice_ids("Some reasoning.\n\nAnswer: C\n", ABCD)
    assert result == Extraction(chosen=("C",), method="answer_line", evidence="Answer: C")


def test_no_choice_ids_means_nothing() -> None:
    assert extract_choice_ids("Answer: B", ()) == Extraction((), "none", "")
    assert extract_choice_ids("Answer: B", ("", "  ")) == Extraction((), "none", "")


def test_duplicate_ids_in_reply_are_reported_once_in_choice_order() -> None:
    assert extract_choice_ids("Answer: C, A, C", ABCD).chosen == ("A", "C")


def test_json_list_with_unknown_ids_keeps_the_known_ones() -> None:
    assert extract_choice_ids('{"answer": ["B", "Z"]}', ABCD).chosen == ("B",)


# --------------------------------------------------------------------------------------------
# grade_mcq
# --------------------------------------------------------------------------------------------


def _record(correct: tuple[str, ...], ids: tuple[str, ...] = ABCD) -> Record:
    return Record(
        id="r1",
        dataset="t",
        task_type="mcq",
        prompt="Which statement is correct?",
        choices=tuple(Choice(i, f"option {i}") for i in ids),
        correct_choice_ids=correct,
    )


def test_grade_correct() -> None:
    grade = grade_mcq(_record(("C",)), "Reasoning ...\nAnswer: C")
    assert grade == MCQGrade(
        passed=True,
        score=1.0,
        chosen=("C",),
        correct=("C",),
        reason="correct",
        explanation="chose C (from 'Answer: C'); correct is C",
        method="answer_line",
    )


def test_grade_wrong_answer() -> None:
    grade = grade_mcq(_record(("C",)), "Answer: B")
    assert not grade.passed
    assert grade.score == 0.0
    assert grade.reason == "wrong_answer"
    assert grade.chosen == ("B",)
    assert grade.explanation == "chose B (from 'Answer: B'); correct is C"


def test_grade_no_answer_extracted() -> None:
    reply = "I cannot answer this question without more facts. " * 10
    grade = grade_mcq(_record(("C",)), reply)
    assert not grade.passed
    assert grade.score == 0.0
    assert grade.reason == "no_answer_extracted"
    assert grade.chosen == ()
    assert grade.method == "none"
    assert grade.explanation.startswith("no choice id could be extracted from the response")
    assert "I cannot answer this question" in grade.explanation
    assert "…" in grade.explanation  # the reply is cut to its first 200 characters
    assert grade.explanation.endswith("correct is C")


def test_grade_ambiguous_is_no_answer_not_wrong_answer() -> None:
    grade = grade_mcq(_record(("C",)), "**A** is tempting. **C** is better.")
    assert grade.reason == "no_answer_extracted"
    assert grade.method == "ambiguous"
    assert "several options" in grade.explanation


def test_a_walk_through_is_no_answer_not_a_confident_first_letter() -> None:
    reply = "A. This is incorrect. B. This is incorrect. C. This is correct. D. This is wrong."
    grade = grade_mcq(_record(("C",)), reply)
    assert (grade.reason, grade.chosen, grade.method) == ("no_answer_extracted", (), "ambiguous")
    assert "several options" in grade.explanation and "A. | B. | C. | D." in grade.explanation


def test_grade_multi_answer_needs_the_exact_set() -> None:
    record = _record(("C", "A"))
    assert grade_mcq(record, '{"answer": ["A", "C"]}').reason == "correct"
    assert grade_mcq(record, "Answer: C and A").correct == ("A", "C")
    partial = grade_mcq(record, "Answer: A")
    assert partial.reason == "wrong_answer"
    assert partial.explanation == "chose A (from 'Answer: A'); correct is A, C"
    assert grade_mcq(record, "Answer: A, B, C").reason == "wrong_answer"


def test_grade_sixteen_options() -> None:
    record = _record(("I",), A_P)
    assert grade_mcq(record, "Die Aussagen i und iii sind falsch. Antwort: I").passed
    assert grade_mcq(record, "I think the answer is K.").reason == "wrong_answer"


def test_grade_choice_text_fallback() -> None:
    record = Record(
        id="hearsay-2",
        dataset="t",
        task_type="mcq",
        prompt="Is there hearsay?",
        choices=(Choice("A", "Yes"), Choice("B", "No")),
        correct_choice_ids=("B",),
    )
    grade = grade_mcq(record, "No.")
    assert grade.passed
    assert grade.method == "choice_text"
    assert grade_mcq(record, "Answer: Yes").reason == "wrong_answer"
    assert grade_mcq(record, "No hearsay here, the statement is not assertive.").reason == (
        "no_answer_extracted"
    )


def test_grade_keeps_record_spelling_of_ids() -> None:
    record = _record(("b",), ("a", "b", "c"))
    grade = grade_mcq(record, "The correct answer is B.")
    assert grade.chosen == ("b",)
    assert grade.passed


ONE_KILOBYTE_REPLY = (
    "Zunächst ist zu prüfen, ob der Vertrag gültig zustande gekommen ist. Aussage i ist "
    "falsch, weil die Form nicht eingehalten wurde. Aussage ii trifft zu: Nach Art. 11 OR "
    "bedürfen Verträge nur dann einer besonderen Form, wenn das Gesetz sie vorschreibt. "
    "Aussage iii ist ebenfalls zutreffend, denn der Irrtum war wesentlich (Art. 24 Abs. 1 "
    "Ziff. 4 OR). A contract concluded under duress is voidable, and the party may avoid it "
    "within one year. Option A covers only statement i, option B covers i and ii. "
) * 2 + "\n\nAntwort: F"
THROUGHPUT_REPEATS = 300


PATHOLOGICAL = {
    "spaces": " " * 20000,
    "blanks after an id": "A" + " \t" * 5000 + "x",
    "long id chain": " and ".join("ABCD" * 500) + " zz",
    "long id chain after a keyword": "Answer: " + "  ,  ".join("ABCD" * 500) + " or",
    "asterisks": "*" * 20000,
    "bold ids": "**A** and " * 2000,
    "repeated keyword": "Answer: " * 2500,
    "repeated statement": "the answer is " * 1500,
    "parentheses": "(" * 10000 + "A" + ")" * 10000,
    "quotes": "\"'`" * 5000 + "A",
    "json keys": '{"answer": ' * 2000,
    "json answers": '{"answer": "A", ' * 2000,
    "nested json": '[{"answer": "A", "x": [' * 1000,
    "reasoning tags": "<think>" * 3000 + "</think>" * 3000,
    "unclosed reasoning tags": "<think>" * 5000,
    "roman numerals": " ii und " * 2500,
    "negations": "is not " * 3000,
    "conclusions": "therefore, " * 2000,
    "option then blanks": "Option" + " " * 20000 + "B",
    "verdicts": "A is " * 4000,
    "newlines": "\n" * 20000 + "B",
    "label lines": "A) x\n" * 4000,
    "one long word": "a" * 50000,
}


# Each case runs in a child process under a CPU-time limit (RLIMIT_CPU): the kernel stops
# the child once the case has used CPU_BUDGET_S to CPU_BUDGET_S + 1 seconds of CPU (the
# limit is whole seconds). CPU time is the process's own work, so other load on the machine
# does not count against it, unlike a wall-clock bound; and a regex that backtracks for
# minutes is killed instead of hanging the suite. Each case uses 5-60 ms of CPU today
# (benchmarks/mcq_extraction.py prints the figures).
CPU_BUDGET_S = 1
_CHILD = """
import json, math, resource, sys
from pytest_legaleval.grading.mcq import extract_choice_ids

cases, ids, budget = json.load(sys.stdin)
ids = tuple(ids)
extract_choice_ids("warm up", ids)
_, hard = resource.getrlimit(resource.RLIMIT_CPU)
for name, text, repeats in cases:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    limit = math.ceil(usage.ru_utime + usage.ru_stime) + budget
    resource.setrlimit(resource.RLIMIT_CPU, (limit, hard))
    print(json.dumps({"started": name}), flush=True)
    chosen = [extract_choice_ids(text, ids).chosen for _ in range(repeats)][-1]
    print(json.dumps({"name": name, "chosen": list(chosen)}), flush=True)
"""


@pytest.fixture(scope="module")
def extractions_under_a_cpu_limit() -> dict[str, tuple[str, ...]]:
    """Run every pathological reply, and 300 one-kilobyte replies, in the CPU-limited child."""
    cases = [[name, PATHOLOGICAL[name], 1] for name in sorted(PATHOLOGICAL)]
    cases.append(["one kilobyte x300", ONE_KILOBYTE_REPLY, THROUGHPUT_REPEATS])
    child = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=json.dumps([cases, A_P, CPU_BUDGET_S]),
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard only: the CPU limit ends a runaway case
    )
    lines = [json.loads(line) for line in child.stdout.splitlines()]
    started = [line["started"] for line in lines if "started" in line]
    done = {line["name"]: tuple(line["chosen"]) for line in lines if "name" in line}
    if child.returncode != 0:
        stuck = started[-1] if started and started[-1] not in done else None
        # SIGXCPU: the case named last used up its CPU budget.
        assert stuck is None, (
            f"{stuck!r} used over {CPU_BUDGET_S} s of CPU (catastrophic backtracking?)"
        )
        raise AssertionError(child.stderr)
    return done


def test_throughput_on_one_kilobyte_replies(
    extractions_under_a_cpu_limit: dict[str, tuple[str, ...]],
) -> None:
    # 300 one-kilobyte replies within about a CPU second: 50,000 records must not take minutes.
    assert 900 <= len(ONE_KILOBYTE_REPLY) <= 1400
    assert extractions_under_a_cpu_limit["one kilobyte x300"] == ("F",)


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_pathological_replies_take_linear_time(
    name: str, extractions_under_a_cpu_limit: dict[str, tuple[str, ...]]
) -> None:
    # Regression guard against catastrophic backtracking: each of these took seconds to
    # minutes before the patterns were made possessive/atomic; now 5-60 ms of CPU.
    assert set(extractions_under_a_cpu_limit[name]) <= set(A_P)
