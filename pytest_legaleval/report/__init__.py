"""The HTML report of a run directory, or of two side by side: one self-contained file.

Main names: :func:`write_report` (one run), :func:`write_comparison` (run B against run
A), :func:`render_report`, :func:`render_comparison`. A pure package: it reads finished run
directories and never imports pytest.
"""

from __future__ import annotations

from pathlib import Path

from pytest_legaleval.metrics._runfiles import load_run
from pytest_legaleval.report.budget import MAX_PREVIEW
from pytest_legaleval.report.compare import render_comparison
from pytest_legaleval.report.data import PAGE_BYTES
from pytest_legaleval.report.epochs import reduce_epochs
from pytest_legaleval.report.html import render_report

__all__ = [
    "MAX_PREVIEW",
    "PAGE_BYTES",
    "reduce_epochs",
    "render_comparison",
    "render_report",
    "write_comparison",
    "write_report",
]


def write_report(
    run_dir: str | Path, out: str | Path | None = None, *, human_labels: str | Path | None = None
) -> Path:
    """Render ``run_dir``'s report to ``out`` (default: ``<run_dir>.html`` next to it).

    The default sits beside the run directory, not inside it: a finished run directory is
    write-once (its files are checksummed and read-only). ``predictions.jsonl`` is streamed,
    not loaded, so memory stays small with the run's size. ``human_labels`` (a label file or
    a directory of them, as ``--human-labels`` takes) adds the judge calibration view's
    confusion tables and disagreeing items; without it the run's own label file is used
    when it is still there.

    Raises:
        ConfigError: not a run directory, or ``human_labels`` that cannot be read.

    """
    run = load_run(run_dir, with_predictions=False)
    source = Path(run_dir).resolve()
    target = Path(out) if out is not None else source.parent / f"{source.name}.html"
    page = render_report(run, human_labels)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page, encoding="utf-8")
    return target


def write_comparison(run_a: str | Path, run_b: str | Path, out: str | Path | None = None) -> Path:
    """Render run B against run A to ``out`` (default: ``<B>-vs-<A>.html`` beside run B).

    Raises:
        ConfigError: a path that is not a run directory, or runs that cannot be paired.

    """
    runs = load_run(run_a, with_predictions=False), load_run(run_b, with_predictions=False)
    first, second = Path(run_a).resolve(), Path(run_b).resolve()
    default = second.parent / f"{second.name}-vs-{first.name}.html"
    target = Path(out) if out is not None else default
    page = render_comparison(*runs)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page, encoding="utf-8")
    return target
