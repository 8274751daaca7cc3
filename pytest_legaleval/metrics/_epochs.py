"""Epochs: K answers per item, one verdict per item, pass@k, pass^k and flaky records.

With ``--epochs K`` every record × model is asked K times and ``predictions.jsonl`` has one
line per epoch (``epoch`` 0…K−1; a line without ``epoch`` is epoch 0, so every older run
is a run of one epoch). Everything here works on those lines (``records.PredictionLine``,
as ``metrics._rundir_check.prediction_lines`` reads them) and is pure: exact integer and
fraction arithmetic, no numpy.

What counts as a sample. An epoch *has a verdict* when its outcome is ``passed`` or
``failed`` and it is no permanent failure (``metrics._items.failure_type``): a missing
response, a generation error, a timeout, a judge that could not be parsed, a cancelled call
or a skip is no evidence about the answer's quality — a judge failure is never a wrong
answer — so such an epoch is **left out** of every figure below. For an item, ``n`` is the
number of its epochs with a verdict and ``c`` the number of those that passed; an item
whose epochs all lack a verdict (``n = 0``) has no verdict and takes no part in any figure
(it is counted as an error by the counts, as any error item). The epochs left out are
counted — the epoch is the unit of account: on the item (``errored``), in
``errored_epochs`` / ``epoch_lines`` (``error_rate``) and as ``failures.jsonl`` lines — and
pass@k and pass^k are over the items with a verdict in all K epochs only, the others
counted as incomplete, so nothing is hidden.

Reducers (``--epoch-reducer``) give the item's one verdict from its verdict epochs:

- ``mean`` (default): the mean score over the verdict epochs ≥ the threshold the grader
  applied to the item (``details.threshold``), or 0.5 where it applied none (MCQ, whose
  score is 0 or 1, so this is "at least half the epochs passed"). Compared exactly
  (fractions), so three scores of 0.6 against 0.6 pass.
- ``majority``: more than half of the verdict epochs passed (a tie fails: a coin toss is
  no majority).
- ``all``: every verdict epoch passed. ``any``: at least one did.

An item with a single verdict epoch keeps that epoch's own verdict under every reducer, so
K = 1 changes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pytest_legaleval.errors import ConfigError, InvalidValue
from pytest_legaleval.metrics._items import failure_type
from pytest_legaleval.metrics._lines import ItemLine, Reduction
from pytest_legaleval.records import PredictionLine

__all__ = [
    "DEFAULT_REDUCER",
    "DEFAULT_THRESHOLD",
    "REDUCERS",
    "EpochFigures",
    "EpochItem",
    "epoch_figures",
    "epoch_of",
    "epoch_verdict",
    "exact_mean",
    "flaky_line",
    "group_items",
    "incomplete_line",
    "item_key",
    "pass_at_k",
    "pass_at_k_table",
    "pass_hat_k",
    "pass_hat_k_table",
    "reduce_rows",
    "reduce_verdict",
]

REDUCERS: tuple[str, ...] = ("mean", "majority", "all", "any")
"""The ``--epoch-reducer`` names."""
DEFAULT_REDUCER = "mean"
DEFAULT_THRESHOLD = 0.5
"""The ``mean`` reducer's threshold where the grader applied none (MCQ)."""

ItemKey = tuple[str, str, str]


def item_key(row: PredictionLine) -> ItemKey:
    """``(dataset, record_id, model)``: the item a line belongs to, whatever its epoch."""
    return (str(row.get("dataset", "")), str(row.get("record_id")), str(row.get("model", "")))


def epoch_of(row: PredictionLine) -> int:
    """The line's epoch: ``epoch``, or 0 when it has none (older runs, K = 1).

    Raises:
        ConfigError: ``epoch`` is not a non-negative integer.

    """
    value = row.get("epoch")
    if value is None:
        return 0
    if type(value) is not int or value < 0:
        raise ConfigError(
            f"prediction line of record {row.get('record_id')!r}: epoch must be a "
            f"non-negative integer, got {value!r} ({type(value).__name__})"
        )
    return value


def epoch_verdict(row: PredictionLine) -> bool | None:
    """True/False for an epoch with a pass/fail verdict, None for errors and skips."""
    if failure_type(row) is not None:
        return None
    return _VERDICTS.get(str(row.get("outcome")))


_VERDICTS = {"passed": True, "failed": False}


def _score(row: PredictionLine, passed: bool) -> float | int:
    """The epoch's score; a verdict without a finite number scores 1 or 0.

    A float is exact as it is (every float is a dyadic rational); sums of scores go through
    :func:`exact_mean`.
    """
    score = row.get("score")
    if isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score):
        return score
    return int(passed)


def exact_mean(values: Sequence[float | int | Fraction]) -> float:
    """The mean of ``values`` computed exactly and rounded once (``values`` not empty).

    Integral values (pass counts, MCQ's 0/1 scores: the common case) are summed as
    integers; anything else as fractions. Either way the result is the float nearest the
    true mean, so it does not depend on the order of the values.
    """
    if all(type(v) is int or (type(v) is float and v.is_integer()) for v in values):
        return int(sum(int(v) for v in values)) / len(values)  # int / int rounds once
    return float(sum((Fraction(v) for v in values), Fraction(0)) / len(values))


def _threshold(row: PredictionLine) -> float | None:
    """The threshold the grader applied to the item (``details.threshold``), if any."""
    details = row.get("details")
    value = details.get("threshold") if isinstance(details, Mapping) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def reduce_verdict(
    passes: Sequence[bool],
    scores: Sequence[Fraction | float] | None = None,
    reducer: str = DEFAULT_REDUCER,
    threshold: float | None = None,
) -> bool | None:
    """The item's verdict from its verdict epochs (see the module docstring).

    Args:
        passes: each verdict epoch's pass (epochs without a verdict left out).
        scores: each verdict epoch's score, same order (``mean`` only; default: the passes
            as 1 and 0).
        reducer: one of :data:`REDUCERS`.
        threshold: the ``mean`` reducer's threshold; ``None`` means 0.5.

    Returns:
        The verdict, or ``None`` when no epoch has one.

    Raises:
        ConfigError: an unknown reducer name.

    """
    if reducer not in REDUCERS:
        raise ConfigError(f"unknown epoch reducer {reducer!r}; choose one of {', '.join(REDUCERS)}")
    n = len(passes)
    if n == 0:
        return None
    if n == 1:
        return bool(passes[0])
    c = sum(1 for p in passes if p)
    if reducer == "majority":
        return 2 * c > n
    if reducer == "all":
        return c == n
    if reducer == "any":
        return c > 0
    values = (
        [Fraction(s) for s in scores] if scores is not None else [Fraction(int(p)) for p in passes]
    )
    limit = Fraction(DEFAULT_THRESHOLD if threshold is None else threshold)
    return sum(values, Fraction(0)) >= limit * len(values)


# -- unbiased pass@k and pass^k --------------------------------------------------------------


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise InvalidValue(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def pass_at_k(n: int, c: int, k: int) -> Fraction:
    """Unbiased pass@k of one record: ``1 − C(n−c, k) / C(n, k)`` (exact).

    The chance that at least one of k answers drawn without replacement from the n sampled
    ones passes (Chen et al. 2021, eq. 1). Needs ``1 <= k <= n``.
    """
    _check(n, c, k)
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def pass_hat_k(n: int, c: int, k: int) -> Fraction:
    """Unbiased pass^k of one record: ``C(c, k) / C(n, k)`` (exact).

    The chance that all of k answers drawn without replacement pass (Yao et al. 2024,
    τ-bench). Needs ``1 <= k <= n``.
    """
    _check(n, c, k)
    return Fraction(math.comb(c, k), math.comb(n, k))


def _table(counts: Iterable[tuple[int, int]], max_k: int, one: Any) -> dict[str, float | None]:
    pairs = [(n, c) for n, c in counts if n >= max_k]
    out: dict[str, float | None] = {}
    if max_k == 1:
        # One verdict epoch each (every run without --epochs): pass@1 = pass^1 = c, exact.
        out["1"] = sum(c for _, c in pairs) / len(pairs) if pairs else None
        return out
    for k in range(1, max_k + 1):
        usable = [one(n, c, k) for n, c in pairs]
        out[str(k)] = float(sum(usable, Fraction(0)) / len(usable)) if usable else None
    return out


def pass_at_k_table(counts: Iterable[tuple[int, int]], max_k: int) -> dict[str, float | None]:
    """``{"1": …, …, "K": …}``: mean pass@k over records given as ``(n, c)`` pairs.

    Every k is over one set: the records with a verdict in all K epochs (``n >= K``), so
    pass@1 and pass@K speak of the same records (taking at each k the records with at
    least k verdicts made pass@1 and pass@5 two different populations). ``None`` for every
    k when no record is complete. Summed exactly, rounded once.
    """
    return _table(counts, max_k, pass_at_k)


def pass_hat_k_table(counts: Iterable[tuple[int, int]], max_k: int) -> dict[str, float | None]:
    """``{"1": …, …, "K": …}``: mean pass^k over records, as :func:`pass_at_k_table`."""
    return _table(counts, max_k, pass_hat_k)


# -- items ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EpochItem:
    """One item (record × model) with all its epoch lines, reduced to one verdict."""

    key: ItemKey
    """``(dataset, record_id, model)``."""
    lines: Mapping[int, PredictionLine]
    """The item's line of each epoch (the last one read when an epoch appears twice)."""
    n: int
    """Epochs with a verdict."""
    c: int
    """Verdict epochs that passed."""
    passed: bool | None
    """The reduced verdict; ``None`` when no epoch has a verdict."""
    score: float | None
    """The record-level score: the mean score over the verdict epochs."""
    reducer: str
    representative: int
    """The epoch whose line stands for the item (see :meth:`line`)."""

    @property
    def errored(self) -> int:
        """Epoch lines without a verdict (errors, skips)."""
        return len(self.lines) - self.n

    @property
    def pass_fraction(self) -> float | None:
        """``c / n``: the record mean ``x_i`` of the clustered errors and comparisons."""
        return self.c / self.n if self.n else None

    @property
    def flaky(self) -> bool:
        """The verdict epochs disagree on pass."""
        return 0 < self.c < self.n

    def line(self) -> PredictionLine:
        """One prediction line that stands for the item.

        A single line is returned as it is (K = 1 reads exactly as before). Otherwise it is
        the line of the first epoch whose own verdict equals the reduced one (the first
        epoch when there is no verdict), with ``outcome``, ``passed`` and ``score`` replaced
        by the reduced ones and ``epochs``, ``epoch_verdicts``, ``epoch_passes``,
        ``epoch_reducer`` and ``pass_fraction`` added (an ``ItemLine``: ``metrics._lines``).
        """
        if len(self.lines) == 1:
            (only,) = self.lines.values()
            return only
        reduction = Reduction(
            epochs=len(self.lines),
            epoch_verdicts=self.n,
            epoch_passes=self.c,
            epoch_reducer=self.reducer,
            pass_fraction=self.pass_fraction,
        )
        out: ItemLine = {**self.lines[self.representative], **reduction}
        if self.passed is not None:
            out["outcome"] = "passed" if self.passed else "failed"
            out["passed"] = self.passed
            out["score"] = self.score
        return out


def _reduce(key: ItemKey, lines: dict[int, PredictionLine], reducer: str) -> EpochItem:
    epochs = sorted(lines)
    verdicts = [(e, epoch_verdict(lines[e])) for e in epochs]
    judged = [(e, v) for e, v in verdicts if v is not None]
    passes = [bool(v) for _, v in judged]
    scores = [_score(lines[e], bool(v)) for e, v in judged]
    threshold = next((t for e, _ in judged if (t := _threshold(lines[e])) is not None), None)
    passed = reduce_verdict(passes, scores, reducer, threshold)
    score = exact_mean(scores) if scores else None
    representative = next((e for e, v in judged if v == passed), epochs[0])
    return EpochItem(key, lines, len(passes), sum(passes), passed, score, reducer, representative)


def group_items(
    rows: Iterable[PredictionLine], reducer: str = DEFAULT_REDUCER
) -> dict[ItemKey, EpochItem]:
    """The items of prediction lines, matched on (dataset, record_id, model, epoch).

    Items keep the order of their first line. When two lines share an item and an epoch, the
    later one counts (a line written again on resume replaces the first).

    Raises:
        ConfigError: an unknown reducer, or a line whose ``epoch`` is not a non-negative
            integer.

    """
    if reducer not in REDUCERS:
        raise ConfigError(f"unknown epoch reducer {reducer!r}; choose one of {', '.join(REDUCERS)}")
    grouped: dict[ItemKey, dict[int, PredictionLine]] = {}
    for row in rows:
        grouped.setdefault(item_key(row), {})[epoch_of(row)] = row
    return {key: _reduce(key, lines, reducer) for key, lines in grouped.items()}


def reduce_rows(
    rows: Iterable[PredictionLine], reducer: str = DEFAULT_REDUCER
) -> list[PredictionLine]:
    """One line per item (:meth:`EpochItem.line`), first-line order.

    What a reader that needs one verdict per item reads instead of ``predictions.jsonl``'s
    epoch lines. Lines of a K = 1 run come back unchanged.
    """
    return [item.line() for item in group_items(rows, reducer).values()]


# -- figures ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EpochFigures:
    """``epochs``, ``pass_at_k``, ``pass_hat_k`` and ``flaky_records`` of some items."""

    epochs: int
    """K: the highest epoch number seen + 1 (or the planned K when larger)."""
    pass_at_k: dict[str, float | None]
    pass_hat_k: dict[str, float | None]
    flaky: tuple[ItemKey, ...]
    """The flaky items, sorted."""
    records: int
    """Items with at least one verdict epoch (the units of the pass rate over epochs)."""
    mean_pass_fraction: float | None
    """Mean of the items' ``c / n``: the pass rate over epochs (over every item with a
    verdict; equals pass@1 when no item is incomplete)."""
    mean_score: float | None = None
    """Mean of the items' record-level scores (each the mean over its verdict epochs)."""
    per_k_records: dict[str, int] = field(default_factory=dict)
    """Items with at least k verdict epochs, for each k (for the reader; the figures are over
    ``pass_at_k_records``)."""
    pass_at_k_records: int = 0
    """Items with a verdict in all K epochs: the one set every pass@k and pass^k is over."""
    incomplete: tuple[ItemKey, ...] = ()
    """The other items (some epoch without a verdict), sorted."""
    errored_epochs: int = 0
    """Epoch lines without a verdict (errors, cancelled, over budget; not skips)."""
    epoch_lines: int = 0
    """Epoch lines of valid items (the denominator of ``error_rate``)."""

    @property
    def error_rate(self) -> float | None:
        """``errored_epochs / epoch_lines``: every epoch is a unit of account."""
        return self.errored_epochs / self.epoch_lines if self.epoch_lines else None

    def to_dict(self) -> dict[str, Any]:
        """The fields ``metrics_summary.json`` holds (``flaky_records`` is a count)."""
        return {
            "epochs": self.epochs,
            "pass_at_k": dict(self.pass_at_k),
            "pass_hat_k": dict(self.pass_hat_k),
            "pass_at_k_records": self.pass_at_k_records,
            "incomplete_records": len(self.incomplete),
            "flaky_records": len(self.flaky),
            "errored_epochs": self.errored_epochs,
            "epoch_lines": self.epoch_lines,
        }


def epoch_figures(items: Iterable[EpochItem], epochs: int | None = None) -> EpochFigures:
    """The epoch figures of items (e.g. ``group_items(rows).values()``, or one model's).

    ``epochs`` is the planned K (``--epochs``); the figures are keyed ``"1"``…``"K"`` with
    K the larger of it and the highest epoch seen + 1.
    """
    items = list(items)
    seen = max((max(item.lines) + 1 for item in items), default=1)
    k_max = max(seen, epochs or 1)
    counts = [(item.n, item.c) for item in items]
    lines = [line for item in items for line in item.lines.values()]
    kinds = [failure_type(line) for line in lines]
    valid = [kind for kind in kinds if kind != "invalid_record"]
    judged = [item for item in items if item.n]
    if all(item.n == 1 for item in judged):
        fractions: list[Fraction | int] = [item.c for item in judged]  # c / 1, exact
    else:
        fractions = [Fraction(item.c, item.n) for item in judged]
    scores = [item.score for item in judged if item.score is not None]
    return EpochFigures(
        epochs=k_max,
        pass_at_k=pass_at_k_table(counts, k_max),
        pass_hat_k=pass_hat_k_table(counts, k_max),
        flaky=tuple(sorted(item.key for item in items if item.flaky)),
        records=len(judged),
        mean_pass_fraction=exact_mean(fractions) if fractions else None,
        mean_score=exact_mean(scores) if scores else None,
        per_k_records={str(k): sum(1 for n, _ in counts if n >= k) for k in range(1, k_max + 1)},
        pass_at_k_records=sum(1 for n, _ in counts if n >= k_max),
        incomplete=tuple(
            sorted(item.key for item in items if item.n < k_max and not _invalid(item))
        ),
        errored_epochs=sum(1 for kind in valid if kind is not None),
        epoch_lines=len(valid),
    )


def _invalid(item: EpochItem) -> bool:
    """An invalid record's item: counted as invalid, not as incomplete."""
    return all(failure_type(line) == "invalid_record" for line in item.lines.values())


def incomplete_line(item: EpochItem, epochs: int) -> dict[str, Any]:
    """The line of an incomplete item in ``incomplete_records.jsonl``.

    ``{"dataset", "record_id", "model", "epochs", "verdicts", "missing_epochs",
    "reasons"}``: the planned K, the epochs with a verdict, the epochs without one (no
    line, or a line without a verdict) and the reason of each such line.
    """
    dataset, record_id, model = item.key
    missing = [
        e for e in range(epochs) if e not in item.lines or epoch_verdict(item.lines[e]) is None
    ]
    return {
        "dataset": dataset,
        "record_id": record_id,
        "model": model,
        "epochs": epochs,
        "verdicts": item.n,
        "missing_epochs": missing,
        "reasons": {
            str(e): (item.lines[e].get("reason") if e in item.lines else "no line") for e in missing
        },
    }


def flaky_line(item: EpochItem) -> dict[str, Any]:
    """The line of a flaky item in ``flaky_records.jsonl``.

    ``{"dataset", "record_id", "model", "epochs", "verdicts", "passes", "pass_fraction",
    "outcomes"}``, ``outcomes`` the outcome of each epoch in epoch order.
    """
    dataset, record_id, model = item.key
    return {
        "dataset": dataset,
        "record_id": record_id,
        "model": model,
        "epochs": len(item.lines),
        "verdicts": item.n,
        "passes": item.c,
        "pass_fraction": item.pass_fraction,
        "outcomes": [item.lines[e].get("outcome") for e in sorted(item.lines)],
    }
