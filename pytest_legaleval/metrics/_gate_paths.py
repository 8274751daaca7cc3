"""Gates on any number of ``metrics_summary.json``, named by its dotted path.

``benchmarks.legalbench.score>=0.6``, ``judge_audit.cohen_kappa>=0.6``,
``benchmarks.legalbench.tasks.hearsay.test.value>=0.7``: a path is the keys from the top of
the summary (or of a slice's block) down to a number, joined by dots. A key that holds
dots or other awkward characters (a model name such as ``ollama/llama3:8b``) can be written
in brackets and quotes — ``benchmarks.lexam.models["ollama/llama3:8b"].mcq.accuracy`` —
and an unquoted one is matched greedily against the keys that exist
(``models.openai/gpt-4.1.score`` finds the key ``openai/gpt-4.1``). ``[0]`` indexes a list.

A path that leads nowhere, or to something that is not a number, gives no value and a
note that says where it stopped and what is there instead; a gate without a value fails.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_legaleval.records import PredictionLine

__all__ = ["PathValue", "describe_path", "parse_path", "path_value", "resolve_path"]

Step = tuple[str, bool]
"""A path step: its text and whether it was bracketed (never joined with its neighbours)."""

_PLAIN = r"[^.\[\]\"'\s<>=!]+"
_STEP = re.compile(
    rf"(?P<plain>{_PLAIN})|\[(?:\"(?P<dq>[^\"]*)\"|'(?P<sq>[^']*)'|(?P<index>\d+))\]"
)
_SHOWN_KEYS = 12


def parse_path(text: str) -> tuple[Step, ...] | None:
    """The steps of a dotted path, or ``None`` when ``text`` is not one.

    A path starts with a plain key and has at least two steps, so that a mistyped
    metric name (``pass_rat``) is not taken for a path.
    """
    text = text.strip()
    steps: list[Step] = []
    pos = 0
    while pos < len(text):
        if steps and text[pos] == ".":
            pos += 1
        elif steps and text[pos] != "[":
            return None
        match = _STEP.match(text, pos)
        if match is None or (not steps and match.group("plain") is None):
            return None
        if match.group("plain") is not None:
            steps.append((match.group("plain"), False))
        else:
            quoted = match.group("dq") if match.group("dq") is not None else match.group("sq")
            steps.append((quoted if quoted is not None else match.group("index"), True))
        pos = match.end()
    return tuple(steps) if len(steps) >= 2 else None


def describe_path(steps: Sequence[Step]) -> str:
    """The path written back (bracketed steps in brackets)."""
    out = ""
    for text, bracketed in steps:
        if bracketed:
            out += f"[{text}]" if text.isdigit() else f"[{text!r}]"
        else:
            out += f".{text}" if out else text
    return out


@dataclass(frozen=True, slots=True)
class PathValue:
    """What a path names in a block."""

    found: bool
    """The path leads to a number (possibly ``None``: see ``note``)."""
    value: float | None
    interval: tuple[float, float] | None = None
    """``<name>_ci95`` beside it (or ``ci95`` beside an ``estimate``/``mean``/``value``)."""
    n: int = 0
    """``n`` beside it, when there is one."""
    note: str = ""
    """Why there is no value."""


def _keys(node: Mapping[str, Any]) -> str:
    keys = sorted(str(k) for k in node)
    shown = ", ".join(keys[:_SHOWN_KEYS])
    return shown + (f" … ({len(keys)} keys)" if len(keys) > _SHOWN_KEYS else "")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _interval(parent: Any, last: str) -> tuple[float, float] | None:
    if not isinstance(parent, Mapping):
        return None
    candidates = [f"{last}_ci95"] + (["ci95"] if last in ("estimate", "mean", "value") else [])
    for key in candidates:
        pair = parent.get(key)
        if isinstance(pair, list | tuple) and len(pair) == 2:
            low, high = (_number(v) for v in pair)
            if low is not None and high is not None:
                return low, high
    return None


def resolve_path(block: Mapping[str, Any], steps: Sequence[Step]) -> PathValue:
    """The number ``steps`` name in ``block``, or why there is none."""
    node: Any = block
    parent: Any = None
    walked: list[Step] = []
    i = 0
    while i < len(steps):
        here = describe_path(walked) or "the summary"
        text, bracketed = steps[i]
        if isinstance(node, list | tuple):
            if not text.isdigit() or int(text) >= len(node):
                return PathValue(False, None, note=f"{here} is a list of {len(node)}: no [{text}]")
            parent, node = node, node[int(text)]
            walked.append((text, True))
            i += 1
            continue
        if not isinstance(node, Mapping):
            return PathValue(False, None, note=f"{here} is {_kind(node)}, it has no {text!r}")
        width = 1
        if not bracketed:
            # The longest run of plain steps that is a key wins: "openai/gpt-4.1" holds a dot.
            for j in range(len(steps), i, -1):
                if any(b for _, b in steps[i:j]):
                    continue
                if ".".join(t for t, _ in steps[i:j]) in node:
                    width = j - i
                    break
        key = ".".join(t for t, _ in steps[i : i + width])
        if key not in node:
            return PathValue(False, None, note=f"{here} has no {key!r} (it has: {_keys(node)})")
        parent, node = node, node[key]
        walked.append((key, bracketed))
        i += width
    name = describe_path(walked)
    if isinstance(node, Mapping):
        return PathValue(
            False, None, note=f"{name} is an object, not a number; its fields: {_keys(node)}"
        )
    value = _number(node)
    if value is None:
        if node is None:
            return PathValue(True, None, note=f"{name} is null: the run has no value for it")
        return PathValue(False, None, note=f"{name} is {_kind(node)}, not a number")
    if math.isnan(value):
        return PathValue(True, None, note=f"{name} is not a number (NaN)")
    return PathValue(True, value, _interval(parent, walked[-1][0]), _n(parent, walked[-1][0]))


def _n(parent: Any, last: str) -> int:
    """The denominator beside a figure: ``n``, else the labels an audit figure used.

    The judge audit counts its labels as ``labelled`` (pass figures) and ``score_labelled``
    (score figures: Krippendorff's α, mean scores); a gate on them printed ``n=0``.
    """
    if not isinstance(parent, Mapping):
        return 0
    keys = ["n"]
    if "score" in last or "krippendorff" in last:
        keys.append("score_labelled")
    keys.append("labelled")
    for key in keys:
        n = _number(parent.get(key))
        if n is not None:
            return int(n)
    return 0


def path_value(
    path: str,
    given: Mapping[str, Any] | None,
    slice_rows: Callable[[], Iterable[PredictionLine]],
    cache: dict[str, Any],
) -> PathValue:
    """The number a path gate names in ``given`` (the summary or a slice's block).

    The ``benchmarks`` figures, when ``given`` lacks them (a run directory written before
    they existed, or a slice), are computed from the slice's prediction rows, once per
    slice (``cache`` keeps them).
    """
    steps = parse_path(path)
    if steps is None:
        return PathValue(False, None, note=f"{path!r} is not a dotted path")
    found = resolve_path(given, steps) if given is not None else None
    if (found is None or not found.found) and steps[0][0] == "benchmarks":
        if "benchmarks" not in cache:
            from pytest_legaleval.metrics._benchmarks import benchmark_figures

            cache["benchmarks"] = benchmark_figures(slice_rows())
        found = resolve_path(cache, steps)
    if found is None:
        return PathValue(False, None, note="no items in this slice")
    return found
