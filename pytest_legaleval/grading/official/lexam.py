"""LEXam's own scoring: MCQ answer extraction and the open-question judge's grade.

Read from LEXam-Benchmark/LEXam at commit 487f729e85725e5d3e00c0b25142de1e86cda643;
our own code, checked against those functions in the tests.

- MCQ (``evaluation.py``): the answer is the *last* ``###X###`` of the response —
  ``###([A-Z])###`` for questions of up to 26 choices (``mcq_letters``: ``A`` is choice 0),
  ``###([0-9]+)###`` for more (``mcq_numbers``: ``1`` is choice 0, so ``###0###`` is no
  choice). Exactly those patterns: case-sensitive, no spaces inside, ASCII only; no marker
  is a wrong answer. Accuracy = right answers / questions.
- Open questions (``customized_judge_async.py``): the judge replies in free text; its grade
  is the *first* ``[[d.d]]`` (a digit, any one character, a digit, between double square
  brackets) read as a float; no such marker, or a value outside [0, 1], grades 0. The
  figure is the mean of grade × 100 over the questions. Where the marker is there but
  not a number (``[[0,5]]``) upstream's ``float`` raises; here that reply grades 0 too.
- Before judging, an answer holding ``</think>`` is cut to what follows the first one,
  stripped of newlines and spaces (upstream does so for every answer when the first
  answer of the file holds one; per answer here).

The official figure keeps LEXam's 0 for an unusable judge reply; our own grade of the same
item is a ``judge_error`` (DESIGN §7), reported beside it and never mixed in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_legaleval.grading.official.lexam_prompts import JUDGE_PROMPT, LETTERS, mcq_format

__all__ = [
    "PROTOCOL",
    "PROTOCOL_VERSION",
    "UPSTREAM_COMMIT",
    "UPSTREAM_REPO",
    "JudgeGrade",
    "McqVerdict",
    "answer_for_judge",
    "extract_letter",
    "extract_number",
    "judge_grade",
    "judge_prompt",
    "mcq_verdict",
]

UPSTREAM_REPO = "LEXam-Benchmark/LEXam"
UPSTREAM_COMMIT = "487f729e85725e5d3e00c0b25142de1e86cda643"
PROTOCOL = "lexam_official"
PROTOCOL_VERSION = 1
JUDGE_MAX_TOKENS = 4096
"""LEXam's judge generation limit (``GENE_ARGS_DICT`` of ``customized_judge_async.py``)."""

_LETTER = re.compile(r"###([A-Z])###")
_NUMBER = re.compile(r"###([0-9]+)###")
_GRADE = re.compile(r"\[\[(\d.\d)\]\]")
_THINK_END = "</think>"


def extract_letter(response: str) -> str | None:
    """The last ``###X###`` letter of ``response``, or ``None``."""
    matches = _LETTER.findall(response)
    return matches[-1] if matches else None


def extract_number(response: str) -> int | None:
    """The last ``###N###`` number of ``response``, or ``None``."""
    matches = _NUMBER.findall(response)
    return int(matches[-1]) if matches else None


@dataclass(frozen=True, slots=True)
class McqVerdict:
    """LEXam's verdict on one MCQ answer."""

    format: str
    """``letters`` or ``numbers``."""
    extracted: str | None
    """The marker's content (``"C"``, ``"27"``), or ``None`` when there is none."""
    chosen_index: int | None
    """The 0-based choice it names (may be out of range), or ``None``."""
    correct: bool


def mcq_verdict(response: str, gold_index: int, n_choices: int) -> McqVerdict:
    """Extract the answer as ``evaluation.py`` does and compare it with the gold index."""
    answer_format = mcq_format(n_choices)
    if answer_format == "letters":
        letter = extract_letter(response)
        index = None if letter is None else LETTERS.index(letter)
        return McqVerdict(answer_format, letter, index, index == gold_index)
    number = extract_number(response)
    index = None if number is None else number - 1
    extracted = None if number is None else str(number)
    return McqVerdict(answer_format, extracted, index, index == gold_index)


@dataclass(frozen=True, slots=True)
class JudgeGrade:
    """One judge reply, graded as LEXam grades it and as we do."""

    official: float
    """LEXam's grade in [0, 1]: the reply's value, or 0 when it has no usable one."""
    value: float | None
    """Our reading: the same value, or ``None`` when the reply is unusable."""
    problem: str | None
    """Why the reply is unusable, else ``None``."""


def judge_grade(reply: str) -> JudgeGrade:
    """Grade a judge reply as ``process_judge_response_grade_gpt`` does."""
    found = _GRADE.search(reply)
    if found is None:
        return JudgeGrade(0.0, None, "no [[d.d]] grade in the reply")
    try:
        value = float(found.group(1))
    except ValueError:
        return JudgeGrade(0.0, None, f"the grade [[{found.group(1)}]] is not a number")
    if not 0 <= value <= 1:  # NaN too (every comparison with it is false)
        return JudgeGrade(0.0, None, f"the grade {value:g} is outside 0..1")
    return JudgeGrade(value, value, None)


def answer_for_judge(answer: str) -> str:
    """The answer as LEXam's judge is shown it (reasoning before ``</think>`` cut off)."""
    if _THINK_END in answer:
        return answer.split(_THINK_END)[1].strip("\n ")
    return answer


def judge_prompt(question: str, reference: str, answer: str) -> str:
    """LEXam's judge user message for one answer."""
    return JUDGE_PROMPT.format(
        question_fact=question, ref_answer=reference, model_answer=answer_for_judge(answer)
    )
