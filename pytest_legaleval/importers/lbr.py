"""``lbr``: the Legal Benchmark Runner's curated files → LBR's merged evaluation set.

Source: DidroPlatform/EU-Legal-Benchmark (MIT code; the data keeps each upstream licence),
``data/curated/*.jsonl`` and ``src/data/build_for_eval.py``, which writes
``data/for_eval/merged_legal_eval_v1.jsonl``. This importer writes the same records —
ids, policies, messages, metadata, field order — so the file equals LBR's merged set line
for line (checked in the tests against the merged file of LBR's HEAD).

Each file is recognised by its name, as LBR does: ``prbench_legal_hard_europe.jsonl``,
``apexv1_legal_europe.jsonl``, ``lexam_swiss_tough_diverse.jsonl``,
``includebase_europe_law.jsonl``, ``lar_echr_tough_17.jsonl``; a folder contributes those
present, in that order (LBR's). LBR's own id schemes are kept: ``lexam:mcq:<id>:<line>``,
``lexam:open:<id>:<line>``, ``includebase:<sha1 of file:line:question>``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers import apex, lar_echr, prbench
from pytest_legaleval.importers.base import (
    Importer,
    ImportOptions,
    RowError,
    SourceRow,
    choice_id,
    literal_list,
    new_record,
)
from pytest_legaleval.importers.limits import DEFAULT_LIMITS, shown_size
from pytest_legaleval.importers.readers import bounded_lines

__all__ = ["CURATED_FILES", "IMPORTER"]

CURATED_FILES = (
    "prbench_legal_hard_europe.jsonl",
    "apexv1_legal_europe.jsonl",
    "lexam_swiss_tough_diverse.jsonl",
    "includebase_europe_law.jsonl",
    "lar_echr_tough_17.jsonl",
)
_LAR_SIGNALS = (
    "toughness_score",
    "difficulty_signal_facts_len",
    "difficulty_signal_context_len",
    "difficulty_signal_option_similarity",
    "difficulty_signal_overlap_ambiguity",
    "difficulty_signal_negation_density",
)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _prbench(row: Mapping[str, Any], line: int) -> dict[str, Any]:
    messages, turns = prbench.conversation(row)
    source_id = prbench.task_id(row)
    keys = ("topic", "field", "expert", "category", "decision_type", "economic_pathway")
    metadata = {key: row.get(key) for key in (*keys, "classified_countries", "scratchpad")}
    metadata.update(source_turns=turns, source_id=source_id, policy_id="prbench_v1")
    prompt = [m["content"] for m in messages if m["role"] == "user"][-1]
    out = new_record(f"prbench:{source_id}", "prbench", "rubric_qa", prompt, metadata=metadata)
    out["messages"] = messages
    out["rubric"] = prbench.rubric(row, lbr_order=True)
    return out


def _apex(row: Mapping[str, Any], line: int) -> dict[str, Any]:
    metadata = {
        "domain": row.get("Domain"),
        "source_task_id": row.get("Task ID"),
        "policy_id": "apexv1_extended_v1",
    }
    return apex.record(row, metadata)


def _lexam(row: Mapping[str, Any], line: int) -> dict[str, Any]:
    source_id = str(row.get("id") or f"line_{line}")
    prompt = str(row.get("question", "")).strip()
    kind = str(row.get("question_type", "")).strip().lower()
    metadata: dict[str, Any] = {
        key: row.get(key) for key in ("course", "language", "area", "jurisdiction", "year")
    }
    metadata.update(
        question_type=kind or None,
        source_id=source_id,
        policy_id="lexam_oq_v1" if kind == "open" else "lexam_mcq_v1",
    )
    if kind == "open":
        answer = row.get("answer")
        if not (isinstance(answer, str) and answer.strip()):
            raise RowError("open question without a non-empty answer")
        out = new_record(
            f"lexam:open:{source_id}:{line}", "lexam", "reference_qa", prompt, metadata=metadata
        )
        out["reference_answers"] = [answer.strip()]
        return out
    raw = row.get("choices")
    options = [str(o) for o in literal_list(raw, "choices")] if raw not in (None, "") else []
    if len(options) < 2:
        raise RowError("mcq without two or more parseable choices")
    gold = row.get("gold")
    if not _is_number(gold):
        raise RowError("mcq without a numeric gold")
    assert isinstance(gold, int | float)
    index = int(gold)
    if not 0 <= index < len(options):
        raise RowError(f"gold index {index} is out of range")
    metadata["gold_index"] = index
    out = new_record(f"lexam:mcq:{source_id}:{line}", "lexam", "mcq", prompt, metadata=metadata)
    out["choices"] = [{"id": choice_id(i), "text": t.strip()} for i, t in enumerate(options)]
    out["correct_choice_ids"] = [choice_id(index)]
    return out


def _includebase(row: Mapping[str, Any], line: int) -> dict[str, Any]:
    prompt = str(row.get("question", "")).strip()
    source_file = str(row.get("source_file", "unknown"))
    letters = ("A", "B", "C", "D")
    raw = [row.get(f"option_{letter.lower()}") for letter in letters]
    given = [
        (i, letters[i], v.strip()) for i, v in enumerate(raw) if isinstance(v, str) and v.strip()
    ]
    if len(given) < 2:
        raise RowError("fewer than two non-empty options")
    answer = row.get("answer")
    if not (isinstance(answer, int) and not isinstance(answer, bool)) and not (
        isinstance(answer, float) and answer.is_integer()
    ):
        raise RowError("answer is not an integer")
    assert isinstance(answer, int | float)
    index = int(answer)
    gold = next((letter for i, letter, _ in given if i == index), None)
    if gold is None:
        raise RowError(f"answer index {index} points to a missing or empty option")
    # LBR's id: the first 16 hex digits of SHA-1 over "file:line:question".
    seed = f"{source_file}:{line}:{prompt}"
    record_id = f"includebase:{hashlib.sha1(seed.encode('utf-8')).hexdigest()[:16]}"
    metadata = {key: row.get(key) for key in ("language", "country", "subject", "level")}
    metadata.update(
        is_european=row.get("is_european"),
        source_file=source_file,
        answer_index=index,
        policy_id="includebase_default_v1",
    )
    out = new_record(record_id, "includebase", "mcq", prompt, metadata=metadata)
    out["choices"] = [{"id": letter, "text": value} for _, letter, value in given]
    out["correct_choice_ids"] = [gold]
    return out


def _lar_echr(row: Mapping[str, Any], line: int) -> dict[str, Any]:
    record_id, context, choices, label = lar_echr.question(row, line)
    case_id = str(row.get("case_id", "")).strip()
    metadata: dict[str, Any] = {
        "policy_id": "lar_echr_mcq_v1",
        "source_id": str(row.get("record_id") or case_id or f"line_{line}"),
        "case_id": case_id or None,
        "case_no": row.get("case_no"),
        "source_split": row.get("source_split"),
        "source_dataset": row.get("source_dataset"),
    }
    for key in _LAR_SIGNALS:
        if _is_number(row.get(key)):
            metadata[key] = float(row[key])
    out = new_record(
        record_id, "lar_echr", "mcq", lar_echr.PROMPT, context=context, metadata=metadata
    )
    out["choices"] = choices
    out["correct_choice_ids"] = [label]
    return out


_CONVERTERS = dict(
    zip(CURATED_FILES, (_prbench, _apex, _lexam, _includebase, _lar_echr), strict=True)
)


def files(paths: Sequence[Path]) -> list[Path]:
    """The curated files: a folder's known files in LBR's order, or files as given.

    Raises:
        ConfigError: a missing path, a file LBR does not know, or a folder with none.

    """
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(path / name for name in CURATED_FILES if (path / name).is_file())
        elif path.is_file():
            if path.name not in _CONVERTERS:
                raise ConfigError(
                    f"{path}: not one of LBR's curated files ({', '.join(CURATED_FILES)})"
                )
            found.append(path)
        else:
            raise ConfigError(f"{path}: no such file or directory")
    if not found:
        raise ConfigError(f"none of LBR's curated files ({', '.join(CURATED_FILES)}) found")
    return found


def _lines(path: Path) -> Iterator[tuple[int, object | None, str | None]]:
    # LBR numbers physical lines (blank ones included) and its ids carry that number.
    limit = DEFAULT_LIMITS.row
    with path.open(encoding="utf-8") as handle:
        for line, raw in bounded_lines(handle, limit):
            if raw is None:
                yield line, None, f"line is longer than the row limit of {shown_size(limit)}"
                continue
            if not raw.strip():
                continue
            try:
                yield line, json.loads(raw), None
            except ValueError as exc:
                yield line, None, f"line is not JSON: {exc}"


def rows(paths: Sequence[Path], options: ImportOptions) -> Iterator[SourceRow]:
    """Every row of the curated files, converted as LBR's build does."""
    for path in files(paths):
        convert = _CONVERTERS[path.name]
        for line, row, problem in _lines(path):
            where = f"{path.name} row {line}"
            if problem is not None or not isinstance(row, dict):
                yield SourceRow(where, None, error=problem or "line is not a JSON object")
                continue
            try:
                yield SourceRow(where, None, record=convert(row, line))
            except RowError as exc:
                yield SourceRow(where, None, error=str(exc))


IMPORTER = Importer(
    name="lbr",
    what="LBR's curated files (data/curated/*.jsonl) → its merged legal_eval_v1 set",
    version=1,
    files=files,
    rows=rows,
    names_files=True,
)
