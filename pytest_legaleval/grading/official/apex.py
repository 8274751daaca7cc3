"""APEX-v1's own protocol (``apex_official``): prompts, reply reader, task and headline scores.

Read from Mercor-Intelligence/apex-evals at commit fc4ca761d291486fca905adb2c4ebd0dfad0caa5
(``apex-evals-v1-extended/``: ``prompt/grading_prompt.txt``,
``prompt/response_generation_prompt.txt``, ``src/grading/executor.py``,
``src/generation/executor.py``, ``src/parser/document_parsing_service.py``,
``examples/run_with_hf.py``). Our own code, checked against those functions in the tests;
the two prompt files are upstream's text, kept byte for byte because the protocol must send
them so (the tests pin their sha256).

- Generation: :data:`RESPONSE_GENERATION_PROMPT` with ``{{Domain}}`` then ``{{Prompt}}``
  replaced, then — when the task has attached files — a blank line,
  ``==== Attached files content: ====``, a blank line and one ``=== <file name> ===`` block
  per file (its text stripped), blocks a blank line apart; sent as one user message, no
  system prompt (``run_with_hf.py``, ``_build_final_prompt``, ``_format_section``).
- Judge: one user message per criterion, :data:`GRADING_PROMPT` filled by ``str.format``
  with the criterion's ``description`` and the answer (``grade_single_criterion``).
- Reply (``parse_llm_json_response``): the first ``{...}`` object holding ``"result"`` that
  parses, else a bare ``"result": 0|1`` found by pattern; ``result`` in ``(1, "1", True)``
  is met, any other value not met; a reply that cannot be read is asked again and, when it
  never can be, the criterion is *not met*, as is a call that still fails.
- Task score: criteria met / criteria × 100, ``round(…, 2)`` (unweighted). An empty,
  whitespace-only or ``error:`` answer gives no score: the task is skipped (``process_task``
  keeps no row for it, for any model).
- Headline (``calculate_stats``): per model, the mean over tasks of each task's median over
  runs (``statistics.median`` / ``statistics.mean``), and the same per ``Domain``.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_legaleval.errors import LegalEvalError
from pytest_legaleval.protocols.apex import (
    FILES_HEADER,
    RESPONSE_GENERATION_PROMPT,
    generation_prompt,
)

__all__ = [
    "FILES_HEADER",
    "GRADING_PROMPT",
    "PROTOCOL",
    "PROTOCOL_VERSION",
    "PUBLISHED_JUDGE",
    "RESPONSE_GENERATION_PROMPT",
    "UPSTREAM_COMMIT",
    "UPSTREAM_REPO",
    "ApexReplyError",
    "CriterionVerdict",
    "answer_skipped",
    "criterion_verdict",
    "generation_prompt",
    "headline",
    "judge_prompt",
    "parse_reply",
    "rubric_criteria",
    "task_percent",
]

UPSTREAM_REPO = "Mercor-Intelligence/apex-evals"
UPSTREAM_COMMIT = "fc4ca761d291486fca905adb2c4ebd0dfad0caa5"
PROTOCOL = "apex_official"
PROTOCOL_VERSION = 1
PUBLISHED_JUDGE = "gemini-2.5-flash"
"""The judge of the published figures (``run_with_hf.py``: ``GRADING_MODEL``)."""

GRADING_PROMPT = (
    "You are evaluating a model-generated response\n"
    "against a specific criterion. Your task is to\n"
    "determine if the response satisfies this criterion and provide a concise explanation.\n"
    "\n"
    "Criterion to evaluate: {criterion_description}\n"
    "\n"
    "Response to evaluate: {solution}\n"
    "\n"
    "Instructions:\n"
    "1. First, analyze the response against the given criterion.\n"
    "2. Determine if the response fully satisfies the criterion (result = 1) or not (result = 0).\n"
    "3. Provide a concise explanation (maximum 2-3 sentences) that:\n"
    "    a. States whether the criterion is met or not\n"
    "    b. Points to specific evidence from the response\n"
    "    c. Avoids unnecessary details or repetition\n"
    "\n"
    "Return your evaluation in the following JSON format:\n"
    "{{\n"
    '    "result": <1 or 0>,\n'
    '    "reason": "<concise explanation>"\n'
    "}}\n"
    "\n"
    "Keep your explanation brief and focus on the key points that justify your result."
)

_FENCE_OPEN = re.compile(r"^```(?:json)?\s*\n")
_FENCE_CLOSE = re.compile(r"\n```\s*$")
_RESULT = re.compile(r'"result"\s*:\s*([01])')


class ApexReplyError(LegalEvalError, ValueError):
    """A judge reply ``parse_llm_json_response`` cannot read, or a rubric it cannot use."""


def rubric_criteria(rubric_json: object) -> list[tuple[str, Mapping[str, Any]]]:
    """The criteria of ``Rubric JSON`` as ``GradingTask`` reads it: (key, criterion), in order.

    A JSON text is parsed; a list of objects is merged into one object (later keys win).

    Raises:
        ApexReplyError: not JSON, or no criteria (upstream refuses such a task).

    """
    value = rubric_json
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ApexReplyError(f"Rubric JSON is not JSON: {exc}") from None
    if isinstance(value, list):
        merged: dict[str, Any] = {}
        for entry in value:
            if isinstance(entry, dict):
                merged.update(entry)
        value = merged
    if not isinstance(value, dict) or not value:
        raise ApexReplyError("Rubric JSON holds no criteria")
    return [(str(k), v if isinstance(v, Mapping) else {}) for k, v in value.items()]


def judge_prompt(criterion: Mapping[str, Any], solution: str) -> str:
    """The judge's one user message for one criterion, filled as upstream fills it."""
    values = {str(k): v for k, v in criterion.items()}
    values.update(criterion_description=criterion.get("description", ""), solution=solution)
    return GRADING_PROMPT.format(**values)


def parse_reply(content: str) -> Any:
    """The JSON value ``parse_llm_json_response`` takes from a reply.

    Raises:
        ApexReplyError: no JSON object, or none with a ``result``.

    """
    cleaned = content.strip()
    if cleaned.startswith("```"):
        cleaned = _FENCE_CLOSE.sub("", _FENCE_OPEN.sub("", cleaned))
    blocks: list[str] = []
    depth, start = 0, -1
    for i, char in enumerate(cleaned):
        if char == "{":
            if depth == 0:
                start = i
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0 and start >= 0:
                blocks.append(cleaned[start : i + 1])
                start = -1
    if not blocks:
        try:
            parsed = json.loads(cleaned)
        except ValueError:
            parsed = None
        else:
            if _holds_result(parsed):
                return parsed
        raise ApexReplyError("the reply holds no JSON object")
    for block in blocks:
        if '"result"' not in block:
            continue
        try:
            parsed = json.loads(block)
        except ValueError:
            continue
        if "result" in parsed:
            return parsed
    for block in [*blocks, cleaned]:
        found = _RESULT.search(block)
        if found:
            return {"result": int(found.group(1))}
    raise ApexReplyError("no JSON object in the reply has a 'result'")


def _holds_result(parsed: Any) -> bool:
    # ``"result" in parsed`` as upstream asks it: a key of an object, an item of a list, a
    # substring of a string; a number has no ``in`` and makes upstream's parse fail.
    try:
        return "result" in parsed
    except TypeError:
        raise ApexReplyError("the reply is a JSON number") from None


@dataclass(frozen=True, slots=True)
class CriterionVerdict:
    """One judge reply read as ``grade_single_criterion`` reads it."""

    met: bool
    """The official verdict (``autorating``)."""
    readable: bool
    """Whether upstream got a verdict from the reply (else it asks again, then: not met)."""
    problem: str | None = None
    """Why the reply is unreadable, else ``None``."""
    reason: str = ""
    """The reply's ``reason``."""


def criterion_verdict(reply: str | None) -> CriterionVerdict:
    """Read a judge reply (``None``: the call failed, which upstream counts not met)."""
    if reply is None:
        return CriterionVerdict(False, False, "the judge call failed")
    try:
        parsed = parse_reply(reply)
        value = parsed.get("result")
    except ApexReplyError as exc:
        return CriterionVerdict(False, False, str(exc))
    except AttributeError:  # a JSON list or string holding "result": upstream's .get fails
        return CriterionVerdict(False, False, "the reply's JSON is not an object")
    if value is None:
        return CriterionVerdict(False, False, "the reply's result is null")
    reason = parsed.get("reason", "")
    return CriterionVerdict(value in (1, "1", True), True, reason=str(reason))


def answer_skipped(answer: str) -> bool:
    """Whether upstream skips the task for this answer: empty, blank or ``error:``."""
    stripped = answer.strip()
    return not stripped or stripped.lower().startswith("error:")


def task_percent(met: Sequence[bool]) -> float:
    """Criteria met / criteria × 100, rounded to 2 places as upstream rounds it."""
    if not met:
        return 0.0
    earned = sum(1 for m in met if m)
    return round(earned / len(met) * 100, 2)


def headline(tasks: Mapping[str, tuple[str, Sequence[float]]]) -> dict[str, Any]:
    """``calculate_stats`` for one model: ``tasks`` maps a task id to (domain, run scores).

    Returns:
        ``score`` (the mean over tasks of each task's median over runs), ``n_tasks`` and
        ``domains.<Domain>`` with the same figures.

    """
    medians: dict[str, list[float]] = {}
    overall: list[float] = []
    for task in sorted(tasks):
        domain, runs = tasks[task]
        median = statistics.median(runs) if runs else 0
        overall.append(median)
        medians.setdefault(domain, []).append(median)
    return {
        "score": statistics.mean(overall) if overall else None,
        "n_tasks": len(overall),
        "domains": {
            name: {"score": statistics.mean(values), "n_tasks": len(values)}
            for name, values in sorted(medians.items())
        },
    }
