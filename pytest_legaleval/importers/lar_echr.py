"""``lar_echr``: LAR-ECHR (legal argument reasoning, ECHR cases) as ``mcq``.

Layout source: the dataset card of AUEB-NLP/lar-echr on Hugging Face (CC-BY-NC-SA-4.0;
CSV files, splits dev/validation/test): ``case_id`` (HUDOC id ``_`` paragraph number,
unique per sample), ``case_no``, ``complete_facts`` (a list of paragraphs; a Python list
literal in CSV), ``facts`` (a summary), ``context`` (the previous three arguments),
``a``, ``b``, ``c``, ``d`` (the candidate next arguments) and ``label`` (the letter of the
right one). LBR's curated rows (DidroPlatform/EU-Legal-Benchmark,
``data/curated/lar_echr_tough_17.jsonl``) add ``context_arguments``, which LBR prefers to
``context`` when present; so does this importer.

The question is LBR's: the facts and the arguments as ``context``, the instruction to pick
the continuation as ``prompt``, the four arguments as choices ``A`` … ``D``. The split is
the file's stem (``test.csv`` → ``test``). Id ``lar_echr:<case_id>``; policy
``lar_echr_mcq_v1``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_legaleval.importers.base import (
    Importer,
    ImportOptions,
    RowError,
    SourceRow,
    expand_files,
    literal_list,
    new_record,
    short_hash,
    text,
)
from pytest_legaleval.importers.readers import read_table

__all__ = ["IMPORTER", "PROMPT", "question"]

LICENCE = "CC-BY-NC-SA-4.0"
PROMPT = "Select the continuation that best extends the ECHR argument excerpt."
_OPTIONS = (("A", "a"), ("B", "b"), ("C", "c"), ("D", "d"))


def question(row: Mapping[str, Any], line: int) -> tuple[str, str, list[dict[str, str]], str]:
    """``(id, context, choices, label)`` of one LAR-ECHR sample, as LBR builds them.

    Raises:
        RowError: no facts or arguments, fewer than two options, a label that names none.

    """
    facts = text(row.get("facts")).strip()
    arguments = text(row.get("context_arguments") or row.get("context")).strip()
    if not facts:
        raise RowError("facts is empty")
    if not arguments:
        raise RowError("context (the previous arguments) is empty")
    choices = [
        {"id": cid, "text": row[key].strip()}
        for cid, key in _OPTIONS
        if isinstance(row.get(key), str) and row[key].strip()
    ]
    if len(choices) < 2:
        raise RowError("fewer than two of the options a, b, c, d are given")
    label = text(row.get("label")).strip().upper()
    if label not in {c["id"] for c in choices}:
        raise RowError(f"label {label!r} is none of the given options")
    case_id = text(row.get("case_id")).strip()
    record_id = (
        f"lar_echr:{case_id}"
        if case_id
        else f"lar_echr:{short_hash(f'{line}:{facts}:{arguments}')}"
    )
    return record_id, f"Facts:\n{facts}\n\nArguments:\n{arguments}", choices, label


def _record(row: Mapping[str, Any], line: int, split: str) -> dict[str, Any]:
    record_id, context, choices, label = question(row, line)
    metadata: dict[str, Any] = {
        "policy_id": "lar_echr_mcq_v1",
        "case_id": text(row.get("case_id")).strip() or None,
        "case_no": row.get("case_no"),
        "split": split,
        "license": LICENCE,
    }
    if row.get("complete_facts") not in (None, ""):
        metadata["complete_facts"] = [
            text(p) for p in literal_list(row["complete_facts"], "complete_facts")
        ]
    out = new_record(record_id, "lar_echr", "mcq", PROMPT, context=context, metadata=metadata)
    out["choices"] = choices
    out["correct_choice_ids"] = [label]
    return out


def files(paths: Sequence[Path]) -> list[Path]:
    """The LAR-ECHR data files among ``paths``."""
    return expand_files(paths, (".csv", ".jsonl", ".json", ".parquet"), "LAR-ECHR")


def rows(paths: Sequence[Path], options: ImportOptions) -> Iterator[SourceRow]:
    """One row per sample; the split is the file's stem."""
    for path in files(paths):
        split = path.stem.split("-")[0]
        for position, row in enumerate(read_table(path), start=1):
            where = f"{path.name} row {position}"
            yield SourceRow.built(where, split, _record, row, position, split)


IMPORTER = Importer(
    name="lar_echr",
    what="LAR-ECHR: facts and prior arguments, four candidate arguments",
    version=1,
    files=files,
    rows=rows,
)
