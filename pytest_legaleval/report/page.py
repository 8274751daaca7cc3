"""The frame every report page shares: head, style, data elements and the script.

A page fetches nothing (a Content-Security-Policy forbids it), so it opens offline, from a
CI artifact or an e-mail attachment. Data travels as JSON in ``<script
type="application/json">`` elements, written so that no text can end the element
(:func:`~pytest_legaleval.report.texts.script_json`); the records' texts travel as escaped,
hidden markup (:mod:`~pytest_legaleval.report.questions`). The script is ``view.js`` (the
item view) followed by the page's own, in one function scope.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from importlib.resources import files
from pathlib import Path
from typing import Any

from pytest_legaleval.metrics.artifacts import (
    FAILURES,
    INPUT_DATASET,
    PREDICTIONS,
    RECORD_VALIDATION,
    TRANSCRIPTS,
    artifacts,
)
from pytest_legaleval.report.data import ORDER, ReportData
from pytest_legaleval.report.texts import script_json

__all__ = ["KEYS_HELP", "LABELS", "document", "e", "payload", "questions_markup", "run_files"]

LABELS = {"failed": "failed", "error": "errors", "invalid": "invalid", "passed": "passed",
          "skipped": "skipped"}  # fmt: skip
"""How the page names each item category (the metrics files' ``*_items`` names)."""
KEYS_HELP = (
    "Keys: j or ↓ opens the next failure (failed, error or invalid item), k or ↑ the "
    "previous one, Esc closes it, / goes to the search box."
)
_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)
_FILES = {
    "predictions": PREDICTIONS,
    "failures": FAILURES,
    "validation": RECORD_VALIDATION,
    "inputs": INPUT_DATASET,
    "transcripts": TRANSCRIPTS,
}
"""The artifact table's files the item view names (``view.js``: "predictions.jsonl line 7"),
by the role the script knows them by."""


def asset(name: str) -> str:
    """A file shipped beside this module (style, scripts)."""
    return (files("pytest_legaleval.report") / name).read_text(encoding="utf-8")


def e(value: Any) -> str:
    """``value`` as escaped HTML text (``None`` as nothing)."""
    return escape("" if value is None else str(value), quote=True)


def payload(data: ReportData, prefix: str = "") -> dict[str, Any]:
    """The JSON one run's item views read (see ``view.js``)."""
    return {
        "categories": list(ORDER),
        "labels": LABELS,
        "models": data.models,
        "records": data.records,
        "datasets": data.datasets,
        "reasons": data.reasons,
        "criteria": data.criteria,
        "judges": data.judges,
        "rows": data.rows,
        "details": data.details,
        "preview": data.preview,
        "threshold": data.threshold,
        "reducer": data.reducer,
        "columns": {"latency": data.has_latency, "warnings": data.has_warnings},
        "files": _FILES,
        "notes": data.notes,
        "transcripts": {
            "present": data.has_transcripts,
            "missing": data.without_transcript,
        },
        "prefix": prefix,
    }


def run_files(run_path: Path) -> str:
    """The run directory's files, as the artifact table names and describes them.

    Every row of the table (registered ones too) that the directory holds, in the table's
    order, each with its description as a tooltip; ``SHA256SUMS`` is not an artifact.
    """
    present = [row for row in artifacts() if (run_path / row.name).is_file()]
    shown = ", ".join(f'<code title="{e(row.description)}">{e(row.name)}</code>' for row in present)
    return f'<dt>files</dt><dd id="run-files">{shown or "none"}</dd>'


def questions_markup(data: ReportData, element_id: str = "questions") -> str:
    """The records' hidden elements, in one hidden container."""
    return f'<div id="{e(element_id)}" class="records-texts" hidden>{"".join(data.questions)}</div>'


def document(
    title: str, body: str, data: Mapping[str, Any], script: str, extra: Sequence[str] = ()
) -> str:
    """The complete page: ``data`` maps element ids to JSON values, ``script`` is the page's."""
    elements = "".join(
        f'<script type="application/json" id="{e(key)}">{script_json(value)}</script>'
        for key, value in data.items()
    )
    code = "(function () {\n" + asset("view.js") + "\n" + asset(script) + "\n}());"
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{asset('report.css')}</style></head><body>"
        f"{body}{''.join(extra)}{elements}<script>{code}</script></body></html>\n"
    )
