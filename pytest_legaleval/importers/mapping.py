"""Conversion mappings: which source fields become which ``legal_eval_v1`` fields.

A mapping is YAML. Its top level names the ``dataset`` and either holds one layout's keys
or a ``layouts`` list, each layout with a ``match`` glob on the input path (``*`` by
default; the first layout that matches an input converts it). A layout's keys:

- ``task_type``: ``mcq``, ``reference_qa`` or ``rubric_qa`` (a value, see below).
- ``id``: ``{hash: [fields], prefix: "x:"}`` (a SHA-256 of the named fields' values, so
  the id never changes for the same row) or any value (``{template: "lexam:{id}"}``).
- ``prompt`` (required), ``context``: values.
- ``choices``: ``{fixed: [texts]}``, ``{fields: [columns]}`` (empty cells skipped) or
  ``{field: column}`` holding a JSON or Python list literal; ids are ``A``, ``B`` … ``Z``,
  then ``CHOICE_26`` …
- ``correct``: ``{field: column, by: letter | index0 | index1 | text, separator: ","}``.
- ``references``: a value or a list of values (one reference answer each; an optional
  ``separator`` splits one cell into several).
- ``rubric``: ``{field: column}`` holding a JSON list of criteria, or of strings.
- ``metadata``: ``{key: value}``.
- ``strip``: trim blanks around every string cell (default false).

A *value* is a field name (a plain string), ``{field: name}``, ``{value: constant}`` or
``{template: "text {field} {_row:04d}"}``. Templates see every field of the row and
``_row`` (the row's zero-based position in its file), ``_file`` (the file name) and
``_n_choices``; they allow format specs but no attribute or index access.
"""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import json
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers.base import RowError, choice_id
from pytest_legaleval.util.safe_yaml import load_yaml

__all__ = ["ConversionMapping", "Layout", "RowError", "load_mapping"]

_LAYOUT_KEYS = frozenset(
    {"match", "dataset", "task_type", "id", "prompt", "context", "choices", "correct",
     "references", "rubric", "metadata", "strip", "sheet", "records_key"}
)  # fmt: skip
_TOP_KEYS = _LAYOUT_KEYS | {"layouts"}


class _SafeFormatter(string.Formatter):
    def get_field(self, field_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if "." in field_name or "[" in field_name:
            raise RowError(
                f"template field {{{field_name}}}: attribute and index access is not allowed"
            )
        if field_name not in kwargs:
            raise RowError(f"template names field {field_name!r}, which the row does not have")
        return kwargs[field_name], field_name


_FORMATTER = _SafeFormatter()


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else str(value)


def _check_value(spec: object, where: str) -> None:
    if isinstance(spec, str):
        return
    if isinstance(spec, dict) and len(spec.keys() & {"field", "value", "template"}) == 1:
        return
    raise ConfigError(
        f"mapping {where}: expected a field name, {{field: …}}, {{value: …}} or "
        f"{{template: …}}, got {spec!r}"
    )


@dataclass(frozen=True)
class Layout:
    """One source layout of a mapping."""

    spec: Mapping[str, Any]
    dataset: str

    @property
    def match(self) -> str:
        """The glob this layout converts (on the input's POSIX path)."""
        return str(self.spec.get("match", "*"))

    def value(self, spec: object, row: Mapping[str, Any]) -> Any:
        """Evaluate a value spec against a row (with its ``_row``/``_file`` variables)."""
        if isinstance(spec, str):
            spec = {"field": spec}
        assert isinstance(spec, dict)
        if "value" in spec:
            return spec["value"]
        if "template" in spec:
            return _FORMATTER.vformat(str(spec["template"]), (), row)
        name = spec["field"]
        if name not in row:
            raise RowError(f"the row has no field {name!r}")
        return row[name]

    def _choices(self, row: Mapping[str, Any]) -> list[str]:
        spec = self.spec.get("choices")
        if spec is None:
            return []
        if "fixed" in spec:
            return [str(text) for text in spec["fixed"]]
        if "fields" in spec:
            return [_text(row[f]) for f in spec["fields"] if f in row and _text(row[f]) != ""]
        raw = self.value({"field": spec["field"]}, row)
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except ValueError:
                try:
                    raw = ast.literal_eval(raw)
                except (ValueError, SyntaxError):
                    raise RowError(f"choices field {spec['field']!r} is not a list") from None
        if not isinstance(raw, list | tuple):
            raise RowError(f"choices field {spec['field']!r} is not a list")
        return [_text(item) for item in raw]

    def _correct(self, row: Mapping[str, Any], choices: list[str]) -> list[str]:
        spec = self.spec["correct"]
        raw = self.value({"field": spec["field"]}, row)
        separator = spec.get("separator")
        parts = [raw] if separator is None or not isinstance(raw, str) else raw.split(separator)
        by = spec.get("by", "letter")
        ids = []
        for part in parts:
            text = _text(part).strip()
            if by == "letter":
                ids.append(text.upper())
            elif by in ("index0", "index1"):
                try:
                    position = int(text) - (by == "index1")
                except ValueError:
                    raise RowError(f"correct answer {text!r} is not a number") from None
                if not 0 <= position < len(choices):
                    raise RowError(f"correct answer index {text} is out of range")
                ids.append(choice_id(position))
            elif text in choices:
                ids.append(choice_id(choices.index(text)))
            else:
                raise RowError(f"correct answer {text!r} is none of the choices")
        return ids

    def _references(self, row: Mapping[str, Any]) -> list[str]:
        spec = self.spec.get("references")
        specs = spec if isinstance(spec, list) else [spec]
        answers: list[str] = []
        for item in specs:
            value = self.value(item, row)
            separator = item.get("separator") if isinstance(item, dict) else None
            values = value if isinstance(value, list) else [value]
            for one in values:
                text = _text(one)
                answers.extend(text.split(separator) if separator else [text])
        return [a for a in answers if a != ""]

    def _rubric(self, row: Mapping[str, Any]) -> list[dict[str, Any]]:
        raw = self.value(self.spec["rubric"], row)
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except ValueError:
                raise RowError("rubric field is not a JSON list") from None
        if not isinstance(raw, list):
            raise RowError("rubric field is not a list")
        return [
            item if isinstance(item, dict) else {"id": f"c{i}", "title": _text(item)}
            for i, item in enumerate(raw, start=1)
        ]

    def _id(self, row: Mapping[str, Any]) -> str:
        spec = self.spec["id"]
        if isinstance(spec, dict) and "hash" in spec:
            missing = [f for f in spec["hash"] if f not in row]
            if missing:
                raise RowError(f"id fields missing from the row: {', '.join(missing)}")
            key = json.dumps([row[f] for f in spec["hash"]], ensure_ascii=False, sort_keys=True)
            digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            return f"{spec.get('prefix', '')}{digest}"
        return _text(self.value(spec, row))

    def convert(self, source: Mapping[str, Any], position: int, file: Path) -> dict[str, Any]:
        """Turn one source row into a ``legal_eval_v1`` row (validated by the caller).

        Raises:
            RowError: a field the mapping names is missing or unusable.

        """
        cells = {
            k: v.strip() if self.spec.get("strip") and isinstance(v, str) else v
            for k, v in source.items()
        }
        row = {**cells, "_row": position, "_file": file.name, "_dataset": self.dataset}
        choices = self._choices(row)
        row["_n_choices"] = len(choices)
        task_type = _text(self.value(self.spec.get("task_type", {"value": "reference_qa"}), row))
        out: dict[str, Any] = {
            "schema_version": "legal_eval_v1",
            "id": self._id(row),
            "dataset": self.dataset,
            "task_type": task_type,
            "prompt": _text(self.value(self.spec["prompt"], row)),
        }
        if "context" in self.spec:
            context = _text(self.value(self.spec["context"], row))
            if context:
                out["context"] = context
        if task_type == "mcq":
            out["choices"] = [{"id": choice_id(i), "text": t} for i, t in enumerate(choices)]
            out["correct_choice_ids"] = self._correct(row, choices)
        if "rubric" in self.spec and task_type == "rubric_qa":
            out["rubric"] = self._rubric(row)
        if "references" in self.spec and task_type != "mcq":
            out["reference_answers"] = self._references(row)
        metadata = {
            key: self.value(spec, row) for key, spec in self.spec.get("metadata", {}).items()
        }
        if metadata:
            out["metadata"] = metadata
        return out


@dataclass(frozen=True)
class ConversionMapping:
    """A loaded mapping file: its layouts in order."""

    path: Path
    layouts: tuple[Layout, ...]

    def layout_for(self, file: Path) -> Layout:
        """The first layout whose ``match`` glob fits ``file``.

        Raises:
            ConfigError: none does.

        """
        text = file.as_posix()
        for layout in self.layouts:
            if fnmatch.fnmatchcase(text, layout.match) or fnmatch.fnmatchcase(
                file.name, layout.match
            ):
                return layout
        globs = ", ".join(layout.match for layout in self.layouts)
        raise ConfigError(f"no layout of {self.path} matches input {file} (match globs: {globs})")


def _layout(spec: object, dataset: object, where: str) -> Layout:
    if not isinstance(spec, dict):
        raise ConfigError(f"mapping {where}: a layout must be a mapping")
    unknown = sorted(set(spec) - _LAYOUT_KEYS)
    if unknown:
        raise ConfigError(f"mapping {where}: unknown key(s) {', '.join(unknown)}")
    name = spec.get("dataset", dataset)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"mapping {where}: 'dataset' (a non-empty string) is required")
    for key in ("id", "prompt"):
        if key not in spec:
            raise ConfigError(f"mapping {where}: '{key}' is required")
    if not (isinstance(spec["id"], dict) and "hash" in spec["id"]):
        _check_value(spec["id"], f"{where}.id")
    for key in ("prompt", "context", "task_type"):
        if key in spec:
            _check_value(spec[key], f"{where}.{key}")
    for key, value in (spec.get("metadata") or {}).items():
        _check_value(value, f"{where}.metadata.{key}")
    if "choices" in spec and not (
        isinstance(spec["choices"], dict)
        and len(spec["choices"].keys() & {"fixed", "fields", "field"}) == 1
    ):
        raise ConfigError(f"mapping {where}.choices: give exactly one of fixed, fields, field")
    correct = spec.get("correct")
    if correct is not None and (not isinstance(correct, dict) or "field" not in correct):
        raise ConfigError(f"mapping {where}.correct: expected {{field: …, by: …}}")
    if correct is not None and correct.get("by", "letter") not in (
        "letter",
        "index0",
        "index1",
        "text",
    ):
        raise ConfigError(f"mapping {where}.correct.by: use letter, index0, index1 or text")
    return Layout(spec, name)


def load_mapping(path: Path) -> ConversionMapping:
    """Read and check a mapping YAML file.

    Raises:
        ConfigError: missing, not YAML, or not a valid mapping (the message names the key).

    """
    if not path.is_file():
        raise ConfigError(f"--map {path}: no such file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"mapping {path} is not valid YAML: {exc}") from None
    # The one YAML loader: alias bombs and .nan/.inf are refused like in every other file.
    data = load_yaml(text, source=f"mapping {path}")
    if not isinstance(data, dict):
        raise ConfigError(f"mapping {path}: expected a mapping at the top level")
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise ConfigError(f"mapping {path}: unknown key(s) {', '.join(unknown)}")
    if "layouts" in data:
        if not isinstance(data["layouts"], list) or not data["layouts"]:
            raise ConfigError(f"mapping {path}: 'layouts' must be a non-empty list")
        shared = {k: v for k, v in data.items() if k != "layouts"}
        layouts = tuple(
            _layout({**shared, **item} if isinstance(item, dict) else item, data.get("dataset"),
                    f"{path.name} layouts[{i}]")
            for i, item in enumerate(data["layouts"])
        )  # fmt: skip
    else:
        layouts = (_layout(data, data.get("dataset"), path.name),)
    return ConversionMapping(path, layouts)
