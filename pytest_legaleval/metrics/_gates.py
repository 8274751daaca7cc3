"""Quality gates: the expression grammar, the metric table and evaluation per slice.

A gate is ``[SLICE:]METRIC OP NUMBER``, e.g. ``pass_rate>=0.8`` or
``dataset=lexam:pass_rate_ci_low>=0.6``. Values come from the run's summary (or its
slice table) when it holds the metric, else they are computed from the prediction rows,
so a gate never depends on which artifact happened to carry a field. METRIC may also be
the dotted path of any number in ``metrics_summary.json`` (``benchmarks.legalbench.score``,
``judge_audit.cohen_kappa``; :mod:`~pytest_legaleval.metrics._gate_paths`); the
``benchmarks`` figures are computed from the rows when the summary lacks them.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._artifacts import METRICS_SUMMARY
from pytest_legaleval.metrics._counts import with_item_fields
from pytest_legaleval.metrics._gate_paths import parse_path, path_value
from pytest_legaleval.metrics._prices import PriceTable
from pytest_legaleval.metrics._stats import wilson_interval
from pytest_legaleval.metrics._summary import MetricsAccumulator
from pytest_legaleval.records import PredictionLine

__all__ = [
    "GATE_GRAMMAR",
    "METRICS",
    "OPERATORS",
    "SLICE_KEYS",
    "Gate",
    "GateResult",
    "MetricSpec",
    "SliceFinder",
    "block_from_rows",
    "default_gates",
    "evaluate_gates",
    "metric_value",
    "parse_gate",
    "parse_gates",
    "row_matches",
]

OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    ">": operator.gt,
    "<": operator.lt,
}

SLICE_KEYS: tuple[str, ...] = ("dataset", "model", "task_type", "policy", "tag")
"""Slice dimensions a gate may name, besides ``metadata.KEY``."""


Path = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """A gate metric and where it lives in a metrics block.

    A block is ``metrics_summary.json`` or one entry of ``metrics_by_slice.json`` (or one
    computed from prediction rows, of the same shape). ``paths`` are tried in order; each is
    a key path (an integer step indexes a list). ``wilson`` names the (successes, n) counts
    from which a rate's interval is computed when the block stores none.
    """

    name: str
    description: str
    paths: tuple[Path, ...]
    n_path: Path
    interval_paths: tuple[Path, ...] = ()
    wilson: tuple[str, str] | None = None
    rate: bool = False
    """A share between 0 and 1 (a threshold outside that range is a mistake, not a gate)."""


METRICS: dict[str, MetricSpec] = {
    spec.name: spec
    for spec in (
        MetricSpec(
            "pass_rate",
            "passed_items / evaluated_items (items with a graded pass/fail verdict)",
            (("pass_rate",),),
            ("evaluated_items",),
            (("pass_rate_ci",),),
            ("passed_items", "evaluated_items"),
            rate=True,
        ),
        MetricSpec(
            "pass_rate_ci_low",
            "low end of the Wilson 95 % interval of pass_rate",
            (("pass_rate_ci_low",), ("pass_rate_ci", "low")),
            ("evaluated_items",),
            rate=True,
        ),
        MetricSpec(
            "mean_score",
            "mean score of the graded items (seeded bootstrap 95 % interval)",
            (("mean_score",),),
            ("scored_items",),
            (("mean_score_ci",),),
            rate=True,
        ),
        MetricSpec(
            "judge_error_rate",
            "judge_error_count / judged_items",
            (("judge_error_rate",),),
            ("judged_items",),
            (),
            ("judge_error_count", "judged_items"),
            rate=True,
        ),
        MetricSpec(
            "invalid_rate",
            "invalid_items / total_items (items whose record failed validation)",
            (("invalid_rate",),),
            ("total_items",),
            (),
            ("invalid_items", "total_items"),
            rate=True,
        ),
        MetricSpec(
            "error_rate",
            "error_items / valid_items (no verdict: no response, engine, judge error, "
            "timeout, cancelled)",
            (("error_rate",),),
            ("valid_items",),
            (),
            ("error_items", "valid_items"),
            rate=True,
        ),
        MetricSpec(
            "p95_latency_ms",
            "95th percentile of the item latency in ms (linear interpolation)",
            (("p95_latency_ms",), ("latency_ms", "p95")),
            ("latency_ms", "count"),
        ),
        MetricSpec(
            "cost_usd",
            "generation + judge cost in USD (null when a price is unknown)",
            (("cost_usd",), ("cost", "total_usd")),
            ("cost", "items_with_usage"),
        ),
    )
}

GATE_GRAMMAR = """\
gate    := [slice ":"] metric op number
slice   := key "=" value ("," key "=" value)*
key     := dataset | model | task_type | policy | tag | metadata.NAME
metric  := {metrics}
         | PATH, the dotted path of a number in {summary}
           (a key with dots or colons in brackets: models["ollama/llama3:8b"])
op      := >= | > | <= | < | ==
number  := a decimal such as 0.8, or a percentage such as 80% (rates: 0..1 or 0%..100%)
examples: pass_rate>=0.8   dataset=contracts:pass_rate_ci_low>=0.6
          model=openai/gpt-4.1-mini:mean_score>0.5   error_rate<=0.01
          benchmarks.NAME.score>=0.6 (a benchmark protocol's figures)
          judge_audit.cohen_kappa>=0.6""".format(
    metrics=" | ".join(METRICS), summary=METRICS_SUMMARY
)

_EXPR_RE = re.compile(
    r"^\s*(?P<metric>[^\s<>=]+?)\s*(?P<op>>=|<=|==|>|<)\s*(?P<number>[-+]?(\d+(\.\d*)?|\.\d+)"
    r"([eE][-+]?\d+)?)\s*(?P<percent>%?)\s*$"
)
_NAME_RE = re.compile(r"[a-z_0-9]+")


@dataclass(frozen=True, slots=True)
class Gate:
    """One parsed gate expression."""

    text: str
    """The expression as written."""
    metric: str
    op: str
    threshold: float
    slice: tuple[tuple[str, str], ...] = ()
    """``(key, value)`` conditions, all of which a row must meet; empty: the whole run."""
    default: bool = False
    """Added by the exit policy rather than written by the user."""

    def holds(self, value: float) -> bool:
        """Whether ``value`` satisfies the comparison."""
        return OPERATORS[self.op](value, self.threshold)


def _usage(text: str, why: str) -> ConfigError:
    return ConfigError(f"--gate {text!r}: {why}\naccepted grammar:\n{GATE_GRAMMAR}")


def _rate_hint(metric: str, number: str, percent: bool) -> str:
    if percent:
        return f"{metric} is a share between 0% and 100%, got {number}%"
    value = float(number)
    if 1 < value <= 100:
        return (
            f"{metric} is a share between 0 and 1, got {number}; "
            f"did you mean {number}% (that is, {value / 100:g})?"
        )
    return f"{metric} is a share between 0 and 1 (or 0% and 100%), got {number}"


def parse_gate(text: str) -> Gate:
    """Parse one gate expression; a malformed one raises ``ConfigError`` with the grammar.

    A rate's threshold (``pass_rate``, ``mean_score``, the error rates …) must lie in
    [0, 1]: ``pass_rate >= 60`` can never pass, so it is refused with a hint to write
    ``60%``. A metric path's scale is its own (LEXam's open-question score runs to 100).
    The slice ends at the last colon after which a whole expression follows, so a colon
    inside a bracketed path key (``models["ollama/llama3:8b"]``) stays in the path.
    """
    if not isinstance(text, str) or not text.strip():
        raise _usage(str(text), "empty expression")
    cuts = [i for i, char in enumerate(text) if char == ":"][::-1]
    first: ConfigError | None = None
    for cut in [*cuts, -1]:
        try:
            return _parse_at(text, cut)
        except ConfigError as exc:
            first = first or exc
    assert first is not None
    raise first


def _parse_at(text: str, cut: int) -> Gate:
    """The gate with the slice ``text[:cut]`` (none when ``cut`` is -1)."""
    head, sep, expr = (text[:cut], ":", text[cut + 1 :]) if cut >= 0 else ("", "", text)
    match = _EXPR_RE.match(expr)
    if not match:
        raise _usage(text, "expected METRIC OP NUMBER after the optional SLICE:")
    metric = match.group("metric")
    if metric not in METRICS and (_NAME_RE.fullmatch(metric) or parse_path(metric) is None):
        raise _usage(text, f"unknown metric {metric!r}")
    threshold = float(match.group("number"))
    if match.group("percent"):
        threshold /= 100
    spec = METRICS.get(metric)
    if spec is not None and spec.rate and not 0 <= threshold <= 1:
        raise _usage(text, _rate_hint(metric, match.group("number"), bool(match.group("percent"))))
    conditions: list[tuple[str, str]] = []
    if sep:
        for part in head.split(","):
            key, eq, value = part.partition("=")
            key, value = key.strip(), value.strip()
            if not eq or not value:
                raise _usage(text, f"slice condition {part.strip()!r} is not KEY=VALUE")
            if key not in SLICE_KEYS and not re.fullmatch(r"metadata\.[^.\s=]+(\.[^.\s=]+)*", key):
                raise _usage(text, f"unknown slice key {key!r}")
            conditions.append((key, value))
    return Gate(text.strip(), metric, match.group("op"), threshold, tuple(conditions))


def parse_gates(texts: Sequence[str]) -> list[Gate]:
    """Parse every expression (the first malformed one raises)."""
    return [parse_gate(text) for text in texts]


def default_gates(gates: Sequence[Gate]) -> list[Gate]:
    """The exit policy's implicit gates: no invalid record and no item without a verdict.

    They apply only when the user gates at all, and each is dropped when the user gates
    the same metric for the whole run (``error_rate<=0.02`` replaces ``error_rate==0``).
    """
    if not gates:
        return []
    named = {gate.metric for gate in gates if not gate.slice}
    return [
        Gate(f"{metric}==0", metric, "==", 0.0, (), default=True)
        for metric in ("invalid_rate", "error_rate")
        if metric not in named
    ]


# -- values from prediction rows ------------------------------------------------------------


def _row_value(row: Mapping[str, Any], key: str) -> list[str]:
    """The values of slice dimension ``key`` for one prediction row (tags: several)."""
    if key == "policy":
        value: Any = row.get("policy_id")
    elif key == "tag":
        tags = row.get("tags") or []
        return [str(tag) for tag in tags]
    elif key.startswith("metadata."):
        value = row.get("metadata") or {}
        for part in key.split(".")[1:]:
            value = value.get(part) if isinstance(value, Mapping) else None
    else:
        value = row.get(key)
    return [] if value is None else [str(value)]


def row_matches(row: Mapping[str, Any], conditions: Sequence[tuple[str, str]]) -> bool:
    """Whether a prediction (or invalid-item) row belongs to the slice."""
    return all(value in _row_value(row, key) for key, value in conditions)


def block_from_rows(
    rows: Iterable[PredictionLine],
    invalid: int | Iterable[Mapping[str, Any]] = 0,
    prices: PriceTable | None = None,
) -> dict[str, Any]:
    """The metrics block of prediction rows plus invalid items.

    ``invalid`` is one row (``dataset``, ``record_id``) per invalid item, so that an invalid
    record under several models counts one record; a number counts that many items, each a
    record of its own. The rows go through the same accumulator as the recorder's, so a
    computed block means exactly what ``metrics_summary.json`` means.
    """
    acc = MetricsAccumulator(prices=prices)
    if isinstance(invalid, int):
        for _ in range(invalid):
            acc.add_invalid()
    else:
        for row in invalid:
            acc.add_invalid(("invalid", str(row.get("dataset")), str(row.get("record_id"))))
    for row in rows:
        acc.add(row)
    return acc.to_dict()


# -- evaluation --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GateResult:
    """The verdict of one gate."""

    gate: Gate
    passed: bool
    value: float | None
    interval: tuple[float, float] | None
    n: int
    """The metric's denominator (items it was computed over)."""
    note: str = ""
    """Why there is no value (an empty slice, a metric the run lacks)."""

    def describe(self) -> str:
        """One terminal line: expression, value, interval and denominator."""
        label = f"{self.gate.text}{' (default)' if self.gate.default else ''}"
        if self.value is None:
            return f"{label}: no value ({self.note or 'not available'})"
        text = f"{label}: {_fmt(self.value)}"
        if self.interval is not None:
            text += f" (95% CI {_fmt(self.interval[0])}–{_fmt(self.interval[1])})"
        return text + f", n={self.n}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {
            "gate": self.gate.text,
            "metric": self.gate.metric,
            "op": self.gate.op,
            "threshold": self.gate.threshold,
            "slice": dict(self.gate.slice),
            "default": self.gate.default,
            "passed": self.passed,
            "value": self.value,
            "interval": list(self.interval) if self.interval else None,
            "n": self.n,
            "note": self.note,
        }


def _fmt(value: float) -> str:
    return f"{value:.4g}" if abs(value) >= 1 or value == 0 else f"{value:.4f}"


def _lookup(source: Any, paths: Sequence[tuple[str | int, ...]]) -> tuple[bool, Any]:
    for path in paths:
        node = source
        for step in path:
            if isinstance(step, int) and isinstance(node, list) and -len(node) <= step < len(node):
                node = node[step]
            elif isinstance(step, str) and isinstance(node, Mapping) and step in node:
                node = node[step]
            else:
                break
        else:
            return True, node
    return False, None


def _interval(value: Any) -> tuple[float, float] | None:
    if isinstance(value, Mapping):
        value = [value.get("low"), value.get("high")]
    if isinstance(value, list | tuple) and len(value) == 2:
        low, high = value
        if isinstance(low, int | float) and isinstance(high, int | float):
            return float(low), float(high)
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def metric_value(
    block: Mapping[str, Any], metric: str
) -> tuple[bool, float | None, tuple[float, float] | None, int]:
    """``(found, value, interval, n)`` of ``metric`` in a metrics block (either vocabulary)."""
    spec = METRICS[metric]
    block = with_item_fields(block)
    found, value = _lookup(block, spec.paths)
    _, interval = _lookup(block, spec.interval_paths)
    _, n = _lookup(block, (spec.n_path,))
    bounds = _interval(interval)
    if bounds is None and spec.wilson is not None:
        successes, total = (_number(block.get(key)) for key in spec.wilson)
        if successes is not None and total is not None and 0 <= successes <= total:
            bounds = wilson_interval(int(successes), int(total))
    count = _number(n)
    return found, _number(value), bounds, int(count) if count is not None else 0


SliceFinder = Callable[[tuple[tuple[str, str], ...]], Mapping[str, Any] | None]


def evaluate_gates(
    gates: Sequence[Gate],
    rows: Iterable[PredictionLine],
    invalid: Sequence[Mapping[str, Any]] = (),
    *,
    summary: Mapping[str, Any] | None = None,
    slice_entry: SliceFinder | None = None,
    prices: PriceTable | None = None,
) -> list[GateResult]:
    """Evaluate every gate; a gate without a value (empty slice, unknown cost) fails.

    Args:
        gates: parsed gates (defaults included by the caller).
        rows: ``predictions.jsonl`` rows; iterated once per slice that has to be computed,
            so a re-iterable reader of the file keeps memory flat.
        invalid: one row per invalid item (``dataset``, ``model``, ``record_id``).
        summary: ``metrics_summary.json`` for whole-run gates; computed from the rows when
            absent or when it lacks the metric.
        slice_entry: finds a slice's block in ``metrics_by_slice.json``; slices it does
            not know are computed from the rows.
        prices: the price table for computed blocks (``cost_usd``).

    """
    results = []
    computed: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
    figures: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
    for gate in gates:
        given = summary if not gate.slice else (slice_entry(gate.slice) if slice_entry else None)
        if gate.metric not in METRICS:
            found_path = path_value(
                gate.metric,
                given,
                _slice_rows(rows, gate.slice),
                figures.setdefault(gate.slice, {}),
            )
            passed = found_path.value is not None and gate.holds(found_path.value)
            value, interval, n = found_path.value, found_path.interval, found_path.n
            results.append(GateResult(gate, passed, value, interval, n, found_path.note))
            continue
        found, value, interval, n = (
            metric_value(given, gate.metric) if given is not None else (False, None, None, 0)
        )
        if not found:
            block = computed.get(gate.slice)
            if block is None:
                block = computed[gate.slice] = block_from_rows(
                    (r for r in rows if row_matches(r, gate.slice)),
                    [r for r in invalid if row_matches(r, gate.slice)],
                    prices,
                )
            given = block
            _, value, interval, n = metric_value(block, gate.metric)
        note = ""
        if value is None:
            note = (
                "no items in this slice"
                if given is None or not given.get("total_records")
                else f"{gate.metric} is not available for this run"
            )
        passed = value is not None and not math.isnan(value) and gate.holds(value)
        results.append(GateResult(gate, passed, value, interval, n, note))
    return results


def _slice_rows(
    rows: Iterable[PredictionLine], conditions: tuple[tuple[str, str], ...]
) -> Callable[[], Iterable[PredictionLine]]:
    """The rows of one slice, read when asked (path gates compute from them on demand)."""
    return lambda: (r for r in rows if row_matches(r, conditions))
