"""The HTML report of a run directory: one self-contained file."""

from __future__ import annotations

from pathlib import Path

from pytest_legaleval.metrics.runfiles import load_run
from pytest_legaleval.report.data import MAX_PREVIEW, PAGE_BYTES
from pytest_legaleval.report.html import render_report

__all__ = ["MAX_PREVIEW", "PAGE_BYTES", "render_report", "write_report"]


def write_report(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Render ``run_dir``'s report to ``out`` (default: ``<run_dir>.html`` next to it).

    The default sits beside the run directory, not inside it: a finished run directory is
    write-once (its files are checksummed and read-only). ``predictions.jsonl`` is streamed,
    not loaded, so memory stays small with the run's size.
    """
    run = load_run(run_dir, with_predictions=False)
    source = Path(run_dir).resolve()
    target = Path(out) if out is not None else source.parent / f"{source.name}.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_report(run), encoding="utf-8")
    return target
