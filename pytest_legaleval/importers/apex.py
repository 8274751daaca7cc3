"""``apex``: APEX-v1-extended (Mercor; professional tasks with rubrics) as ``rubric_qa``.

Layout sources: the dataset card of mercor/APEX-v1-extended on Hugging Face (CC-BY-4.0;
files under ``data/``) names no columns; the columns are read from the row LBR keeps
(DidroPlatform/EU-Legal-Benchmark, ``data/curated/apexv1_legal_europe.jsonl``, read by its
``src/data/build_for_eval.py``): ``Task ID``, ``Domain``, ``Prompt``, ``Rubric JSON`` (a
JSON object: criterion name → ``description``, ``sources``, ``justification``, and
``weight`` where given) and ``File Attachments`` (one relative path to the task's
document). Only that one row's layout could be read; a file with other columns fails
with the missing column named instead of being guessed at.

Each criterion keeps its name as id, its description as title, its justification as
description and its weight; the attachment is kept with kind ``pdf`` or ``file``.
Id ``apexv1:<Task ID>`` (``metadata.source_task_id`` keeps the upstream id).

Protocols (``importers.protocols``): ``apex_official`` (the default) writes APEX's own
response-generation prompt with ``Domain`` and ``Prompt`` filled in as ``run_with_hf.py``
fills them (the cells as given), keeps ``Rubric JSON`` as the task gives it in
``metadata.rubric_json`` (its grader reads each criterion's ``description`` from it) and
every line of ``File Attachments`` as an attachment; ``lbr`` keeps LBR's
``apexv1_extended_v1`` policy and the task prompt alone, as before.
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
    expand_files,
    new_record,
    short_hash,
)
from pytest_legaleval.importers.protocols import resolve_protocol
from pytest_legaleval.importers.readers import read_table
from pytest_legaleval.protocols.apex import generation_prompt

__all__ = ["IMPORTER", "attachments", "record", "rubric"]

LICENCE = "CC-BY-4.0"
OFFICIAL = "apex_official"


def rubric(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The criteria of ``Rubric JSON``, in its order.

    Raises:
        RowError: the column is missing or is not a JSON object.

    """
    if "Rubric JSON" not in row:
        raise RowError("no 'Rubric JSON' column (APEX layout: Task ID, Prompt, Rubric JSON …)")
    raw = row["Rubric JSON"]
    parsed: object = {}
    if isinstance(raw, str) and raw.strip():
        try:
            parsed = json.loads(raw)
        except ValueError as exc:
            raise RowError(f"Rubric JSON is not JSON: {exc}") from None
    elif isinstance(raw, dict | list):
        parsed = raw
    if isinstance(parsed, list):  # a list of one-criterion objects, merged as APEX merges it
        merged: dict[str, Any] = {}
        for entry in parsed:
            if isinstance(entry, dict):
                merged.update(entry)
        parsed = merged
    if not isinstance(parsed, dict):
        raise RowError("Rubric JSON is not a JSON object of criteria")
    criteria: list[dict[str, Any]] = []
    for key, value in parsed.items():
        if not isinstance(value, dict):
            continue
        criterion: dict[str, Any] = {
            "id": str(key).strip() or f"criterion_{len(criteria) + 1}",
            "title": str(value.get("description") or key).strip(),
        }
        justification = value.get("justification")
        if isinstance(justification, str) and justification.strip():
            criterion["description"] = justification.strip()
        weight = value.get("weight")
        if isinstance(weight, int | float) and not isinstance(weight, bool):
            criterion["weight"] = float(weight)
        criteria.append(criterion)
    return criteria


def _criteria_count(rubric_json: str) -> int:
    """How many criteria APEX's ``GradingTask`` finds (a list of objects is merged)."""
    try:
        parsed = json.loads(rubric_json)
    except ValueError:
        return -1
    if isinstance(parsed, list):
        keys = {k for entry in parsed if isinstance(entry, dict) for k in entry}
        return len(keys)
    return len(parsed) if isinstance(parsed, dict) else -1


def attachments(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The task's documents (one relative path a line), as the record's attachments."""
    raw = row.get("File Attachments")
    if not (isinstance(raw, str) and raw.strip()):
        return []
    paths = [line.strip() for line in raw.strip().split("\n") if line.strip()]
    return [{"path": p, "kind": "pdf" if p.lower().endswith(".pdf") else "file"} for p in paths]


def task_id(row: Mapping[str, Any]) -> str:
    """``Task ID``, else a hash of the prompt (or of the whole row)."""
    if row.get("Task ID"):
        return str(row["Task ID"])
    prompt = str(row.get("Prompt", "")).strip()
    return short_hash(prompt or json.dumps(dict(row), sort_keys=True, default=str))


def record(
    row: Mapping[str, Any],
    metadata: Mapping[str, Any] | None = None,
    protocol: str = "lbr",
) -> dict[str, Any]:
    """The ``rubric_qa`` record of one APEX task (``metadata`` replaces ours when given).

    Raises:
        RowError: no rubric column, or a rubric that is not a JSON object.

    """
    official = protocol == OFFICIAL
    prompt = str(row.get("Prompt", "")).strip()
    criteria = rubric(row)
    meta = dict(metadata) if metadata is not None else {
        "policy_id": OFFICIAL if official else "apexv1_extended_v1",
        "domain": row.get("Domain"),
        "source_task_id": row.get("Task ID"),
        "license": LICENCE,
    }  # fmt: skip
    if official:
        raw = row.get("Rubric JSON")
        rubric_json = raw.strip() if isinstance(raw, str) else json.dumps(raw)
        meta["rubric_json"] = rubric_json
        if len(criteria) != _criteria_count(rubric_json):
            # APEX's grader stops on a criterion that is not an object and drops the task
            raise RowError("a criterion of Rubric JSON is not an object: APEX skips the task")
        domain, given = row.get("Domain", ""), row.get("Prompt", "")
        prompt = generation_prompt(
            domain if isinstance(domain, str) else "", given if isinstance(given, str) else ""
        )
    out = new_record(f"apexv1:{task_id(row)}", "apexv1", "rubric_qa", prompt, metadata=meta)
    found = attachments(row)
    if found:
        out["attachments"] = found
    out["rubric"] = criteria
    return out


def files(paths: Sequence[Path]) -> list[Path]:
    """The APEX data files among ``paths``."""
    return expand_files(paths, (".jsonl", ".json", ".parquet", ".csv"), "APEX")


def rows(paths: Sequence[Path], options: ImportOptions) -> Iterator[SourceRow]:
    """One row per task, files in order."""
    protocol = resolve_protocol("apex", options.protocol) or OFFICIAL
    for path in files(paths):
        for position, row in enumerate(read_table(path), start=1):
            where = f"{path.name} row {position}"
            yield SourceRow.built(where, None, record, row, None, protocol)


IMPORTER = Importer(
    name="apex",
    what="APEX-v1-extended tasks: prompt, weighted rubric, attached document",
    version=2,
    files=files,
    rows=rows,
    names_files=True,
)
