"""The population the human labels were drawn from, and the PPI estimates it allows.

A PPI++ estimate is unbiased only for the population the labelled items are a random
sample of. ``legaleval review`` records that population in its ``sample.json`` (the run,
its judge-graded items with a verdict, the strata, the seed). The audit reads it — found
beside the labels (``<review folder>/labels/`` → ``<review folder>/sample.json``) or named
— states it (``judge_audit.sample``), and refuses the PPI estimates, with a note instead
of a number, when the labels cannot speak for the audited items:

* the sample was drawn from another run;
* the run's judged items are not the population the sample counted;
* some labelled items are not in the sample (picked by hand, not drawn at random).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_legaleval.metrics._audit_items import ItemKey, MatchedLabels, RunItems

__all__ = ["SAMPLE_KIND", "find_sample", "population_check", "refuse_ppi"]

SAMPLE_KIND = "legaleval_review_sample"
_PPI = ("ppi_pass_rate", "ppi_mean_score")


def find_sample(labels_path: Path | None) -> Mapping[str, Any] | None:
    """The review sample beside a labels file or folder, or ``None`` when there is none."""
    if labels_path is None:
        return None
    folder = labels_path if labels_path.is_dir() else labels_path.parent
    for candidate in (folder / "sample.json", folder.parent / "sample.json"):
        if candidate.is_file():
            try:
                document = json.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(document, dict) and document.get("kind") == SAMPLE_KIND:
                return {**document, "path": str(candidate)}
    return None


def population_check(
    sample: Mapping[str, Any], run_id: str | None, items: RunItems, matched: MatchedLabels
) -> tuple[dict[str, Any], str | None]:
    """``judge_audit.sample`` and why PPI must be refused (``None``: it may be given)."""
    population = sample.get("population") or {}
    drawn: set[ItemKey] = {
        (str(i.get("record_id")), str(i.get("model")))
        for i in sample.get("items") or []
        if isinstance(i, Mapping)
    }
    stated = {
        "path": sample.get("path"),
        "run_id": sample.get("run_id"),
        "population": population.get("description"),
        "population_items": population.get("items"),
        "strata": sample.get("strata"),
        "seed": sample.get("seed"),
        "size": sample.get("size"),
        "shared": sample.get("shared"),
    }
    reason = None
    outside = sorted(key for key in matched.items if key not in drawn)
    if run_id is not None and sample.get("run_id") != run_id:
        reason = (
            f"the labels were drawn from run {sample.get('run_id')}, not from this run "
            f"({run_id}): no PPI estimate for a population they were not drawn from"
        )
    elif population.get("items") != len(items.verdicts):
        reason = (
            f"the labels were drawn from {population.get('items')} judged items, and this run "
            f"has {len(items.verdicts)}: no PPI estimate for a population they were not drawn "
            "from"
        )
    elif outside:
        reason = (
            f"{len(outside)} labelled items are not in the drawn sample (first: "
            f"{outside[0][0]} × {outside[0][1]}): labels not drawn at random give no PPI estimate"
        )
    return stated, reason


def refuse_ppi(blocks: Iterable[dict[str, Any]], reason: str) -> None:
    """Replace every PPI estimate of ``blocks`` by ``None`` with ``reason`` as its note."""
    for block in blocks:
        notes = block.setdefault("notes", {})
        for name in _PPI:
            if name in block:
                block[name] = None
                notes[name] = reason
