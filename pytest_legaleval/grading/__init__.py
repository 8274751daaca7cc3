"""Grading: how an answer becomes a verdict.

A :class:`Grader` (``_base.py``) turns a :class:`GradeRequest` (record, answer, policy,
judge panel) into a :class:`Grade`; a :class:`GraderRegistry` (``_registry.py``) picks the
grader of a record by its policy id, then its task type. Built in (``_graders.py``): MCQ
letter extraction (the ``mcq/`` package), the benchmarks' official graders (``official/``)
and the LLM judge panel (``_panel.py``, prompts and reply
parsing in ``_judge.py``, scoring rules in ``_scoring.py``) for reference, rubric and
criteria records. Policies (``_policies.py`` and ``policies/*.yaml``) carry the prompts,
judge templates, scoring and pass threshold. ``_verdicts.py`` re-scores recorded judge
verdicts without a call.

The benchmark protocols' registry (``_protocols.py``; LegalBench and LEXam in
``official/``): a benchmark is one :class:`BenchmarkProtocol`, added with
:func:`register_protocol`.

Never imports pytest, the pipeline or the run directory: grading is pure but for the
judge panel's calls through the engine. The public face is ``__all__`` (README "Python
API").
"""

from __future__ import annotations

from pytest_legaleval.grading._base import Grade, Grader, GradeRequest
from pytest_legaleval.grading._protocols import BenchmarkProtocol, Card, Cell, Row, Table, Upstream
from pytest_legaleval.grading._protocols import protocols as benchmark_protocols
from pytest_legaleval.grading._protocols import register as register_protocol
from pytest_legaleval.grading._registry import GraderRegistry, default_registry

__all__ = [
    "BenchmarkProtocol",
    "Card",
    "Cell",
    "Grade",
    "GradeRequest",
    "Grader",
    "GraderRegistry",
    "Row",
    "Table",
    "Upstream",
    "benchmark_protocols",
    "default_registry",
    "register_protocol",
]
