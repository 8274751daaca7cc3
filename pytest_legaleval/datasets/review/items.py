"""The blind item view: what an expert sees of one sampled item, and nothing of the judge.

An item view is built from two artifacts of the run and nothing else: the record's payload
(``input_dataset.json``, or the dataset file a large run lists by reference) and the
model's answer (``model_response`` of the item's first ``predictions.jsonl`` line). It is
made of an explicit list of fields, so no judge output can slip in by accident:

``id`` (opaque), ``task_type``, ``prompt``, ``context``, ``messages`` (earlier turns),
``attachments`` (title and text), ``response``, ``references`` (reference answers),
``rubric`` (``id``, ``title``, ``description``, ``weight``), ``required_criteria``
(``id``, ``text``) and ``grade_allowed`` (the item's judge gives a number, so the expert
may give one too).

Never in a view: the record id, the run's ``item_id``, the model's name, the judge's
verdicts, scores, reasons or explanation, the outcome, the policy's threshold.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError, LegalEvalError
from pytest_legaleval.metrics.artifacts import INPUT_DATASET, PREDICTIONS
from pytest_legaleval.metrics.runfiles import iter_jsonl, load_run
from pytest_legaleval.util.paths import PathRefused, confined_path

__all__ = ["ItemSource", "item_view"]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


@dataclass
class ItemSource:
    """A run's records and answers for the sampled items, read once.

    Args:
        run_dir: the run directory (read, never written).
        keys: ``(record_id, model)`` of the sampled items.
        attachments_roots: folders attachments may be read from besides the dataset's.

    """

    run_dir: Path
    keys: Iterable[tuple[str, str]]
    attachments_roots: tuple[Path, ...] = ()
    payloads: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    answers: dict[tuple[str, str], str] = field(default_factory=dict)
    graded: set[tuple[str, str]] = field(default_factory=set)
    dataset_folders: list[Path] = field(default_factory=list)
    _attachments: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        wanted = set(self.keys)
        self.keys = tuple(sorted(wanted))
        run = load_run(self.run_dir, with_predictions=False)
        configured = (run.manifest.get("configuration") or {}).get("attachments_root") or []
        self.attachments_roots += tuple(Path(str(root)) for root in _list(configured))
        for row in iter_jsonl(run.path / PREDICTIONS):
            key = (str(row.get("record_id")), str(row.get("model") or ""))
            if key in wanted and key not in self.answers:
                self.answers[key] = _text(row.get("model_response", row.get("response")))
                score = row.get("score")
                if isinstance(score, int | float) and not isinstance(score, bool):
                    self.graded.add(key)
        self._read_payloads(run.path, {record for record, _ in wanted})
        missing = sorted(record for record, _ in wanted if record not in self.payloads)
        if missing:
            raise ConfigError(
                f"{run.path}: the records of {len(missing)} sampled items are not in the run's "
                f"{INPUT_DATASET} or its dataset files (first: {missing[0]})"
            )

    def _read_payloads(self, run_path: Path, records: set[str]) -> None:
        path = run_path / INPUT_DATASET
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{path}: cannot read the run's records ({exc})") from None
        by_reference = False
        for entry in _list(document.get("records") if isinstance(document, dict) else None):
            if not isinstance(entry, Mapping) or entry.get("record_id") not in records:
                continue
            payload = entry.get("payload")
            if isinstance(payload, Mapping):
                self.payloads[str(entry["record_id"])] = payload
            else:
                by_reference = True
        infos = [i for i in _list(document.get("datasets")) if isinstance(i, Mapping)]
        for info in infos:
            where = Path(_text(info.get("path")))
            for candidate in (where, run_path.parent.parent / where, run_path.parent / where):
                if candidate.is_file():
                    self.dataset_folders.append(candidate.resolve().parent)
                    break
        if by_reference:
            self._from_datasets(infos, records)

    def _from_datasets(self, infos: list[Mapping[str, Any]], records: set[str]) -> None:
        """A run of many records lists them by reference: read them from its datasets."""
        from pytest_legaleval.formats import DatasetStream
        from pytest_legaleval.records import Record
        from pytest_legaleval.run.artifacts import record_payload
        from pytest_legaleval.run.directory import file_sha256

        for info, folder in zip(infos, self.dataset_folders, strict=False):
            where = folder / Path(_text(info.get("path"))).name
            try:
                if file_sha256(where) != info.get("sha256"):
                    continue  # changed since the run: its records may not be the run's
                for entry in DatasetStream([where], _text(info.get("format")) or "auto"):
                    if isinstance(entry, Record) and entry.id in records:
                        self.payloads.setdefault(entry.id, record_payload(entry))
            except (OSError, LegalEvalError, ValueError):
                continue

    def attachment(self, record_id: str, entry: Any) -> dict[str, str]:
        """The title and text of one attachment (read on first view, kept)."""
        name = _text(entry.get("path") if isinstance(entry, Mapping) else entry)
        title = _text(entry.get("title") if isinstance(entry, Mapping) else None) or name
        kind = entry.get("kind") if isinstance(entry, Mapping) else None
        cached = self._attachments.get((record_id, name))
        if cached is not None:
            return cached
        from pytest_legaleval.grading.attachments import read_attachment

        found: dict[str, str] = {"title": title, "text": "", "note": ""}
        for base in self.dataset_folders or [self.run_dir.parent.parent]:
            try:
                path = confined_path(name, base, self.attachments_roots)
            except PathRefused as exc:
                found["note"] = f"not shown: {exc}"
                continue
            if path.is_file():
                read = read_attachment(path, title, kind if isinstance(kind, str) else None)
                found = {"title": title, "text": read.text, "note": "; ".join(read.warnings)}
                break
            found["note"] = "the file is not next to the run's dataset; its text cannot be shown"
        self._attachments[(record_id, name)] = found
        return found


def _weight(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _criteria(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for index, entry in enumerate(_list(payload.get("required_criteria"))):
        if isinstance(entry, Mapping):
            out.append(
                {
                    "id": _text(entry.get("id")) or f"c{index}",
                    "text": _text(
                        entry.get("title") or entry.get("text") or entry.get("description")
                    ),
                }
            )
        else:
            out.append({"id": f"c{index}", "text": _text(entry)})
    return out


def item_view(source: ItemSource, opaque: str, key: tuple[str, str]) -> dict[str, Any]:
    """The blind view of one sampled item (see the module docstring for its fields)."""
    record_id, _ = key
    payload = source.payloads[record_id]
    return {
        "id": opaque,
        "task_type": _text(payload.get("task_type")),
        "prompt": _text(payload.get("prompt")),
        "context": _text(payload.get("context")),
        "messages": [
            {"role": _text(m.get("role")), "content": _text(m.get("content"))}
            for m in _list(payload.get("messages"))
            if isinstance(m, Mapping)
        ],
        "attachments": [
            source.attachment(record_id, entry) for entry in _list(payload.get("attachments"))
        ],
        "response": source.answers.get(key, ""),
        "references": [_text(r) for r in _list(payload.get("reference_answers"))],
        "rubric": [
            {
                "id": _text(c.get("id")),
                "title": _text(c.get("title")),
                "description": _text(c.get("description")),
                "weight": _weight(c.get("weight")),
            }
            for c in _list(payload.get("rubric"))
            if isinstance(c, Mapping)
        ],
        "required_criteria": _criteria(payload),
        "grade_allowed": key in source.graded,
    }
