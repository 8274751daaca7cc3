"""LEXam's prompts, verbatim, as the ``lexam_official`` protocol sends them.

The texts live one layer down, in :mod:`pytest_legaleval.protocols.lexam`, because
two siblings need them: the LEXam importer writes the answering prompts into the records,
and the protocol's judge reads the bare question back out of them (DESIGN §11: importers
and grading never import each other). This module is the protocol's face over them.
"""

from __future__ import annotations

from pytest_legaleval.protocols.lexam import (
    JUDGE_PROMPT,
    JUDGE_SYSTEM,
    LETTERS,
    MCQ_PROMPT_LETTERS,
    MCQ_PROMPT_NUMBERS,
    OPEN_QUESTION_PROMPT,
    mcq_format,
    mcq_prompt,
    open_prompt,
    question_of,
)

__all__ = [
    "JUDGE_PROMPT",
    "JUDGE_SYSTEM",
    "LETTERS",
    "MCQ_PROMPT_LETTERS",
    "MCQ_PROMPT_NUMBERS",
    "OPEN_QUESTION_PROMPT",
    "mcq_format",
    "mcq_prompt",
    "open_prompt",
    "question_of",
]
