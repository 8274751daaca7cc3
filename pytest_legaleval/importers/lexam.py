"""``lexam``: LEXam's ``data/`` folder (Swiss law exams) as ``legal_eval_v1``.

Layout source: the spreadsheets of LEXam-Benchmark/LEXam, ``data/*.xlsx`` (read at commit
487f729), and the dataset card of LEXam-Benchmark/LEXam on Hugging Face, whose configs
carry the same columns. Data licence CC-BY-4.0 (``LICENSE_DATA``).

- ``MCQs_test.xlsx``: ``question, choices, gold, course, language, area, jurisdiction,
  year, n_statements, none_as_an_option, id, negative_question``; ``choices`` is a Python
  list literal, ``gold`` the 0-based index of the right choice. One ``mcq`` record per row,
  id ``lexam:mcq:<id>``.
- ``MCQs_test_perturbation.xlsx``: ``question, 4_choices, 4_choices_gold, 8_choices,
  8_choices_gold, 16_choices, 16_choices_gold, 32_choices, 32_choices_gold, course,
  language, n_statements, id, negative_question``: the same question with 4, 8, 16 and 32
  options. One record per question × option count, id ``lexam:mcq<k>:<id>``.
- ``open_questions_dev.xlsx``, ``open_questions_test.xlsx``: ``question, answer, course,
  language, area, jurisdiction, year, id``. One ``reference_qa`` record per row, id
  ``lexam:oq:<id>``, the exam's model answer as the reference.

A file's kind is read from its columns, not its name, so a renamed file or a Parquet/JSONL
export with the same columns imports alike. Choice ids past ``Z`` are ``CHOICE_26`` …
(32-option questions), as in LBR's merged set.

Protocols (``importers.protocols``): ``lexam_official`` (the default) writes LEXam's own
answering prompt with the course and, for MCQs, the choices listed ``A. text`` (up to 26)
or ``1. text`` (more) — ``protocols.lexam`` — under policy
``lexam_official``; ``lexam`` keeps the bare question under our policy ``lexam``; ``lbr``
keeps it under ``lexam_mcq_v1`` / ``lexam_oq_v1`` (as the Legal Benchmark Runner runs
LEXam). ``metadata.course`` is the natural cluster of a LEXam question (one course's exam).
"""

from __future__ import annotations

import re
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
    text,
)
from pytest_legaleval.importers.limits import UnreadRow
from pytest_legaleval.importers.protocols import resolve_protocol
from pytest_legaleval.importers.readers import READABLE_SUFFIXES, read_table
from pytest_legaleval.protocols.lexam import mcq_prompt, open_prompt

__all__ = ["IMPORTER", "mcq_record", "open_record"]

LICENCE = "CC-BY-4.0"
SOURCE_REPO = "https://github.com/LEXam-Benchmark/LEXam"
_VARIANT = re.compile(r"^(\d+)_choices$")
_SUBSET = re.compile(r"mcq_(\d+)_choices")
_POLICIES = {
    "lexam_official": ("lexam_official", "lexam_official"),
    "lexam": ("lexam", "lexam"),
    "lbr": ("lexam_mcq_v1", "lexam_oq_v1"),
}
"""Protocol → (policy of MCQs, policy of open questions)."""
_METADATA_FIELDS = (
    "course", "language", "area", "jurisdiction", "year", "n_statements",
    "none_as_an_option", "negative_question",
)  # fmt: skip


def _split_of(path: Path) -> str:
    stem = path.stem.lower()
    if stem.endswith("_dev") or "_dev_" in stem:
        return "dev"
    return "test" if "test" in stem else "unknown"


def _question(row: Mapping[str, Any]) -> tuple[str, str]:
    source_id = text(row.get("id")).strip()
    if not source_id:
        raise RowError("id is empty")
    prompt = text(row.get("question"))
    if not prompt.strip():
        raise RowError("question is empty")
    return source_id, prompt


def _metadata(row: Mapping[str, Any], path: Path, policy: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"policy_id": policy}
    for key in _METADATA_FIELDS:
        if key in row and row[key] is not None and row[key] != "":
            metadata[key] = row[key]
    metadata.update(
        source_id=text(row.get("id")).strip(),
        source_file=path.name,
        split=_split_of(path),
        license=LICENCE,
        source_repo=SOURCE_REPO,
    )
    return metadata


def _policies(protocol: str | None) -> tuple[str, str]:
    resolved = resolve_protocol("lexam", protocol)
    assert resolved is not None
    return _POLICIES[resolved]


def mcq_record(
    row: Mapping[str, Any],
    path: Path,
    choices_field: str,
    gold_field: str,
    tag: str,
    protocol: str | None = None,
) -> dict[str, Any]:
    """The ``mcq`` record of one LEXam question with the options of ``choices_field``.

    ``protocol`` (``importers.protocols``; ``None``: the official one) sets its policy and
    prompt.

    Raises:
        RowError: no id or question, unparseable options, fewer than two, or a gold
            index out of range.

    """
    source_id, prompt = _question(row)
    options = [text(option) for option in literal_list(row.get(choices_field), choices_field)]
    if len(options) < 2:
        raise RowError(f"{choices_field} has {len(options)} option(s); an mcq needs 2 or more")
    gold = number(row.get(gold_field), gold_field)
    if not 0 <= gold < len(options):
        raise RowError(f"{gold_field} {gold} is out of range for {len(options)} options")
    policy = _policies(protocol)[0]
    metadata = _metadata(row, path, policy)
    metadata["gold_index"] = gold
    if policy == "lexam_official":
        prompt = mcq_prompt(prompt, options, text(row.get("course")))
    record = new_record(f"lexam:{tag}:{source_id}", "lexam", "mcq", prompt, metadata=metadata)
    record["choices"] = [{"id": choice_id(i), "text": t} for i, t in enumerate(options)]
    record["correct_choice_ids"] = [choice_id(gold)]
    return record


def open_record(row: Mapping[str, Any], path: Path, protocol: str | None = None) -> dict[str, Any]:
    """The ``reference_qa`` record of one LEXam open question (``protocol`` as above).

    Raises:
        RowError: no id, question or answer.

    """
    source_id, prompt = _question(row)
    answer = text(row.get("answer"))
    if not answer.strip():
        raise RowError("answer (the reference answer) is empty")
    policy = _policies(protocol)[1]
    metadata = _metadata(row, path, policy)
    if policy == "lexam_official":
        prompt = open_prompt(prompt, text(row.get("course")))
    record = new_record(f"lexam:oq:{source_id}", "lexam", "reference_qa", prompt, metadata=metadata)
    record["reference_answers"] = [answer]
    return record


def _variants(columns: Sequence[str]) -> list[tuple[int, str, str]]:
    found = []
    for column in columns:
        match = _VARIANT.match(column)
        if match and f"{column}_gold" in columns:
            found.append((int(match.group(1)), column, f"{column}_gold"))
    return sorted(found)


def _plain_tag(row: Mapping[str, Any], path: Path) -> str:
    # Hugging Face keeps each option count in its own config (mcq_4_choices …
    # mcq_32_choices, the folder of its files); LBR's curated rows name it in source_subset.
    for hint in (text(row.get("source_subset")), *path.parts):
        match = _SUBSET.search(hint)
        if match and match.group(1) != "4":
            return f"mcq{match.group(1)}"
    return "mcq"


def _builders(row: Mapping[str, Any], path: Path) -> list[tuple[str, tuple[str, str, str]]]:
    """``(label suffix, (kind, choices column, gold column))`` for each record of a row."""
    variants = _variants(list(row))
    if variants:
        return [(f" ({k} choices)", (f"mcq{k}", c, g)) for k, c, g in variants]
    kind = text(row.get("question_type")).strip().lower()
    has_choices = row.get("choices") not in (None, "")
    if kind == "open" or (not has_choices and "answer" in row):
        return [("", ("open", "", ""))]
    if "choices" in row:
        return [("", (_plain_tag(row, path), "choices", "gold"))]
    return []


def _file_rows(path: Path, protocol: str | None) -> Iterator[SourceRow]:
    split = _split_of(path)
    for position, row in enumerate(read_table(path), start=1):
        where = f"{path.name} row {position}"
        if isinstance(row, UnreadRow):
            yield SourceRow(where, split, error=row.reason)
            continue
        builders = _builders(row, path)
        if not builders:
            columns = ", ".join(list(row)[:12])
            yield SourceRow(where, split, error=f"not a LEXam layout: columns {columns}")
            continue
        for suffix, (tag, choices, gold) in builders:
            try:
                if tag == "open":
                    record = open_record(row, path, protocol)
                else:
                    record = mcq_record(row, path, choices, gold, tag, protocol)
                    if tag != "mcq":
                        record["metadata"]["n_choices"] = len(record["choices"])
            except RowError as exc:
                yield SourceRow(where + suffix, split, error=str(exc))
            else:
                yield SourceRow(where + suffix, split, record=record)


def files(paths: Sequence[Path]) -> list[Path]:
    """LEXam's data files among ``paths`` (a ``data/`` folder or single files)."""
    return expand_files(paths, READABLE_SUFFIXES, "LEXam data")


def rows(paths: Sequence[Path], options: ImportOptions) -> Iterator[SourceRow]:
    """Every question (× option count) of the files, in file order.

    Raises:
        ConfigError: an unknown protocol.

    """
    _policies(options.protocol)
    for path in files(paths):
        yield from _file_rows(path, options.protocol)


IMPORTER = Importer(
    name="lexam",
    what="LEXam data/: MCQ test (4 options), perturbation (4/8/16/32), open questions; "
    "LEXam's prompts (official) or ours (--protocol lexam|lbr)",
    version=2,
    files=files,
    rows=rows,
)
