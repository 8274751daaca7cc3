"""LegalBench's own scoring (``evaluation.py``), item by item and task by task.

Read from HazyResearch/legalbench at commit ce482446b8eac4403b6db2c17223af4514bb24e3,
``evaluation.py``; our own code, checked against that file's functions in the tests.

- ``normalize``: ASCII punctuation (``string.punctuation``) removed, then surrounding
  whitespace stripped, then lower-cased; with ``stem``, the whole string Porter-stemmed
  (:mod:`~pytest_legaleval.grading.official.porter`).
- ``balanced_accuracy`` (155 tasks, and ``successor_liability``: its name is on the exact-
  match list, which ``evaluate`` tests first): scikit-learn's ``balanced_accuracy_score``
  of the normalized answers against the normalized generations — the mean, over the gold
  labels present, of each label's recall. Two NumPy details decide exact values: labels
  are compared as NumPy strings, which drop trailing NUL characters, and the recalls are
  averaged in sorted label order by NumPy's pairwise sum.
- ``sara_numeric``: commas and periods removed from the generation, its first run of
  digits read (none: 0); right when ``|prediction / (answer + 0.1) - 1| < 0.1``.
- ``citation_open``: right when the normalized answer is contained in the normalized
  generation.
- ``definition_extraction``: answer and generation split on commas, each part normalized
  and stemmed; right when some generation part equals some answer part.
- ``ssla_f1``: answer and generation split on commas and normalized; each answer part
  found inside a remaining generation part is a true positive (that part is used up),
  else a false negative; after *each* answer part, every generation part still unused
  adds a false positive (upstream's loop, kept). Micro F1 over the task.
- ``manual`` (``rule_qa``): graded by hand; no figure.

A per-item verdict is the official function applied to that item alone; the per-task
figure is computed from the items' facts exactly as the function computes it over the
task's lists. Where the upstream code would raise on an answer (a number too large for a
float in ``sara_numeric``), the item is wrong here and its facts say why.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_legaleval.errors import InvalidValue, LegalEvalError
from pytest_legaleval.grading.official.legalbench_tasks import metric_of
from pytest_legaleval.grading.official.numeric import numpy_mean
from pytest_legaleval.grading.official.porter import porter_stem

__all__ = [
    "PROTOCOL",
    "PROTOCOL_VERSION",
    "UPSTREAM_COMMIT",
    "UPSTREAM_REPO",
    "ItemVerdict",
    "OfficialScoringError",
    "evaluate",
    "item_verdict",
    "normalize",
    "task_score",
]

UPSTREAM_REPO = "HazyResearch/legalbench"
UPSTREAM_COMMIT = "ce482446b8eac4403b6db2c17223af4514bb24e3"
PROTOCOL = "legalbench_official"
PROTOCOL_VERSION = 1

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_DIGITS = re.compile(r"\d+")
SSLA_METRIC = "ssla_f1"


class OfficialScoringError(LegalEvalError, ValueError):
    """An item the official code cannot score: unknown task, manual task, unusable gold."""


def normalize(text: object, stem: bool = False) -> str:
    """LegalBench's ``normalize``: punctuation out, stripped, lower-cased, maybe stemmed."""
    value = str(text).translate(_PUNCTUATION).strip().lower()
    return porter_stem(value) if stem else value


def _label(text: object) -> str:
    """A normalized label as scikit-learn compares it: a NumPy string (no trailing NULs)."""
    return normalize(text).rstrip("\x00")


@dataclass(frozen=True, slots=True)
class ItemVerdict:
    """The official verdict on one item."""

    metric: str
    """The task's metric (``legalbench_tasks.metric_of``)."""
    score: float
    """The official function's value on this item alone (0 or 1; F1 for ``ssla``)."""
    correct: bool
    """Full marks."""
    facts: Mapping[str, Any] = field(default_factory=dict)
    """What the per-task figure needs of this item (JSON-safe): ``prediction`` and
    ``gold`` (balanced accuracy), ``correct`` (accuracies), ``tp``/``fp``/``fn`` (F1)."""


def _sara_numeric(generation: str, answer: str) -> ItemVerdict:
    sentence = generation.replace(",", "").replace(".", "")
    found = _DIGITS.search(sentence)
    try:
        gold = int(answer.replace("$", ""))
    except ValueError:
        raise OfficialScoringError(
            f"sara_numeric answer {answer!r} is not a whole number"
        ) from None
    facts: dict[str, Any] = {"gold_number": gold}
    try:
        prediction = 0 if found is None else int(found.group())
        correct = abs(prediction / (gold + 1e-1) - 1.0) < 0.1
        facts["prediction_number"] = prediction
    except (ValueError, OverflowError) as exc:  # upstream raises here; the item is wrong
        correct = False
        facts["unreadable_number"] = f"{type(exc).__name__}: {exc}"[:200]
    facts["correct"] = correct
    return ItemVerdict("sara_numeric", float(correct), correct, facts)


def _ssla_counts(generation: str, answer: str) -> tuple[int, int, int]:
    gold = [normalize(part) for part in answer.split(",")]
    unused = [normalize(part) for part in generation.split(",")]
    tp = fp = fn = 0
    for part in gold:
        for j, candidate in enumerate(unused):
            if part in candidate:
                tp += 1
                del unused[j]
                break
        else:
            fn += 1
        fp += len(unused)
    return tp, fp, fn


def _f1(tp: int, fp: int, fn: int) -> float:
    return 2 * tp / (2 * tp + fp + fn)


def item_verdict(task: str, generation: str, answer: str) -> ItemVerdict:
    """The official verdict on ``generation`` for one item of ``task`` with gold ``answer``.

    Raises:
        OfficialScoringError: a task upstream does not know, a task graded by hand, or a
            gold answer its metric cannot read.

    """
    metric = metric_of(task)
    if metric is None:
        raise OfficialScoringError(f"LegalBench's evaluation.py does not know task {task!r}")
    if metric == "manual":
        raise OfficialScoringError(f"LegalBench grades {task!r} by hand (MANUAL_EVAL_TASKS)")
    if metric == "balanced_accuracy":
        prediction, gold = _label(generation), _label(answer)
        correct = prediction == gold
        facts = {"prediction": prediction, "gold": gold}
        return ItemVerdict(metric, float(correct), correct, facts)
    if metric == "sara_numeric":
        return _sara_numeric(generation, answer)
    if metric == "citation_open":
        correct = normalize(answer) in normalize(generation)
        return ItemVerdict(metric, float(correct), correct, {"correct": correct})
    if metric == "definition_extraction":
        golds = [normalize(part, stem=True) for part in answer.split(",")]
        correct = any(normalize(part, stem=True) in golds for part in generation.split(","))
        return ItemVerdict(metric, float(correct), correct, {"correct": correct})
    tp, fp, fn = _ssla_counts(generation, answer)
    score = _f1(tp, fp, fn)
    return ItemVerdict(metric, score, fp == 0 and fn == 0, {"tp": tp, "fp": fp, "fn": fn})


def balanced_accuracy(pairs: Sequence[tuple[str, str]]) -> float:
    """scikit-learn's ``balanced_accuracy_score`` of ``(gold, prediction)`` label pairs.

    The recall of each gold label, averaged in sorted label order (NumPy's mean); a
    predicted label that is no gold label only lowers the recall of the gold it missed.
    """
    if not pairs:
        raise InvalidValue("balanced accuracy needs at least one item")
    totals: dict[str, int] = {}
    hits: dict[str, int] = {}
    for gold, prediction in pairs:
        totals[gold] = totals.get(gold, 0) + 1
        if prediction == gold:
            hits[gold] = hits.get(gold, 0) + 1
    return numpy_mean([hits.get(label, 0) / totals[label] for label in sorted(totals)])


def task_score(metric: str, facts: Sequence[Mapping[str, Any]]) -> float:
    """The task's official figure from its items' :attr:`ItemVerdict.facts`.

    Raises:
        ValueError: no items, an unknown metric, or facts of another metric.

    """
    if not facts:
        raise InvalidValue("a task figure needs at least one item")
    if metric == "balanced_accuracy":
        return balanced_accuracy([(str(f["gold"]), str(f["prediction"])) for f in facts])
    if metric in ("sara_numeric", "citation_open", "definition_extraction"):
        # np.mean of 0/1 values and correct / total are the same exact quotient.
        return sum(1 for f in facts if f["correct"] is True) / len(facts)
    if metric == SSLA_METRIC:
        tp = sum(int(f["tp"]) for f in facts)
        fp = sum(int(f["fp"]) for f in facts)
        fn = sum(int(f["fn"]) for f in facts)
        return _f1(tp, fp, fn)
    raise InvalidValue(f"no task figure for metric {metric!r}")


def evaluate(task: str, generations: Sequence[str], answers: Sequence[str]) -> float:
    """``evaluation.evaluate(task, generations, answers)``: the task's official figure.

    Raises:
        OfficialScoringError: as :func:`item_verdict`.
        ValueError: the lists are empty or of different lengths.

    """
    if len(generations) != len(answers):
        raise InvalidValue("generations and answers differ in length")
    verdicts = [item_verdict(task, g, a) for g, a in zip(generations, answers, strict=True)]
    if not verdicts:
        raise InvalidValue("a task figure needs at least one item")
    return task_score(verdicts[0].metric, [v.facts for v in verdicts])
