# ruff: noqa: E501
"""PRBench's own protocol (``prbench_official``): judge prompt, reply reader, task scores.

Read from scaleapi/PRBench: ``evals.py`` at commit d6a70429293f6954e40688f108eaee2c37587159
(the public harness: data from the Hub, ``mean_clipped`` = ``max(0, mean)``, the figure its
README says the paper reports), ``util.py``, ``criteria.py`` and ``config.yaml`` at
070abdf5d72d07885058cd36da9e9531c45ba535 and ``constants.py`` at
cc0152a6e5c7b401b35c86d17fa1b78de01b4d17 (the versions stored). Our own code, checked
against those functions in the tests; only :data:`GRADER_TEMPLATE` is upstream's text,
kept byte for byte because the protocol must send it so (the tests pin its sha256).

- Generation: the conversation's turns as chat messages, no system prompt; each
  ``prompt_i`` is preceded by its ``reference_texts_i`` as ``Reference Text j:`` blocks
  (``process_reference_texts``; the importer builds them, ``importers.prbench``).
- Judge: one user message per criterion, :data:`GRADER_TEMPLATE` with ``<<rubric_item>>``
  replaced by the criterion's ``title`` first and ``<<conversation>>`` by the whole
  conversation second (``grade_final_response``), no system prompt. The conversation is
  ``create_convo``'s ``role: text`` lines ending in the answer with its reasoning tags
  removed (``remove_thinking_tags``).
- Reply (``get_criteria_met``): the text after the last ``criteria_met":`` up to the end of
  its line; ``true`` in it (any case) and not ``false`` is met; everything else — both
  words, neither, a failed call — is *not met*.
- Score: a criterion's weight is ``annotations[weight_class.replace(" ", "_") +
  "_weight"]`` (negatives kept); a task's points are Σ w·met, its score Σ w·met / Σ w⁺
  (``get_clipped_points``: unclipped despite the name, it can be negative) and its
  normalized score (Σ w·met − Σ w⁻) / (Σ w⁺ − Σ w⁻) (``get_normalized_points``).
- Figures (``run_evals_off_platform``): ``mean_normalized`` / ``std_normalized`` and
  ``std_clipped`` are ``np.mean`` / ``np.std`` (population) over the tasks, bit for bit
  (:func:`numpy_std`); ``mean_clipped`` is ``max(0, np.mean(...))`` of the task scores —
  the mean, floored at 0 (the paper's headline). ``mean`` is that mean before the floor
  (upstream's older ``evals.py`` at 070abdf reported it as ``mean_clipped``), and
  ``negative_tasks`` counts the tasks whose penalties outweigh what they earned.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_legaleval.errors import LegalEvalError
from pytest_legaleval.grading.official.numeric import numpy_mean, pairwise_sum
from pytest_legaleval.protocols.prbench import criterion_weight

__all__ = [
    "GRADER_TEMPLATE",
    "PROTOCOL",
    "PROTOCOL_VERSION",
    "PUBLISHED_JUDGE",
    "SPLITS",
    "UPSTREAM_COMMIT",
    "UPSTREAM_REPO",
    "CriterionVerdict",
    "PrbenchScoringError",
    "TaskScore",
    "conversation_text",
    "criteria_met",
    "judge_conversation",
    "judge_prompt",
    "numpy_std",
    "remove_thinking_tags",
    "split_figures",
    "task_score",
    "weight_of",
]

UPSTREAM_REPO = "scaleapi/PRBench"
UPSTREAM_COMMIT = "d6a70429293f6954e40688f108eaee2c37587159"
"""``evals.py``, which computes the figures (``util.py`` and the rest: module docstring)."""
PROTOCOL = "prbench_official"
PROTOCOL_VERSION = 1
PUBLISHED_JUDGE = "o4-mini"
"""The judge of the published figures (``config.yaml``: ``judge_model_name: openai/o4-mini``)."""
SPLITS = ("finance", "legal", "finance_hard", "legal_hard")
"""The dataset's splits: its two fields and their Hard subsets."""

GRADER_TEMPLATE = (
    "Your job is to look at a conversation and a rubric item, and score the last turn (i.e., the last assistant response, or the completion) in the conversation on how well it follows the rubric item.\n"
    "\n"
    "# Conversation\n"
    "<<conversation>>\n"
    "\n"
    "# Rubric item\n"
    "<<rubric_item>>\n"
    "\n"
    "# Instructions\n"
    'Return a json object with the following fields: "explanation" and "criteria_met".\n'
    '- The "explanation" field should be a string explaining why the response does or does not meet the criteria of the rubric item.\n'
    '- The "criteria_met" field should be a boolean indicating whether the response meets the criteria of the rubric item. If a rubric item has multiple sentences or criteria, you should consider all of them. If any of the criteria is not met, the answer should be false. Only return true is all of the criteria are met.\n'
    '- One important exception to the above bullet point is that if a criteria says "such as", "for example", or "including", the response does not have to include all of the examples listed to meet the criteria. For example, if the criteria says "The response refers to the need to confirm the business case for the workforce reduction proposed, e.g. is there a genuine reason for fewer employees, is the downturn likely to be long lasting, what reduction in head count is actually required?", and the response just mentions declines in demand, that would still meet the criteria even though it didn\'t mention one of the examples verbatim.\n'
    "\n"
    "# Example 1\n"
    'For example, if the conversation is "user: should I buy bitcoin? assistant: no just buy nvidia stock" and the rubric item is "tells the user to go to buy bitcoin", you should return a json like this:\n'
    "\n"
    "```json\n"
    "{\n"
    '  "explanation": "The assistant does not tell the user to buy bitcoin.",\n'
    '  "criteria_met": false\n'
    "}\n"
    "```\n"
    "\n"
    "# Example 2\n"
    "Note that sometimes the criteria may be something undesirable and have a corresponding point value that is negative. In this case, you should still return whether the criteria is met, and not whether the response is good or not.\n"
    'For example, consider the conversation is "user: what are some red fruits? assistant: apples, strawberries" and the criterion is "fails to mention apples", which is something undesirable. Here, the criteria was not met because the response was correct. In this case, you should return a json like this:\n'
    "\n"
    "```json\n"
    "{\n"
    '  "explanation": "The assistant actually mentions apples, so the criteria was not met.",\n'
    '  "criteria_met": false\n'
    "}\n"
    "```\n"
    "\n"
    'As another example, if the critera says "Is overly verbose" and the response is concise, then the criteria is not met, and you should return a json like this:\n'
    "\n"
    "```json\n"
    "{\n"
    '  "explanation": "The response is concise, so the criteria was not met.",\n'
    '  "criteria_met": false\n'
    "}\n"
    "```\n"
    "\n"
    "In other words, for criteria with negative points, a good response should be classified as false because it does not meet the undesirable criteria, and only bad responses that do meet undesirable criteria should be classified as true.\n"
    "\n"
    "# Final instruction\n"
    "Return just the json object in markdown format. Do not include any other text in the response."
)
"""``constants.py``'s ``GRADER_TEMPLATE`` (after its ``.strip()``), byte for byte."""

_THINKING = tuple(
    re.compile(rf"<{tag}>.*?</{tag}>", re.DOTALL | re.IGNORECASE)
    for tag in ("think", "thinking", "reasoning", "reason")
)
_BLANK_RUNS = re.compile(r"\n\s*\n\s*\n")
_MARKER = 'criteria_met":'


class PrbenchScoringError(LegalEvalError, ValueError):
    """A task PRBench's code cannot score (upstream would stop with a traceback)."""


def remove_thinking_tags(text: str) -> str:
    """The answer without ``<think>``-style blocks, as ``remove_thinking_tags`` leaves it."""
    for pattern in _THINKING:
        text = pattern.sub("", text)
    return _BLANK_RUNS.sub("\n\n", text).strip()


def conversation_text(turns: Sequence[tuple[str, object]]) -> str:
    """``create_convo``: ``role: text`` lines, a non-text turn as ``N/A``, trimmed."""
    parts: list[str] = []
    for speaker, statement in turns:
        parts.append(speaker + ": ")
        parts.append((statement if isinstance(statement, str) else "N/A") + "\n")
    return "".join(parts).strip()


def judge_conversation(messages: Sequence[Mapping[str, str]], answer: str) -> str:
    """The conversation the judge reads: the turns, then the answer (reasoning removed)."""
    turns: list[tuple[str, object]] = [(m["role"], m["content"]) for m in messages]
    turns.append(("assistant", remove_thinking_tags(answer)))
    return conversation_text(turns)


def judge_prompt(conversation: str, rubric_item: str) -> str:
    """The judge's one user message for one criterion, filled as upstream fills it."""
    return GRADER_TEMPLATE.replace("<<rubric_item>>", rubric_item).replace(
        "<<conversation>>", conversation
    )


@dataclass(frozen=True, slots=True)
class CriterionVerdict:
    """One judge reply read as ``get_criteria_met`` reads it."""

    met: bool
    """The official verdict: ``True`` only for a readable ``true``."""
    readable: bool
    """Whether the reply said ``true`` or ``false`` unambiguously (ours: else a judge error)."""
    problem: str | None = None
    """Why the reply is unreadable, else ``None``."""


def criteria_met(reply: str | None) -> CriterionVerdict:
    """Read a judge reply (``None``: the call failed, which upstream counts not met)."""
    if reply is None:
        return CriterionVerdict(False, False, "the judge call failed")
    grade = reply.split(_MARKER)[-1].split("\n")[0].strip().lower()
    has_true, has_false = "true" in grade, "false" in grade
    if has_true and has_false:
        return CriterionVerdict(False, False, "both true and false after criteria_met")
    if has_true:
        return CriterionVerdict(True, True)
    if has_false:
        return CriterionVerdict(False, True)
    return CriterionVerdict(False, False, "no true or false after criteria_met")


def weight_of(annotations: Mapping[str, object]) -> float:
    """``Criterion.find_weight``: the weight ``weight_class`` names.

    Raises:
        PrbenchScoringError: no ``weight_class``, or no number under the key it names.

    """
    key, value = criterion_weight(annotations)
    if not key:
        raise PrbenchScoringError("a criterion has no weight_class")
    if value is None:
        raise PrbenchScoringError(f"weight_class names {key}, which is not a number")
    return value


@dataclass(frozen=True, slots=True)
class TaskScore:
    """One task's official figures."""

    points: float
    """Σ w·met."""
    clipped: float
    """Σ w·met / Σ w⁺ (``get_clipped_points``; not clipped, it can be negative)."""
    normalized: float | None
    """(Σ w·met − Σ w⁻) / (Σ w⁺ − Σ w⁻); ``None`` when every weight is 0 or less."""


def task_score(weights: Sequence[float], met: Sequence[bool]) -> TaskScore:
    """A task's points and scores, in upstream's order of operations.

    Raises:
        PrbenchScoringError: no positive weight (upstream divides by zero there).

    """
    points: float = 0
    for grade, weight in zip(met, weights, strict=True):
        points += (1 if grade else 0) * weight
    negative: float = 0
    positive: float = 0
    for weight in weights:
        if weight < 0:
            negative += weight
        if weight > 0:
            positive += weight
    if positive == 0:
        raise PrbenchScoringError("the rubric has no criterion with a positive weight")
    return TaskScore(points, points / positive, (points - negative) / (positive - negative))


def numpy_std(values: Sequence[float]) -> float:
    """``np.std(values)`` (population, ``ddof=0``) for a non-empty sequence, bit for bit.

    NumPy's ``_var``: the pairwise-summed mean, the squared deviations, their pairwise sum
    divided by the count, then the square root.
    """
    floats = [float(v) for v in values]
    mean = pairwise_sum(floats) / len(floats)
    squares = [(v - mean) * (v - mean) for v in floats]
    return math.sqrt(pairwise_sum(squares) / len(floats))


def split_figures(clipped: Sequence[float], normalized: Sequence[float]) -> dict[str, object]:
    """The figures ``run_evals_off_platform`` reports for one set of tasks."""
    if not clipped:
        return {"n": 0, "mean_clipped": None, "std_clipped": None, "mean_normalized": None,
                "std_normalized": None, "mean": None, "negative_tasks": 0}  # fmt: skip
    mean = numpy_mean(clipped)
    return {
        "n": len(clipped),
        # Python's max, as upstream: an int 0 when the mean is not above 0
        "mean_clipped": max(0, mean),
        "std_clipped": numpy_std(clipped),
        "mean_normalized": numpy_mean(normalized) if normalized else None,
        "std_normalized": numpy_std(normalized) if normalized else None,
        "mean": mean,
        "negative_tasks": sum(1 for c in clipped if c < 0),
    }
