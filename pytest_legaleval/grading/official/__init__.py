"""The benchmarks' own scoring: LegalBench, LEXam, PRBench and APEX-v1 (``*_official``).

The official protocols, computed exactly as the upstream evaluation code computes them:

- :mod:`.legalbench` — LegalBench's ``evaluation.py`` (normalization, balanced accuracy,
  the special evaluators), item by item and per task; :mod:`.legalbench_tasks` its task
  lists and reasoning categories; :mod:`.porter` the Porter stemmer it uses (NLTK's
  behaviour, our code); :mod:`.numeric` NumPy's mean, bit for bit.
- :mod:`.lexam` — LEXam's MCQ extraction and judge grade; :mod:`.lexam_prompts` its prompts
  verbatim; :mod:`.lexam_judge` its open-question judge, asked through the engine.
- :mod:`.prbench`, :mod:`.apex` — PRBench's and APEX-v1's judge prompts (verbatim), reply
  readers, task scores and headline figures; :mod:`.judged` their graders, which ask the
  judge through the engine and keep the official verdicts (a failed or unreadable judging
  not met) apart from our own accounting (a judge error), and score recorded verdicts.
- :mod:`.graders` — the graders the built-in registry gives those protocols' records.
- :mod:`.legalbench_protocol`, :mod:`.lexam_protocol`, :mod:`.prbench_protocol`,
  :mod:`.apex_protocol` (with :mod:`.judged_figures`) — each benchmark as one object on
  the protocol registry (:mod:`pytest_legaleval.grading.protocols`): its id and version,
  graders, the figures of ``benchmarks.<name>``, its terminal line, report tables and cards.

Each module cites the upstream commit it follows. The per-task and headline figures of a
run are :func:`pytest_legaleval.metrics.benchmarks.benchmark_figures`, which iterates over
the registry. Pure (but for the
judge's calls through the engine): never imports pytest, the pipeline or the run directory.
"""

from __future__ import annotations

from pytest_legaleval.grading.official.graders import (
    LegalbenchOfficialGrader,
    LexamMcqOfficialGrader,
)

__all__ = ["PROTOCOL_MODULES", "LegalbenchOfficialGrader", "LexamMcqOfficialGrader"]

PROTOCOL_MODULES: tuple[str, ...] = (
    "legalbench_protocol",
    "lexam_protocol",
    "prbench_protocol",
    "apex_protocol",
)
"""The built-in protocols' modules, in the order the summary, terminal and report show them.

Each calls :func:`pytest_legaleval.grading.protocols.register` when imported; the registry
imports them on its first use. A new built-in protocol is one module here plus its name.
"""
