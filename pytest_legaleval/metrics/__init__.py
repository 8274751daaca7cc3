"""Metrics: what a run's results add up to, and whether CI should accept it.

:mod:`._summary` and :mod:`._slices` accumulate results into ``metrics_summary.json`` and
``metrics_by_slice.json`` (counts in one vocabulary — :mod:`._items`, :mod:`._counts` —
Wilson and bootstrap intervals from :mod:`._stats`, cost from :mod:`._prices`);
:mod:`._gates` parses and evaluates ``--gate`` expressions; :mod:`._baseline` pairs two
runs (McNemar, paired bootstrap); :mod:`._compare` renders ``legaleval compare``;
:mod:`._runfiles` reads finished run directories, old and new. With ``--epochs``:
:mod:`._epochs` (one verdict per item, pass@k, pass^k, flaky and incomplete items),
:mod:`._clustered` (the run's own interval), :mod:`._cr2` (CR2 standard errors with
Bell–McCaffrey degrees of freedom) and :mod:`._tdist` (Student's t at any degrees of
freedom), :mod:`._paired` (the clustered paired difference the baseline gate decides on),
:mod:`._epoch_summary` (those figures for the summary), :mod:`._power` (the planner of
``legaleval plan``) and :mod:`._run_checks` (the cluster field and the gates against the
records, before any call). :mod:`._benchmarks` computes the official
benchmark figures (``benchmarks`` block) and :mod:`._gate_paths` lets a gate name any number
of the summary by its dotted path. The judge audit: :mod:`._human_labels` reads
``--human-labels``, :mod:`._audit_items` matches them to the judge's verdicts,
:mod:`._audit` computes agreement, κ, α and the PPI++ estimates (:mod:`._ppi`,
:mod:`._rater_agreement`), :mod:`._calibration` and :mod:`._audit_text` present them,
:mod:`._judge_consistency` measures re-judging flips and judge panels,
:mod:`._expert_agreement` the raters' agreement with each other (the judge's ceiling) and
:mod:`._labelled_population` the population a review sample's labels speak for.

Never imports pytest, the pipeline, the engine or the service.

The public face (README "Python API"): the names below, each loaded on first use so that
``import pytest_legaleval.metrics`` stays cheap; everything else is internal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_legaleval.util.lazy import face_dir, lazy_getattr

if TYPE_CHECKING:  # pragma: no cover - names for type checkers; loaded lazily at run time
    from pytest_legaleval.metrics._artifacts import Artifact, register_artifact
    from pytest_legaleval.metrics._benchmarks import benchmark_figures
    from pytest_legaleval.metrics._compare import comparison
    from pytest_legaleval.metrics._gates import Gate, GateResult, evaluate_gates, parse_gates
    from pytest_legaleval.metrics._runfiles import RunData, load_run

_LAZY = {
    "Artifact": "pytest_legaleval.metrics._artifacts",
    "Gate": "pytest_legaleval.metrics._gates",
    "GateResult": "pytest_legaleval.metrics._gates",
    "RunData": "pytest_legaleval.metrics._runfiles",
    "benchmark_figures": "pytest_legaleval.metrics._benchmarks",
    "comparison": "pytest_legaleval.metrics._compare",
    "evaluate_gates": "pytest_legaleval.metrics._gates",
    "load_run": "pytest_legaleval.metrics._runfiles",
    "parse_gates": "pytest_legaleval.metrics._gates",
    "register_artifact": "pytest_legaleval.metrics._artifacts",
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


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
__dir__ = face_dir(globals())
