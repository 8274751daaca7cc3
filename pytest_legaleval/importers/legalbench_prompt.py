"""LegalBench's ``base_prompt.txt``: instructions, demonstrations and the question template.

Read from HazyResearch/legalbench, ``tasks/<task>/base_prompt.txt`` (all 162 tasks at
commit ce48244). A prompt is blocks separated by blank lines: the task's instructions,
then worked demonstrations, then the question template, which runs from the first block
with a ``{{field}}`` to the end (``jcrew_blocker``'s spans two blocks). A demonstration is
an earlier block that starts as the template's first line does before its first field
(``Q:``, ``Clause:``, ``Text:``); a template that starts with a field (``{{text}}`` in the
``supply_chain_disclosure_*`` tasks, ``{{contract}}`` in ``consumer_contracts_qa``) has
none. MAUD tasks list their labels as ``Option A: …`` lines in the instructions.

Zero-shot keeps the instructions and the template; few-shot puts K demonstrations built
from ``train.tsv`` rows (the template filled, then the answer) between them, as the
upstream prompts do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_legaleval.importers.base import RowError, text

__all__ = ["TaskPrompt", "parse_prompt"]

_BLOCK_BREAK = re.compile(r"\n[ \t]*\n")
_FIELD = re.compile(r"\{\{(.*?)\}\}")
_OPTION = re.compile(r"^Option ([A-Z]):[ \t]*(.+?)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class TaskPrompt:
    """A task's prompt, taken apart.

    Attributes:
        instructions: the blocks before the template that are not demonstrations.
        template: the question template (its ``{{field}}`` placeholders unfilled).
        demonstrations: how many demonstration blocks the upstream prompt has.
        options: MAUD-style ``Option X: text`` pairs from the instructions, in order.

    """

    instructions: tuple[str, ...]
    template: str
    demonstrations: int
    options: tuple[tuple[str, str], ...]

    @property
    def fields(self) -> list[str]:
        """The template's placeholders, in order, each once."""
        return list(dict.fromkeys(_FIELD.findall(self.template)))

    def fill(self, row: Mapping[str, Any]) -> str:
        """The template with the row's values in place of its placeholders.

        Raises:
            RowError: the row lacks a field the template names.

        """
        missing = [name for name in self.fields if name not in row]
        if missing:
            raise RowError(f"no column {missing[0]!r}, which base_prompt.txt names")
        return _FIELD.sub(lambda m: text(row[m.group(1)]), self.template)

    def render(self, row: Mapping[str, Any], shots: Sequence[Mapping[str, Any]] = ()) -> str:
        """The prompt of one row: instructions, demonstrations from ``shots``, question.

        Raises:
            RowError: the row or a shot lacks a field the template names.

        """
        demos = [
            f"{self.fill(shot).rstrip()} {text(shot.get('answer', shot.get('label')))}"
            for shot in shots
        ]
        return "\n\n".join([*self.instructions, *demos, self.fill(row)]).strip()


def parse_prompt(prompt: str, where: str) -> TaskPrompt:
    """Take a ``base_prompt.txt`` apart.

    Raises:
        RowError: the prompt has no ``{{field}}`` template.

    """
    blocks = [b for b in _BLOCK_BREAK.split(prompt.replace("\r\n", "\n").strip("\n")) if b.strip()]
    first = next((i for i, block in enumerate(blocks) if _FIELD.search(block)), None)
    if first is None:
        raise RowError(f"{where} has no {{{{field}}}} template")
    template = "\n\n".join(blocks[first:])
    marker = template.split("\n", 1)[0].split("{{", 1)[0].rstrip()
    instructions = []
    demonstrations = 0
    for block in blocks[:first]:
        if marker and block.startswith(marker):
            demonstrations += 1
        else:
            instructions.append(block)
    options = tuple(
        (m.group(1), m.group(2)) for block in instructions for m in _OPTION.finditer(block)
    )
    return TaskPrompt(tuple(instructions), template, demonstrations, options)
