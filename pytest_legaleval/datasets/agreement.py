"""Judge agreement: automated decisions against human decisions (``legaleval agreement``).

Decisions pair up by ``id``. Per decision ``type`` and per ``(type, mode)`` the report
gives the number of pairs, accuracy (share of equal verdicts), Cohen's kappa and the
confusion matrix (rows: human verdicts, columns: automated verdicts, labels sorted), which
the JSON report labels twice: ``confusion_axes`` names the axes, and ``confusion_by_label``
spells every cell out as ``{human label: {automated label: count}}``.
Verdicts compare case-insensitively with surrounding blanks removed. Automated decisions
whose ``status`` is ``failed`` are left out and counted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_legaleval.formats.turing import read_turing_file

__all__ = [
    "CONFUSION_AXES",
    "AgreementReport",
    "GroupAgreement",
    "cohen_kappa",
    "compare_decisions",
    "confusion_matrix",
    "load_decisions",
]


CONFUSION_AXES: dict[str, str] = {
    "rows": "human verdict",
    "columns": "automated verdict",
}
"""Which axis of every confusion matrix is which (``confusion[row][column]``)."""


def confusion_matrix(
    pairs: Iterable[tuple[str, str]],
) -> tuple[tuple[str, ...], list[list[int]]]:
    """Build ``(labels, matrix)`` from ``(human, automated)`` label pairs.

    ``matrix[i][j]`` counts pairs whose human label is ``labels[i]`` and automated label
    ``labels[j]``; labels are the sorted union of both sides.
    """
    pairs = list(pairs)
    labels = tuple(sorted({label for pair in pairs for label in pair}))
    position = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for human, automated in pairs:
        matrix[position[human]][position[automated]] += 1
    return labels, matrix


def cohen_kappa(matrix: Sequence[Sequence[int]]) -> float | None:
    """Cohen's kappa of a square confusion matrix.

    ``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the observed agreement (the
    diagonal's share) and ``p_e`` the agreement expected by chance from the row and column
    totals. ``None`` when it is undefined: no pairs, or ``p_e == 1`` (both raters used a
    single, identical label throughout).
    """
    total = sum(sum(row) for row in matrix)
    if total == 0:
        return None
    size = len(matrix)
    observed = sum(matrix[i][i] for i in range(size)) / total
    rows = [sum(matrix[i]) for i in range(size)]
    columns = [sum(matrix[i][j] for i in range(size)) for j in range(size)]
    expected = sum(rows[k] * columns[k] for k in range(size)) / (total * total)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


@dataclass(frozen=True, slots=True)
class GroupAgreement:
    """Agreement within one decision type, or one ``(type, mode)``."""

    type: str
    mode: str | None
    """``None`` for the whole type."""
    pairs: int
    accuracy: float | None
    kappa: float | None
    labels: tuple[str, ...]
    confusion: list[list[int]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form; ``confusion_axes`` says which axis is which."""
        return {
            "type": self.type,
            "mode": self.mode,
            "pairs": self.pairs,
            "accuracy": self.accuracy,
            "kappa": self.kappa,
            "labels": list(self.labels),
            "confusion_axes": dict(CONFUSION_AXES),
            "confusion": self.confusion,
            "confusion_by_label": {
                human: dict(zip(self.labels, row, strict=True))
                for human, row in zip(self.labels, self.confusion, strict=True)
            },
        }


@dataclass(frozen=True, slots=True)
class AgreementReport:
    """The whole comparison."""

    overall: GroupAgreement
    by_type: list[GroupAgreement]
    by_type_and_mode: list[GroupAgreement]
    unmatched_automated: int
    unmatched_human: int
    failed_automated: int
    type_mismatches: int
    """Pairs whose two decisions disagree on ``type`` (left out)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {
            "overall": self.overall.to_dict(),
            "by_type": [g.to_dict() for g in self.by_type],
            "by_type_and_mode": [g.to_dict() for g in self.by_type_and_mode],
            "unmatched_automated": self.unmatched_automated,
            "unmatched_human": self.unmatched_human,
            "failed_automated": self.failed_automated,
            "type_mismatches": self.type_mismatches,
        }


def _group(type_: str, mode: str | None, pairs: list[tuple[str, str]]) -> GroupAgreement:
    labels, matrix = confusion_matrix(pairs)
    agree = sum(1 for human, automated in pairs if human == automated)
    return GroupAgreement(
        type=type_,
        mode=mode,
        pairs=len(pairs),
        accuracy=agree / len(pairs) if pairs else None,
        kappa=cohen_kappa(matrix),
        labels=labels,
        confusion=matrix,
    )


def _label(verdict: object) -> str:
    return str(verdict).strip().casefold()


def compare_decisions(
    automated: Sequence[Mapping[str, Any]], human: Sequence[Mapping[str, Any]]
) -> AgreementReport:
    """Pair decisions by ``id`` and measure agreement overall, per type, per type and mode.

    The human decision's ``mode`` (else the automated one's) names the mode; a missing mode
    is the empty string.
    """
    failed = sum(1 for d in automated if d.get("status") == "failed")
    auto_by_id = {d["id"]: d for d in automated if d.get("status") != "failed"}
    human_by_id = {d["id"]: d for d in human}
    everything: list[tuple[str, str]] = []
    by_type: dict[str, list[tuple[str, str]]] = defaultdict(list)
    by_mode: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    mismatched = 0
    for decision_id, human_decision in human_by_id.items():
        auto_decision = auto_by_id.get(decision_id)
        if auto_decision is None:
            continue
        type_ = str(human_decision["type"])
        if str(auto_decision["type"]) != type_:
            mismatched += 1
            continue
        mode = str(human_decision.get("mode") or auto_decision.get("mode") or "")
        pair = (_label(human_decision["verdict"]), _label(auto_decision["verdict"]))
        everything.append(pair)
        by_type[type_].append(pair)
        by_mode[(type_, mode)].append(pair)
    matched = set(auto_by_id) & set(human_by_id)
    return AgreementReport(
        overall=_group("all", None, everything),
        by_type=[_group(t, None, p) for t, p in sorted(by_type.items())],
        by_type_and_mode=[_group(t, m, p) for (t, m), p in sorted(by_mode.items())],
        unmatched_automated=len(auto_by_id) - len(matched),
        unmatched_human=len(human_by_id) - len(matched),
        failed_automated=failed,
        type_mismatches=mismatched,
    )


def load_decisions(path: Path, kind: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Read an evaluation file's valid decisions and describe its invalid ones.

    Raises:
        DatasetRejected: the file cannot be read as that kind at all.

    """
    file = read_turing_file(path, kind)
    problems = [e.message for errors in file.errors.values() for e in errors]
    return [entry for _, entry in file.entries], problems
