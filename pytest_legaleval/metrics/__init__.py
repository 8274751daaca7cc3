"""Metrics: what a run's results add up to, and whether CI should accept it.

:mod:`.summary` and :mod:`.slices` accumulate results into ``metrics_summary.json`` and
``metrics_by_slice.json`` (counts in one vocabulary — :mod:`.items`, :mod:`.counts` —
Wilson and bootstrap intervals from :mod:`.stats`, cost from :mod:`.prices`);
:mod:`.gates` parses and evaluates ``--gate`` expressions; :mod:`.baseline` pairs two
runs (McNemar, paired bootstrap); :mod:`.compare` renders ``legaleval compare``;
:mod:`.runfiles` reads finished run directories, old and new. With ``--epochs``:
:mod:`.epochs` (one verdict per item, pass@k, pass^k, flaky and incomplete items),
:mod:`.clustered` (the run's own interval), :mod:`.cr2` (CR2 standard errors with
Bell–McCaffrey degrees of freedom) and :mod:`.tdist` (Student's t at any degrees of
freedom), :mod:`.paired` (the clustered paired difference the baseline gate decides on),
:mod:`.epoch_summary` (those figures for the summary), :mod:`.power` (the planner of
``legaleval plan``) and :mod:`.run_checks` (the cluster field and the gates against the
records, before any call). :mod:`.benchmarks` computes the official
benchmark figures (``benchmarks`` block) and :mod:`.gate_paths` lets a gate name any number
of the summary by its dotted path. The judge audit: :mod:`.human_labels` reads
``--human-labels``, :mod:`.audit_items` matches them to the judge's verdicts,
:mod:`.audit` computes agreement, κ, α and the PPI++ estimates (:mod:`.ppi`,
:mod:`.rater_agreement`), :mod:`.calibration` and :mod:`.audit_text` present them,
:mod:`.judge_consistency` measures re-judging flips and judge panels,
:mod:`.expert_agreement` the raters' agreement with each other (the judge's ceiling) and
:mod:`.labelled_population` the population a review sample's labels speak for.

Never imports pytest, the pipeline, the engine or the service.

The public face (README "Python API"): the names below, each loaded on first use so that
``import pytest_legaleval.metrics`` stays cheap; everything else is internal.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pytest_legaleval.errors import UnknownAttribute

if TYPE_CHECKING:  # pragma: no cover - names for type checkers; loaded lazily at run time
    from pytest_legaleval.metrics.artifacts import Artifact, register_artifact
    from pytest_legaleval.metrics.benchmarks import benchmark_figures
    from pytest_legaleval.metrics.compare import comparison
    from pytest_legaleval.metrics.gates import Gate, GateResult, evaluate_gates, parse_gates
    from pytest_legaleval.metrics.runfiles import RunData, load_run

_LAZY = {
    "Artifact": "pytest_legaleval.metrics.artifacts",
    "Gate": "pytest_legaleval.metrics.gates",
    "GateResult": "pytest_legaleval.metrics.gates",
    "RunData": "pytest_legaleval.metrics.runfiles",
    "benchmark_figures": "pytest_legaleval.metrics.benchmarks",
    "comparison": "pytest_legaleval.metrics.compare",
    "evaluate_gates": "pytest_legaleval.metrics.gates",
    "load_run": "pytest_legaleval.metrics.runfiles",
    "parse_gates": "pytest_legaleval.metrics.gates",
    "register_artifact": "pytest_legaleval.metrics.artifacts",
}

__all__ = [
    "Artifact",
    "Gate",
    "GateResult",
    "RunData",
    "benchmark_figures",
    "comparison",
    "evaluate_gates",
    "load_run",
    "parse_gates",
    "register_artifact",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise UnknownAttribute(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
