"""Which protocol an import assigns: the benchmark's official one unless told otherwise.

A *protocol* is how a benchmark's records are prompted and graded: the policy their
``metadata.policy_id`` names and the prompt the importer writes. It changes nothing else:
ids, task types, choices, gold answers and the other metadata stay as they are.

``legaleval import legalbench|lexam|prbench|apex`` (and ``--dataset legalbench:PATH`` …)
assign the benchmark's official protocol — its own prompts and scoring, so the figures
are the leaderboard's — and ``--protocol NAME`` picks one of ours. The other sources have
one protocol each (their policy, as before) and take no ``--protocol``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pytest_legaleval.errors import ConfigError

__all__ = ["PROTOCOLS", "Protocols", "resolve_protocol"]


@dataclass(frozen=True)
class Protocols:
    """The protocols of one import source.

    Attributes:
        default: the protocol an import assigns without ``--protocol``.
        names: every protocol by name, with one line saying what it is.

    """

    default: str
    names: Mapping[str, str]


PROTOCOLS: Mapping[str, Protocols] = {
    "legalbench": Protocols(
        "legalbench_official",
        {
            "legalbench_official": "LegalBench's own: base_prompt.txt as given (its "
            "demonstrations), the raw answer against the label text, evaluation.py's "
            "metric per task",
            "legalbench": "ours: base_prompt.txt zero-shot (or --few-shot K) under policy "
            "`legalbench`, options listed, letter extraction / reference judge",
        },
    ),
    "lexam": Protocols(
        "lexam_official",
        {
            "lexam_official": "LEXam's own: its answering prompts, the last ###X### for "
            "MCQs, its judge and [[0.x]] grade for open questions",
            "lexam": "ours: exam prompt, JSON MCQ answers, reference judge in 0.1 steps "
            "(policy `lexam`)",
            "lbr": "as the Legal Benchmark Runner runs LEXam (policies `lexam_mcq_v1`, "
            "`lexam_oq_v1`)",
        },
    ),
    "prbench": Protocols(
        "prbench_official",
        {
            "prbench_official": "PRBench's own: the conversation as evals.py builds it, "
            "GRADER_TEMPLATE per criterion, unreadable or failed judging not met, "
            "Σ w·met / Σ w⁺ unclipped, per split and Hard subset",
            "lbr": "as the Legal Benchmark Runner runs PRBench (policy `prbench_v1`)",
            "prbench_paper_v1": "ours: PRBench's method in our judge wording, task scores "
            "clipped to [0, 1], judge errors kept apart",
        },
    ),
    "apex": Protocols(
        "apex_official",
        {
            "apex_official": "APEX-v1's own: its response-generation prompt, "
            "grading_prompt.txt per criterion, percent met, mean of the median over epochs",
            "lbr": "as the Legal Benchmark Runner runs APEX (policy `apexv1_extended_v1`)",
        },
    ),
}
"""The sources that have a choice of protocol."""


def resolve_protocol(source: str, name: str | None) -> str | None:
    """The protocol an import of ``source`` assigns: ``name``, else the default.

    Returns ``None`` for a source without protocols (and no ``name``).

    Raises:
        ConfigError: ``name`` is not a protocol of ``source``.

    """
    known = PROTOCOLS.get(source)
    if known is None:
        if name is None:
            return None
        raise ConfigError(
            f"--protocol {name}: the {source} import has no choice of protocol; "
            f"--protocol applies to {', '.join(PROTOCOLS)}"
        )
    if name is None:
        return known.default
    if name not in known.names:
        raise ConfigError(
            f"--protocol {name!r} is not a protocol of {source}; choose one of: "
            + ", ".join(known.names)
        )
    return name
