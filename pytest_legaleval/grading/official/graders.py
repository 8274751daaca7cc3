"""The graders of the official protocols ``legalbench_official`` and ``lexam_official``.

- :class:`LegalbenchOfficialGrader` grades every record of policy ``legalbench_official``
  (label tasks as ``mcq``, open tasks as ``reference_qa``) with LegalBench's own metric for
  the record's task (``metadata.task``), against the gold label text (``metadata.
  gold_label``, else the correct choice's text, else the reference answer). The answer is
  taken as the model gave it: LegalBench reads the raw generation. Tasks LegalBench
  grades by hand (``rule_qa``) are skipped with reason ``manual_evaluation``, never 0.
- :class:`LexamMcqOfficialGrader` grades the ``mcq`` records of policy ``lexam_official``
  by LEXam's last ``###X###`` marker. LEXam's open questions are judged by
  :func:`~pytest_legaleval.grading.official.lexam_judge.judge_open_question`, which the
  built-in judge grader calls for a policy whose ``judge.reference_format`` is ``lexam``.

Each grade carries ``details.official``: what the official per-task figure needs of the
item (``metrics._benchmarks`` computes the figures from it), with the protocol's name and
version. An item passes when its official score reaches the policy's threshold.
"""

from __future__ import annotations

from typing import Any

from pytest_legaleval.grading._base import Grade, GradeRequest
from pytest_legaleval.grading.official import legalbench as lb
from pytest_legaleval.grading.official import lexam as lx
from pytest_legaleval.grading.official.legalbench_tasks import metric_of
from pytest_legaleval.records import Record

__all__ = [
    "LegalbenchOfficialGrader",
    "LexamMcqOfficialGrader",
    "legalbench_gold",
    "legalbench_task",
    "lexam_gold_index",
]


def legalbench_task(record: Record) -> str:
    """The record's LegalBench task: ``metadata.task``, else the id's second part."""
    task = record.metadata.get("task")
    if isinstance(task, str) and task:
        return task
    parts = record.id.split(":")
    return parts[1] if len(parts) >= 3 and parts[0] == "legalbench" else ""


def legalbench_gold(record: Record) -> str:
    """The gold label text LegalBench compares with (the TSV's ``answer``)."""
    label = record.metadata.get("gold_label")
    if isinstance(label, str):
        return label
    if record.choices and record.correct_choice_ids:
        wanted = record.correct_choice_ids[0]
        for choice in record.choices:
            if choice.id == wanted:
                return choice.text
    return record.reference_answers[0] if record.reference_answers else ""


def _official(**values: Any) -> dict[str, Any]:
    return {"official": values}


class LegalbenchOfficialGrader:
    """LegalBench's ``evaluation.py``, item by item (no judge)."""

    name = "legalbench_official"
    needs_judge = False
    grades_inline = True

    async def grade(self, request: GradeRequest) -> Grade:
        """The official verdict on one answer, with the facts its task's figure needs."""
        record = request.record
        task = legalbench_task(record)
        gold = legalbench_gold(record)
        base = {
            "benchmark": "legalbench",
            "protocol": lb.PROTOCOL,
            "protocol_version": lb.PROTOCOL_VERSION,
            "task": task,
            "gold_label": gold,
        }
        metric = metric_of(task)
        if metric == "manual":
            return Grade(
                "skipped",
                None,
                None,
                "manual_evaluation",
                f"LegalBench grades {task!r} by hand (evaluation.py MANUAL_EVAL_TASKS): "
                "no automatic verdict",
                self.name,
                _official(**base, metric="manual"),
            )
        try:
            verdict = lb.item_verdict(task, request.answer, gold)
        except lb.OfficialScoringError as exc:
            return Grade(
                "error", None, None, "no_official_metric", str(exc), self.name, _official(**base)
            )
        passed = verdict.score >= request.policy.pass_threshold
        facts = {
            **base,
            "metric": verdict.metric,
            "score": verdict.score,
            "correct": verdict.correct,
            **verdict.facts,
        }
        if verdict.metric == "balanced_accuracy":
            explanation = (
                f"normalized answer {verdict.facts['prediction']!r} "
                f"{'==' if verdict.correct else '!='} gold {verdict.facts['gold']!r}"
            )
        else:
            explanation = f"{verdict.metric} on this item: {verdict.score:g}"
        return Grade(
            "passed" if passed else "failed",
            passed,
            verdict.score,
            "correct" if passed else "wrong_answer",
            f"LegalBench {task}: {explanation}",
            self.name,
            _official(**facts),
        )


def lexam_gold_index(record: Record) -> int | None:
    """The 0-based index of the right choice: ``metadata.gold_index``, else from the ids."""
    gold = record.metadata.get("gold_index")
    if isinstance(gold, int) and not isinstance(gold, bool) and 0 <= gold < len(record.choices):
        return gold
    ids = [choice.id for choice in record.choices]
    if len(record.correct_choice_ids) == 1 and record.correct_choice_ids[0] in ids:
        return ids.index(record.correct_choice_ids[0])
    return None


class LexamMcqOfficialGrader:
    """LEXam's ``evaluation.py`` for multiple-choice questions (no judge)."""

    name = "lexam_official"
    needs_judge = False
    grades_inline = True

    async def grade(self, request: GradeRequest) -> Grade:
        """The last ``###X###`` of the answer against the right choice."""
        record = request.record
        gold = lexam_gold_index(record)
        n = len(record.choices)
        base = {
            "benchmark": "lexam",
            "protocol": lx.PROTOCOL,
            "protocol_version": lx.PROTOCOL_VERSION,
            "kind": "mcq",
            "n_choices": n,
            "gold_index": gold,
        }
        if gold is None:
            return Grade(
                "error",
                None,
                None,
                "no_official_metric",
                "LEXam scores a question with exactly one right choice; this record has "
                f"{len(record.correct_choice_ids)}",
                self.name,
                _official(**base),
            )
        verdict = lx.mcq_verdict(request.answer, gold, n)
        index = verdict.chosen_index
        chosen = [record.choices[index].id] if index is not None and 0 <= index < n else []
        score = 1.0 if verdict.correct else 0.0
        passed = score >= request.policy.pass_threshold
        if verdict.extracted is None:
            reason, said = "no_answer_extracted", "no ###X### marker in the answer"
        else:
            reason = "correct" if passed else "wrong_answer"
            said = f"last marker ###{verdict.extracted}###"
        details: dict[str, Any] = {
            "chosen": chosen,
            "correct": list(record.correct_choice_ids),
            "method": f"lexam_{verdict.format}",
            **_official(
                **base,
                format=verdict.format,
                extracted=verdict.extracted,
                correct=verdict.correct,
                score=score,
            ),
        }
        return Grade(
            "passed" if passed else "failed",
            passed,
            score,
            reason,
            f"LEXam ({verdict.format}): {said}; right choice {record.correct_choice_ids[0]}",
            self.name,
            details,
        )
