"""``legalbench``: LegalBench task directories as ``legal_eval_v1``.

Layout source: HazyResearch/legalbench, ``tasks/<task>/`` (commit ce48244): a
``README.md`` whose ``**License**:`` and ``**Task type**:`` lines give the task's licence
and kind, a ``base_prompt.txt`` (see :mod:`~pytest_legaleval.importers.legalbench_prompt`)
and TSV files with a header row (``index``, ``answer`` and the task's own columns, quoted
as Python's ``csv`` writes them). The repository ships ``train.tsv``; the test rows are the
``test.tsv`` files of the Hugging Face release (nguha/legalbench), which go in the same
directory. Every TSV becomes records: its stem is the split.

A *label* task (``Binary``/``N-way classification``, ``Yes/No question-answer``) becomes
``mcq``: its choices are the MAUD-style ``Option X:`` lines of the prompt when there are
some, else the distinct answers of all the task's TSV files (``Yes``/``No`` in that order,
otherwise by first mention in the prompt). ``Extraction`` and ``Generation`` tasks become
``reference_qa``. Two READMEs call a task classification whose answers are free text:
``sara_numeric`` (dollar amounts) and ``successor_liability`` (comma-joined lists of
exceptions); both are imported as ``reference_qa``. Ids are
``legalbench:<task>:<split>:<row>`` (the row's 1-based position in its TSV, 4 digits).
Every record keeps the TSV's answer as ``metadata.gold_label`` (what LegalBench compares
with; a MAUD option task's label is the option letter, its choice text the option's).

Protocols (``importers.protocols``): ``legalbench_official`` (the default) writes each
task's ``base_prompt.txt`` filled in as LegalBench's ``utils.generate_prompts`` fills it —
every ``{{column}}`` replaced by the row's value, column by column, the file's own
demonstrations kept — under policy ``legalbench_official``; ``legalbench`` (ours) writes
the prompt zero-shot or with ``--few-shot`` demonstrations, under policy ``legalbench``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers.base import (
    Importer,
    ImportOptions,
    RowError,
    SourceRow,
    choice_id,
    new_record,
    text,
)
from pytest_legaleval.importers.legalbench_prompt import TaskPrompt, parse_prompt
from pytest_legaleval.importers.protocols import resolve_protocol
from pytest_legaleval.importers.readers import read_table

__all__ = ["IMPORTER"]

SOURCE_REPO = "https://github.com/HazyResearch/legalbench"
_FREE_TEXT_ANSWERS = frozenset({"sara_numeric", "successor_liability"})
_LABEL_KIND = re.compile(r"classification|yes/no", re.IGNORECASE)
_README_LINE = re.compile(r"^\*\*(License|Task type)\*\*:\s*(.+?)\s*$", re.MULTILINE)
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_FIELD = re.compile(r"\{\{(.*?)\}\}")
OFFICIAL = "legalbench_official"


def _answer(row: dict[str, Any]) -> str:
    # Files from before the public release (the repository's history, e.g. commit
    # 49bf0a8) name the column ``label`` instead of ``answer``.
    return text(row["answer"] if "answer" in row else row.get("label"))


@dataclass(frozen=True)
class _Task:
    name: str
    directory: Path
    licence: str
    kind: str
    prompt: TaskPrompt
    tsvs: tuple[Path, ...]
    base_prompt: str
    """``base_prompt.txt`` as the file has it."""


def _readme(directory: Path) -> dict[str, str]:
    for name in ("README.md", "README.MD", "readme.md"):
        path = directory / name
        if path.is_file():
            found = _README_LINE.findall(path.read_text(encoding="utf-8", errors="replace"))
            return {key: _LINK.sub(r"\1", value) for key, value in found}
    return {}


def _task(directory: Path) -> _Task:
    readme = _readme(directory)
    base = directory / "base_prompt.txt"
    raw = base.read_text(encoding="utf-8-sig")
    try:
        prompt = parse_prompt(raw, f"{directory.name}/{base.name}")
    except RowError as exc:
        raise ConfigError(str(exc)) from None
    tsvs = tuple(sorted(p for p in directory.glob("*.tsv") if p.is_file()))
    return _Task(
        directory.name,
        directory,
        readme.get("License", "unknown (no README licence line)"),
        readme.get("Task type", ""),
        prompt,
        tsvs,
        raw,
    )


def _task_dirs(paths: Sequence[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if not path.exists():
            raise ConfigError(f"{path}: no such file or directory")
        if path.is_file():
            path = path.parent
        if (path / "base_prompt.txt").is_file():
            found.append(path)
        else:
            found.extend(sorted(p.parent for p in path.rglob("base_prompt.txt")))
    if not found:
        raise ConfigError(
            f"no LegalBench task (a directory with base_prompt.txt) in "
            f"{', '.join(str(p) for p in paths)}"
        )
    return list(dict.fromkeys(found))


def _labels(task: _Task) -> list[tuple[str, str]] | None:
    """The task's choices as ``(id, text)``, or ``None`` for a free-text task."""
    if task.name in _FREE_TEXT_ANSWERS:
        return None
    if task.kind and not _LABEL_KIND.search(task.kind):
        return None
    if task.prompt.options:
        return list(task.prompt.options)
    answers: dict[str, None] = {}
    for tsv in task.tsvs:
        for row in read_table(tsv):
            answers.setdefault(_answer(row), None)
    answers.pop("", None)
    if not task.kind and (len(answers) > 10 or len(answers) < 2):
        return None  # no README: a small closed set is a label task, anything else open
    if set(answers) == {"Yes", "No"}:
        ordered = ["Yes", "No"]
    else:
        whole = "\n\n".join([*task.prompt.instructions, task.prompt.template])
        ordered = sorted(answers, key=lambda a: (whole.find(a) < 0, whole.find(a), a))
    return [(label, label) for label in ordered]


def official_prompt(base_prompt: str, row: dict[str, Any]) -> str:
    """``base_prompt.txt`` filled in as LegalBench's ``generate_prompts`` fills it.

    Every ``{{column}}`` is replaced by the row's value, column by column in the row's
    order (a value holding another column's placeholder is filled in turn, as upstream).

    Raises:
        RowError: the prompt names a column the row lacks.

    """
    prompt = base_prompt
    for key, value in row.items():
        prompt = prompt.replace("{{" + str(key) + "}}", text(value))
    missing = [name for name in _FIELD.findall(base_prompt) if name not in row]
    if missing:
        raise RowError(f"no column {missing[0]!r}, which base_prompt.txt names")
    return prompt


def _shots(task: _Task, options: ImportOptions) -> list[dict[str, Any]]:
    if options.few_shot <= 0:
        return []
    train = task.directory / "train.tsv"
    if not train.is_file():
        raise ConfigError(f"--few-shot: task {task.name} has no train.tsv")
    rows = list(read_table(train))
    if len(rows) < options.few_shot:
        raise ConfigError(
            f"--few-shot {options.few_shot}: {task.name}/train.tsv has only {len(rows)} row(s)"
        )
    if options.seed is None:
        return rows[: options.few_shot]
    return random.Random(f"{options.seed}:{task.name}").sample(rows, options.few_shot)


def _record(
    task: _Task,
    tsv: Path,
    position: int,
    row: dict[str, Any],
    labels: list[tuple[str, str]] | None,
    shots: list[dict[str, Any]],
    protocol: str,
) -> dict[str, Any]:
    split = tsv.stem
    answer = _answer(row)
    if not answer.strip():
        raise RowError("answer is empty")
    used = {"answer", "label", "index", *task.prompt.fields}
    official = protocol == OFFICIAL
    metadata: dict[str, Any] = {
        "policy_id": protocol,
        "task": task.name,
        "split": split,
        "license": task.licence,
        "task_type_upstream": task.kind or None,
        "source_repo": SOURCE_REPO,
        "source_path": f"tasks/{task.name}/{tsv.name}",
        "original_index": text(row.get("index")) or None,
        "prompt_template": "base_prompt.txt as given" if official else
        f"base_prompt.txt, {len(shots)}-shot" if shots else "base_prompt.txt, zero-shot",
        "gold_label": answer,
    }  # fmt: skip
    metadata = {key: value for key, value in metadata.items() if value is not None}
    for key, value in row.items():
        if key not in used and text(value) != "":
            metadata.setdefault(key, text(value))
    record_id = f"legalbench:{task.name}:{split}:{position:04d}"
    prompt = official_prompt(task.base_prompt, row) if official else task.prompt.render(row, shots)
    if labels is None:
        record = new_record(record_id, "legalbench", "reference_qa", prompt, metadata=metadata)
        record["reference_answers"] = [answer]
        return record
    ids = {label: choice_id(i) for i, (label, _) in enumerate(labels)}
    if answer not in ids:
        raise RowError(f"answer {answer!r} is none of the labels {', '.join(ids)}")
    record = new_record(record_id, "legalbench", "mcq", prompt, metadata=metadata)
    record["choices"] = [{"id": ids[label], "text": t} for label, t in labels]
    record["correct_choice_ids"] = [ids[answer]]
    return record


def files(paths: Sequence[Path]) -> list[Path]:
    """Every file the import reads: each task's README, ``base_prompt.txt`` and TSVs."""
    found: list[Path] = []
    for directory in _task_dirs(paths):
        found.extend(
            p
            for p in sorted(directory.iterdir())
            if p.is_file() and (p.suffix == ".tsv" or p.name in ("base_prompt.txt", "README.md"))
        )
    return found


def rows(paths: Sequence[Path], options: ImportOptions) -> Iterator[SourceRow]:
    """Every TSV row of every task, task by task (by name), TSV by TSV (by name).

    Raises:
        ConfigError: an unknown protocol, or ``few_shot`` with the official one (whose
            demonstrations are the prompt file's own).

    """
    protocol = resolve_protocol("legalbench", options.protocol)
    assert protocol is not None
    if protocol == OFFICIAL and options.few_shot > 0:
        raise ConfigError(
            f"--few-shot {options.few_shot}: the {OFFICIAL} protocol uses base_prompt.txt "
            "as given (its own demonstrations); add --protocol legalbench for --few-shot"
        )
    for directory in _task_dirs(paths):
        task = _task(directory)
        if not task.tsvs:
            yield SourceRow(f"{task.name}/ row 0", None, skip="task folder without a TSV file")
            continue
        labels = _labels(task)
        for tsv in task.tsvs:
            split = tsv.stem
            wanted = options.split is None or options.split == split
            shots = _shots(task, options) if split == "test" and wanted else []
            for position, row in enumerate(read_table(tsv), start=1):
                where = f"{task.name}/{tsv.name} row {position}"
                if not wanted:
                    yield SourceRow(where, split)
                    continue
                yield SourceRow.built(
                    where, split, _record, task, tsv, position, row, labels, shots, protocol
                )


IMPORTER = Importer(
    name="legalbench",
    what="LegalBench tasks/<task>/: every TSV; base_prompt.txt as given (official) or "
    "zero-/few-shot (--protocol legalbench)",
    version=2,
    files=files,
    rows=rows,
)
