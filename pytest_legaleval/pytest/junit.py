"""The JUnit XML's per-record parts: a classname per dataset (and task), the answer as output.

pytest's JUnit writer names every testcase's ``classname`` after its test module, so every
record of every dataset lands in one class, and it writes ``<system-out>`` only from
captured output (and only with ``junit_logging``). pytest offers no public way to set
either per item: ``record_xml_attribute`` is experimental and refused by the default
``xunit2`` family. So once pytest has written the file (the controller's
``pytest_sessionfinish``, after pytest's own), the testcases of record items get

- ``classname`` ``<dataset>`` — ``<dataset>.<task>`` when the record has ``metadata.task``
  (``--junit-prefix`` kept in front) — so CI tools group results by dataset;
- ``<system-out>`` holding the model's answer as the run directory stores it (redacted,
  control characters escaped), cut at :data:`ANSWER_LIMIT` characters, all answers
  together at :data:`TOTAL_LIMIT`; with ``--epochs K`` each epoch's answer, labelled.

Everything is read back from the finished run directory (``predictions.jsonl``,
``failures.jsonl``), one line at a time; the file is replaced atomically.
"""

from __future__ import annotations

import os
import re
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_legaleval.metrics.artifacts import FAILURES, PREDICTIONS
from pytest_legaleval.metrics.runfiles import iter_jsonl
from pytest_legaleval.run.console import printable

__all__ = ["ANSWER_LIMIT", "TOTAL_LIMIT", "junit_address", "rewrite_junit"]

ANSWER_LIMIT = 2000
"""Characters of one answer in ``<system-out>`` (the whole answer is in predictions.jsonl)."""
TOTAL_LIMIT = 20_000_000
"""Characters of answers in one JUnit file; past it, testcases say where the answer is."""


def junit_address(nodeid: str, prefix: str | None = None) -> tuple[str, str]:
    """The ``(classname, name)`` pytest's JUnit writer gives the testcase of ``nodeid``.

    The module path with dots for slashes and without ``.py``, the classes, then the test
    name with its parameters (which may hold slashes); ``--junit-prefix`` first.
    """
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    classes = names[:-1]
    if prefix:
        classes.insert(0, prefix)
    return ".".join(classes), names[-1]


def _classname(row: Mapping[str, Any], prefix: str | None) -> str:
    dataset = row.get("dataset", row.get("dataset_id"))
    metadata = row.get("metadata")
    task = metadata.get("task") if isinstance(metadata, Mapping) else None
    parts = [prefix] if prefix else []
    parts.append(str(dataset) if dataset not in (None, "") else "legaleval")
    if isinstance(task, str | int) and str(task):
        parts.append(str(task))
    return printable(".".join(parts))


def _rows(run: Path) -> Iterator[dict[str, Any]]:
    yield from iter_jsonl(run / PREDICTIONS)
    for row in iter_jsonl(run / FAILURES):
        if row.get("failure_type") == "invalid_record":
            yield row


class _Answers:
    """The ``<system-out>`` text of each testcase, within the file's budget."""

    def __init__(self) -> None:
        self.left = TOTAL_LIMIT
        self.parts: dict[int, list[tuple[Any, str]]] = {}

    def add(self, case: ET.Element, row: Mapping[str, Any]) -> None:
        answer = row.get("model_response")
        if not isinstance(answer, str):
            return
        if self.left <= 0:
            text = f"(the answer is in {PREDICTIONS}: this JUnit file's answer budget is spent)"
        else:
            text = printable(answer, multiline=True, limit=ANSWER_LIMIT)
            if len(answer) > ANSWER_LIMIT:
                text += f" ({len(answer) - ANSWER_LIMIT} more characters in {PREDICTIONS})"
            self.left -= len(text)
        self.parts.setdefault(id(case), []).append((row.get("epoch"), text))

    def write(self, case: ET.Element) -> None:
        parts = self.parts.get(id(case))
        if not parts:
            return
        if len(parts) == 1:
            text = parts[0][1]
        else:  # --epochs K: one answer per epoch
            text = "\n\n".join(f"[epoch {epoch}]\n{answer}" for epoch, answer in parts)
        existing = case.find("system-out")
        if existing is not None:  # junit_logging=system-out: captured output follows
            existing.text = f"{text}\n\n{existing.text or ''}"
            return
        ET.SubElement(case, "system-out").text = text


def rewrite_junit(xml_path: str | Path, run: str | Path, prefix: str | None = None) -> int:
    """Give the record items' testcases of ``xml_path`` their classname and answer.

    Returns:
        How many testcases were changed (0 when the file or the run is missing or the
        file is not XML: pytest's file is then left as it is).

    """
    path = Path(xml_path)
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError):
        return 0
    cases: dict[tuple[str, str], ET.Element] = {}
    for case in tree.getroot().iter("testcase"):
        name = case.get("name")
        if name is not None and name.endswith("]"):
            cases[(case.get("classname", ""), name)] = case
    answers = _Answers()
    changed: dict[int, ET.Element] = {}
    for row in _rows(Path(run)):
        item_id = row.get("item_id")
        if not isinstance(item_id, str):
            continue
        found = cases.get(junit_address(item_id, prefix))
        if found is None:
            continue
        if id(found) not in changed:
            changed[id(found)] = found
            found.set("classname", _classname(row, prefix))
        answers.add(found, row)
    if not changed:
        return 0
    for case in changed.values():
        answers.write(case)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            tree.write(out, encoding="utf-8", xml_declaration=True)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return len(changed)
