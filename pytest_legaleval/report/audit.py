"""The judge audit the report shows: the run's ``judge_audit``, or one against human labels.

With human labels at hand — ``legaleval report RUN_DIR --human-labels FILE``, or the file
the run itself was given (``run_manifest.json`` ``configuration.human_labels``) when it is
still there — the audit is computed as ``legaleval audit`` computes it
(:func:`~pytest_legaleval.metrics._audit_items.collect_items`, :func:`~pytest_legaleval.
metrics._audit_items.match_labels`, :func:`~pytest_legaleval.metrics._audit.audit_from_items`
with the run's bootstrap seed), with the calibration view's confusion tables and
disagreeing items (:func:`~pytest_legaleval.metrics._calibration.calibration_view`). Without
labels, the page shows the run's ``judge_audit`` as written and says what the labels would
add.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._artifacts import METRICS_SUMMARY, PREDICTIONS, RUN_MANIFEST
from pytest_legaleval.metrics._runfiles import RunData, prediction_lines, run_reducer, slice_entries
from pytest_legaleval.report.inputs import InputRecords, record_texts

__all__ = [
    "MAX_DISAGREEMENTS",
    "TITLE_CHARS",
    "AuditView",
    "LabelsSource",
    "audit_view",
    "find_labels",
]

MAX_DISAGREEMENTS = 200
"""Disagreeing items and criteria the page lists (the worst first)."""
TITLE_CHARS = 160
"""A criterion's title is cut to this many characters in the calibration view."""
_OPTION = "given to this report (--human-labels)"
_RUN = f"the run's own --human-labels ({RUN_MANIFEST}), read again"


@dataclass(frozen=True, slots=True)
class LabelsSource:
    """Where the human labels come from, if anywhere."""

    path: Path | None
    """The label file or directory to read; ``None``: none at hand."""
    origin: str = ""
    """How it was named (:data:`_OPTION` or :data:`_RUN`)."""
    note: str = ""
    """Why there are none (the run named a file that is gone), or empty."""


@dataclass
class AuditView:
    """What the calibration section shows."""

    block: Mapping[str, Any]
    """The pooled ``judge_audit`` block (``JudgeAudit.summary_block()`` shape)."""
    by_model: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    by_policy: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    calibration: dict[str, Any] | None = None
    """``calibration_view``'s data; ``None`` without labels."""
    labels: LabelsSource = field(default_factory=lambda: LabelsSource(None))
    notes: list[str] = field(default_factory=list)
    titles: dict[str, str] = field(default_factory=dict)
    """Criterion id -> title (ids whose records all give one title)."""
    record_titles: dict[tuple[str, str], str] = field(default_factory=dict)
    """(record id, criterion id) -> title, for the disagreeing criteria."""


def _launch_dir(run: RunData) -> Path | None:
    """The directory the run was started in, when its ``run_dir`` was relative."""
    configuration = run.manifest.get("configuration")
    run_dir = configuration.get("run_dir") if isinstance(configuration, Mapping) else None
    if not isinstance(run_dir, str) or not run_dir or Path(run_dir).is_absolute():
        return None
    parts = Path(run_dir).parts
    parent = run.path.resolve().parent
    if parent.parts[-len(parts) :] != parts:
        return None
    return Path(*parent.parts[: -len(parts)]) if len(parent.parts) > len(parts) else None


def find_labels(run: RunData, explicit: str | Path | None) -> LabelsSource:
    """The labels to audit with: ``explicit``, else the run's own file if it is still there.

    A relative path in the manifest is tried from the directory the run was started in,
    then from the current one.
    """
    if explicit is not None:
        return LabelsSource(Path(explicit), _OPTION)
    configuration = run.manifest.get("configuration")
    named = configuration.get("human_labels") if isinstance(configuration, Mapping) else None
    if not isinstance(named, str) or not named:
        return LabelsSource(None)
    candidates = [Path(named)]
    launch = _launch_dir(run)
    if not Path(named).is_absolute() and launch is not None:
        candidates.insert(0, launch / named)
    for candidate in candidates:
        if candidate.exists():
            return LabelsSource(candidate, _RUN)
    return LabelsSource(
        None,
        note=f"the run was given the human labels {named}, which are not there any more: "
        "pass --human-labels FILE to legaleval report for the confusion tables per policy "
        "and criterion and the disagreeing items",
    )


def _slice_audits(run: RunData, dimension: str) -> dict[str, Mapping[str, Any]]:
    found: dict[str, Mapping[str, Any]] = {}
    if not isinstance(run.slices, Mapping):
        return found
    for name, value, block in slice_entries(run.slices):
        if name == dimension and isinstance(block.get("judge_audit"), Mapping):
            found[str(value)] = block["judge_audit"]
    return found


def _settings(run: RunData) -> Any:
    from pytest_legaleval.metrics._audit import AuditSettings

    defaults = AuditSettings()
    written = (run.summary or {}).get("judge_audit")
    bootstrap = written.get("bootstrap") if isinstance(written, Mapping) else None
    if not isinstance(bootstrap, Mapping):
        bootstrap = (run.summary or {}).get("bootstrap")
    bootstrap = bootstrap if isinstance(bootstrap, Mapping) else {}
    seed, resamples = bootstrap.get("seed"), bootstrap.get("resamples")
    return AuditSettings(
        seed=seed if type(seed) is int else defaults.seed,
        resamples=resamples if type(resamples) is int and resamples > 0 else defaults.resamples,
    )


def _ppi(block: Mapping[str, Any]) -> Any:
    ppi = block.get("ppi_pass_rate")
    return ppi.get("estimate") if isinstance(ppi, Mapping) else None


def _differs(written: Mapping[str, Any], computed: Mapping[str, Any]) -> str:
    keys = ("labelled", "unlabelled", "cohen_kappa")
    changed = [k for k in keys if written.get(k) != computed.get(k)]
    if _ppi(written) != _ppi(computed):
        changed.append("ppi_pass_rate")
    if not changed:
        return ""
    said = ", ".join(f"{k} {written.get(k) if k != 'ppi_pass_rate' else _ppi(written)}"
                     for k in changed)  # fmt: skip
    return (
        f"{METRICS_SUMMARY}'s judge_audit differs ({said}): it was computed with the labels "
        "the run was given; this section is computed against the labels named above"
    )


def _with_labels(run: RunData, source: LabelsSource) -> AuditView:
    from pytest_legaleval.metrics._audit import audit_from_items
    from pytest_legaleval.metrics._audit_items import collect_items, epoch_reducer, match_labels
    from pytest_legaleval.metrics._calibration import calibration_view
    from pytest_legaleval.metrics._human_labels import read_human_labels

    assert source.path is not None
    labels = read_human_labels(source.path)
    items = collect_items(
        prediction_lines(run.path / PREDICTIONS), epoch_reducer(run_reducer(run))
    )
    matched = match_labels(labels, items)
    audit = audit_from_items(
        items, matched, _settings(run), labels=labels, sample=labels.sample, run_id=run.run_id
    )
    view = AuditView(
        block=audit.summary_block(),
        by_model=dict(audit.by_model),
        by_policy=dict(audit.by_policy),
        calibration=calibration_view(items, matched, limit=MAX_DISAGREEMENTS),
        labels=source,
    )
    written = (run.summary or {}).get("judge_audit")
    if isinstance(written, Mapping):
        differs = _differs(written, view.block)
        if differs:
            view.notes.append(differs)
    if not items.verdicts:
        view.notes.append("no item of this run was graded by a judge with a verdict")
    _titles(run, view)
    return view


def audit_view(run: RunData, explicit: str | Path | None = None) -> AuditView | None:
    """The section's data; ``None`` when the run has no audit and no labels are at hand.

    Raises:
        ConfigError: ``explicit`` labels that cannot be read (the run's own file, when it
            cannot be read, is a note instead).

    """
    source = find_labels(run, explicit)
    written = (run.summary or {}).get("judge_audit")
    if source.path is not None:
        try:
            return _with_labels(run, source)
        except (ConfigError, OSError) as exc:
            if explicit is not None and isinstance(exc, ConfigError):
                raise
            if explicit is not None:
                raise ConfigError(f"--human-labels {explicit}: cannot read it ({exc})") from None
            source = LabelsSource(None, note=f"the run's human labels cannot be read: {exc}")
    if not isinstance(written, Mapping):
        return None
    view = AuditView(
        block=written,
        by_model=_slice_audits(run, "model"),
        by_policy=_slice_audits(run, "policy"),
        labels=source,
    )
    view.notes.append(
        source.note
        or f"the run's human labels are not named in {RUN_MANIFEST}: pass --human-labels "
        "FILE to legaleval report for the confusion tables per policy and criterion and "
        "the disagreeing items"
    )
    return view


def _titles(run: RunData, view: AuditView) -> None:
    """Criterion titles from the run's records, for the ids the calibration view names."""
    calibration = view.calibration or {}
    wanted = {t.get("criterion_id") for t in calibration.get("tables", ())} - {None}
    pairs = {
        (d.get("record_id"), d.get("criterion_id"))
        for d in calibration.get("disagreements", ())
        if d.get("criterion_id") is not None
    }
    wanted |= {cid for _, cid in pairs}
    if not wanted:
        return
    seen: dict[str, str] = {}
    clash: set[str] = set()
    for _, record_id, payload in InputRecords(run.path):
        for cid, title, _ in record_texts(payload).rubric:
            if cid not in wanted or not title:
                continue
            short = title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…"
            if seen.setdefault(cid, short) != short:
                clash.add(cid)
            if (record_id, cid) in pairs:
                view.record_titles[(record_id, cid)] = short
    view.titles = {cid: title for cid, title in seen.items() if cid not in clash}
