"""``include``: INCLUDE (regional exam questions in 44 languages) as ``mcq``.

Layout sources: the dataset card of CohereForAI/include-base-44 (and include-lite-44) on
Hugging Face: one config per language, Parquet files ``<Language>/<split>-*.parquet``,
columns ``language, country, domain, subject, regional_feature, level, question,
choices`` (a list of four options) and ``answer`` (the 0-based index of the right one).
LBR's curated rows (DidroPlatform/EU-Legal-Benchmark,
``data/curated/includebase_europe_law.jsonl``) hold the options as ``option_a`` …
``option_d`` instead; both layouts import. Empty options are left out, as LBR does, and
the remaining ones keep their letters.

The sources carry no row id, so the id is a hash of what makes the question:
``include:<hash of language, question and options>`` (the same question in two files is
one record; an exact repeat is skipped). The split is the file's stem up to ``-``.
Policy ``includebase_default_v1``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_legaleval.importers.base import (
    Importer,
    ImportOptions,
    RowError,
    SourceRow,
    choice_id,
    expand_files,
    literal_list,
    new_record,
    number,
    short_hash,
    text,
)
from pytest_legaleval.importers.readers import read_table

__all__ = ["IMPORTER", "options"]

_LETTER_COLUMNS = ("option_a", "option_b", "option_c", "option_d")
_METADATA_FIELDS = ("language", "country", "domain", "subject", "regional_feature", "level")


def options(row: Mapping[str, Any]) -> tuple[list[dict[str, str]], str]:
    """The non-empty options with their letters, and the letter of the right one.

    Raises:
        RowError: no options, fewer than two, or an answer index that names none.

    """
    if any(column in row for column in _LETTER_COLUMNS):
        raw: list[Any] = [row.get(column) for column in _LETTER_COLUMNS]
    elif "choices" in row:
        raw = literal_list(row["choices"], "choices")
    else:
        raise RowError("no options: neither choices nor option_a … option_d")
    given = [
        (choice_id(i), value.strip())
        for i, value in enumerate(raw)
        if isinstance(value, str) and value.strip()
    ]
    if len(given) < 2:
        raise RowError("fewer than two non-empty options")
    answer = number(row.get("answer"), "answer")
    if not 0 <= answer < len(raw):
        raise RowError(f"answer index {answer} is out of range for {len(raw)} options")
    gold = choice_id(answer)
    if gold not in {cid for cid, _ in given}:
        raise RowError(f"answer index {answer} points to an empty option")
    return [{"id": cid, "text": value} for cid, value in given], gold


def _record(row: Mapping[str, Any], split: str) -> dict[str, Any]:
    prompt = text(row.get("question")).strip()
    if not prompt:
        raise RowError("question is empty")
    choices, gold = options(row)
    key = json.dumps([text(row.get("language")), prompt, [c["text"] for c in choices]])
    metadata: dict[str, Any] = {"policy_id": "includebase_default_v1", "split": split}
    for field in _METADATA_FIELDS:
        if row.get(field) not in (None, ""):
            metadata[field] = row[field]
    metadata["answer_index"] = number(row.get("answer"), "answer")
    out = new_record(f"include:{short_hash(key)}", "include", "mcq", prompt, metadata=metadata)
    out["choices"] = choices
    out["correct_choice_ids"] = [gold]
    return out


def files(paths: Sequence[Path]) -> list[Path]:
    """The INCLUDE data files among ``paths``."""
    return expand_files(paths, (".parquet", ".jsonl", ".json", ".csv"), "INCLUDE")


def rows(paths: Sequence[Path], options: ImportOptions) -> Iterator[SourceRow]:
    """One row per question, files in order."""
    for path in files(paths):
        split = path.stem.split("-")[0]
        for position, row in enumerate(read_table(path), start=1):
            where = f"{path.parent.name}/{path.name} row {position}"
            yield SourceRow.built(where, split, _record, row, split)


IMPORTER = Importer(
    name="include",
    what="INCLUDE (include-base-44, include-lite-44): exam MCQs in 44 languages",
    version=1,
    files=files,
    rows=rows,
)
