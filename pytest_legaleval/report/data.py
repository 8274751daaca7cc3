"""The report's data: a row per item, metrics, and every text as a preview on a budget.

``predictions.jsonl``, ``input_dataset.json`` and ``transcripts.jsonl`` are each read
twice and never held: the first passes classify each item (the metrics' own
:func:`item_category`), reduce an item's epochs to one verdict and measure every text the
page may show (:mod:`~pytest_legaleval.report.items`); the second passes cut the texts to
the one preview length that keeps the page within its byte budget
(:mod:`~pytest_legaleval.report.budget`). The full texts stay in the run directory; each
item names its line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_legaleval.metrics._artifacts import PREDICTIONS, TRANSCRIPTS
from pytest_legaleval.metrics._counts import counts_of, is_item_block
from pytest_legaleval.metrics._runfiles import (
    RunData,
    invalid_items,
    prediction_lines,
    run_reducer,
    slice_entries,
)
from pytest_legaleval.metrics._slices import SliceAccumulator
from pytest_legaleval.metrics._stats import BOOTSTRAP_SEED
from pytest_legaleval.metrics._summary import MetricsAccumulator
from pytest_legaleval.report.budget import MAX_PREVIEW, MAX_TITLE, fit_preview, other_cap, title_cap
from pytest_legaleval.report.inputs import InputRecords, record_texts
from pytest_legaleval.report.items import CAT, LAT, ORDER, SCORE, URGENT, ItemPass, M, Q, R
from pytest_legaleval.report.questions import record_markup, record_structure
from pytest_legaleval.report.texts import NO_TEXTS, Tables, cut, cut_texts, item_texts, script_json
from pytest_legaleval.report.transcripts import TranscriptIndex

__all__ = ["MAX_PREVIEW", "ORDER", "PAGE_BYTES", "ReportData", "collect"]

PAGE_BYTES = 9_500_000
"""What the whole page may weigh; previews shrink to fit (issue: < 10 MB at 50,000 items)."""
_PAGE_OVERHEAD = 250_000
"""Bytes of the page besides rows and previews: markup, style, script, slices, charts."""
_TRANSCRIPT_SHARE = 4
"""Transcripts get at most 1/4 of the page's room for texts (a transcript mostly repeats
what the item view shows; the full exchange is in ``transcripts.jsonl``)."""


@dataclass
class ReportData:
    """Everything the page shows of one run, computed in one place."""

    summary: dict[str, Any]
    slices: dict[str, Any]
    models: list[str]
    records: list[str]
    datasets: list[str]
    reasons: list[str]
    criteria: list[list[Any]]
    judges: list[str]
    rows: list[list[Any]]
    """Per item, in ``details``' order: record, dataset, model (indexes into their tables),
    category (index into :data:`ORDER`), score, reason (index), latency ms, attachment
    warnings, line (in ``predictions.jsonl``; negative: in ``failures.jsonl``; 0: an invalid
    record known from ``record_validation.jsonl`` only), record element (index)."""
    details: list[dict[str, Any]]
    questions: list[str]
    """Each record's element (escaped HTML, see :mod:`~pytest_legaleval.report.questions`),
    empty when the run directory does not have the record."""
    preview: int
    """Characters of a failure's texts shown (a quarter for passed and skipped items)."""
    threshold: float | None
    """The pass threshold of most items; a detail's ``t`` says where it differs (``null``:
    the item has none)."""
    scores: list[float]
    latencies: list[float]
    notes: dict[str, str] = field(default_factory=dict)
    """Why some texts are missing: ``questions``, ``transcripts``."""
    has_transcripts: bool = False
    without_transcript: list[int] = field(default_factory=list)
    """The rows no line of ``transcripts.jsonl`` belongs to (when the file exists)."""
    has_epochs: bool = False
    reducer: str = "mean"
    """The run's ``--epoch-reducer`` (what reduced each item's epochs)."""

    @property
    def has_latency(self) -> bool:
        """Whether any item has a latency (pre-computed responses have none)."""
        return bool(self.latencies)

    @property
    def has_warnings(self) -> bool:
        """Whether any item has an attachment warning."""
        return bool(self.summary.get("attachment_warning_items"))

    @property
    def has_scores(self) -> bool:
        """Whether any graded item has a score."""
        return bool(self.scores)


def _utf8_size(value: Any) -> int:
    return len(script_json(value).encode("utf-8"))


def _invalid_key(item: Mapping[str, Any]) -> tuple[str, str, Any]:
    dataset = "" if item.get("dataset") is None else str(item.get("dataset"))
    return ("invalid", dataset, item.get("index", item.get("record_id")))


def _slices_of(
    run: RunData, invalid: list[dict[str, Any]], seed: int, first: ItemPass
) -> dict[str, Any]:
    """``metrics_by_slice.json`` recomputed from the items (old vocabulary, or it disagrees)."""
    dims = (run.slices or {}).get("dimensions") if isinstance(run.slices, Mapping) else None
    keys = [d for d in dims or () if isinstance(d, str) and d.startswith("metadata.")]
    acc = SliceAccumulator(keys)  # its own record numbers: a third pass, after the summary
    for number, row in enumerate(prediction_lines(run.path / PREDICTIONS), 1):
        at = first.shown.get(number)
        if at is not None:
            line = first.verdict_line(at, row)
            acc.add(line, tags=row.get("tags") or (), metadata=row.get("metadata") or {})
    for item in invalid:
        acc.add_invalid(dataset=str(item.get("dataset") or ""), model=str(item.get("model") or ""),
                        key=_invalid_key(item))  # fmt: skip
    return acc.to_dict(seed=seed)


def _same_counts(written: Mapping[str, Any] | None, here: Mapping[str, Any]) -> bool:
    return (
        bool(written)
        and is_item_block(written or {})
        and counts_of(written or {}) == counts_of(here)
    )


@dataclass
class _Sources:
    """The run's files besides ``predictions.jsonl``, with what their first passes found."""

    inputs: InputRecords
    transcripts: TranscriptIndex
    rubrics: dict[int, dict[str, tuple[str, float | None]]] = field(default_factory=dict)
    """Per record element: its rubric, criterion id -> (title, weight)."""
    without: list[int] = field(default_factory=list)
    """The rows no transcript line belongs to (when the run has transcripts)."""


def _scan_inputs(first: ItemPass, sources: _Sources) -> None:
    """First pass over the records: their texts' lengths and their rubrics' titles."""
    urgent = first.urgent_questions()
    seen: set[int] = set()
    for dataset, record_id, payload in sources.inputs:
        q = first.questions.find((dataset, record_id))
        if q is None or q in seen:
            continue
        seen.add(q)
        texts = record_texts(payload)
        kind = "urgent" if urgent[q] else "other"
        first.budget.add_all(kind, (len(t) for t in texts.free_texts()))
        first.structure += record_structure(texts)
        if texts.rubric:
            sources.rubrics[q] = {cid: (title[:MAX_TITLE], w) for cid, title, w in texts.rubric}
            for _, title, weight in texts.rubric:
                first.count_title(title, weight)


def _scan_transcripts(first: ItemPass, sources: _Sources) -> None:
    index = sources.transcripts
    if not index.present:
        return
    records, models = first.tables.records.values, first.tables.models.values
    for row, (item_id, epoch) in enumerate(first.item_ids):
        index.by_item.setdefault((item_id, epoch), row)
        values = first.rows[row]
        index.by_record.setdefault((records[values[R]], models[values[M]], epoch), row)
    index.scan(first.responses)


def collect(run: RunData, page_bytes: int = PAGE_BYTES, prefix: str = "") -> ReportData:
    """Read the run's items, records and transcripts (twice, streaming) into the page's data.

    The summary is recomputed from the items (one verdict per item); the slices are
    ``metrics_by_slice.json``'s when the run wrote them in this vocabulary and its summary
    counts what the items say, and are recomputed otherwise (a third pass), so the page
    never shows two counts. ``prefix`` starts the ids of the records' elements (two runs
    share one page).
    """
    path = run.path / PREDICTIONS
    first = ItemPass(reducer=run_reducer(run))
    for model in run.manifest.get("models") or []:
        first.tables.models(model)
    for line, row in enumerate(prediction_lines(path), 1):
        first.item(row, line)
    first.reduce()
    invalid = invalid_items(run, {item for item, _ in first.item_ids})
    for item in invalid:
        first.invalid(item)
    sources = _Sources(InputRecords(run.path), TranscriptIndex(run.path / TRANSCRIPTS))
    _scan_inputs(first, sources)
    _scan_transcripts(first, sources)
    # Rows, page and the structure first; the previews get what is left. Texts grow when
    # escaped (quotes, newlines, markup) and non-ASCII letters take two bytes: checked
    # after the fact, and cut again in the rare case that was not enough.
    if sources.transcripts.present:
        sources.without = sources.transcripts.missing(len(first.rows))
    rows_size = _utf8_size(first.rows) + _utf8_size(sources.without)
    room = max(page_bytes - rows_size - _PAGE_OVERHEAD - first.structure, 0) * 10 // 11
    if sources.transcripts.present:
        share = room // _TRANSCRIPT_SHARE
        room -= sources.transcripts.select(share, first.urgent_rows(), first.budget)
    first.budget.freeze()
    for _ in range(3):
        preview = fit_preview(first.budget, room)
        page = _Page(preview, Tables(), MetricsAccumulator())
        _details(path, first, sources, page)
        _questions(first, sources, page, prefix)
        _attach_transcripts(first, sources, page)
        size = rows_size + _utf8_size(page.details) + _utf8_size(page.tables.criteria.values)
        spare = page_bytes - _PAGE_OVERHEAD - size - sum(len(q.encode()) for q in page.questions)
        if spare >= 0 or preview == 0:
            break
        room = max(room + spare * 11 // 10, 0)
    for item in invalid:
        page.summary.add_invalid(_invalid_key(item))
    return _result(run, first, sources, invalid, page)


@dataclass
class _Page:
    """The second passes' output at one preview length."""

    preview: int
    tables: Tables
    summary: MetricsAccumulator
    details: list[dict[str, Any]] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    threshold: float | None = None


def _details(path: Path, first: ItemPass, sources: _Sources, page: _Page) -> None:
    """Second pass: each item's texts cut to its preview length, in row order."""
    preview, title = page.preview, title_cap(page.preview)
    details: list[dict[str, Any]] = [{} for _ in first.rows]
    for number, line in enumerate(prediction_lines(path), 1):
        at = first.shown.get(number)
        if at is None:
            continue  # another epoch of an item: its verdict is in the item's "ep"
        page.summary.add(first.verdict_line(at, line))
        row = first.rows[at]
        urgent = ORDER[row[CAT]] in URGENT
        texts = item_texts(line, sources.rubrics.get(row[Q]))
        cap = preview if urgent else other_cap(preview)
        detail = cut_texts(texts, cap, page.tables, urgent=urgent, title=title)
        if first.epochs[at]:
            detail["ep"] = first.epochs[at]
        details[at] = detail
    page.threshold = _common_threshold(details)
    start = len(first.rows) - len(first.invalid_texts)
    for offset, message in enumerate(first.invalid_texts):
        texts = {**NO_TEXTS, "explanation": message}
        details[start + offset] = cut_texts(texts, preview, page.tables, title=title)
    page.details = details


def _common_threshold(details: list[dict[str, Any]]) -> float | None:
    """The threshold most items share, written once: ``t`` stays only where it differs."""
    counts = Counter(d.get("t") for d in details if isinstance(d.get("t"), int | float))
    if not counts:
        return None
    common = counts.most_common(1)[0][0]
    for detail in details:
        if detail.get("t") == common:
            del detail["t"]
        elif "t" not in detail:
            detail["t"] = None
    return common


def _questions(first: ItemPass, sources: _Sources, page: _Page, prefix: str) -> None:
    """Second pass over the records: each one's element, its texts cut."""
    out = [""] * len(first.questions.values)
    urgent = first.urgent_questions()
    title = title_cap(page.preview)
    for dataset, record_id, payload in sources.inputs:
        q = first.questions.find((dataset, record_id))
        if q is None or out[q]:
            continue
        texts = record_texts(payload)
        cap = page.preview if urgent[q] else other_cap(page.preview)
        rubric = [page.tables.criteria((cut(t, title), w)) for _, t, w in texts.rubric]
        out[q] = record_markup(texts, f"{prefix}q{q}", cap, rubric)
    page.questions = out


def _attach_transcripts(first: ItemPass, sources: _Sources, page: _Page) -> None:
    if not sources.transcripts.present:
        return
    title = title_cap(page.preview)
    labels_of: dict[int, dict[str, str]] = {
        q: {cid: cut(t, title) for cid, (t, _) in rubric.items()}
        for q, rubric in sources.rubrics.items()
    }
    labels = [labels_of.get(row[Q], {}) for row in first.rows]
    found = sources.transcripts.previews(page.preview, first.urgent_rows(), first.responses, labels)
    for at, transcript in found.items():
        page.details[at]["x"] = transcript


def _result(
    run: RunData, first: ItemPass, sources: _Sources, invalid: list[dict[str, Any]],
    page: _Page,
) -> ReportData:  # fmt: skip
    bootstrap = (run.summary or {}).get("bootstrap") or {}
    found_seed = bootstrap.get("seed")
    seed = found_seed if isinstance(found_seed, int) else BOOTSTRAP_SEED
    summary = page.summary.to_dict(seed=seed)
    written = run.slices if isinstance(run.slices, Mapping) else None
    slices_ok = (
        written is not None
        and _same_counts(run.summary, summary)
        and all(is_item_block(block) for _, _, block in slice_entries(written))
    )
    notes = {}
    if sources.inputs.note:
        notes["questions"] = sources.inputs.note
    if not sources.transcripts.present:
        notes["transcripts"] = f"this run directory has no {TRANSCRIPTS}"
    elif sources.transcripts.note:
        notes["transcripts"] = sources.transcripts.note
    tables = first.tables
    graded = ("passed", "failed")
    return ReportData(
        summary=summary,
        slices=dict(written)
        if slices_ok and written is not None
        else _slices_of(run, invalid, seed, first),
        models=tables.models.values,
        records=tables.records.values,
        datasets=tables.datasets.values,
        reasons=tables.reasons.values,
        criteria=page.tables.criteria.values,
        judges=page.tables.judges.values,
        rows=first.rows,
        details=page.details,
        questions=page.questions,
        preview=page.preview,
        threshold=page.threshold,
        scores=[r[SCORE] for r in first.rows if ORDER[r[CAT]] in graded and r[SCORE] is not None],
        latencies=[float(r[LAT]) for r in first.rows if r[LAT] is not None],
        notes=notes,
        has_transcripts=sources.transcripts.present,
        without_transcript=sources.without,
        has_epochs=any(first.epochs),
        reducer=first.reducer,
    )
